#include "pcap/decode.hpp"

#include <algorithm>

namespace hepd::pcap {

namespace {

constexpr std::uint16_t kEtherIpv4 = 0x0800;
constexpr std::uint16_t kEtherIpv6 = 0x86dd;
constexpr std::uint16_t kEtherVlan = 0x8100;
constexpr std::uint16_t kEtherQinQ = 0x88a8;
constexpr std::uint16_t kEtherQinQOld = 0x9100;

constexpr std::uint8_t kProtoHopByHop = 0;
constexpr std::uint8_t kProtoTcp = 6;
constexpr std::uint8_t kProtoUdp = 17;
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
        case 4:
            return kEtherIpv4;
        case 6:
            return kEtherIpv6;
        default:
            return 0;
    }
}

DecodeError strip_link(const Frame& frame, NetworkLayer& n) noexcept {
    const ByteSpan d = frame.data;
    switch (frame.link_type) {
        case LinkType::ethernet: {
            if (d.size() < 14) return DecodeError::truncated_link;
            std::size_t off = 12;
            std::uint16_t type = load_be16(d.data() + off);
            off += 2;
            // Keep the innermost VLAN id; bound the walk so a hostile frame cannot loop.
            for (int depth = 0;
                 depth < 4 && (type == kEtherVlan || type == kEtherQinQ || type == kEtherQinQOld); ++depth) {
                if (d.size() < off + 4) return DecodeError::truncated_link;
                n.vlan = load_be16(d.data() + off) & 0x0fff;
                type = load_be16(d.data() + off + 2);
                off += 4;
            }
            n.ether_type = type;
            n.bytes = d.subspan(off);
            return DecodeError::none;
        }
        case LinkType::linux_sll:
            if (d.size() < 16) return DecodeError::truncated_link;
            n.ether_type = load_be16(d.data() + 14);
            n.bytes = d.subspan(16);
            return DecodeError::none;
        case LinkType::linux_sll2:
            if (d.size() < 20) return DecodeError::truncated_link;
            n.ether_type = load_be16(d.data());
            n.bytes = d.subspan(20);
            return DecodeError::none;
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
        const std::size_t len = next == kProtoAuth ? (std::size_t{bytes[off + 1]} + 2) * 4
                                                   : (std::size_t{bytes[off + 1]} + 1) * 8;
        next = bytes[off];
        off += len;
        if (off > end) return DecodeError::truncated_ip;
    }
    if (is_extension_header(next)) return DecodeError::bad_ip_header;
    return DecodeError::none;
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
    // Ethernet pads short frames; the IP total length bounds the payload. TSO captures can carry
    // total length 0: fall back to what was captured.
    const std::size_t end = total == 0 ? ip.size() : std::min(total, ip.size());
    p.payload = ip.subspan(ihl, end - ihl);
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

}  // namespace

std::size_t link_type_slot(LinkType type) noexcept {
    switch (type) {
        case LinkType::null_loopback:
            return 0;
        case LinkType::ethernet:
            return 1;
        case LinkType::raw:
            return 2;
        case LinkType::loop:
            return 3;
        case LinkType::linux_sll:
            return 4;
        case LinkType::ipv4:
            return 5;
        case LinkType::ipv6:
            return 6;
        case LinkType::linux_sll2:
            return 7;
    }
    return 8;
}

std::string_view link_type_slot_name(std::size_t slot) noexcept {
    static constexpr std::string_view names[kLinkTypeSlots] = {
        "null", "ethernet", "raw", "loop", "linux_sll", "ipv4", "ipv6", "linux_sll2", "other"};
    return slot < kLinkTypeSlots ? names[slot] : "other";
}

std::string_view to_string(LinkType type) noexcept {
    return link_type_slot_name(link_type_slot(type));
}

std::string_view to_string(DecodeError e) noexcept {
    switch (e) {
        case DecodeError::none:
            return "none";
        case DecodeError::unsupported_link:
            return "unsupported_link";
        case DecodeError::truncated_link:
            return "truncated_link";
        case DecodeError::not_ip:
            return "not_ip";
        case DecodeError::truncated_ip:
            return "truncated_ip";
        case DecodeError::bad_ip_header:
            return "bad_ip_header";
        case DecodeError::ip_fragment:
            return "ip_fragment";
        case DecodeError::unsupported_transport:
            return "unsupported_transport";
        case DecodeError::truncated_transport:
            return "truncated_transport";
    }
    return "unknown";
}

DecodeError decode_ip(const Frame& frame, IpPacket& out) noexcept {
    NetworkLayer link;
    if (const auto e = strip_link(frame, link); e != DecodeError::none) return e;
    out = IpPacket{};
    out.time = frame.time;
    out.vlan = link.vlan;
    if (link.ether_type == kEtherIpv4) return decode_ipv4(link.bytes, out);
    if (link.ether_type == kEtherIpv6) return decode_ipv6(link.bytes, out);
    return DecodeError::not_ip;
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
        p.transport = Transport::udp;
        p.src.port = load_be16(l4.data());
        p.dst.port = load_be16(l4.data() + 2);
        const std::size_t udp_len = load_be16(l4.data() + 4);
        std::size_t len = l4.size() - 8;
        if (udp_len >= 8 && udp_len - 8 < len) len = udp_len - 8;
        p.payload = l4.subspan(8, len);
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

DecodeError decode_frame_into(const Frame& frame, L4Packet& out) noexcept {
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
