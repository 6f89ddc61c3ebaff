#include "rtp/rtcp_json.hpp"

#include "core/ascii.hpp"

#include <array>
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

// A key against a literal, as a few word loads whose literal half folds to constants: a report
// has a dozen keys, each tried against a few names, and memcmp was a call each time.
template <std::size_t N>
bool is_key(std::string_view key, const char (&name)[N]) noexcept {
    constexpr std::size_t n = N - 1;
    static_assert(n >= 2, "every key of RTCP-JSON has two characters or more");
    if (key.size() != n) return false;
    const auto same = [&](std::size_t at, auto word) {
        decltype(word) a;
        decltype(word) b;
        std::memcpy(&a, key.data() + at, sizeof a);
        std::memcpy(&b, name + at, sizeof b);
        return a == b;
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

    void skip_ws() noexcept {
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
            // A local cursor: through a member, every character read (a char may alias it) would
            // reload and store p_.
            const char* q = p_;
            while (q < end_ && !kStringStop[static_cast<unsigned char>(*q)]) ++q;
            p_ = q;
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
    // the value.
    template <class OnMember>
    bool object(int depth, OnMember&& on_member) noexcept {
        if (depth > kMaxRtcpJsonDepth) return fail(RtcpJsonError::too_deep);
        if (!consume('{')) return false;
        if (peek() == '}') {
            ++p_;
            return true;
        }
        for (;;) {
            std::string_view key;
            if (!string(key) || !consume(':') || !on_member(key, depth)) return false;
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
        case '{': return object(depth + 1, [this](std::string_view, int d) { return skip_value(d); });
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
        const char c = peek();
        if (is_digit(c) && plain_integer(out)) return true;
        return unusual_integer(depth, c, out);
    }

    bool unusual_integer(int depth, char c, std::int64_t& out) noexcept {
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

    // 32-bit field; negative values (C int packing) are taken modulo 2^32.
    bool u32(int depth, std::uint32_t& out) noexcept {
        std::int64_t v = 0;
        if (!ranged(depth, INT32_MIN, UINT32_MAX, v)) return false;
        out = static_cast<std::uint32_t>(static_cast<std::uint64_t>(v) & 0xFFFF'FFFFU);
        return true;
    }

    bool u8(int depth, std::uint8_t& out) noexcept {
        std::int64_t v = 0;
        if (!ranged(depth, 0, 255, v)) return false;
        out = static_cast<std::uint8_t>(v);
        return true;
    }

    // Cumulative loss: the raw unsigned 24-bit field, or an already signed value.
    bool lost24(int depth, std::int32_t& out) noexcept {
        std::int64_t v = 0;
        if (!ranged(depth, -0x80'0000, 0xFF'FFFF, v)) return false;
        if (v >= 0x80'0000) v -= 0x100'0000;
        out = static_cast<std::int32_t>(v);
        return true;
    }

private:
    // The common number, read in one pass: 0, or 1 to 18 digits without a leading zero, not
    // followed by a fraction, an exponent or more digits. Anything else is left to number() and
    // to_integer(), which say what is wrong with it. p_ is at a digit.
    [[gnu::always_inline]] bool plain_integer(std::int64_t& out) noexcept {
        const char* q = p_;
        std::int64_t value = 0;
        if (*q == '0') {
            ++q;  // "01" is not JSON: the general path fails it
        } else {
            const char* const stop = end_ - q > 18 ? q + 18 : end_;
            for (auto d = static_cast<unsigned>(*q - '0'); d < 10; d = static_cast<unsigned>(*q - '0')) {
                value = value * 10 + d;
                if (++q == stop) break;
            }
        }
        if (q < end_ && (is_digit(*q) || *q == '.' || *q == 'e' || *q == 'E')) return false;
        p_ = q;
        out = value;
        return true;
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
    const bool ok = s.object(depth + 1, [&](std::string_view key, int d) {
        if (is_key(key, "source_ssrc")) {
            has_source = true;
            return s.u32(d, block.source_ssrc);
        }
        if (is_key(key, "fraction_lost")) return s.u8(d, block.fraction_lost);
        if (is_key(key, "packets_lost")) return s.lost24(d, block.packets_lost);
        if (is_key(key, "highest_seq_no")) return s.u32(d, block.highest_seq_no);
        if (is_key(key, "ia_jitter")) return s.u32(d, block.ia_jitter);
        if (is_key(key, "lsr")) return s.u32(d, block.lsr);
        if (is_key(key, "dlsr")) return s.u32(d, block.dlsr);
        return s.skip_value(d);
    });
    if (!ok) return false;
    if (!has_source || report.block_count >= kMaxRtcpJsonBlocks) {
        ++report.blocks_dropped;
        return true;
    }
    report.blocks[report.block_count++] = block;
    return true;
}

bool parse_sender_info(Scanner& s, int depth, RtcpJsonReport& report) noexcept {
    if (s.null_value()) return true;
    if (s.failed()) return false;
    if (s.peek() != '{') {
        if (!s.skip_value(depth)) return false;
        return s.fail(RtcpJsonError::syntax);
    }
    RtcpJsonSenderInfo info;
    const bool ok = s.object(depth + 1, [&](std::string_view key, int d) {
        if (is_key(key, "ntp_timestamp_sec")) return s.u32(d, info.ntp_timestamp_sec);
        if (is_key(key, "ntp_timestamp_usec")) return s.u32(d, info.ntp_timestamp_usec);
        if (is_key(key, "rtp_timestamp")) return s.u32(d, info.rtp_timestamp);
        if (is_key(key, "packets")) return s.u32(d, info.packets);
        if (is_key(key, "octets")) return s.u32(d, info.octets);
        return s.skip_value(d);
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
    const bool ok = scan.object(1, [&](std::string_view key, int depth) {
        if (is_key(key, "ssrc")) {
            std::uint32_t v = 0;
            if (!scan.u32(depth, v)) return false;
            if (!report.has_ssrc) {
                report.ssrc = v;
                report.has_ssrc = true;
            }
            return true;
        }
        if (is_key(key, "type")) {
            std::uint8_t v = 0;
            if (!scan.u8(depth, v)) return false;
            if (!report.has_type) {
                report.type = v;
                report.has_type = true;
            }
            return true;
        }
        if (is_key(key, "report_count")) {
            std::uint8_t v = 0;
            if (!scan.u8(depth, v)) return false;
            if (!report.has_report_count) {
                report.report_count = v;
                report.has_report_count = true;
            }
            return true;
        }
        if (is_key(key, "report_blocks")) {
            has_blocks = true;
            if (scan.null_value()) return true;
            if (scan.failed()) return false;
            if (scan.peek() != '[') {
                if (!scan.skip_value(depth)) return false;
                return scan.fail(RtcpJsonError::syntax);
            }
            return scan.array(depth + 1, [&](int d) { return parse_block(scan, d, report); });
        }
        if (is_key(key, "sender_information")) return parse_sender_info(scan, depth, report);
        return scan.skip_value(depth);
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
