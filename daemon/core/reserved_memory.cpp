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

}  // namespace

void* map_reserved(std::size_t bytes) noexcept {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return nullptr;
#if defined(MADV_HUGEPAGE)
    // From the second huge page boundary on: the first huge page's worth stays in base pages.
    const auto begin = reinterpret_cast<std::uintptr_t>(p);
    const std::uintptr_t first = (begin + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes + kHugePageBytes;
    const std::size_t skip = first - begin;
    // Advice only: without it the table simply takes base pages.
    if (skip < bytes) (void)madvise(static_cast<char*>(p) + skip, bytes - skip, MADV_HUGEPAGE);
#endif
    return p;
}

void unmap_reserved(void* at, std::size_t bytes) noexcept { (void)munmap(at, bytes); }

std::size_t touched_bytes(std::size_t used, std::size_t reserved) noexcept {
    if (reserved < kReservedMappingBytes) return reserved;
    static const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    const std::size_t touched = used < kHugePageBytes ? (used + page - 1) / page * page : used + kHugePageBytes;
    return std::min(reserved, touched);
}

}  // namespace hepd
