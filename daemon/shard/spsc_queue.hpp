#pragma once
// Bounded single-producer/single-consumer ring. Shards share nothing but these queues; a full
// queue is reported to the producer, which drops and counts (backpressure is a rule, not luck).
#include <atomic>
#include <cstddef>
#include <memory>
#include <new>
#include <optional>
#include <utility>

namespace hepd::shard {

// Fixed at 64 rather than std::hardware_destructive_interference_size, whose value can differ
// between compilers and flags (and GCC warns about using it in headers).
inline constexpr std::size_t kCacheLine = 64;

template <class T>
class SpscQueue {
public:
    // Capacity is rounded up to a power of two so the index wraps with a mask.
    explicit SpscQueue(std::size_t capacity) : mask_(round_up(capacity) - 1), slots_(new T[mask_ + 1]) {}
    SpscQueue(const SpscQueue&) = delete;
    SpscQueue& operator=(const SpscQueue&) = delete;

    std::size_t capacity() const noexcept { return mask_ + 1; }

    // Producer side. Returns false (and leaves `value` untouched) when full.
    bool try_push(T& value) noexcept {
        const std::size_t tail = tail_.load(std::memory_order_relaxed);
        if (tail - head_cache_ > mask_) {
            head_cache_ = head_.load(std::memory_order_acquire);
            if (tail - head_cache_ > mask_) return false;
        }
        slots_[tail & mask_] = std::move(value);
        tail_.store(tail + 1, std::memory_order_release);
        return true;
    }

    // Consumer side.
    bool try_pop(T& out) noexcept {
        const std::size_t head = head_.load(std::memory_order_relaxed);
        if (head == tail_cache_) {
            tail_cache_ = tail_.load(std::memory_order_acquire);
            if (head == tail_cache_) return false;
        }
        out = std::move(slots_[head & mask_]);
        head_.store(head + 1, std::memory_order_release);
        return true;
    }

    // Approximate from either side; exact when the other side is idle.
    std::size_t size() const noexcept {
        // Head first: read from a third thread (a scrape), a tail read first could fall behind a
        // head that moved meanwhile and the difference would wrap.
        const std::size_t head = head_.load(std::memory_order_acquire);
        const std::size_t tail = tail_.load(std::memory_order_acquire);
        return tail > head ? tail - head : 0;
    }

private:
    static std::size_t round_up(std::size_t n) noexcept {
        std::size_t p = 2;
        while (p < n) p <<= 1;
        return p;
    }

    const std::size_t mask_;
    std::unique_ptr<T[]> slots_;
    alignas(kCacheLine) std::atomic<std::size_t> head_{0};  // written by the consumer
    std::size_t tail_cache_ = 0;                            // consumer's view of tail_
    alignas(kCacheLine) std::atomic<std::size_t> tail_{0};  // written by the producer
    std::size_t head_cache_ = 0;                            // producer's view of head_
};

}  // namespace hepd::shard
