#pragma once
// Tells apart what shares one media port (RFC 7983 first-octet ranges, then RFC 5761 section 4
// for RTP versus RTCP). A hint for routing only: the matching parser still validates the packet.
#include "core/bytes.hpp"

#include <cstdint>
#include <string_view>

namespace hepd::rtp {

enum class PacketKind : std::uint8_t { unknown, rtp, rtcp, stun, zrtp, dtls, turn_channel };

std::string_view to_string(PacketKind kind) noexcept;

// First octet: 0-3 STUN, 16-19 ZRTP, 20-63 DTLS, 64-79 TURN ChannelData, 128-191 RTP/RTCP
// (version 2). For RTP/RTCP the second octet decides: 192-223 is an RTCP packet type, anything
// else is marker bit + payload type (which is why payload types 64-95 must not be used when
// RTP and RTCP are multiplexed). An RTP/RTCP candidate shorter than 2 octets is unknown.
// Inline: every UDP packet off the SIP and HEP ports of a capture is classified, in every reader.
inline PacketKind classify(ByteSpan bytes) noexcept {
    if (bytes.empty()) return PacketKind::unknown;
    const std::uint8_t first = bytes[0];
    if (first <= 3) return PacketKind::stun;
    if (first >= 16 && first <= 19) return PacketKind::zrtp;
    if (first >= 20 && first <= 63) return PacketKind::dtls;
    if (first >= 64 && first <= 79) return PacketKind::turn_channel;
    if (first >= 128 && first <= 191) {
        if (bytes.size() < 2) return PacketKind::unknown;
        const std::uint8_t second = bytes[1];
        return (second >= 192 && second <= 223) ? PacketKind::rtcp : PacketKind::rtp;
    }
    return PacketKind::unknown;
}

}  // namespace hepd::rtp
