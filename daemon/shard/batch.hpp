#pragma once
// A batch of datagrams handed from one producer to one shard. It holds copies of the bytes (the
// producer's receive buffer is reused at once) in its arena, and is recycled, not freed, so the
// steady state allocates nothing. Its room (datagram and binding slots, arena) is carved out of
// memory that its owner allocates for many batches at once (BatchRoom): pages that no batch has
// used yet are never touched, so a deep queue costs address space, not memory.
#include "core/media_binding.hpp"
#include "shard/datagram.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <type_traits>

namespace hepd::shard {

// Slots are constructed when filled and simply forgotten when the batch is cleared.
static_assert(std::is_trivially_destructible_v<Datagram> && std::is_trivially_destructible_v<MediaBinding>);

// Uninitialised memory for `batches` batches of one shape, in three allocations.
class BatchRoom {
public:
    BatchRoom(std::size_t batches, std::size_t max_datagrams, std::size_t arena_bytes, std::size_t max_bindings)
        : batches_(batches),
          max_datagrams_(max_datagrams),
          arena_bytes_(arena_bytes),
          max_bindings_(max_bindings),
          datagrams_(std::allocator<Datagram>().allocate(batches * max_datagrams)),
          bindings_(std::allocator<MediaBinding>().allocate(batches * max_bindings)),
          arena_(new std::uint8_t[batches * arena_bytes]) {}  // default-initialised: not touched
    ~BatchRoom() {
        std::allocator<Datagram>().deallocate(datagrams_, batches_ * max_datagrams_);
        std::allocator<MediaBinding>().deallocate(bindings_, batches_ * max_bindings_);
    }
    BatchRoom(const BatchRoom&) = delete;
    BatchRoom& operator=(const BatchRoom&) = delete;

    std::size_t batches() const noexcept { return batches_; }

private:
    friend class Batch;
    std::size_t batches_, max_datagrams_, arena_bytes_, max_bindings_;
    Datagram* datagrams_;
    MediaBinding* bindings_;
    std::unique_ptr<std::uint8_t[]> arena_;
};

class Batch {
public:
    // The i-th batch of `room`, which must outlive it.
    Batch(BatchRoom& room, std::size_t i) noexcept
        : items_(room.datagrams_ + i * room.max_datagrams_),
          max_items_(room.max_datagrams_),
          bindings_(room.bindings_ + i * room.max_bindings_),
          max_bindings_(room.max_bindings_),
          arena_(room.arena_.get() + i * room.arena_bytes_),
          arena_size_(room.arena_bytes_) {}
    Batch(Batch&&) noexcept = default;  // a view: moving it moves no contents

    // Copies the datagram's payload and correlation id into the arena. False when the batch is
    // full (by count or bytes): the caller flushes it and retries on a fresh one.
    bool add(const Datagram& d) noexcept {
        const std::size_t need = d.payload.size() + d.correlation_id.size();
        if (count_ == max_items_ || arena_size_ - used_ < need) return false;
        Datagram copy = d;
        std::uint8_t* p = arena_ + used_;
        if (!d.payload.empty()) std::memcpy(p, d.payload.data(), d.payload.size());
        copy.payload = ByteSpan(p, d.payload.size());
        p += d.payload.size();
        if (!d.correlation_id.empty()) std::memcpy(p, d.correlation_id.data(), d.correlation_id.size());
        copy.correlation_id = std::string_view(reinterpret_cast<const char*>(p), d.correlation_id.size());
        used_ += need;
        std::construct_at(items_ + count_++, copy);
        return true;
    }

    // Copies a binding (and its Call-ID) into the batch; false when full.
    bool add(const MediaBinding& b) noexcept {
        if (binding_count_ == max_bindings_ || arena_size_ - used_ < b.call_id.size()) return false;
        MediaBinding copy = b;
        char* p = reinterpret_cast<char*>(arena_ + used_);
        if (!b.call_id.empty()) std::memcpy(p, b.call_id.data(), b.call_id.size());
        copy.call_id = std::string_view(p, b.call_id.size());
        used_ += b.call_id.size();
        std::construct_at(bindings_ + binding_count_++, copy);
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

}  // namespace hepd::shard
