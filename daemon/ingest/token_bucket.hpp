#pragma once
// Token buckets on an injected clock: `rate` tokens per second up to `burst`. Time is passed in,
// never read here, so tests drive it by hand and the ingest path reads the clock once per batch.
//
// TokenBucket belongs to one thread (per-sender buckets of a receive thread). SharedTokenBucket
// is the global limit shared by every receive thread: lock-free, and taken once per receive
// batch rather than once per packet.
#include "core/time.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace hepd::ingest {

class TokenBucket {
public:
    TokenBucket() = default;  // unlimited
    // rate 0 = unlimited. burst 0 = one second's worth of rate.
    TokenBucket(std::uint64_t rate, std::uint64_t burst, Timestamp now) noexcept { reset(rate, burst, now); }

    // Changes the limits (SIGHUP) keeping the tokens already earned, capped by the new burst. A
    // bucket that was unlimited starts full: turning a limit on must not refuse the next second.
    void reset(std::uint64_t rate, std::uint64_t burst, Timestamp now) noexcept {
        const bool was_limited = rate_ != 0;
        if (was_limited) refill(now);  // what the old rate earned until now is kept
        rate_ = rate;
        burst_micro_ = (burst == 0 ? rate : burst) * kMicro;
        tokens_micro_ = was_limited ? std::min(tokens_micro_, burst_micro_) : burst_micro_;
        last_ = now;
    }

    bool unlimited() const noexcept { return rate_ == 0; }
    std::uint64_t rate() const noexcept { return rate_; }
    std::uint64_t burst() const noexcept { return burst_micro_ / kMicro; }

    // Takes one token when available.
    bool try_take(Timestamp now) noexcept {
        if (rate_ == 0) return true;
        refill(now);
        if (tokens_micro_ < kMicro) return false;
        tokens_micro_ -= kMicro;
        return true;
    }

private:
    // Tokens are kept in millionths so that sub-token refills at high call rates are not lost.
    static constexpr std::uint64_t kMicro = 1'000'000;

    void refill(Timestamp now) noexcept {
        if (now.us <= last_.us) return;  // a clock that steps back earns nothing
        const auto elapsed = static_cast<std::uint64_t>(now.us - last_.us);
        last_ = now;
        // rate tokens/s = rate millionths-of-a-token per µs; cap before multiplying to avoid overflow.
        const std::uint64_t cap_us = burst_micro_ / std::max<std::uint64_t>(rate_, 1) + 1;
        tokens_micro_ = std::min(burst_micro_, tokens_micro_ + std::min(elapsed, cap_us) * rate_);
    }

    std::uint64_t rate_ = 0;
    std::uint64_t burst_micro_ = 0;
    std::uint64_t tokens_micro_ = 0;
    Timestamp last_{};
};

// The same arithmetic as TokenBucket with atomics. Refilling claims the elapsed interval by
// moving `last` forward with a compare-exchange, so concurrent callers never add the same time
// twice; taking is a compare-exchange on the token count. Nothing blocks.
class SharedTokenBucket {
public:
    SharedTokenBucket(std::uint64_t rate, std::uint64_t burst, Timestamp now) noexcept { reset(rate, burst, now); }
    SharedTokenBucket(const SharedTokenBucket&) = delete;
    SharedTokenBucket& operator=(const SharedTokenBucket&) = delete;

    // Reconfiguration from one thread at a time (the caller serialises resets); takes may run
    // concurrently and see the old or the new limits.
    void reset(std::uint64_t rate, std::uint64_t burst, Timestamp now) noexcept {
        const std::uint64_t old_rate = rate_.load(std::memory_order_relaxed);
        const bool was_limited = old_rate != 0;
        if (was_limited) refill(now, old_rate, burst_micro_.load(std::memory_order_relaxed));
        const std::uint64_t burst_micro = (burst == 0 ? rate : burst) * kMicro;
        burst_micro_.store(burst_micro, std::memory_order_relaxed);
        last_us_.store(now.us, std::memory_order_relaxed);
        std::uint64_t t = tokens_micro_.load(std::memory_order_relaxed);
        while (!tokens_micro_.compare_exchange_weak(t, was_limited ? std::min(t, burst_micro) : burst_micro,
                                                    std::memory_order_relaxed)) {
        }
        rate_.store(rate, std::memory_order_release);
    }

    bool unlimited() const noexcept { return rate_.load(std::memory_order_acquire) == 0; }
    std::uint64_t rate() const noexcept { return rate_.load(std::memory_order_acquire); }

    // Takes up to `n` tokens and returns how many it got.
    std::uint64_t take(std::uint64_t n, Timestamp now) noexcept {
        const std::uint64_t rate = rate_.load(std::memory_order_acquire);
        if (rate == 0 || n == 0) return n;
        refill(now, rate, burst_micro_.load(std::memory_order_relaxed));
        std::uint64_t t = tokens_micro_.load(std::memory_order_relaxed);
        while (true) {
            const std::uint64_t got = std::min(n, t / kMicro);
            if (got == 0) return 0;
            if (tokens_micro_.compare_exchange_weak(t, t - got * kMicro, std::memory_order_relaxed)) return got;
        }
    }

private:
    static constexpr std::uint64_t kMicro = 1'000'000;

    void refill(Timestamp now, std::uint64_t rate, std::uint64_t burst_micro) noexcept {
        std::int64_t last = last_us_.load(std::memory_order_relaxed);
        while (now.us > last) {
            if (last_us_.compare_exchange_weak(last, now.us, std::memory_order_relaxed)) {
                const auto elapsed = static_cast<std::uint64_t>(now.us - last);
                const std::uint64_t cap_us = burst_micro / rate + 1;
                const std::uint64_t earned = std::min(elapsed, cap_us) * rate;
                std::uint64_t t = tokens_micro_.load(std::memory_order_relaxed);
                while (!tokens_micro_.compare_exchange_weak(t, std::min(burst_micro, t + earned),
                                                            std::memory_order_relaxed)) {
                }
                return;
            }
        }
    }

    std::atomic<std::uint64_t> rate_{0};
    std::atomic<std::uint64_t> burst_micro_{0};
    std::atomic<std::uint64_t> tokens_micro_{0};
    std::atomic<std::int64_t> last_us_{0};
};

}  // namespace hepd::ingest
