#pragma once
// Human-friendly durations ("500ms", "32s", "1h30m") and sizes ("64KiB", "8MiB", 1500) for the
// configuration file. Pure functions: text in, value or error enum out.
#include "core/result.hpp"

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace hepd::config {

enum class UnitError : std::uint8_t {
    empty,         // no text at all
    invalid,       // not <digits><unit>..., e.g. "1.5s", "s", "12 s"
    missing_unit,  // a duration without a unit (only "0" may omit it)
    unknown_unit,  // e.g. "10d", "8MB"
    negative,      // a leading '-'
    overflow,      // does not fit in 64 bits
};

std::string_view to_string(UnitError e) noexcept;

// One or more <digits><unit> terms, units us, ms, s, m, h, summed: "500ms", "4h", "1h30m".
// A bare "0" is accepted because zero needs no unit.
Result<std::chrono::microseconds, UnitError> parse_duration(std::string_view text) noexcept;

// <digits> (bytes) or <digits><unit> with unit KiB, MiB, GiB (powers of 1024).
Result<std::uint64_t, UnitError> parse_size(std::string_view text) noexcept;

// Shortest exact form in the largest whole unit: 300s -> "5m", 1500ms -> "1500ms", 0 -> "0s".
// parse_duration(format_duration(d)) == d for every d >= 0.
std::string format_duration(std::chrono::microseconds d);

// Largest binary unit that divides the value exactly: 65536 -> "64KiB", 1500 -> "1500".
std::string format_size(std::uint64_t bytes);

}  // namespace hepd::config
