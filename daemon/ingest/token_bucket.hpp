#pragma once
// Token bucket on an injected clock: `rate` tokens per second up to `burst`. Time is passed in,
// never read here, so tests drive it by hand and the ingest path reads the clock once per batch.
#include "core/time.hpp"

#include <algorithm>
#include <cstdint>

namespace hepd::ingest {

class TokenBucket {
public:
    // rate 0 = unlimited. burst 0 = one second's worth of rate.
    TokenBucket(std::uint64_t rate, std::uint64_t burst, Timestamp now) noexcept { reset(rate, burst, now); }

    // Changes the limits (SIGHUP) keeping the tokens already earned, capped by the new burst.
    void reset(std::uint64_t rate, std::uint64_t burst, Timestamp now) noexcept {
        rate_ = rate;
        burst_micro_ = (burst == 0 ? rate : burst) * kMicro;
        tokens_micro_ = std::min(tokens_micro_ == kUnset ? burst_micro_ : tokens_micro_, burst_micro_);
        last_ = now;
    }

    bool unlimited() const noexcept { return rate_ == 0; }

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
    static constexpr std::uint64_t kUnset = ~std::uint64_t{0};

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
    std::uint64_t tokens_micro_ = kUnset;
    Timestamp last_{};
};

} // namespace hepd::ingest
