#pragma once
// Character-level helpers shared by the SIP and SDP parsers. Header values are views into the
// packet, so a folded value still holds its CRLF + SP: every helper that skips white space here
// treats CR and LF as linear white space (RFC 3261 LWS) for that reason.
#include "core/ascii.hpp"
#include "core/byte_scan.hpp"

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string_view>

namespace hepd::sip::detail {

inline constexpr bool is_space(char c) noexcept { return c == ' ' || c == '\t'; }
inline constexpr bool is_lws(char c) noexcept { return is_ascii_space(c); }
inline constexpr bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }

// RFC 3261 token: alphanum / "-" / "." / "!" / "%" / "*" / "_" / "+" / "`" / "'" / "~"
inline constexpr std::array<bool, 256> make_token_table() noexcept {
    std::array<bool, 256> t{};
    for (int c = '0'; c <= '9'; ++c) t[static_cast<std::size_t>(c)] = true;
    for (int c = 'a'; c <= 'z'; ++c) t[static_cast<std::size_t>(c)] = true;
    for (int c = 'A'; c <= 'Z'; ++c) t[static_cast<std::size_t>(c)] = true;
    for (char c : std::string_view("-.!%*_+`'~")) t[static_cast<unsigned char>(c)] = true;
    return t;
}
inline constexpr std::array<bool, 256> token_table = make_token_table();

inline constexpr bool is_token_char(char c) noexcept { return token_table[static_cast<unsigned char>(c)]; }

inline constexpr bool is_token(std::string_view s) noexcept {
    if (s.empty()) return false;
    for (char c : s)
        if (!is_token_char(c)) return false;
    return true;
}

inline constexpr std::string_view ltrim_lws(std::string_view s) noexcept {
    std::size_t i = 0;
    while (i < s.size() && is_lws(s[i])) ++i;
    return s.substr(i);
}
inline constexpr std::string_view rtrim_lws(std::string_view s) noexcept {
    std::size_t n = s.size();
    while (n > 0 && is_lws(s[n - 1])) --n;
    return s.substr(0, n);
}
inline constexpr std::string_view trim_lws(std::string_view s) noexcept { return rtrim_lws(ltrim_lws(s)); }

// Index of the first byte at or after `i` that is `a` or `b`, or (with `controls`) below '!'
// (white space and control bytes); s.size() when there is none. Eight bytes per step where the
// byte order allows, since the values scanned here (branches, tags, hosts) run to a dozen bytes.
template <bool controls>
inline std::size_t find_first_of2(std::string_view s, std::size_t i, char a, char b) noexcept {
    const std::size_t n = s.size();
    if constexpr (std::endian::native == std::endian::little) {
        constexpr std::uint64_t ones = 0x0101010101010101ULL;
        constexpr std::uint64_t high = 0x8080808080808080ULL;
        const std::uint64_t as = ones * static_cast<unsigned char>(a);
        const std::uint64_t bs = ones * static_cast<unsigned char>(b);
        for (; i + 8 <= n; i += 8) {
            const std::uint64_t x = load8(s.data() + i);
            const std::uint64_t xa = x ^ as;
            const std::uint64_t xb = x ^ bs;
            // Each term's lowest set bit marks its first match exactly: borrows only run upwards.
            std::uint64_t hit = ((xa - ones) & ~xa) | ((xb - ones) & ~xb);
            if constexpr (controls) hit |= (x - ones * '!') & ~x;
            hit &= high;
            if (hit != 0) return i + static_cast<std::size_t>(std::countr_zero(hit) >> 3);
        }
    }
    for (; i < n; ++i) {
        const char c = s[i];
        if (c == a || c == b || (controls && static_cast<unsigned char>(c) < '!')) return i;
    }
    return n;
}

