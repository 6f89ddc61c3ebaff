#include "rtp/demux.hpp"

namespace hepd::rtp {

std::string_view to_string(PacketKind kind) noexcept {
    switch (kind) {
    case PacketKind::unknown: return "unknown";
    case PacketKind::rtp: return "rtp";
    case PacketKind::rtcp: return "rtcp";
    case PacketKind::stun: return "stun";
    case PacketKind::zrtp: return "zrtp";
    case PacketKind::dtls: return "dtls";
    case PacketKind::turn_channel: return "turn_channel";
    }
    return "unknown";
}

PacketKind classify(ByteSpan bytes) noexcept {
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
