#pragma once
// Logging set-up (spdlog) and a rate limiter for log lines on degraded paths, so a flood of bad
// packets produces one line per interval with a count, never one line per packet.
#include "core/time.hpp"

#include <spdlog/spdlog.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace hepd {

// Valid levels: trace, debug, info, warn, error, critical, off.
bool is_valid_log_level(std::string_view level) noexcept;
// Configures the default logger (stderr, or the journal's format when under systemd).
void setup_logging(std::string_view level);
void set_log_level(std::string_view level);

// errno's text; thread-safe, unlike std::strerror (one buffer shared by every thread).
std::string error_text(int errnum);

class LogThrottle {
public:
    explicit LogThrottle(std::int64_t interval_us = 10'000'000) : interval_us_(interval_us) {}
    // Returns the number of events suppressed since the last allowed line (>= 0) when a line may
    // be written now, or nullopt when this event should stay silent.
    std::optional<std::uint64_t> allow(Timestamp now) noexcept {
        if (!started_ || now.us - last_.us >= interval_us_) {
            started_ = true;
            last_ = now;
            const auto n = suppressed_;
            suppressed_ = 0;
            return n;
        }
        ++suppressed_;
        return std::nullopt;
    }

private:
    std::int64_t interval_us_;
    Timestamp last_{};
    bool started_ = false;
    std::uint64_t suppressed_ = 0;
};

// The one way to log on a degraded path: `write(level, suppressed)` runs only when `level` is
// enabled and the throttle allows a line now, so the arguments it builds (to_string of an
// endpoint, formatting) cost nothing on the packets that stay silent. `write` writes the line
// itself, e.g. [&](auto level, std::uint64_t more) { spdlog::log(level, "... {} ...", more, x.to_string()); }
template <class Write>
void log_throttled(LogThrottle& throttle, Timestamp now, spdlog::level::level_enum level, Write&& write) {
    if (!spdlog::should_log(level)) return;
    if (const auto suppressed = throttle.allow(now)) write(level, *suppressed);
}

}  // namespace hepd
