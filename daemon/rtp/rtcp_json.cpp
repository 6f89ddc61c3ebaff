#include "rtp/rtcp_json.hpp"

#include "core/ascii.hpp"

#include <array>
#include <bit>
#include <cstring>

namespace hepd::rtp {

std::string_view to_string(RtcpJsonError error) noexcept {
    switch (error) {
    case RtcpJsonError::empty: return "empty";
    case RtcpJsonError::too_long: return "too_long";
    case RtcpJsonError::not_object: return "not_object";
    case RtcpJsonError::syntax: return "syntax";
    case RtcpJsonError::truncated: return "truncated";
    case RtcpJsonError::too_deep: return "too_deep";
    case RtcpJsonError::bad_number: return "bad_number";
    case RtcpJsonError::not_rtcp: return "not_rtcp";
    }
    return "unknown";
}

namespace {

bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }
bool is_hex(char c) noexcept { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// What ends the plain run of a string: its closing quote, an escape, or a control character
// (invalid there). One table load per character instead of three comparisons.
constexpr std::array<bool, 256> kStringStop = [] {
    std::array<bool, 256> stop{};
    for (int c = 0; c < 0x20; ++c) stop[static_cast<std::size_t>(c)] = true;
    stop['"'] = stop['\\'] = true;
    return stop;
}();

// What may follow the integer part of a number: more digits, a fraction or an exponent.
constexpr std::array<bool, 256> kNumberGoesOn = [] {
    std::array<bool, 256> on{};
    for (int c = '0'; c <= '9'; ++c) on[static_cast<std::size_t>(c)] = true;
    on['.'] = on['e'] = on['E'] = true;
    return on;
}();

// n octets at `a` against a literal, as a few word loads whose literal half folds to constants: a
// report has a dozen keys, each tried against a few names, and memcmp was a call each time.
template <std::size_t n>
bool same_bytes(const char* a, const char* name) noexcept {
    static_assert(n >= 2, "every key of RTCP-JSON has two characters or more");
    const auto same = [&](std::size_t at, auto word) {
        decltype(word) x;
        decltype(word) y;
        std::memcpy(&x, a + at, sizeof x);
        std::memcpy(&y, name + at, sizeof y);
        return x == y;
    };
    if constexpr (n >= 8) {
        for (std::size_t at = 0; at + 8 < n; at += 8)
            if (!same(at, std::uint64_t{})) return false;
        return same(n - 8, std::uint64_t{});
    } else if constexpr (n >= 4) {
        return same(0, std::uint32_t{}) && same(n - 4, std::uint32_t{});
    } else {
        return same(0, std::uint16_t{}) && same(n - 2, std::uint16_t{});
    }
}

template <std::size_t N>
bool is_key(std::string_view key, const char (&name)[N]) noexcept {
    return key.size() == N - 1 && same_bytes<N - 1>(key.data(), name);
}

// The same for a key still in the text at p, `avail` octets left: true when they start with
// `member`, a key with its quotes and no escape and the colon, as both senders write them. The
// general string scan would end at that same closing quote with the same key, so it and the
// colon can be skipped.
template <std::size_t N>
bool key_at(const char* p, std::size_t avail, const char (&member)[N]) noexcept {
    return avail >= N - 1 && same_bytes<N - 1>(p, member);
}

// The keys the scanner knows, of all three objects; `other` is any other key.
enum class Key : std::uint8_t {
    other,
    ssrc,
    type,
    report_count,
    report_blocks,
    sender_information,
    source_ssrc,
    fraction_lost,
    packets_lost,
    highest_seq_no,
    ia_jitter,
    lsr,
    dlsr,
    ntp_timestamp_sec,
    ntp_timestamp_usec,
    rtp_timestamp,
    packets,
    octets,
};

// A key matched in place: which, and its length with quotes and colon; 0 if none matched.
struct KeyMatch {
    Key key = Key::other;
    std::size_t length = 0;
};

template <std::size_t N>
bool match(KeyMatch& m, const char* p, std::size_t avail, const char (&name)[N], Key key) noexcept {
    if (!key_at(p, avail, name)) return false;
    m = {key, N - 1};
    return true;
}

// Each object's keys: at(p, avail) names one in place by its first letter (one switch and one
// compare instead of the general string scan and a compare per candidate; p is at a quote with
// two octets or more), of(key) names any key read as a string.
struct TopKeys {
    [[gnu::always_inline]] static KeyMatch at(const char* p, std::size_t avail) noexcept {
        KeyMatch m;
        switch (p[1]) {
        case 's':
            match(m, p, avail, R"("ssrc":)", Key::ssrc) ||
                match(m, p, avail, R"("sender_information":)", Key::sender_information);
            break;
        case 't': match(m, p, avail, R"("type":)", Key::type); break;
        case 'r':
            match(m, p, avail, R"("report_count":)", Key::report_count) ||
                match(m, p, avail, R"("report_blocks":)", Key::report_blocks);
            break;
        default: break;
        }
        return m;
    }
    static Key of(std::string_view key) noexcept {
        if (is_key(key, "ssrc")) return Key::ssrc;
        if (is_key(key, "type")) return Key::type;
        if (is_key(key, "report_count")) return Key::report_count;
        if (is_key(key, "report_blocks")) return Key::report_blocks;
        if (is_key(key, "sender_information")) return Key::sender_information;
        return Key::other;
    }
};

struct BlockKeys {
    [[gnu::always_inline]] static KeyMatch at(const char* p, std::size_t avail) noexcept {
        KeyMatch m;
        switch (p[1]) {
        case 's': match(m, p, avail, R"("source_ssrc":)", Key::source_ssrc); break;
        case 'f': match(m, p, avail, R"("fraction_lost":)", Key::fraction_lost); break;
        case 'p': match(m, p, avail, R"("packets_lost":)", Key::packets_lost); break;
        case 'h': match(m, p, avail, R"("highest_seq_no":)", Key::highest_seq_no); break;
        case 'i': match(m, p, avail, R"("ia_jitter":)", Key::ia_jitter); break;
        case 'l': match(m, p, avail, R"("lsr":)", Key::lsr); break;
        case 'd': match(m, p, avail, R"("dlsr":)", Key::dlsr); break;
        default: break;
        }
        return m;
    }
    static Key of(std::string_view key) noexcept {
        if (is_key(key, "source_ssrc")) return Key::source_ssrc;
        if (is_key(key, "fraction_lost")) return Key::fraction_lost;
        if (is_key(key, "packets_lost")) return Key::packets_lost;
        if (is_key(key, "highest_seq_no")) return Key::highest_seq_no;
        if (is_key(key, "ia_jitter")) return Key::ia_jitter;
        if (is_key(key, "lsr")) return Key::lsr;
        if (is_key(key, "dlsr")) return Key::dlsr;
        return Key::other;
    }
};

struct SenderKeys {
    [[gnu::always_inline]] static KeyMatch at(const char* p, std::size_t avail) noexcept {
        KeyMatch m;
        switch (p[1]) {
        case 'n':
            match(m, p, avail, R"("ntp_timestamp_sec":)", Key::ntp_timestamp_sec) ||
                match(m, p, avail, R"("ntp_timestamp_usec":)", Key::ntp_timestamp_usec);
            break;
        case 'r': match(m, p, avail, R"("rtp_timestamp":)", Key::rtp_timestamp); break;
        case 'p': match(m, p, avail, R"("packets":)", Key::packets); break;
        case 'o': match(m, p, avail, R"("octets":)", Key::octets); break;
        default: break;
        }
        return m;
    }
    static Key of(std::string_view key) noexcept {
        if (is_key(key, "ntp_timestamp_sec")) return Key::ntp_timestamp_sec;
        if (is_key(key, "ntp_timestamp_usec")) return Key::ntp_timestamp_usec;
        if (is_key(key, "rtp_timestamp")) return Key::rtp_timestamp;
        if (is_key(key, "packets")) return Key::packets;
        if (is_key(key, "octets")) return Key::octets;
        return Key::other;
    }
};

// An object whose keys are all skipped.
struct NoKeys {
    static KeyMatch at(const char*, std::size_t) noexcept { return {}; }
    static Key of(std::string_view) noexcept { return Key::other; }
};

// Plain decimal integer text: optional '-', 1 to 19 digits (no sign '+', fraction or exponent).
bool to_integer(std::string_view text, std::int64_t& out) noexcept {
    bool negative = false;
    std::size_t i = 0;
    if (i < text.size() && text[i] == '-') {
        negative = true;
        ++i;
    }
    if (i == text.size() || text.size() - i > 19) return false;
    std::uint64_t value = 0;
    for (; i < text.size(); ++i) {
        if (!is_digit(text[i])) return false;
        value = value * 10 + static_cast<std::uint64_t>(text[i] - '0');
    }
    if (value > static_cast<std::uint64_t>(INT64_MAX)) return false;
    out = negative ? -static_cast<std::int64_t>(value) : static_cast<std::int64_t>(value);
    return true;
}

// A 32-bit field; negative values (C int packing) are taken modulo 2^32.
std::uint32_t as_u32(std::int64_t v) noexcept {
    return static_cast<std::uint32_t>(static_cast<std::uint64_t>(v) & 0xFFFF'FFFFU);
}

// Cumulative loss: the raw unsigned 24-bit field, or an already signed value.
std::int32_t as_lost24(std::int64_t v) noexcept {
    return static_cast<std::int32_t>(v >= 0x80'0000 ? v - 0x100'0000 : v);
}

// The decimal digits that start 8 octets, and their value; the first octet must be a digit.
struct EightDigits {
    unsigned count;  // 1 to 8
    std::uint64_t value;
};

// A whole word at a time (SWAR) on a little-endian machine: most numbers of a report have 3 to 10
// digits, and a loop spends 7 instructions on each.
[[gnu::always_inline]] inline EightDigits leading_digits(const char* p) noexcept {
    std::uint64_t word;
    std::memcpy(&word, p, sizeof word);
    const std::uint64_t d = word - 0x3030'3030'3030'3030U;
    // An octet's top bit: below '0' (borrow) or above '9' (carry). A digit makes neither, so the
    // lowest flagged octet is the first non-digit even though later octets may be disturbed.
    const std::uint64_t non_digit = (d | (word + 0x4646'4646'4646'4646U)) & 0x8080'8080'8080'8080U;
    const auto count = static_cast<unsigned>(std::countr_zero(non_digit)) / 8;
    // The digits to the top octets, as leading zeros below; then pairs, quads and the eight.
    std::uint64_t v = d << (64 - 8 * count);
    v = (v * 10 + (v >> 8)) & 0x00FF'00FF'00FF'00FFU;
    v = (v * 100 + (v >> 16)) & 0x0000'FFFF'0000'FFFFU;
    v = (v * 10000 + (v >> 32)) & 0xFFFF'FFFFU;
    return {count, v};
}

// Where a string's plain run from q ends: at its closing quote, an escape or a control character
// (invalid there), or at `end`. Eight octets at a time on a little-endian machine (as
// leading_digits), then one table load per character.
inline const char* plain_run(const char* q, const char* end) noexcept {
    if constexpr (std::endian::native == std::endian::little) {
        constexpr std::uint64_t ones = 0x0101'0101'0101'0101U;
        constexpr std::uint64_t tops = 0x8080'8080'8080'8080U;
        for (; end - q >= 8; q += 8) {
            std::uint64_t word;
            std::memcpy(&word, q, sizeof word);
            // Top bit of an octet that is 0 after the XOR, or below 0x20: exact up to the first
            // flagged octet, as a borrow only starts at a flagged one.
            const std::uint64_t quote = word ^ (ones * '"');
            const std::uint64_t escape = word ^ (ones * '\\');
            const std::uint64_t stops =
                ((quote - ones) & ~quote) | ((escape - ones) & ~escape) | ((word - ones * 0x20) & ~word);
            if ((stops & tops) != 0) return q + std::countr_zero(stops & tops) / 8;
        }
    }
    while (q < end && !kStringStop[static_cast<unsigned char>(*q)]) ++q;
    return q;
}

class Scanner {
public:
    explicit Scanner(std::string_view text) noexcept : p_(text.data()), end_(text.data() + text.size()) {}

    RtcpJsonError error() const noexcept { return error_; }

    bool fail(RtcpJsonError e) noexcept {
        if (!failed_) {
            failed_ = true;
            error_ = e;
        }
        return false;
    }

    [[gnu::always_inline]] void skip_ws() noexcept {
        // Senders seldom put white space between tokens: one compare settles the usual case.
        if (p_ < end_ && !is_ascii_space(*p_)) return;
        while (p_ < end_ && is_ascii_space(*p_)) ++p_;
    }

    // Whitespace and NUL octets only up to the end.
    bool only_padding_left() noexcept {
        while (p_ < end_ && (is_ascii_space(*p_) || *p_ == '\0')) ++p_;
        return p_ == end_;
    }

    // Next significant character, or '\0' at the end (then `truncated` is the right error).
    char peek() noexcept {
        skip_ws();
        return p_ < end_ ? *p_ : '\0';
    }
    bool at_end() noexcept {
        skip_ws();
        return p_ >= end_;
    }

    bool consume(char c) noexcept {
        skip_ws();
        if (p_ >= end_) return fail(RtcpJsonError::truncated);
        if (*p_ != c) return fail(RtcpJsonError::syntax);
        ++p_;
        return true;
    }

    [[gnu::always_inline]] bool string(std::string_view& raw) noexcept {
        if (!consume('"')) return false;
        const char* start = p_;
        for (;;) {
            // A free function: with a local cursor, not p_, which every character read (a char
            // may alias it) would reload and store.
            p_ = plain_run(p_, end_);
            if (p_ >= end_) return fail(RtcpJsonError::truncated);
            const auto c = static_cast<unsigned char>(*p_);
            if (c == '"') {
                raw = std::string_view(start, static_cast<std::size_t>(p_ - start));
                ++p_;
                return true;
            }
            if (c != '\\') return fail(RtcpJsonError::syntax);  // a control character
            if (++p_ >= end_) return fail(RtcpJsonError::truncated);
            const char e = *p_++;
            if (e == 'u') {
                for (int i = 0; i < 4; ++i, ++p_) {
                    if (p_ >= end_) return fail(RtcpJsonError::truncated);
                    if (!is_hex(*p_)) return fail(RtcpJsonError::syntax);
                }
            } else if (e != '"' && e != '\\' && e != '/' && e != 'b' && e != 'f' && e != 'n' && e != 'r' && e != 't') {
                return fail(RtcpJsonError::syntax);
            }
        }
    }

    bool number(std::string_view& raw) noexcept {
        skip_ws();
        const char* start = p_;
        if (p_ < end_ && *p_ == '-') ++p_;
        if (p_ >= end_) return fail(RtcpJsonError::truncated);
        if (*p_ == '0') {
            ++p_;
        } else if (is_digit(*p_)) {
            while (p_ < end_ && is_digit(*p_)) ++p_;
        } else {
            return fail(RtcpJsonError::syntax);
        }
        if (p_ < end_ && *p_ == '.') {
            ++p_;
            if (!digits()) return false;
        }
        if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
            ++p_;
            if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
            if (!digits()) return false;
        }
        raw = std::string_view(start, static_cast<std::size_t>(p_ - start));
        return true;
    }

    bool literal(std::string_view word) noexcept {
        skip_ws();
        for (const char c : word) {
            if (p_ >= end_) return fail(RtcpJsonError::truncated);
            if (*p_ != c) return fail(RtcpJsonError::syntax);
            ++p_;
        }
        return true;
    }

    // Walks an object, handing each member's key to on_member(key, depth), which must consume
    // the value. Keys (see TopKeys) names them.
    template <class Keys, class OnMember>
    bool object(int depth, OnMember&& on_member) noexcept {
        if (depth > kMaxRtcpJsonDepth) return fail(RtcpJsonError::too_deep);
        if (!consume('{')) return false;
        if (peek() == '}') {
            ++p_;
            return true;
        }
        for (;;) {
            KeyMatch m;
            if (!(p_ < end_ && *p_ == '"')) skip_ws();  // the quote is usually right there
            if (end_ - p_ >= 2 && *p_ == '"') m = Keys::at(p_, static_cast<std::size_t>(end_ - p_));
            if (m.length != 0) {
                p_ += m.length;
            } else {
                std::string_view text;
                if (!string(text) || !consume(':')) return false;
                m.key = Keys::of(text);
            }
            if (!on_member(m.key, depth)) return false;
            // Usually right after the value; else as at_end().
            if (p_ < end_ && *p_ == ',') {
                ++p_;
                continue;
            }
            if (at_end()) return fail(RtcpJsonError::truncated);
            const char next = *p_++;
            if (next == ',') continue;
            if (next == '}') return true;
            return fail(RtcpJsonError::syntax);
        }
    }

    template <class OnElement>
    bool array(int depth, OnElement&& on_element) noexcept {
        if (depth > kMaxRtcpJsonDepth) return fail(RtcpJsonError::too_deep);
        if (!consume('[')) return false;
        if (peek() == ']') {
            ++p_;
            return true;
        }
        for (;;) {
            if (!on_element(depth)) return false;
            if (at_end()) return fail(RtcpJsonError::truncated);
            const char next = *p_++;
            if (next == ',') continue;
            if (next == ']') return true;
            return fail(RtcpJsonError::syntax);
        }
    }

    bool skip_value(int depth) noexcept {
        switch (peek()) {
        case '{': return object<NoKeys>(depth + 1, [this](Key, int d) { return skip_value(d); });
        case '[': return array(depth + 1, [this](int d) { return skip_value(d); });
        case '"': {
            std::string_view ignored;
            return string(ignored);
        }
        case 't': return literal("true");
        case 'f': return literal("false");
        case 'n': return literal("null");
        case '\0':
            if (at_end()) return fail(RtcpJsonError::truncated);
            return fail(RtcpJsonError::syntax);
        default: {
            // A plain integer is one that number() accepts, and the one-pass read is cheaper.
            std::int64_t value = 0;
            if (is_digit(*p_) && plain_integer(p_, value)) return true;
            std::string_view ignored;
            return number(ignored);
        }
        }
    }

    // true (and skips it) when the next value is `null`.
    bool null_value() noexcept {
        if (peek() != 'n') return false;
        return literal("null");
    }
    bool failed() const noexcept { return failed_; }

    // An integer field: a JSON integer or, as Asterisk writes some, a string of digits. The
    // common case is inlined into every field; the rest is a call.
    [[gnu::always_inline]] bool integer(int depth, std::int64_t& out) noexcept {
        if (p_ < end_ && is_digit(*p_) && plain_integer(p_, out)) return true;  // no white space first
        return unusual_integer(depth, out);
    }

    [[gnu::noinline]] bool unusual_integer(int depth, std::int64_t& out) noexcept {
        const char c = peek();
        if (is_digit(c) && plain_integer(p_, out)) return true;
        // Asterisk's SSRCs above 2^31: a plain integer after the sign, as number() would take it.
        if (c == '-' && end_ - p_ >= 2 && is_digit(p_[1]) && plain_integer(p_ + 1, out)) {
            out = -out;
            return true;
        }
        // Asterisk's strings of digits, leading zeros too, as string() and to_integer() would
        // read them; longer ones than 18 digits go that way.
        if (c == '"' && end_ - p_ >= 2 && is_digit(p_[1])) {
            std::uint64_t value = 0;
            const char* q = up_to_18_digits(p_ + 1, value);
            if (q < end_ && *q == '"') {
                p_ = q + 1;
                out = static_cast<std::int64_t>(value);
                return true;
            }
        }
        std::string_view text;
        if (c == '"') {
            if (!string(text)) return false;
        } else if (c == '-' || is_digit(c)) {
            if (!number(text)) return false;
        } else {
            if (!skip_value(depth)) return false;
            return fail(RtcpJsonError::bad_number);
        }
        return to_integer(text, out) || fail(RtcpJsonError::bad_number);
    }

    [[gnu::always_inline]] bool ranged(int depth, std::int64_t low, std::int64_t high, std::int64_t& out) noexcept {
        if (!integer(depth, out)) return false;
        return (out >= low && out <= high) || fail(RtcpJsonError::bad_number);
    }

    // A known key's integer, in its range. Each object reads all its fields through one call
    // site, so that the inlined read is not repeated per field nor called out of line.
    [[gnu::always_inline]] bool field(int depth, Key key, std::int64_t& out) noexcept {
        switch (key) {
        case Key::type:
        case Key::report_count:
        case Key::fraction_lost: return ranged(depth, 0, 255, out);
        case Key::packets_lost: return ranged(depth, -0x80'0000, 0xFF'FFFF, out);
        default: return ranged(depth, INT32_MIN, UINT32_MAX, out);
        }
    }

private:
    // The common number, read in one pass: 0, or 1 to 18 digits without a leading zero, not
    // followed by a fraction, an exponent or more digits. Anything else is left to number() and
    // to_integer(), which say what is wrong with it. `from` is at a digit; on success p_ is moved
    // past the number.
    [[gnu::always_inline]] bool plain_integer(const char* from, std::int64_t& out) noexcept {
        const char* q = from;
        std::uint64_t value = 0;
        if (*q == '0') {
            ++q;  // "01" is not JSON: the general path fails it
        } else {
            q = up_to_18_digits(q, value);
        }
        if (q < end_ && kNumberGoesOn[static_cast<unsigned char>(*q)]) return false;
        p_ = q;
        out = static_cast<std::int64_t>(value);
        return true;
    }

    // The digits from q, which is at one, but no more than 18, and their value; returns where
    // they end.
    [[gnu::always_inline]] const char* up_to_18_digits(const char* q, std::uint64_t& value) const noexcept {
        if (std::endian::native == std::endian::little && end_ - q >= 8) {
            const EightDigits head = leading_digits(q);
            value = head.value;
            q += head.count;
            return head.count == 8 ? more_digits(q, end_ - q > 10 ? q + 10 : end_, value) : q;
        }
        value = 0;
        return more_digits(q, end_ - q > 18 ? q + 18 : end_, value);
    }

    // Appends the digits from q up to stop to value; returns where they end.
    static const char* more_digits(const char* q, const char* stop, std::uint64_t& value) noexcept {
        for (; q < stop && is_digit(*q); ++q) value = value * 10 + static_cast<unsigned>(*q - '0');
        return q;
    }

    bool digits() noexcept {
        if (p_ >= end_) return fail(RtcpJsonError::truncated);
        if (!is_digit(*p_)) return fail(RtcpJsonError::syntax);
        while (p_ < end_ && is_digit(*p_)) ++p_;
        return true;
    }

    const char* p_;
    const char* end_;
    bool failed_ = false;
    RtcpJsonError error_ = RtcpJsonError::syntax;
};

bool parse_block(Scanner& s, int depth, RtcpJsonReport& report) noexcept {
    if (s.peek() != '{') {
        if (!s.skip_value(depth)) return false;
        ++report.blocks_dropped;
        return true;
    }
    RtcpJsonBlock block;
    bool has_source = false;
    const bool ok = s.object<BlockKeys>(depth + 1, [&](Key key, int d) {
        if (key == Key::other) return s.skip_value(d);
        std::int64_t v = 0;
        if (!s.field(d, key, v)) return false;
        switch (key) {
        case Key::source_ssrc:
            has_source = true;
            block.source_ssrc = as_u32(v);
            break;
        case Key::fraction_lost: block.fraction_lost = static_cast<std::uint8_t>(v); break;
        case Key::packets_lost: block.packets_lost = as_lost24(v); break;
        case Key::highest_seq_no: block.highest_seq_no = as_u32(v); break;
        case Key::ia_jitter: block.ia_jitter = as_u32(v); break;
        case Key::lsr: block.lsr = as_u32(v); break;
        case Key::dlsr: block.dlsr = as_u32(v); break;
        default: break;
        }
        return true;
    });
    if (!ok) return false;
    if (!has_source || report.block_count >= kMaxRtcpJsonBlocks) {
        ++report.blocks_dropped;
        return true;
    }
    report.blocks[report.block_count++] = block;
    return true;
}

// Out of line, as parse_sender_info: inlined, they made the top-level member handler too large
// to inline, and a call per member cost more.
[[gnu::noinline]] bool parse_blocks(Scanner& s, int depth, RtcpJsonReport& report) noexcept {
    if (s.null_value()) return true;
    if (s.failed()) return false;
    if (s.peek() != '[') {
        if (!s.skip_value(depth)) return false;
        return s.fail(RtcpJsonError::syntax);
    }
    return s.array(depth + 1, [&](int d) { return parse_block(s, d, report); });
}

[[gnu::noinline]] bool parse_sender_info(Scanner& s, int depth, RtcpJsonReport& report) noexcept {
    if (s.null_value()) return true;
    if (s.failed()) return false;
    if (s.peek() != '{') {
        if (!s.skip_value(depth)) return false;
        return s.fail(RtcpJsonError::syntax);
    }
    RtcpJsonSenderInfo info;
    const bool ok = s.object<SenderKeys>(depth + 1, [&](Key key, int d) {
        if (key == Key::other) return s.skip_value(d);
        std::int64_t v = 0;
        if (!s.field(d, key, v)) return false;
        const std::uint32_t u = as_u32(v);
        switch (key) {
        case Key::ntp_timestamp_sec: info.ntp_timestamp_sec = u; break;
        case Key::ntp_timestamp_usec: info.ntp_timestamp_usec = u; break;
        case Key::rtp_timestamp: info.rtp_timestamp = u; break;
        case Key::packets: info.packets = u; break;
        case Key::octets: info.octets = u; break;
        default: break;
        }
        return true;
    });
    if (!ok) return false;
    if (!report.has_sender_info) {
        report.sender_info = info;
        report.has_sender_info = true;
    }
    return true;
}

}  // namespace

std::optional<RtcpJsonError> parse_rtcp_json_into(std::string_view text, RtcpJsonReport& report) noexcept {
    static_cast<RtcpJsonReportFields&>(report) = RtcpJsonReportFields{};
    if (text.size() > kMaxRtcpJsonSize) return RtcpJsonError::too_long;
    if (Scanner(text).only_padding_left()) return RtcpJsonError::empty;
    Scanner scan(text);
    if (scan.peek() != '{') return RtcpJsonError::not_object;

    bool has_blocks = false;
    const bool ok = scan.object<TopKeys>(1, [&](Key key, int depth) {
        switch (key) {
        case Key::other: return scan.skip_value(depth);
        case Key::report_blocks: has_blocks = true; return parse_blocks(scan, depth, report);
        case Key::sender_information: return parse_sender_info(scan, depth, report);
        default: break;
        }
        std::int64_t v = 0;
        if (!scan.field(depth, key, v)) return false;
        // A compound packet repeats them: the first reporter's stay.
        if (key == Key::ssrc && !report.has_ssrc) {
            report.ssrc = as_u32(v);
            report.has_ssrc = true;
        } else if (key == Key::type && !report.has_type) {
            report.type = static_cast<std::uint8_t>(v);
            report.has_type = true;
        } else if (key == Key::report_count && !report.has_report_count) {
            report.report_count = static_cast<std::uint8_t>(v);
            report.has_report_count = true;
        }
        return true;
    });
    if (!ok) return scan.error();
    if (!scan.only_padding_left()) return RtcpJsonError::syntax;
    if (!report.has_ssrc && !has_blocks) return RtcpJsonError::not_rtcp;
    return std::nullopt;
}

Result<RtcpJsonReport, RtcpJsonError> parse_rtcp_json(std::string_view text) noexcept {
    RtcpJsonReport report;
    if (const auto error = parse_rtcp_json_into(text, report)) return fail(*error);
    return report;
}

}  // namespace hepd::rtp