// Exact comparison against a literal: with the length known at compile time the compiler turns
// the memcmp into a couple of loads, so callers try this before the case-insensitive compare.
inline bool equals_exact(std::string_view text, std::string_view literal) noexcept {
    return text.size() == literal.size() && std::memcmp(text.data(), literal.data(), literal.size()) == 0;
}

// `text` equals `lower` ignoring case; `lower` is lower case. Rejects on the first letter before
// paying for a full comparison, and accepts the usual spelling `as_written` without one.
inline bool matches_name(std::string_view text, std::string_view as_written, std::string_view lower) noexcept {
    if (text.size() != lower.size() || text.empty() || to_lower_ascii(text[0]) != lower[0]) return false;
    return equals_exact(text, as_written) || iequals_lower(text, lower);
}

inline bool istarts_with(std::string_view text, std::string_view lower_prefix) noexcept {
    return text.size() >= lower_prefix.size() && iequals_lower(text.substr(0, lower_prefix.size()), lower_prefix);
}

// Decimal digits only (no sign, no white space, at most 20 digits), rejecting overflow of T.
template <class T>
constexpr std::optional<T> parse_uint(std::string_view s) noexcept {
    const std::size_t n = s.size();
    if (n == 0 || n > 20) return std::nullopt;
    // Nineteen digits always fit in 64 bits, so only a twentieth needs an overflow check.
    const std::size_t safe = n < 19 ? n : 19;
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < safe; ++i) {
        const unsigned digit = static_cast<unsigned char>(s[i]) - unsigned{'0'};
        if (digit > 9) return std::nullopt;
        v = v * 10 + digit;
    }
    if (n == 20) {
        const unsigned digit = static_cast<unsigned char>(s[19]) - unsigned{'0'};
        if (digit > 9 || v > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) return std::nullopt;
        v = v * 10 + digit;
    }
    if (v > std::numeric_limits<T>::max()) return std::nullopt;
    return static_cast<T>(v);
}

// Index of the closing quote of a quoted-string whose opening quote is at `open`, honouring
// backslash escapes; npos when the string is unterminated.
inline constexpr std::size_t find_closing_quote(std::string_view s, std::size_t open) noexcept {
    for (std::size_t i = open + 1; i < s.size(); ++i) {
        if (s[i] == '\\') {
            ++i;
        } else if (s[i] == '"') {
            return i;
        }
    }
    return std::string_view::npos;
}

// Bytes find_unquoted has to look at: quotes, brackets and every separator it is asked for.
inline constexpr std::array<bool, 256> make_list_special_table() noexcept {
    std::array<bool, 256> t{};
    for (char c : std::string_view("\"<>,;")) t[static_cast<unsigned char>(c)] = true;
    return t;
}
inline constexpr std::array<bool, 256> list_special_table = make_list_special_table();

// First `sep` (one of , ; <) that is outside quoted strings and (when `angle` is set) outside
// <...>; npos if none. An unterminated quote swallows the rest, which is what a tolerant reader
// wants. Scans only up to the separator, skipping ordinary bytes with one table lookup each.
inline std::size_t find_unquoted(std::string_view s, char sep, bool angle) noexcept {
    bool in_angle = false;
    const std::size_t n = s.size();
    for (std::size_t i = 0; i < n; ++i) {
        const char c = s[i];
        if (!list_special_table[static_cast<unsigned char>(c)]) continue;
        if (c == '"') {
            const std::size_t close = find_closing_quote(s, i);
            if (close == std::string_view::npos) return std::string_view::npos;
            i = close;
        } else if (c == sep && !in_angle) {
            return i;
        } else if (angle && c == '<') {
            in_angle = true;
        } else if (angle && c == '>') {
            in_angle = false;
        }
    }
    return std::string_view::npos;
}

