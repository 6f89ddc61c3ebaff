#pragma once
// A batch of datagrams handed from one producer to one shard. It holds copies of the bytes (the
// producer's receive buffer is reused at once) in its arena, and is recycled, not freed, so the
// steady state allocates nothing. Its room (datagram and binding slots, arena) is carved out of
// memory that its owner maps for many batches at once (BatchRoom): pages that no batch has used
// yet are never touched, so a deep queue costs address space, not memory; and the sender hands
// batches out lowest index first (BatchPool), so the pages a burst touched fall idle afterwards
// and are given back.
#include "core/media_binding.hpp"
#include "core/time.hpp"
#include "shard/datagram.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <type_traits>
#include <vector>

namespace hepd::shard {

// Slots are constructed when filled and simply forgotten when the batch is cleared.
static_assert(std::is_trivially_destructible_v<Datagram> && std::is_trivially_destructible_v<MediaBinding>);

// Uninitialised memory for `batches` batches of one shape, in one private anonymous mapping:
// its pages cost nothing until a batch first touches them, and release() gives them back.
class BatchRoom {
public:
    BatchRoom(std::size_t batches, std::size_t max_datagrams, std::size_t arena_bytes, std::size_t max_bindings);
    ~BatchRoom();
    BatchRoom(const BatchRoom&) = delete;
    BatchRoom& operator=(const BatchRoom&) = delete;

    std::size_t batches() const noexcept { return batches_; }
    // Hands the pages that only batches [first, last) use back to the kernel: they read as
    // zeros (uninitialised, to a batch) when touched again. None of those batches may hold data.
    void release(std::size_t first, std::size_t last) noexcept;

private:
    friend class Batch;
    std::size_t batches_, max_datagrams_, arena_bytes_, max_bindings_;
    std::size_t mapped_bytes_ = 0;
    void* mapping_ = nullptr;
    Datagram* datagrams_ = nullptr;
    MediaBinding* bindings_ = nullptr;
    std::uint8_t* arena_ = nullptr;
};

class Batch {
public:
    // The i-th batch of `room`, which must outlive it.
    Batch(BatchRoom& room, std::size_t i) noexcept
        : items_(room.datagrams_ + i * room.max_datagrams_),
          max_items_(room.max_datagrams_),
          bindings_(room.bindings_ + i * room.max_bindings_),
          max_bindings_(room.max_bindings_),
          arena_(room.arena_ + i * room.arena_bytes_),
          arena_size_(room.arena_bytes_) {}
    Batch(Batch&&) noexcept = default;  // a view: moving it moves no contents

    // Copies the datagram's payload and correlation id into the arena. False when the batch is
    // full (by count or bytes): the caller flushes it and retries on a fresh one.
    bool add(const Datagram& d) noexcept {
        const std::size_t need = d.payload.size() + d.correlation_id.size();
        if (count_ == max_items_ || arena_size_ - used_ < need) return false;
        // Copied into its place, then pointed at the copied bytes there: a copy on the stack
        // with those fields rewritten would be read back straddling the rewrites (a
        // store-forwarding stall on every datagram a receive thread queues).
        Datagram& item = *std::construct_at(items_ + count_++, d);
        std::uint8_t* p = arena_ + used_;
        if (!d.payload.empty()) std::memcpy(p, d.payload.data(), d.payload.size());
        item.payload = ByteSpan(p, d.payload.size());
        p += d.payload.size();
        if (!d.correlation_id.empty()) std::memcpy(p, d.correlation_id.data(), d.correlation_id.size());
        item.correlation_id = std::string_view(reinterpret_cast<const char*>(p), d.correlation_id.size());
        used_ += need;
        return true;
    }

