#pragma once
// Character classes shared by the text parsers (SIP, SDP, RTCP-JSON).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace hepd {

// SP, HT, CR or LF: SIP's linear white space (a folded header value keeps its CRLF) and JSON's
// white space alike. One compare and one bit test: they are bits 32, 9, 13 and 10 of the mask.
inline constexpr bool is_ascii_space(char c) noexcept {
    const auto u = static_cast<unsigned char>(c);
    return u <= ' ' && ((std::uint64_t{0x1'0000'2600} >> u) & 1U) != 0;
}

// ASCII lower case, other bytes unchanged. Branch-free: header names are compared byte by byte
// on every packet.
inline constexpr char to_lower_ascii(char c) noexcept {
    const auto u = static_cast<unsigned char>(c);
    return static_cast<char>(u + (static_cast<unsigned char>(u - 'A') < 26U ? 32U : 0U));
}

// ASCII case-insensitive equality (protocol names, header names, codec names).
inline constexpr bool iequals_ascii(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (to_lower_ascii(a[i]) != to_lower_ascii(b[i])) return false;
    return true;
}

// Lower-cases the ASCII letters among 8 bytes at once (exact: other bytes are left alone).
inline std::uint64_t lower8(std::uint64_t x) noexcept {
    const std::uint64_t low7 = x & 0x7f7f7f7f7f7f7f7fULL;
    const std::uint64_t ge_a = low7 + 0x3f3f3f3f3f3f3f3fULL;  // bit 7 set where byte >= 'A'
    const std::uint64_t gt_z = low7 + 0x2525252525252525ULL;  // bit 7 set where byte > 'Z'
    const std::uint64_t upper = ge_a & ~gt_z & ~x & 0x8080808080808080ULL;
    return x | (upper >> 2);
}

inline std::uint64_t load8(const char* p) noexcept {
    std::uint64_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
inline std::uint64_t load4(const char* p) noexcept {
    std::uint32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
inline std::uint64_t load2(const char* p) noexcept {
    std::uint16_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// ASCII case-insensitive equality; `lower` must already be lower case. Header names, SDP
// attribute names and codec names go through here on every packet, hence the 8-bytes-at-a-time path.
inline bool iequals_lower(std::string_view text, std::string_view lower) noexcept {
    const std::size_t n = text.size();
    if (n != lower.size()) return false;
    const char* t = text.data();
    const char* l = lower.data();
    // Short names: two overlapping loads cover every length (zero-extended bytes are no letters).
    if (n < 8) {
        if (n >= 4) return lower8(load4(t)) == load4(l) && lower8(load4(t + n - 4)) == load4(l + n - 4);
        if (n >= 2) return lower8(load2(t)) == load2(l) && lower8(load2(t + n - 2)) == load2(l + n - 2);
        return n == 0 || to_lower_ascii(t[0]) == l[0];
    }
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8)
        if (lower8(load8(text.data() + i)) != load8(lower.data() + i)) return false;
    // The tail re-reads a few bytes already compared rather than looping byte by byte.
    return i == n || lower8(load8(text.data() + n - 8)) == load8(lower.data() + n - 8);
}

}  // namespace hepd
