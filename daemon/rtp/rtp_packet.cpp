#include "rtp/rtp_packet.hpp"

namespace hepd::rtp {

std::string_view to_string(RtpError error) noexcept {
    switch (error) {
    case RtpError::too_short: return "too_short";
    case RtpError::bad_version: return "bad_version";
    case RtpError::csrc_truncated: return "csrc_truncated";
    case RtpError::extension_truncated: return "extension_truncated";
    case RtpError::extension_length_overflow: return "extension_length_overflow";
    case RtpError::padding_zero: return "padding_zero";
    case RtpError::padding_overflow: return "padding_overflow";
    case RtpError::extension_element_truncated: return "extension_element_truncated";
    }
    return "unknown";
}

std::optional<RtpError> parse_rtp_into(ByteSpan bytes, RtpPacket& packet) noexcept {
    constexpr std::size_t fixed_header = 12;
    const std::size_t size = bytes.size();
    if (size < fixed_header) return RtpError::too_short;
    const std::uint8_t* p = bytes.data();
    const std::uint8_t first = p[0];
    if ((first >> 6) != 2) return RtpError::bad_version;

    packet.padding = (first & 0x20) != 0;
    packet.extension = (first & 0x10) != 0;
    packet.marker = (p[1] & 0x80) != 0;
    packet.payload_type = static_cast<std::uint8_t>(p[1] & 0x7F);
    packet.sequence = load_be16(p + 2);
    packet.timestamp = load_be32(p + 4);
    packet.ssrc = load_be32(p + 8);

    std::size_t offset = fixed_header + 4 * std::size_t{first & 0x0Fu};
    if (offset > size) return RtpError::csrc_truncated;
    packet.csrcs = SsrcList(bytes.subspan(fixed_header, offset - fixed_header));

    if (packet.extension) {
        if (size - offset < 4) return RtpError::extension_truncated;
        packet.extension_profile = load_be16(p + offset);
        const std::size_t length = 4 * std::size_t{load_be16(p + offset + 2)};
        offset += 4;
        if (length > size - offset) return RtpError::extension_length_overflow;
        packet.extension_data = bytes.subspan(offset, length);
        offset += length;
    } else {
        packet.extension_profile = 0;
        packet.extension_data = {};
    }
    packet.header_size = offset;

    std::size_t end = size;
    if (packet.padding) {
        // The count octet is itself part of the padding, so a count of 0 is impossible.
        const std::uint8_t count = p[size - 1];
        if (count == 0) return RtpError::padding_zero;
        if (count > size - offset) return RtpError::padding_overflow;
        packet.padding_size = count;
        end -= count;
    } else {
        packet.padding_size = 0;
    }
    packet.payload = bytes.subspan(offset, end - offset);
    return std::nullopt;
}

Result<RtpPacket, RtpError> parse_rtp(ByteSpan bytes) noexcept {
    RtpPacket packet;
    if (const auto error = parse_rtp_into(bytes, packet)) return fail(*error);
    return packet;
}

ExtensionElementReader::ExtensionElementReader(std::uint16_t profile, ByteSpan data) noexcept : data_(data) {
    if (profile == one_byte_extension_profile) {
        form_ = Form::one_byte;
    } else if (is_two_byte_extension_profile(profile)) {
        form_ = Form::two_byte;
    }
}

bool ExtensionElementReader::next(ExtensionElement& out) noexcept {
    if (failed_) return false;
    const std::size_t size = data_.size();
    const std::uint8_t* p = data_.data();
    while (pos_ < size) {
        const std::uint8_t head = p[pos_];
        if (form_ == Form::one_byte) {
            const auto id = static_cast<std::uint8_t>(head >> 4);
            if (id == 0) {  // padding octet between or after elements
                ++pos_;
                continue;
            }
            if (id == 15) {  // reserved: the rest of the extension must be ignored
                pos_ = size;
                return false;
            }
            const std::size_t length = std::size_t{head & 0x0Fu} + 1;
            if (length > size - pos_ - 1) {
                failed_ = true;
                return false;
            }
            out.id = id;
            out.data = data_.subspan(pos_ + 1, length);
            pos_ += 1 + length;
            return true;
        }
        if (form_ == Form::two_byte) {
            if (head == 0) {
                ++pos_;
                continue;
            }
            if (size - pos_ < 2) {
                failed_ = true;
                return false;
            }
            const std::size_t length = p[pos_ + 1];
            if (length > size - pos_ - 2) {
                failed_ = true;
                return false;
            }
            out.id = head;
            out.data = data_.subspan(pos_ + 2, length);
            pos_ += 2 + length;
            return true;
        }
        return false;  // a profile-specific extension this reader does not know
    }
    return false;
}

}  // namespace hepd::rtp
