#pragma once
// Counters and fixed-bucket histograms written by exactly one thread (a shard or a receive
// thread) and read by the exporter at scrape time. The writer does a relaxed load + store, which
// is a plain add on x86 and aarch64 (no locked read-modify-write on the packet path); readers see
// a torn-free, possibly slightly stale value.
#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>

namespace hepd {

class Counter {
public:
    Counter() = default;
    Counter(const Counter& other) noexcept : value_(other.value()) {}
    Counter& operator=(const Counter& other) noexcept {
        value_.store(other.value(), std::memory_order_relaxed);
        return *this;
    }

    void add(std::uint64_t n = 1) noexcept {
        value_.store(value_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    }
    std::uint64_t value() const noexcept { return value_.load(std::memory_order_relaxed); }

private:
    std::atomic<std::uint64_t> value_{0};
};

// A gauge owned by one writer (e.g. dialogs active in one state in one shard).
class Gauge {
public:
    Gauge() = default;
    Gauge(const Gauge& other) noexcept : value_(other.value()) {}
    Gauge& operator=(const Gauge& other) noexcept {
        value_.store(other.value(), std::memory_order_relaxed);
        return *this;
    }
    void add(std::int64_t n) noexcept {
        value_.store(value_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    }
    void set(std::int64_t v) noexcept { value_.store(v, std::memory_order_relaxed); }
    std::int64_t value() const noexcept { return value_.load(std::memory_order_relaxed); }

private:
    std::atomic<std::int64_t> value_{0};
};

// A Counter that also reads as a number. Code written against plain uint64 statistics (run
// reports, tests comparing `stats.packets[0][2] == 60`) keeps compiling; new code should call
// value(). It cannot be incremented implicitly: writers call add().
class StatCounter : public Counter {
public:
    // Implicit on purpose (see above); read-only, so no arithmetic can bypass add().
    operator std::uint64_t() const noexcept { return value(); }  // NOLINT(google-explicit-constructor)
};

// One spelling for every kind of statistic, for exporters and reports written against either.
inline std::uint64_t value_of(std::uint64_t v) noexcept { return v; }
inline std::uint64_t value_of(const Counter& c) noexcept { return c.value(); }
inline std::int64_t value_of(const Gauge& g) noexcept { return g.value(); }

// Prometheus-style histogram with fixed upper bounds (ascending, +Inf implied). Sums are kept
// in the observation's unit as a double: exact enough for means, and what Prometheus exports.
template <std::size_t N>
class Histogram {
public:
    explicit constexpr Histogram(const std::array<double, N>& bounds) noexcept : bounds_(bounds) {}
    Histogram(const Histogram& o) noexcept : bounds_(o.bounds_) { copy_from(o); }
    Histogram& operator=(const Histogram& o) noexcept {
        bounds_ = o.bounds_;
        copy_from(o);
        return *this;
    }

    void observe(double v) noexcept {
        const auto it = std::lower_bound(bounds_.begin(), bounds_.end(), v);
        buckets_[static_cast<std::size_t>(it - bounds_.begin())].add();
        sum_.store(sum_.load(std::memory_order_relaxed) + v, std::memory_order_relaxed);
    }

    const std::array<double, N>& bounds() const noexcept { return bounds_; }
    // Non-cumulative count of bucket i (i == N is the +Inf bucket).
    std::uint64_t bucket(std::size_t i) const noexcept { return buckets_[i].value(); }
    std::uint64_t count() const noexcept {
        std::uint64_t n = 0;
        for (const auto& b : buckets_) n += b.value();
        return n;
    }
    double sum() const noexcept { return sum_.load(std::memory_order_relaxed); }

    // Adds another histogram with the same bounds (merging shards at scrape or report time).
    void merge(const Histogram& o) noexcept {
        for (std::size_t i = 0; i <= N; ++i) buckets_[i].add(o.buckets_[i].value());
        sum_.store(sum() + o.sum(), std::memory_order_relaxed);
    }

private:
    void copy_from(const Histogram& o) noexcept {
        for (std::size_t i = 0; i <= N; ++i) buckets_[i] = o.buckets_[i];
        sum_.store(o.sum(), std::memory_order_relaxed);
    }

    std::array<double, N> bounds_;
    std::array<Counter, N + 1> buckets_{};
    std::atomic<double> sum_{0.0};
};

}  // namespace hepd
