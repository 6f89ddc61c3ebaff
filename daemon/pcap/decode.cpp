#include "pcap/decode.hpp"

#include <algorithm>

namespace hepd::pcap {

namespace {

constexpr std::uint16_t kEtherIpv4 = 0x0800;
constexpr std::uint16_t kEtherIpv6 = 0x86dd;
constexpr std::uint16_t kEtherVlan = 0x8100;
constexpr std::uint16_t kEtherQinQ = 0x88a8;
constexpr std::uint16_t kEtherQinQOld = 0x9100;
constexpr std::uint16_t kEtherTransparentBridging = 0x6558;  // Ethernet in GRE
constexpr std::uint16_t kEtherErspan2 = 0x88be;              // ERSPAN type I or II
constexpr std::uint16_t kEtherErspan3 = 0x22eb;

constexpr std::uint8_t kProtoHopByHop = 0;
constexpr std::uint8_t kProtoIpv4 = 4;
constexpr std::uint8_t kProtoTcp = 6;
constexpr std::uint8_t kProtoUdp = 17;
constexpr std::uint8_t kProtoIpv6 = 41;
constexpr std::uint8_t kProtoGre = 47;
constexpr std::uint8_t kProtoRouting = 43;
constexpr std::uint8_t kProtoFragment = 44;
constexpr std::uint8_t kProtoAuth = 51;
constexpr std::uint8_t kProtoDestOpts = 60;

// Enough for any sane chain; a hostile frame cannot make the walk long.
constexpr int kMaxExtensionHeaders = 8;

struct NetworkLayer {
    std::uint16_t ether_type = 0;
    std::uint16_t vlan = 0;
    ByteSpan bytes;
};

// Loopback captures write the address family, not an EtherType: AF_INET is 2 everywhere,
// AF_INET6 is 10 (Linux), 24, 28 or 30 depending on the BSD.
std::uint16_t family_ether_type(std::uint32_t family) noexcept {
    if (family == 2) return kEtherIpv4;
    if (family == 10 || family == 24 || family == 28 || family == 30) return kEtherIpv6;
    return 0;
}

std::uint16_t ether_type_of_version(std::uint8_t first) noexcept {
    switch (first >> 4) {
    case 4: return kEtherIpv4;
    case 6: return kEtherIpv6;
    default: return 0;
    }
}

// The 802.1Q/QinQ tags from `off` on, `type` the EtherType before them: keeps the innermost
// VLAN id; the walk is bounded so a hostile frame cannot loop.
DecodeError strip_vlan_tags(ByteSpan d, std::size_t off, std::uint16_t type, NetworkLayer& n,
                            DecodeError truncated) noexcept {
    for (int depth = 0; depth < 4 && (type == kEtherVlan || type == kEtherQinQ || type == kEtherQinQOld); ++depth) {
        if (d.size() < off + 4) return truncated;
        n.vlan = load_be16(d.data() + off) & 0x0fff;
        type = load_be16(d.data() + off + 2);
        off += 4;
    }
    n.ether_type = type;
    n.bytes = d.subspan(off);
    return DecodeError::none;
}

// Ethernet II with VLAN/QinQ tags; `truncated` is the error a short header gives (a capture's
// own link layer and an Ethernet frame inside a tunnel fail differently).
DecodeError strip_ethernet(ByteSpan d, NetworkLayer& n, DecodeError truncated) noexcept {
    if (d.size() < 14) return truncated;
    std::size_t off = 12;
    std::uint16_t type = load_be16(d.data() + off);
    off += 2;
    return strip_vlan_tags(d, off, type, n, truncated);
}

DecodeError strip_link(const Frame& frame, NetworkLayer& n) noexcept {
    const ByteSpan d = frame.data;
    switch (frame.link_type) {
    case LinkType::ethernet: return strip_ethernet(d, n, DecodeError::truncated_link);
    // libpcap puts a VLAN tag the NIC took off back after the SLL header (tcpdump -i any on a
    // trunk): protocol 0x8100, the tag, then the real EtherType.
    case LinkType::linux_sll:
        if (d.size() < 16) return DecodeError::truncated_link;
        return strip_vlan_tags(d, 16, load_be16(d.data() + 14), n, DecodeError::truncated_link);
    case LinkType::linux_sll2:
        if (d.size() < 20) return DecodeError::truncated_link;
        return strip_vlan_tags(d, 20, load_be16(d.data()), n, DecodeError::truncated_link);
    case LinkType::null_loopback: {
        if (d.size() < 4) return DecodeError::truncated_link;
        std::uint16_t type = family_ether_type(load_le32(d.data()));
        if (type == 0) type = family_ether_type(load_be32(d.data()));
        n.ether_type = type;
        n.bytes = d.subspan(4);
        return DecodeError::none;
    }
    case LinkType::loop:
        if (d.size() < 4) return DecodeError::truncated_link;
        n.ether_type = family_ether_type(load_be32(d.data()));
        n.bytes = d.subspan(4);
        return DecodeError::none;
    case LinkType::raw:
    case LinkType::ipv4:
    case LinkType::ipv6:
        if (d.empty()) return DecodeError::truncated_link;
        n.ether_type = ether_type_of_version(d[0]);
        n.bytes = d;
        return DecodeError::none;
    }
    return DecodeError::unsupported_link;
}

bool is_extension_header(std::uint8_t next) noexcept {
    return next == kProtoHopByHop || next == kProtoRouting || next == kProtoDestOpts || next == kProtoAuth;
}

// Skips IPv6 extension headers from `off` up to `end`; stops at a fragment header (leaving `off`
// on it) or at the upper-layer protocol.
DecodeError skip_extensions(ByteSpan bytes, std::size_t end, std::uint8_t& next, std::size_t& off) noexcept {
    for (int i = 0; i < kMaxExtensionHeaders && is_extension_header(next); ++i) {
        if (end < off + 8) return DecodeError::truncated_ip;
        // AH counts its length in 4-byte units minus 2; the others in 8-byte units minus 1.
        const std::size_t len =
            next == kProtoAuth ? (std::size_t{bytes[off + 1]} + 2) * 4 : (std::size_t{bytes[off + 1]} + 1) * 8;
        next = bytes[off];
        off += len;
        if (off > end) return DecodeError::truncated_ip;
    }
    if (is_extension_header(next)) return DecodeError::bad_ip_header;
    return DecodeError::none;
}

// Ethernet pads short frames; the IP total length bounds the payload. TSO captures can carry
// total length 0: fall back to what was captured. `ihl` <= `total` (when set) and the size.
ByteSpan ipv4_payload(ByteSpan ip, std::size_t ihl, std::size_t total) noexcept {
    const std::size_t end = total == 0 ? ip.size() : std::min(total, ip.size());
    return ip.subspan(ihl, end - ihl);
}

// Ports and payload of a UDP header (`l4` holds at least its 8 bytes), bounded by its length.
void fill_udp(ByteSpan l4, L4Packet& p) noexcept {
    p.transport = Transport::udp;
    p.src.port = load_be16(l4.data());
    p.dst.port = load_be16(l4.data() + 2);
    const std::size_t udp_len = load_be16(l4.data() + 4);
    std::size_t len = l4.size() - 8;
    if (udp_len >= 8 && udp_len - 8 < len) len = udp_len - 8;
    p.payload = l4.subspan(8, len);
}

DecodeError decode_ipv4(ByteSpan ip, IpPacket& p) noexcept {
    if (ip.size() < 20) return DecodeError::truncated_ip;
    if ((ip[0] >> 4) != 4) return DecodeError::bad_ip_header;
    const std::size_t ihl = std::size_t{ip[0] & 0x0fU} * 4;
    const std::size_t total = load_be16(ip.data() + 2);
    if (ihl < 20 || (total != 0 && total < ihl)) return DecodeError::bad_ip_header;
    if (ip.size() < ihl) return DecodeError::truncated_ip;
    p.protocol = ip[9];
    p.src = IpAddress::v4(std::span<const std::uint8_t, 4>(ip.data() + 12, 4));
    p.dst = IpAddress::v4(std::span<const std::uint8_t, 4>(ip.data() + 16, 4));
    const std::uint16_t frag = load_be16(ip.data() + 6);
    p.fragment = (frag & 0x3fffU) != 0;  // MF set or offset > 0 (DF alone is not a fragment)
    p.more_fragments = (frag & 0x2000U) != 0;
    p.fragment_offset = std::uint32_t{frag & 0x1fffU} * 8;
    p.fragment_id = load_be16(ip.data() + 4);
    p.payload = ipv4_payload(ip, ihl, total);
    return DecodeError::none;
}

DecodeError decode_ipv6(ByteSpan ip, IpPacket& p) noexcept {
    if (ip.size() < 40) return DecodeError::truncated_ip;
    if ((ip[0] >> 4) != 6) return DecodeError::bad_ip_header;
    const std::size_t payload_len = load_be16(ip.data() + 4);
    p.src = IpAddress::v6(std::span<const std::uint8_t, 16>(ip.data() + 8, 16));
    p.dst = IpAddress::v6(std::span<const std::uint8_t, 16>(ip.data() + 24, 16));
    // Payload length 0 is a jumbogram (or TSO): take what was captured.
    const std::size_t end = payload_len == 0 ? ip.size() : std::min(ip.size(), 40 + payload_len);
    std::uint8_t next = ip[6];
    std::size_t off = 40;
    for (int i = 0; i < 2; ++i) {
        if (const auto e = skip_extensions(ip, end, next, off); e != DecodeError::none) return e;
        if (next != kProtoFragment) break;
        if (end < off + 8) return DecodeError::truncated_ip;
        const std::uint16_t offset_flags = load_be16(ip.data() + off + 2);
        const std::uint8_t after = ip[off];
        const std::uint32_t id = load_be32(ip.data() + off + 4);
        off += 8;
        next = after;
        // An atomic fragment (offset 0, M clear; RFC 6946) is a whole datagram.
        if ((offset_flags & 0xfff9U) == 0) continue;
        p.fragment = true;
        p.more_fragments = (offset_flags & 1U) != 0;
        p.fragment_offset = offset_flags & 0xfff8U;
        p.fragment_id = id;
        break;
    }
    if (!p.fragment && next == kProtoFragment) return DecodeError::bad_ip_header;
    p.protocol = next;
    p.payload = ip.subspan(off, end - off);
    return DecodeError::none;
}

DecodeError decode_network(const NetworkLayer& n, IpPacket& p) noexcept {
    if (n.ether_type == kEtherIpv4) return decode_ipv4(n.bytes, p);
    if (n.ether_type == kEtherIpv6) return decode_ipv6(n.bytes, p);
    return DecodeError::not_ip;
}

// What one tunnel level carries: an IP packet (ether_type) or an Ethernet frame.
struct Inner {
    TunnelKind kind = TunnelKind::none;
    bool ethernet = false;
    std::uint16_t ether_type = 0;
    ByteSpan bytes;
};

// ERSPAN header after GRE. Type I has none (Wireshark tells it from type II by GRE's S bit);
// type II is 8 bytes, version 1; type III is 12 bytes, version 2, plus an 8-byte platform
// subheader when the O bit is set, and says in FT whether Ethernet (0) follows.
DecodeError strip_erspan(ByteSpan b, std::uint16_t gre_type, bool gre_sequence, Inner& in) noexcept {
    in.kind = TunnelKind::erspan;
    in.ethernet = true;
    if (gre_type == kEtherErspan2 && !gre_sequence) {
        in.bytes = b;
        return DecodeError::none;
    }
    if (b.empty()) return DecodeError::truncated_tunnel;
    const std::uint8_t version = b[0] >> 4;
    if (gre_type == kEtherErspan2) {
        if (version != 1) return DecodeError::bad_tunnel_header;
        if (b.size() < 8) return DecodeError::truncated_tunnel;
        in.bytes = b.subspan(8);
        return DecodeError::none;
    }
    if (version != 2) return DecodeError::bad_tunnel_header;
    if (b.size() < 12) return DecodeError::truncated_tunnel;
    const std::uint8_t frame_type = (b[10] >> 2) & 0x1fU;
    if (frame_type != 0) return DecodeError::unsupported_tunnel;
    std::size_t off = 12;
    if ((b[11] & 0x01U) != 0) off += 8;
    if (b.size() < off) return DecodeError::truncated_tunnel;
    in.bytes = b.subspan(off);
    return DecodeError::none;
}

// GRE (RFC 2784 with RFC 2890's key and sequence number).
DecodeError strip_gre(ByteSpan b, Inner& in) noexcept {
    in.kind = TunnelKind::gre;
    if (b.size() < 4) return DecodeError::truncated_tunnel;
    const std::uint16_t flags = load_be16(b.data());
    const std::uint16_t type = load_be16(b.data() + 2);
    if ((flags & 0x0007U) != 0) return DecodeError::unsupported_tunnel;  // version 1: PPTP
    // RFC 2784: a receiver discards packets with the (RFC 1701) routing or strict-route bit.
    if ((flags & 0x4800U) != 0) return DecodeError::bad_tunnel_header;
    const bool sequence = (flags & 0x1000U) != 0;
    std::size_t off = 4;
    if ((flags & 0x8000U) != 0) off += 4;  // checksum + reserved
    if ((flags & 0x2000U) != 0) off += 4;  // key
    if (sequence) off += 4;
    if (b.size() < off) return DecodeError::truncated_tunnel;
    const ByteSpan rest = b.subspan(off);
    switch (type) {
    case kEtherIpv4:
    case kEtherIpv6:
        in.ether_type = type;
        in.bytes = rest;
        return DecodeError::none;
    case kEtherTransparentBridging:
        in.ethernet = true;
        in.bytes = rest;
        return DecodeError::none;
    case kEtherErspan2:
    case kEtherErspan3: return strip_erspan(rest, type, sequence, in);
    default: return DecodeError::unsupported_tunnel;
    }
}

// VXLAN (RFC 7348): UDP to port 4789, 8-byte header whose I flag says the VNI is valid.
// Returns false when the UDP packet is not addressed to VXLAN (then it is plain UDP).
bool is_vxlan(const IpPacket& p) noexcept {
    return p.protocol == kProtoUdp && p.payload.size() >= 4 && load_be16(p.payload.data() + 2) == kVxlanPort;
}

DecodeError strip_vxlan(ByteSpan udp, Inner& in) noexcept {
    in.kind = TunnelKind::vxlan;
    in.ethernet = true;
    if (udp.size() < 16) return DecodeError::truncated_tunnel;
    if ((udp[8] & 0x08U) == 0) return DecodeError::bad_tunnel_header;
    std::size_t end = udp.size();
    const std::size_t udp_len = load_be16(udp.data() + 4);
    if (udp_len >= 16 && udp_len < end) end = udp_len;
    in.bytes = udp.subspan(16, end - 16);
    return DecodeError::none;
}

}  // namespace

std::string_view to_string(TunnelKind kind) noexcept {
    switch (kind) {
    case TunnelKind::none: return "none";
    case TunnelKind::ip_in_ip: return "ip_in_ip";
    case TunnelKind::gre: return "gre";
    case TunnelKind::erspan: return "erspan";
    case TunnelKind::vxlan: return "vxlan";
    }
    return "unknown";
}

DecodeError decapsulate(IpPacket& p) noexcept {
    while (!p.fragment) {
        Inner in;
        DecodeError e = DecodeError::none;
        switch (p.protocol) {
        case kProtoIpv4:
        case kProtoIpv6:
            in.kind = TunnelKind::ip_in_ip;
            in.ether_type = p.protocol == kProtoIpv4 ? kEtherIpv4 : kEtherIpv6;
            in.bytes = p.payload;
            break;
        case kProtoGre: e = strip_gre(p.payload, in); break;
        case kProtoUdp:
            if (!is_vxlan(p)) return DecodeError::none;
            e = strip_vxlan(p.payload, in);
            break;
        default: return DecodeError::none;
        }
        if (e != DecodeError::none) return e;
        if (p.tunnel_depth >= kMaxTunnelDepth) return DecodeError::tunnel_too_deep;
        NetworkLayer n;
        n.vlan = p.vlan;
        n.ether_type = in.ether_type;
        n.bytes = in.bytes;
        if (in.ethernet) {
            if (const auto le = strip_ethernet(in.bytes, n, DecodeError::truncated_tunnel); le != DecodeError::none)
                return le;
        }
        IpPacket inner;
        inner.time = p.time;
        inner.vlan = n.vlan;
        inner.tunnel = p.tunnel == TunnelKind::none ? in.kind : p.tunnel;
        inner.tunnel_depth = static_cast<std::uint8_t>(p.tunnel_depth + 1);
        if (const auto ie = decode_network(n, inner); ie != DecodeError::none) return ie;
        p = inner;
    }
    return DecodeError::none;
}

std::string_view link_type_slot_name(std::size_t slot) noexcept {
    static constexpr std::string_view names[kLinkTypeSlots] = {"null", "ethernet", "raw",        "loop", "linux_sll",
                                                               "ipv4", "ipv6",     "linux_sll2", "other"};
    return slot < kLinkTypeSlots ? names[slot] : "other";
}

std::string_view to_string(LinkType type) noexcept { return link_type_slot_name(link_type_slot(type)); }

std::string_view to_string(DecodeError e) noexcept {
    switch (e) {
    case DecodeError::none: return "none";
    case DecodeError::unsupported_link: return "unsupported_link";
    case DecodeError::truncated_link: return "truncated_link";
    case DecodeError::not_ip: return "not_ip";
    case DecodeError::truncated_ip: return "truncated_ip";
    case DecodeError::bad_ip_header: return "bad_ip_header";
    case DecodeError::ip_fragment: return "ip_fragment";
    case DecodeError::unsupported_transport: return "unsupported_transport";
    case DecodeError::truncated_transport: return "truncated_transport";
    case DecodeError::truncated_tunnel: return "truncated_tunnel";
    case DecodeError::bad_tunnel_header: return "bad_tunnel_header";
    case DecodeError::unsupported_tunnel: return "unsupported_tunnel";
    case DecodeError::tunnel_too_deep: return "tunnel_too_deep";
    }
    return "unknown";
}

DecodeError decode_ip(const Frame& frame, IpPacket& out) noexcept {
    NetworkLayer link;
    if (const auto e = strip_link(frame, link); e != DecodeError::none) return e;
    out = IpPacket{};
    out.time = frame.time;
    out.vlan = link.vlan;
    if (const auto e = decode_network(link, out); e != DecodeError::none) return e;
    return decapsulate(out);
}

DecodeError decode_transport(const IpPacket& ip, L4Packet& p) noexcept {
    p.time = ip.time;
    p.vlan = ip.vlan;
    p.src.address = ip.src;
    p.dst.address = ip.dst;
    p.tcp_seq = 0;
    p.tcp_flags = 0;
    p.payload = {};
    p.transport = Transport::other;
    ByteSpan l4 = ip.payload;
    std::uint8_t next = ip.protocol;
    if (ip.src.is_v6() && is_extension_header(next)) {
        std::size_t off = 0;
        if (const auto e = skip_extensions(l4, l4.size(), next, off); e != DecodeError::none) return e;
        if (next == kProtoFragment) return DecodeError::bad_ip_header;  // nested fragmentation
        l4 = l4.subspan(off);
    }
    p.ip_protocol = next;

    if (next == kProtoUdp) {
        if (l4.size() < 8) return DecodeError::truncated_transport;
        fill_udp(l4, p);
        return DecodeError::none;
    }
    if (next == kProtoTcp) {
        if (l4.size() < 20) return DecodeError::truncated_transport;
        const std::size_t data_off = static_cast<std::size_t>(l4[12] >> 4) * 4;
        if (data_off < 20 || l4.size() < data_off) return DecodeError::truncated_transport;
        p.transport = Transport::tcp;
        p.src.port = load_be16(l4.data());
        p.dst.port = load_be16(l4.data() + 2);
        p.tcp_seq = load_be32(l4.data() + 4);
        p.tcp_flags = l4[13];
        p.payload = l4.subspan(data_off);
        return DecodeError::none;
    }
    return DecodeError::unsupported_transport;
}

bool decode_plain_udp(const Frame& frame, L4Packet& out) noexcept {
    const ByteSpan d = frame.data;
    if (frame.link_type != LinkType::ethernet || d.size() < 14 + 20 || load_be16(d.data() + 12) != kEtherIpv4)
        return false;
    const ByteSpan ip = d.subspan(14);
    // The conditions of decode_ipv4(), decapsulate() and decode_transport(), for this case.
    if ((ip[0] >> 4) != 4 || ip[9] != kProtoUdp || (load_be16(ip.data() + 6) & 0x3fffU) != 0) return false;
    const std::size_t ihl = std::size_t{ip[0] & 0x0fU} * 4;
    const std::size_t total = load_be16(ip.data() + 2);
    if (ihl < 20 || (total != 0 && total < ihl) || ip.size() < ihl) return false;
    const ByteSpan l4 = ipv4_payload(ip, ihl, total);
    if (l4.size() < 8 || load_be16(l4.data() + 2) == kVxlanPort) return false;
    out.time = frame.time;
    out.vlan = 0;
    out.src.address = IpAddress::v4(std::span<const std::uint8_t, 4>(ip.data() + 12, 4));
    out.dst.address = IpAddress::v4(std::span<const std::uint8_t, 4>(ip.data() + 16, 4));
    out.tcp_seq = 0;
    out.tcp_flags = 0;
    out.ip_protocol = kProtoUdp;
    fill_udp(l4, out);
    return true;
}

DecodeError decode_frame_into(const Frame& frame, L4Packet& out) noexcept {
    if (decode_plain_udp(frame, out)) return DecodeError::none;
    IpPacket ip;
    if (const auto e = decode_ip(frame, ip); e != DecodeError::none) return e;
    if (ip.fragment) return DecodeError::ip_fragment;
    return decode_transport(ip, out);
}

Result<L4Packet, DecodeError> decode_frame(const Frame& frame) noexcept {
    L4Packet p;
    if (const auto e = decode_frame_into(frame, p); e != DecodeError::none) return fail(e);
    return p;
}

}  // namespace hepd::pcap
