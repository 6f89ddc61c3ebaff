#pragma once
// Storage for the capped tables (LruTable entries, per-dialog side arrays): a table reserves
// room for its whole cap once, so it never relocates its entries as it grows, yet costs only
// the pages its entries have touched. A large allocation is a private anonymous mapping of its
// own, reserved (NORESERVE: address space, not commit); smaller ones are plain operator new.
//
// Transparent huge pages (fewer TLB misses in a large table, one fault per 2 MiB) are asked for
// in one of two ways (HugePages). A snapshot image, built whole and dropped, advises them at
// once. A growing table advises each 2 MiB region once its entries have filled it, and
// khugepaged collapses it later, off the packet path; until then it takes base pages, filled a
// step ahead (PopulateAhead). Advised at once, the region a table was growing into was resident
// whole whenever the kernel found a huge page for it: up to 2 MiB a table more, run by run, and
// a packet could wait for the fault to compact memory.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <vector>

namespace hepd {

enum class HugePages : std::uint8_t {
    at_once,      // past the mapping's first huge page's worth, at mapping time
    when_filled,  // by PopulateAhead, region by region as the entries fill them
};

// The mapping behind a large allocation; nullptr when the system refuses it.
void* map_reserved(std::size_t bytes, HugePages huge = HugePages::at_once) noexcept;
void unmap_reserved(void* at, std::size_t bytes) noexcept;

// Allocations from this size on are mappings (below it, the heap is as good and finer grained).
inline constexpr std::size_t kReservedMappingBytes = std::size_t{1} << 20;

template <class T, HugePages kHuge = HugePages::at_once>
class ReservingAllocator {
public:
    using value_type = T;
    template <class U>
    struct rebind {  // NOLINT(readability-identifier-naming): the name allocator_traits looks for
        using other = ReservingAllocator<U, kHuge>;
    };

    ReservingAllocator() noexcept = default;
    template <class U>
    ReservingAllocator(const ReservingAllocator<U, kHuge>&) noexcept {}  // NOLINT: rebinding is implicit

    T* allocate(std::size_t n) {
        if (n * sizeof(T) < kReservedMappingBytes) return std::allocator<T>{}.allocate(n);
        void* p = map_reserved(n * sizeof(T), kHuge);
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

// A growing table's room: huge pages advised as its entries fill it, with PopulateAhead.
template <class T>
using TableRoom = ReservingAllocator<T, HugePages::when_filled>;

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

// Fills the page tables of a growing TableRoom mapping a step ahead of its use (the step grows
// with it, from 64 to 256 KiB), so that a young table growing one entry at a time makes one
// system call a step instead of taking a fault per page, and advises each 2 MiB region that its
// entries have filled for huge pages (HugePages::when_filled). A heap allocation (under
// kReservedMappingBytes) is left alone.
class PopulateAhead {
public:
    // `used` of the `reserved` bytes from `base` are now in use.
    void cover(void* base, std::size_t used, std::size_t reserved) noexcept {
        if (used > populated_ && reserved >= kReservedMappingBytes) extend(base, used, reserved);
    }

private:
    void extend(void* base, std::size_t used, std::size_t reserved) noexcept;
    std::size_t populated_ = 0;
    std::size_t advised_ = 0;  // bytes from base up to the end of the last region advised
};

// Bytes of a TableRoom allocation of `reserved` bytes that are in memory once its first `used`
// bytes have been written: all of a heap allocation; of a mapping, the pages written and those
// filled a step ahead (PopulateAhead). What the capped tables report as their entries' memory.
std::size_t touched_bytes(std::size_t used, std::size_t reserved) noexcept;

// Values kept beside a capped table's entries, by entry index (a dialog's SDP sides, its caller's
// identity): room for the cap reserved at once and grown one entry at a time within it (a resize
// by doubling would touch, zeroing them, up to twice the entries in use), its page tables filled
// ahead (PopulateAhead).
template <class T>
class EntryColumn {
public:
    EntryColumn() noexcept = default;
    explicit EntryColumn(std::size_t cap) { reserve(cap); }
    void reserve(std::size_t cap) noexcept { reserve_room(values_, cap); }

    std::size_t size() const noexcept { return values_.size(); }
    const T& operator[](std::size_t at) const noexcept { return values_[at]; }
    T& operator[](std::size_t at) noexcept { return values_[at]; }
    // The value at `at`, the column grown to hold it (new values are T{}).
    T& grown_to(std::size_t at) {
        if (values_.size() <= at) {
            values_.resize(at < values_.capacity() ? at + 1 : std::max(at + 1, values_.size() * 2));
            populated_.cover(values_.data(), values_.size() * sizeof(T), values_.capacity() * sizeof(T));
        }
        return values_[at];
    }
    std::size_t memory_bytes() const noexcept {
        return touched_bytes(values_.size() * sizeof(T), values_.capacity() * sizeof(T));
    }

private:
    std::vector<T, TableRoom<T>> values_;
    PopulateAhead populated_;
};

// Heap bytes a string owns beyond its small-string buffer (the capacity asked of malloc): the
// key text in the tables' memory figures.
inline std::size_t string_heap_bytes(const std::string& s) noexcept {
    static const std::size_t inline_capacity = std::string().capacity();
    return s.capacity() > inline_capacity ? s.capacity() + 1 : 0;
}

}  // namespace hepd
