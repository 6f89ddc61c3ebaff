#pragma once
// Ingest statistics are core Counters and Gauges: one writer (the receive thread that owns them),
// read by the exporter at scrape time without locks.
#include "core/stats.hpp"

#include <cstdint>

namespace hepd::ingest {

// A Counter that also reads as a number. Code written against the former plain uint64 fields
// (run reports, pcap tests comparing `stats.packets[0][2] == 60`) keeps compiling; new code
// should call value(). It cannot be incremented implicitly: writers call add().
class StatCounter : public Counter {
public:
    // Implicit on purpose (see above); read-only, so no arithmetic can bypass add().
    operator std::uint64_t() const noexcept { return value(); }  // NOLINT(google-explicit-constructor)
};

// One spelling for every kind of statistic, for exporters and reports written against either.
inline std::uint64_t value_of(std::uint64_t v) noexcept { return v; }
inline std::uint64_t value_of(const Counter& c) noexcept { return c.value(); }
inline std::int64_t value_of(const Gauge& g) noexcept { return g.value(); }

} // namespace hepd::ingest
