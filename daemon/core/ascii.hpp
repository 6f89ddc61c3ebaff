#pragma once
// Character classes shared by the text parsers (SIP, SDP, RTCP-JSON).
#include <cstddef>
#include <cstdint>
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

}  // namespace hepd