// Walks the elements of a list separated by `sep` outside quoted strings (and outside <...> when
// `angle` is set). Whether the text has any quote or bracket at all is decided once (memchr: the
// whole value), so the common plain value is split with one find_byte() per element.
class ItemSplitter {
public:
    ItemSplitter(std::string_view text, char sep, bool angle) noexcept
        : rest_(text),
          sep_(sep),
          angle_(angle),
          plain_(text.empty() || (std::memchr(text.data(), '"', text.size()) == nullptr &&
                                  (!angle || std::memchr(text.data(), '<', text.size()) == nullptr))) {}

    bool done() const noexcept { return rest_.empty(); }

    // The next element, trimmed (possibly empty); advances past its separator.
    std::string_view next() noexcept {
        std::size_t at = std::string_view::npos;
        if (plain_) {
            at = find_byte(rest_, 0, sep_);
        } else {
            at = find_unquoted(rest_, sep_, angle_);
        }
        std::string_view item;
        if (at == std::string_view::npos) {
            item = rest_;
            rest_ = {};
        } else {
            item = rest_.substr(0, at);
            rest_ = rest_.substr(at + 1);
        }
        return trim_lws(item);
    }

private:
    std::string_view rest_;
    char sep_;
    bool angle_;
    bool plain_;
};

// Splits off the first element of a comma-separated header value; returns it trimmed and
// advances `rest` past the comma (empty when it was the last one).
inline std::string_view next_list_item(std::string_view& rest) noexcept {
    const std::size_t comma = find_unquoted(rest, ',', true);
    std::string_view item;
    if (comma == std::string_view::npos) {
        item = rest;
        rest = {};
    } else {
        item = rest.substr(0, comma);
        rest = rest.substr(comma + 1);
    }
    return trim_lws(item);
}

// Calls f(name, value, has_value) for each ";name[=value]" parameter, names and values
// trimmed, quoted values without their quotes; stops early when f returns true. The elements are
// those of ItemSplitter(params, ';', false), found in one pass with no library call: parameter
// lists are short, and a search call per element cost more than the bytes it skipped.
template <class F>
void for_each_param(std::string_view params, F&& f) noexcept {
    const std::size_t n = params.size();
    std::size_t i = 0;
    while (i < n) {
        const std::size_t begin = i;
        while (i < n && params[i] != ';') {
            if (params[i] == '"') {
                // A quoted string hides its ';'. Unterminated, it swallows the rest.
                ++i;
                while (i < n && params[i] != '"') i += params[i] == '\\' ? 2 : 1;
                if (i >= n) {
                    i = n;
                    break;
                }
            }
            ++i;
        }
        const std::string_view item = trim_lws(params.substr(begin, i - begin));
        ++i;  // past the ';' (or the end)
        if (item.empty()) continue;
        std::size_t eq = 0;
        while (eq < item.size() && item[eq] != '=') ++eq;
        if (eq == item.size()) {
            if (f(item, item.substr(item.size()), false)) return;
        } else {
            const std::string_view value = trim_lws(item.substr(eq + 1));
            const bool quoted = value.size() >= 2 && value.front() == '"' && value.back() == '"';
            if (f(rtrim_lws(item.substr(0, eq)), quoted ? value.substr(1, value.size() - 2) : value, true)) return;
        }
    }
}

// The end (index of its ';', or the size) of the value of a first parameter written exactly as
// `prefix` (";name=") when that value has no quote or white space, so that for_each_param would
// report it untouched; npos for any other shape, which the caller leaves to for_each_param.
inline std::size_t plain_first_param_end(std::string_view params, std::string_view prefix) noexcept {
    if (params.size() < prefix.size() || std::memcmp(params.data(), prefix.data(), prefix.size()) != 0)
        return std::string_view::npos;
    const std::size_t end = find_first_of2<true>(params, prefix.size(), ';', '"');
    return end == params.size() || params[end] == ';' ? end : std::string_view::npos;
}

inline constexpr std::string_view unquote(std::string_view s) noexcept {
    if (s.size() >= 2 && s.front() == '"' && s.back() == '"') return s.substr(1, s.size() - 2);
    return s;
}

}  // namespace hepd::sip::detail
