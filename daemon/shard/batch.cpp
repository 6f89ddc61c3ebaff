#include "shard/batch.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <bit>
#include <new>

namespace hepd::shard {

namespace {

std::size_t page_size() noexcept {
    static const std::size_t size = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    return size;
}

std::size_t round_up(std::size_t n, std::size_t to) noexcept { return (n + to - 1) / to * to; }

// Gives back the whole pages inside [begin, end): a page shared with a neighbour stays.
void release_pages(const void* begin, const void* end) noexcept {
    const std::size_t page = page_size();
    auto* first = const_cast<std::uint8_t*>(static_cast<const std::uint8_t*>(begin));
    auto* last = const_cast<std::uint8_t*>(static_cast<const std::uint8_t*>(end));
    first += (page - reinterpret_cast<std::uintptr_t>(first) % page) % page;
    last -= reinterpret_cast<std::uintptr_t>(last) % page;
    // Cannot fail on a range of our own private anonymous mapping; if it did, the pages would
    // merely stay resident.
    if (first < last) (void)madvise(first, static_cast<std::size_t>(last - first), MADV_DONTNEED);
}

}  // namespace

BatchRoom::BatchRoom(std::size_t batches, std::size_t max_datagrams, std::size_t arena_bytes, std::size_t max_bindings)
    : batches_(batches), max_datagrams_(max_datagrams), arena_bytes_(arena_bytes), max_bindings_(max_bindings) {
    const std::size_t page = page_size();
    const std::size_t datagram_bytes = round_up(batches * max_datagrams * sizeof(Datagram), page);
    const std::size_t binding_bytes = round_up(batches * max_bindings * sizeof(MediaBinding), page);
    mapped_bytes_ = datagram_bytes + binding_bytes + round_up(batches * arena_bytes, page);
    if (mapped_bytes_ == 0) return;
    // NORESERVE: a deep queue is address space; only the pages batches touch count.
    mapping_ = mmap(nullptr, mapped_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mapping_ == MAP_FAILED) throw std::bad_alloc();
    auto* base = static_cast<std::uint8_t*>(mapping_);
    datagrams_ = reinterpret_cast<Datagram*>(base);
    bindings_ = reinterpret_cast<MediaBinding*>(base + datagram_bytes);
    arena_ = base + datagram_bytes + binding_bytes;
}

BatchRoom::~BatchRoom() {
    if (mapping_ != nullptr) munmap(mapping_, mapped_bytes_);
}

void BatchRoom::release(std::size_t first, std::size_t last) noexcept {
    if (first >= last) return;
    release_pages(datagrams_ + first * max_datagrams_, datagrams_ + last * max_datagrams_);
    release_pages(bindings_ + first * max_bindings_, bindings_ + last * max_bindings_);
    release_pages(arena_ + first * arena_bytes_, arena_ + last * arena_bytes_);
}

BatchPool::BatchPool(std::size_t batches, std::size_t max_datagrams, std::size_t arena_bytes, std::size_t max_bindings,
                     const Clock& clock)
    : room_(batches, max_datagrams, arena_bytes, max_bindings), free_((batches + 63) / 64, 0), clock_(&clock) {
    batches_.reserve(batches);
    for (std::size_t i = 0; i < batches; ++i) {
        batches_.emplace_back(room_, i);
        free_[i / 64] |= std::uint64_t{1} << (i % 64);
    }
}

Batch* BatchPool::acquire() noexcept {
    for (std::size_t w = 0; w < free_.size(); ++w) {
        if (free_[w] == 0) continue;
        const std::size_t i = w * 64 + static_cast<std::size_t>(std::countr_zero(free_[w]));
        free_[w] &= free_[w] - 1;  // clears the lowest set bit: i
        if (i >= kAlwaysResident) {
            ++deep_in_use_;
            deep_idle_timed_ = false;
        } else if (deep_in_use_ == 0 && touched_ > kAlwaysResident) {
            release_idle_deep_batches();
        }
        if (i >= touched_) touched_ = i + 1;
        return &batches_[i];
    }
    return nullptr;
}

void BatchPool::put_back(Batch* b) noexcept {
    const std::size_t i = index_of(b);
    free_[i / 64] |= std::uint64_t{1} << (i % 64);
    if (i >= kAlwaysResident) --deep_in_use_;
}

// Timed from the first acquire that finds every deep batch free: on a link in use that is at
// most one batch age after the last of them came back.
void BatchPool::release_idle_deep_batches() noexcept {
    const Timestamp now = clock_->now();
    if (!deep_idle_timed_) {
        deep_idle_timed_ = true;
        deep_idle_since_ = now;
        return;
    }
    if (now.us - deep_idle_since_.us < kIdleReleaseUs) return;
    room_.release(kAlwaysResident, touched_);
    touched_ = kAlwaysResident;
    deep_idle_timed_ = false;
}

}  // namespace hepd::shard
