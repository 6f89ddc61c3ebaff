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

}  // namespace hepd::rtp
