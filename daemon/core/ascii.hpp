#pragma once
// Character classes shared by the text parsers (SIP, SDP, RTCP-JSON).
#include <cstdint>

namespace hepd {

// SP, HT, CR or LF: SIP's linear white space (a folded header value keeps its CRLF) and JSON's
// white space alike. One compare and one bit test: they are bits 32, 9, 13 and 10 of the mask.
inline constexpr bool is_ascii_space(char c) noexcept {
    const auto u = static_cast<unsigned char>(c);
    return u <= ' ' && ((std::uint64_t{0x1'0000'2600} >> u) & 1U) != 0;
}

}  // namespace hepd
