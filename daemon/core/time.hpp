#pragma once
// Time as integer microseconds since the Unix epoch. Packet time (HEP/pcap) and wall time share
// the type; where "now" matters it comes from an injected Clock so tests drive it by hand.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

namespace hepd {

struct Timestamp {
    std::int64_t us = 0;  // microseconds since 1970-01-01T00:00:00Z

    static constexpr Timestamp from_parts(std::int64_t seconds, std::int64_t micros) noexcept {
        return Timestamp{seconds * 1'000'000 + micros};
    }
    constexpr std::int64_t seconds() const noexcept { return us / 1'000'000; }
    constexpr std::int64_t subsec_us() const noexcept { return us % 1'000'000; }
    constexpr double as_seconds() const noexcept { return static_cast<double>(us) / 1e6; }

    friend constexpr bool operator==(Timestamp, Timestamp) = default;
    friend constexpr auto operator<=>(Timestamp, Timestamp) = default;
};

// ISO-8601 UTC with microseconds, e.g. 2024-01-02T03:04:05.000006Z.
std::string format_iso8601(Timestamp t);

// CPU time the calling thread has used (user + system), in seconds.
double thread_cpu_seconds() noexcept;

class Clock {
public:
    virtual ~Clock() = default;
    virtual Timestamp now() const noexcept = 0;
};

class SystemClock final : public Clock {
public:
    Timestamp now() const noexcept override {
        const auto d = std::chrono::system_clock::now().time_since_epoch();
        return Timestamp{std::chrono::duration_cast<std::chrono::microseconds>(d).count()};
    }
};

// Steady (monotonic) time for rate limiting and timeouts: immune to wall-clock steps.
class SteadyClock final : public Clock {
public:
    Timestamp now() const noexcept override {
        const auto d = std::chrono::steady_clock::now().time_since_epoch();
        return Timestamp{std::chrono::duration_cast<std::chrono::microseconds>(d).count()};
    }
};

class ManualClock final : public Clock {
public:
    explicit ManualClock(Timestamp start = {}) : now_us_(start.us) {}
    Timestamp now() const noexcept override { return Timestamp{now_us_.load(std::memory_order_relaxed)}; }
    void set(Timestamp t) noexcept { now_us_.store(t.us, std::memory_order_relaxed); }
    void advance_us(std::int64_t us) noexcept { now_us_.fetch_add(us, std::memory_order_relaxed); }

private:
    // Tests advance it while shard threads read it.
    std::atomic<std::int64_t> now_us_;
};

}  // namespace hepd
