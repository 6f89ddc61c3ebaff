#include "core/reserved_memory.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>

namespace hepd {

namespace {

// The huge page size of x86-64 and of aarch64 with 4 KiB pages. Where it is larger the advice
// covers less (or nothing) of a table; where the kernel lacks THP it is ignored.
constexpr std::uintptr_t kHugePageBytes = std::uintptr_t{2} << 20;

// The bytes of a mapping at `base` that HugePages::at_once leaves in base pages: up to its second
// huge page boundary, so that a small image pays no huge page.
std::size_t base_page_bytes(const void* base) noexcept {
    const auto begin = reinterpret_cast<std::uintptr_t>(base);
    return (begin + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes + kHugePageBytes - begin;
}

// How far PopulateAhead fills beyond `used` bytes (within the base pages).
std::size_t populate_step(std::size_t used) noexcept {
    constexpr std::size_t kMinStep = std::size_t{64} << 10;
    constexpr std::size_t kMaxStep = std::size_t{256} << 10;
    return std::clamp(used, kMinStep, kMaxStep);
}

}  // namespace

void* map_reserved(std::size_t bytes, HugePages huge) noexcept {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return nullptr;
#if defined(MADV_HUGEPAGE)
    // Advice only: without it the mapping simply takes base pages.
    const std::size_t skip = base_page_bytes(p);
    if (huge == HugePages::at_once && skip < bytes)
        (void)madvise(static_cast<char*>(p) + skip, bytes - skip, MADV_HUGEPAGE);
#else
    (void)huge;
#endif
    return p;
}

void unmap_reserved(void* at, std::size_t bytes) noexcept { (void)munmap(at, bytes); }

void populate(void* at, std::size_t bytes) noexcept {
#if defined(MADV_POPULATE_WRITE)
    static const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
    const std::size_t skew = reinterpret_cast<std::uintptr_t>(at) % page;  // madvise wants it aligned
    (void)madvise(static_cast<char*>(at) - skew, bytes + skew, MADV_POPULATE_WRITE);
#else
    (void)at;
    (void)bytes;
#endif
}

void PopulateAhead::extend(void* base, std::size_t used, std::size_t reserved) noexcept {
    const std::size_t end = std::min(reserved, used + populate_step(used));
    if (end > populated_) populate(static_cast<char*>(base) + populated_, end - populated_);
    populated_ = end;
#if defined(MADV_HUGEPAGE)
    // The whole huge-page-aligned regions the entries have filled since the last advice.
    const auto begin = reinterpret_cast<std::uintptr_t>(base);
    const std::uintptr_t filled = (begin + used) / kHugePageBytes * kHugePageBytes;
    const std::uintptr_t from =
        std::max(begin + advised_, (begin + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes);
    if (filled > from) {
        (void)madvise(static_cast<char*>(base) + (from - begin), filled - from, MADV_HUGEPAGE);
        advised_ = filled - begin;
    }
#endif
}

std::size_t touched_bytes(std::size_t used, std::size_t reserved) noexcept {
    if (reserved < kReservedMappingBytes) return reserved;
    if (used == 0) return 0;
    static const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    return std::min(reserved, (used + populate_step(used) + page - 1) / page * page);
}

}  // namespace hepd
