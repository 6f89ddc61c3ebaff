#pragma once
// RTP data packets (RFC 3550 section 5.1) and their header extensions (RFC 8285). The parser is
// pure and zero-copy: every view points into the caller's buffer, which must outlive the result.
#include "core/bytes.hpp"
#include "core/result.hpp"
#include "rtp/ssrc_list.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace hepd::rtp {

enum class RtpError : std::uint8_t {
    too_short,                    // fewer than the 12 octets of the fixed header
    bad_version,                  // V != 2
    csrc_truncated,               // CC says more CSRCs than the packet holds
    extension_truncated,          // X set but no room for the 4-octet extension header
    extension_length_overflow,    // extension length (32-bit words) runs past the packet
    padding_zero,                 // P set but the padding count octet is 0
    padding_overflow,             // padding count larger than what follows the header
    extension_element_truncated,  // an RFC 8285 element runs past the extension data
};

std::string_view to_string(RtpError error) noexcept;

struct RtpPacket {
    bool padding = false;
    bool extension = false;
    bool marker = false;
    std::uint8_t payload_type = 0;  // 7 bits
    std::uint16_t sequence = 0;
    std::uint32_t timestamp = 0;
    std::uint32_t ssrc = 0;
    SsrcList csrcs;                       // CC entries
    std::uint16_t extension_profile = 0;  // "defined by profile" field; 0 when !extension
    ByteSpan extension_data;              // extension body (length * 4 octets), without its header
    std::uint8_t padding_size = 0;        // octets removed from the end (0 when !padding)
    std::size_t header_size = 0;          // fixed header + CSRCs + extension
    ByteSpan payload;                     // padding removed; may be empty
};

// Validates the whole header chain and the padding count against the buffer (RFC 3550 A.1 checks
// that do not need stream state).
Result<RtpPacket, RtpError> parse_rtp(ByteSpan bytes) noexcept;
// The same into `packet` (all of it written on success, unspecified on an error), without a
// Result to copy it through: the stream table parses every media packet this way.
std::optional<RtpError> parse_rtp_into(ByteSpan bytes, RtpPacket& packet) noexcept;

// RFC 8285 header extension elements.
inline constexpr std::uint16_t one_byte_extension_profile = 0xBEDE;
// Two-byte form: 0x100 in the top 12 bits, 4 application-specific bits below.
inline constexpr bool is_two_byte_extension_profile(std::uint16_t profile) noexcept {
    return (profile & 0xFFF0) == 0x1000;
}

struct ExtensionElement {
    std::uint8_t id = 0;  // 1..14 (one-byte form) or 1..255 (two-byte form)
    ByteSpan data;        // 1..16 octets (one-byte form) or 0..255 octets (two-byte form)
};

// Walks the elements of a one-byte or two-byte extension; any other profile yields nothing.
// Padding octets (ID 0) are skipped; in the one-byte form ID 15 stops the walk (RFC 8285 4.2).
//
//   ExtensionElementReader reader(packet);
//   for (ExtensionElement e; reader.next(e);) use(e);
//   if (reader.failed()) count(RtpError::extension_element_truncated);
class ExtensionElementReader {
public:
    explicit ExtensionElementReader(const RtpPacket& packet) noexcept
        : ExtensionElementReader(packet.extension_profile, packet.extension_data) {}
    ExtensionElementReader(std::uint16_t profile, ByteSpan data) noexcept;

    // False at the end or on a malformed element (then failed() is true and stays true).
    bool next(ExtensionElement& out) noexcept;
    bool failed() const noexcept { return failed_; }

private:
    enum class Form : std::uint8_t { none, one_byte, two_byte };
    ByteSpan data_;
    std::size_t pos_ = 0;
    Form form_ = Form::none;
    bool failed_ = false;
};

}  // namespace hepd::rtp
