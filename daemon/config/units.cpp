#include "config/units.hpp"

#include <array>
#include <limits>

namespace hepd::config {
namespace {

struct Unit {
    std::string_view name;
    std::uint64_t factor;
};

// Smallest first; units match whole (the letters up to the next digit), so "ms" is never "m".
constexpr std::array<Unit, 5> kDurationUnits{{
    {"us", 1},
    {"ms", 1'000},
    {"s", 1'000'000},
    {"m", 60'000'000},
    {"h", 3'600'000'000},
}};

constexpr std::array<Unit, 3> kSizeUnits{{
    {"KiB", std::uint64_t{1} << 10},
    {"MiB", std::uint64_t{1} << 20},
    {"GiB", std::uint64_t{1} << 30},
}};

bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }

// Reads the leading digits of text into value; returns how many characters were consumed
// (0 = no digits). Sets overflow when the number does not fit in 64 bits.
std::size_t read_digits(std::string_view text, std::uint64_t& value, bool& overflow) noexcept {
    value = 0;
    std::size_t i = 0;
    constexpr auto kMax = std::numeric_limits<std::uint64_t>::max();
    while (i < text.size() && is_digit(text[i])) {
        const auto digit = static_cast<std::uint64_t>(text[i] - '0');
        if (value > (kMax - digit) / 10)
            overflow = true;
        else
            value = value * 10 + digit;
        ++i;
    }
    return i;
}

bool checked_mul(std::uint64_t a, std::uint64_t b, std::uint64_t& out) noexcept {
    if (a != 0 && b > std::numeric_limits<std::uint64_t>::max() / a) return false;
    out = a * b;
    return true;
}

}  // namespace

std::string_view to_string(UnitError e) noexcept {
    switch (e) {
    case UnitError::empty: return "empty";
    case UnitError::invalid: return "invalid";
    case UnitError::missing_unit: return "missing_unit";
    case UnitError::unknown_unit: return "unknown_unit";
    case UnitError::negative: return "negative";
    case UnitError::overflow: return "overflow";
    }
    return "unknown";
}

Result<std::chrono::microseconds, UnitError> parse_duration(std::string_view text) noexcept {
    if (text.empty()) return fail(UnitError::empty);
    if (text.front() == '-') return fail(UnitError::negative);
    if (text == "0") return std::chrono::microseconds{0};
    constexpr auto kLimit = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    std::uint64_t total = 0;
    bool overflow = false;
    while (!text.empty()) {
        std::uint64_t number = 0;
        const std::size_t digits = read_digits(text, number, overflow);
        if (digits == 0) return fail(UnitError::invalid);
        text.remove_prefix(digits);
        std::size_t unit_len = 0;
        while (unit_len < text.size() && !is_digit(text[unit_len])) ++unit_len;
        const std::string_view unit = text.substr(0, unit_len);
        text.remove_prefix(unit_len);
        if (unit.empty()) return fail(UnitError::missing_unit);
        const Unit* found = nullptr;
        for (const auto& u : kDurationUnits)
            if (u.name == unit) found = &u;
        if (found == nullptr) {
            // A unit made of letters is a wrong unit; anything else (".5s", " s") is bad syntax.
            for (char c : unit)
                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) return fail(UnitError::invalid);
            return fail(UnitError::unknown_unit);
        }
        std::uint64_t term = 0;
        if (!checked_mul(number, found->factor, term)) overflow = true;
        if (!overflow && term > kLimit - total) overflow = true;
        if (!overflow) total += term;
    }
    if (overflow) return fail(UnitError::overflow);
    return std::chrono::microseconds{static_cast<std::int64_t>(total)};
}

Result<std::uint64_t, UnitError> parse_size(std::string_view text) noexcept {
    if (text.empty()) return fail(UnitError::empty);
    if (text.front() == '-') return fail(UnitError::negative);
    std::uint64_t number = 0;
    bool overflow = false;
    const std::size_t digits = read_digits(text, number, overflow);
    if (digits == 0) return fail(UnitError::invalid);
    const std::string_view unit = text.substr(digits);
    std::uint64_t factor = 1;
    if (!unit.empty()) {
        const Unit* found = nullptr;
        for (const auto& u : kSizeUnits)
            if (u.name == unit) found = &u;
        if (found == nullptr) {
            for (char c : unit)
                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) return fail(UnitError::invalid);
            return fail(UnitError::unknown_unit);
        }
        factor = found->factor;
    }
    std::uint64_t bytes = 0;
    if (overflow || !checked_mul(number, factor, bytes)) return fail(UnitError::overflow);
    return bytes;
}

std::string format_duration(std::chrono::microseconds d) {
    const auto us = d.count();
    if (us == 0) return "0s";
    for (auto it = kDurationUnits.rbegin(); it != kDurationUnits.rend(); ++it) {
        const auto factor = static_cast<std::int64_t>(it->factor);
        if (us % factor == 0) return std::to_string(us / factor) + std::string(it->name);
    }
    return std::to_string(us) + "us";
}

std::string format_size(std::uint64_t bytes) {
    if (bytes == 0) return "0";
    for (auto it = kSizeUnits.rbegin(); it != kSizeUnits.rend(); ++it)
        if (bytes % it->factor == 0) return std::to_string(bytes / it->factor) + std::string(it->name);
    return std::to_string(bytes);
}

}  // namespace hepd::config