    // Keeps the datagram as it is, its payload and correlation id where they are: for bytes that
    // outlive the batch's contents (a mapped capture, Pipeline::Feed::stable_input). False when
    // the batch is full by count.
    bool add_in_place(const Datagram& d) noexcept {
        if (count_ == max_items_) return false;
        std::construct_at(items_ + count_++, d);
        return true;
    }
    // Copies a binding (and its Call-ID) into the batch; false when full.
    bool add(const MediaBinding& b) noexcept {
        if (binding_count_ == max_bindings_ || arena_size_ - used_ < b.call_id.size()) return false;
        MediaBinding& item = *std::construct_at(bindings_ + binding_count_++, b);  // as for datagrams
        item.call_id_text = nullptr;  // another thread's block: the text is copied below
        char* p = reinterpret_cast<char*>(arena_ + used_);
        if (!b.call_id.empty()) std::memcpy(p, b.call_id.data(), b.call_id.size());
        item.call_id = std::string_view(p, b.call_id.size());
        used_ += b.call_id.size();
        return true;
    }

    // Whether a datagram of this size could ever fit in an empty batch.
    bool fits_empty(const Datagram& d) const noexcept {
        return d.payload.size() + d.correlation_id.size() <= arena_size_;
    }

    std::span<const Datagram> datagrams() const noexcept { return {items_, count_}; }
    std::span<const MediaBinding> bindings() const noexcept { return {bindings_, binding_count_}; }
    std::size_t size() const noexcept { return count_; }
    bool empty() const noexcept { return count_ == 0 && binding_count_ == 0; }
    void clear() noexcept {
        count_ = 0;
        binding_count_ = 0;
        used_ = 0;
        watermark = Timestamp{};
    }

    // The newest packet time the producer had seen when it sent the batch: the shard's clock.
    Timestamp watermark{};

private:
    Datagram* items_;
    std::size_t max_items_;
    std::size_t count_ = 0;
    MediaBinding* bindings_;
    std::size_t max_bindings_;
    std::size_t binding_count_ = 0;
    std::uint8_t* arena_;
    std::size_t arena_size_;
    std::size_t used_ = 0;
};

// The sender's side of a link's batches. It always hands out the free batch with the lowest
// index, so that the steady state cycles through a few warm batches and the deep ones a burst
// used (a shard paused by a snapshot capture, a scheduling hiccup) fall idle afterwards; once
// none of those has been used for kIdleRelease, their pages go back to the kernel. Resident
// memory then follows the current queue depth instead of the deepest one ever reached.
class BatchPool {
public:
    static constexpr std::size_t kAlwaysResident = 8;  // batches whose pages are never released
    static constexpr std::int64_t kIdleReleaseUs = 2'000'000;

    // `clock` (which must outlive the pool) times how long the deep batches stay unused.
    BatchPool(std::size_t batches, std::size_t max_datagrams, std::size_t arena_bytes, std::size_t max_bindings,
              const Clock& clock);

    std::size_t size() const noexcept { return batches_.size(); }
    // The free batch with the lowest index; nullptr when every batch is in flight.
    Batch* acquire() noexcept;
    // A batch the receiver has handed back (cleared).
    void put_back(Batch* b) noexcept;
    // Batches whose pages may be resident: [0, resident_batches()) have been touched since the
    // last release.
    std::size_t resident_batches() const noexcept { return touched_; }

private:
    std::size_t index_of(const Batch* b) const noexcept { return static_cast<std::size_t>(b - batches_.data()); }
    void release_idle_deep_batches() noexcept;

    BatchRoom room_;
    std::vector<Batch> batches_;       // reserved in full: never moves
    std::vector<std::uint64_t> free_;  // one bit per batch, set when free
    std::size_t touched_ = 0;          // batches [0, touched_) may have resident pages
    std::size_t deep_in_use_ = 0;      // batches in flight with an index >= kAlwaysResident
    const Clock* clock_;
    bool deep_idle_timed_ = false;  // deep_idle_since_ holds when the deep batches were found idle
    Timestamp deep_idle_since_{};
};

}  // namespace hepd::shard
