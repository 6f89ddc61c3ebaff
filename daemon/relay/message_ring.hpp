#pragma once
// A bounded single-producer/single-consumer ring of variable-length messages, preallocated once:
// a receive thread copies each accepted HEP message in (one memcpy, no allocation, no lock), the
// relay's sender thread reads it in place and releases it once it is sent. A message that does
// not fit is refused and the producer counts the drop.
//
// Layout: each record is a 4-byte length followed by the bytes, padded to 4-byte alignment; a
// record never wraps. When the room left before the end is too short, the producer writes a wrap
// marker there (when at least 4 bytes are left; the alignment guarantees 0 or >= 4) and starts
// again at offset 0.
#include "core/bytes.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

namespace hepd::relay {

class MessageRing {
public:
    static constexpr std::size_t kHeaderBytes = 4;

    // `capacity_bytes` is rounded up to a multiple of 4; a message of up to
    // max_message_bytes() always fits into an empty ring.
    explicit MessageRing(std::size_t capacity_bytes)
        : capacity_(align(capacity_bytes < 2 * kHeaderBytes ? 2 * kHeaderBytes : capacity_bytes)),
          bytes_(new std::uint8_t[capacity_]) {}
    MessageRing(const MessageRing&) = delete;
    MessageRing& operator=(const MessageRing&) = delete;

    std::size_t capacity() const noexcept { return capacity_; }
    // A record must not be longer than half the ring, so that it fits after any wrap.
    std::size_t max_message_bytes() const noexcept { return capacity_ / 2 - kHeaderBytes; }

    // Producer side: copies `message` in; false when there is no room (or it is too long).
    bool try_push(ByteSpan message) noexcept {
        if (message.size() > max_message_bytes()) return false;
        const std::size_t need = kHeaderBytes + align(message.size());
        const std::size_t tail = tail_.load(std::memory_order_relaxed);
        const std::size_t offset = tail % capacity_;
        const std::size_t before_end = capacity_ - offset;
        const std::size_t skip = need > before_end ? before_end : 0;
        if (!has_room(tail, skip + need)) return false;
        std::size_t at = offset;
        if (skip != 0) {
            store_header(offset, kWrapMarker);
            at = 0;
        }
        store_header(at, static_cast<std::uint32_t>(message.size()));
        if (!message.empty()) std::memcpy(bytes_.get() + at + kHeaderBytes, message.data(), message.size());
        tail_.store(tail + skip + need, std::memory_order_release);
        return true;
    }

    // Consumer side: the oldest message, valid until pop(); empty span when there is none
    // (check with has_message() if empty messages matter).
    bool has_message() noexcept {
        skip_wrap();
        return head_.load(std::memory_order_relaxed) != tail_cache_;
    }
    ByteSpan front() const noexcept {
        const std::size_t offset = head_.load(std::memory_order_relaxed) % capacity_;
        return {bytes_.get() + offset + kHeaderBytes, load_header(offset)};
    }
    // Releases the message front() returned.
    void pop() noexcept {
        const std::size_t head = head_.load(std::memory_order_relaxed);
        const std::size_t size = load_header(head % capacity_);
        head_.store(head + kHeaderBytes + align(size), std::memory_order_release);
    }

    // Bytes in use (records, headers and wrap padding), approximate from a third thread.
    std::size_t used_bytes() const noexcept {
        const std::size_t head = head_.load(std::memory_order_acquire);
        const std::size_t tail = tail_.load(std::memory_order_acquire);
        return tail > head ? tail - head : 0;
    }

private:
    static constexpr std::uint32_t kWrapMarker = 0xffffffffu;
    static constexpr std::size_t align(std::size_t n) noexcept { return (n + 3) & ~std::size_t{3}; }

    bool has_room(std::size_t tail, std::size_t need) noexcept {
        if (capacity_ - (tail - head_cache_) >= need) return true;
        head_cache_ = head_.load(std::memory_order_acquire);
        return capacity_ - (tail - head_cache_) >= need;
    }

    // Refreshes the consumer's view of tail_ and steps over a wrap marker at the head.
    void skip_wrap() noexcept {
        std::size_t head = head_.load(std::memory_order_relaxed);
        if (head == tail_cache_) tail_cache_ = tail_.load(std::memory_order_acquire);
        if (head == tail_cache_) return;
        const std::size_t offset = head % capacity_;
        if (load_header(offset) == kWrapMarker) {
            head += capacity_ - offset;
            head_.store(head, std::memory_order_release);
            if (head == tail_cache_) tail_cache_ = tail_.load(std::memory_order_acquire);
        }
    }

    void store_header(std::size_t offset, std::uint32_t value) noexcept {
        std::memcpy(bytes_.get() + offset, &value, sizeof value);
    }
    std::uint32_t load_header(std::size_t offset) const noexcept {
        std::uint32_t value = 0;
        std::memcpy(&value, bytes_.get() + offset, sizeof value);
        return value;
    }

    const std::size_t capacity_;
    std::unique_ptr<std::uint8_t[]> bytes_;
    alignas(64) std::atomic<std::size_t> head_{0};  // written by the consumer
    std::size_t tail_cache_ = 0;                    // consumer's view of tail_
    alignas(64) std::atomic<std::size_t> tail_{0};  // written by the producer
    std::size_t head_cache_ = 0;                    // producer's view of head_
};

}  // namespace hepd::relay
