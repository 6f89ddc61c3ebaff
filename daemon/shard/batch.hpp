#pragma once
// A batch of datagrams handed from one producer to one shard. It owns copies of the bytes (the
// producer's receive buffer is reused at once) in one arena, and is recycled, not freed, so the
// steady state allocates nothing.
#include "core/media_binding.hpp"
#include "shard/datagram.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

namespace hepd::shard {

class Batch {
public:
    Batch(std::size_t max_datagrams, std::size_t arena_bytes, std::size_t max_bindings = 64)
        : arena_(new std::uint8_t[arena_bytes]), arena_size_(arena_bytes) {
        items_.reserve(max_datagrams);
        bindings_.reserve(max_bindings);
    }

    // Copies the datagram's payload and correlation id into the arena. False when the batch is
    // full (by count or bytes): the caller flushes it and retries on a fresh one.
    bool add(const Datagram& d) noexcept {
        const std::size_t need = d.payload.size() + d.correlation_id.size();
        if (items_.size() == items_.capacity() || arena_size_ - used_ < need) return false;
        Datagram copy = d;
        std::uint8_t* p = arena_.get() + used_;
        if (!d.payload.empty()) std::memcpy(p, d.payload.data(), d.payload.size());
        copy.payload = ByteSpan(p, d.payload.size());
        p += d.payload.size();
        if (!d.correlation_id.empty()) std::memcpy(p, d.correlation_id.data(), d.correlation_id.size());
        copy.correlation_id = std::string_view(reinterpret_cast<const char*>(p), d.correlation_id.size());
        used_ += need;
        items_.push_back(copy);  // never reallocates: capacity reserved, size checked above
        return true;
    }

    // Copies a binding (and its Call-ID) into the batch; false when full.
    bool add(const MediaBinding& b) noexcept {
        if (bindings_.size() == bindings_.capacity() || arena_size_ - used_ < b.call_id.size()) return false;
        MediaBinding copy = b;
        char* p = reinterpret_cast<char*>(arena_.get() + used_);
        if (!b.call_id.empty()) std::memcpy(p, b.call_id.data(), b.call_id.size());
        copy.call_id = std::string_view(p, b.call_id.size());
        used_ += b.call_id.size();
        bindings_.push_back(copy);
        return true;
    }

    // Whether a datagram of this size could ever fit in an empty batch.
    bool fits_empty(const Datagram& d) const noexcept {
        return d.payload.size() + d.correlation_id.size() <= arena_size_;
    }

    std::span<const Datagram> datagrams() const noexcept { return items_; }
    std::span<const MediaBinding> bindings() const noexcept { return bindings_; }
    std::size_t size() const noexcept { return items_.size(); }
    bool empty() const noexcept { return items_.empty() && bindings_.empty(); }
    void clear() noexcept {
        items_.clear();
        bindings_.clear();
        used_ = 0;
        watermark = Timestamp{};
    }

    // The newest packet time the producer had seen when it sent the batch: the shard's clock.
    Timestamp watermark{};

private:
    std::vector<Datagram> items_;
    std::vector<MediaBinding> bindings_;
    std::unique_ptr<std::uint8_t[]> arena_;
    std::size_t arena_size_;
    std::size_t used_ = 0;
};

} // namespace hepd::shard
