#pragma once
// Storage for the capped tables (LruTable entries, per-dialog side arrays): a table reserves
// room for its whole cap once, so it never relocates its entries as it grows, yet costs only
// the pages its entries have touched. A large allocation is a private anonymous mapping of its
// own, reserved (NORESERVE: address space, not commit) and, past its first huge page, advised
// for transparent huge pages: a young table growing under load then takes one page fault per
// huge page instead of one per base page (a fault costs microseconds, the more so in a VM), and
// a small table pays no huge page. Smaller allocations are plain operator new.
#include <cstddef>
#include <memory>
#include <new>
#include <string>

namespace hepd {

// The mapping behind a large allocation; nullptr when the system refuses it.
void* map_reserved(std::size_t bytes) noexcept;
void unmap_reserved(void* at, std::size_t bytes) noexcept;

// Allocations from this size on are mappings (below it, the heap is as good and finer grained).
inline constexpr std::size_t kReservedMappingBytes = std::size_t{1} << 20;

template <class T>
class ReservingAllocator {
public:
    using value_type = T;

    ReservingAllocator() noexcept = default;
    template <class U>
    ReservingAllocator(const ReservingAllocator<U>&) noexcept {}  // NOLINT: rebinding is implicit

    T* allocate(std::size_t n) {
        if (n * sizeof(T) < kReservedMappingBytes) return std::allocator<T>{}.allocate(n);
        void* p = map_reserved(n * sizeof(T));
        if (p == nullptr) throw std::bad_alloc();
        return static_cast<T*>(p);
    }

    void deallocate(T* p, std::size_t n) noexcept {
        if (n * sizeof(T) < kReservedMappingBytes) {
            std::allocator<T>{}.deallocate(p, n);
        } else {
            unmap_reserved(p, n * sizeof(T));
        }
    }

    friend bool operator==(const ReservingAllocator&, const ReservingAllocator&) noexcept { return true; }
};

// Reserves room for `n` elements at once, so that the container never relocates them as it grows;
// where strict overcommit refuses the room, it grows by doubling as usual.
template <class Vector>
void reserve_room(Vector& v, std::size_t n) noexcept {
    try {
        v.reserve(n);
    } catch (const std::bad_alloc&) {
    }
}

// Fills the page tables of [at, at + bytes) writable at once (MADV_POPULATE_WRITE, Linux 5.14)
// instead of one page fault at a time: in the 2-core development VM a 4 KiB page then costs 6 to
// 8 us instead of 12 to 15 (bench/README.md). Advice only: an older kernel faults the pages in as
// before. The bytes are not written.
void populate(void* at, std::size_t bytes) noexcept;

// Fills the page tables of a growing ReservingAllocator mapping a step ahead of its use (the
// step grows with it, from 64 to 256 KiB), so that a young table growing one entry at a time
// makes one system call a step instead of taking a fault per page. Only in the mapping's base
// pages: past them a fault brings a whole huge page, and filling ahead would only hold memory
// early. A heap allocation (under kReservedMappingBytes) is left alone.
class PopulateAhead {
public:
    // `used` of the `reserved` bytes from `base` are now in use.
    void cover(void* base, std::size_t used, std::size_t reserved) noexcept {
        if (used > populated_ && reserved >= kReservedMappingBytes) extend(base, used, reserved);
    }

private:
    void extend(void* base, std::size_t used, std::size_t reserved) noexcept;
    std::size_t populated_ = 0;
};

// Bytes of an allocation of `reserved` bytes made by ReservingAllocator that are in memory once
// its first `used` bytes have been written: all of a heap allocation; of a mapping, the base pages
// written or filled ahead (PopulateAhead) within its first huge page's worth, past that at most
// one huge page beyond `used`. What
// the capped tables report as their entries' memory.
std::size_t touched_bytes(std::size_t used, std::size_t reserved) noexcept;

// Heap bytes a string owns beyond its small-string buffer (the capacity asked of malloc): the
// key text in the tables' memory figures.
inline std::size_t string_heap_bytes(const std::string& s) noexcept {
    static const std::size_t inline_capacity = std::string().capacity();
    return s.capacity() > inline_capacity ? s.capacity() + 1 : 0;
}

}  // namespace hepd
