#include "pcap/reader.hpp"

#include <algorithm>

namespace hepd::pcap {

namespace {

constexpr std::uint16_t kEtherIpv4 = 0x0800;
constexpr std::uint16_t kEtherIpv6 = 0x86dd;
constexpr std::uint16_t kEtherVlan = 0x8100;
constexpr std::uint16_t kEtherQinQ = 0x88a8;
constexpr std::uint16_t kEtherQinQOld = 0x9100;

constexpr std::uint8_t kProtoTcp = 6;
constexpr std::uint8_t kProtoUdp = 17;

struct NetworkLayer {
    std::uint16_t ether_type = 0;
    std::uint16_t vlan = 0;
    ByteSpan bytes;
};

// BSD loopback writes the address family in the capturing host's byte order; AF_INET is 2
// everywhere, AF_INET6 is 24, 28 or 30 depending on the BSD.
std::uint16_t loopback_ether_type(std::uint32_t family) noexcept {
    if (family == 2) return kEtherIpv4;
    if (family == 24 || family == 28 || family == 30) return kEtherIpv6;
    return 0;
}

Result<NetworkLayer, DecodeError> strip_link(const Frame& frame) noexcept {
    const ByteSpan d = frame.data;
    NetworkLayer n;
    switch (frame.link_type) {
    case LinkType::ethernet: {
        if (d.size() < 14) return fail(DecodeError::truncated_link);
        std::size_t off = 12;
        std::uint16_t type = load_be16(d.data() + off);
        off += 2;
        // VLAN and QinQ: keep the innermost id; bound the walk so a hostile frame cannot loop.
        for (int depth = 0; depth < 4 && (type == kEtherVlan || type == kEtherQinQ || type == kEtherQinQOld);
             ++depth) {
            if (d.size() < off + 4) return fail(DecodeError::truncated_link);
            n.vlan = load_be16(d.data() + off) & 0x0fff;
            type = load_be16(d.data() + off + 2);
            off += 4;
        }
        n.ether_type = type;
        n.bytes = d.subspan(off);
        return n;
    }
    case LinkType::linux_sll:
        if (d.size() < 16) return fail(DecodeError::truncated_link);
        n.ether_type = load_be16(d.data() + 14);
        n.bytes = d.subspan(16);
        return n;
    case LinkType::linux_sll2:
        if (d.size() < 20) return fail(DecodeError::truncated_link);
        n.ether_type = load_be16(d.data());
        n.bytes = d.subspan(20);
        return n;
    case LinkType::null_loopback: {
        if (d.size() < 4) return fail(DecodeError::truncated_link);
        std::uint32_t family = load_le32(d.data());
        if (loopback_ether_type(family) == 0) family = load_be32(d.data());
        n.ether_type = loopback_ether_type(family);
        n.bytes = d.subspan(4);
        return n;
    }
    case LinkType::raw:
    case LinkType::ipv4:
    case LinkType::ipv6:
        if (d.empty()) return fail(DecodeError::truncated_link);
        n.ether_type = (d[0] >> 4) == 6 ? kEtherIpv6 : kEtherIpv4;
        n.bytes = d;
        return n;
    }
    return fail(DecodeError::unsupported_link);
}

} // namespace

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
    }
    return "unknown";
}

Result<L4Packet, DecodeError> decode_frame(const Frame& frame) noexcept {
    auto link = strip_link(frame);
    if (!link) return fail(link.error());
    L4Packet p;
    p.time = frame.time;
    p.vlan = link->vlan;
    ByteSpan ip = link->bytes;
    ByteSpan l4;

    if (link->ether_type == kEtherIpv4) {
        if (ip.size() < 20) return fail(DecodeError::truncated_ip);
        if ((ip[0] >> 4) != 4) return fail(DecodeError::bad_ip_header);
        const std::size_t ihl = std::size_t{ip[0] & 0x0fU} * 4;
        const std::size_t total = load_be16(ip.data() + 2);
        if (ihl < 20 || total < ihl) return fail(DecodeError::bad_ip_header);
        if (ip.size() < ihl) return fail(DecodeError::truncated_ip);
        const std::uint16_t frag = load_be16(ip.data() + 6);
        if ((frag & 0x3fffU) != 0) return fail(DecodeError::ip_fragment);  // MF set or offset > 0
        p.ip_protocol = ip[9];
        p.src.address = IpAddress::v4(std::span<const std::uint8_t, 4>(ip.data() + 12, 4));
        p.dst.address = IpAddress::v4(std::span<const std::uint8_t, 4>(ip.data() + 16, 4));
        // Ethernet pads short frames; the IP total length bounds the payload. TSO captures can
        // carry total length 0: fall back to what was captured.
        const std::size_t end = total == 0 ? ip.size() : std::min(total, ip.size());
        l4 = ip.subspan(ihl, end - ihl);
    } else if (link->ether_type == kEtherIpv6) {
        if (ip.size() < 40) return fail(DecodeError::truncated_ip);
        if ((ip[0] >> 4) != 6) return fail(DecodeError::bad_ip_header);
        const std::size_t payload_len = load_be16(ip.data() + 4);
        std::uint8_t next = ip[6];
        p.src.address = IpAddress::v6(std::span<const std::uint8_t, 16>(ip.data() + 8, 16));
        p.dst.address = IpAddress::v6(std::span<const std::uint8_t, 16>(ip.data() + 24, 16));
        const std::size_t end = payload_len == 0 ? ip.size() : std::min(ip.size(), 40 + payload_len);
        std::size_t off = 40;
        // Skip hop-by-hop, routing, destination options; fragments are reassembled elsewhere.
        for (int i = 0; i < 8; ++i) {
            if (next == 0 || next == 43 || next == 60) {
                if (end < off + 8) return fail(DecodeError::truncated_ip);
                const std::size_t len = (std::size_t{ip[off + 1]} + 1) * 8;
                next = ip[off];
                off += len;
                if (off > end) return fail(DecodeError::truncated_ip);
            } else if (next == 44) {
                return fail(DecodeError::ip_fragment);
            } else {
                break;
            }
        }
        p.ip_protocol = next;
        l4 = ip.subspan(off, end - off);
    } else {
        return fail(DecodeError::not_ip);
    }

    if (p.ip_protocol == kProtoUdp) {
        if (l4.size() < 8) return fail(DecodeError::truncated_transport);
        p.transport = Transport::udp;
        p.src.port = load_be16(l4.data());
        p.dst.port = load_be16(l4.data() + 2);
        const std::size_t udp_len = load_be16(l4.data() + 4);
        std::size_t len = l4.size() - 8;
        if (udp_len >= 8 && udp_len - 8 < len) len = udp_len - 8;
        p.payload = l4.subspan(8, len);
        return p;
    }
    if (p.ip_protocol == kProtoTcp) {
        if (l4.size() < 20) return fail(DecodeError::truncated_transport);
        const std::size_t data_off = static_cast<std::size_t>(l4[12] >> 4) * 4;
        if (data_off < 20) return fail(DecodeError::truncated_transport);
        if (l4.size() < data_off) return fail(DecodeError::truncated_transport);
        p.transport = Transport::tcp;
        p.src.port = load_be16(l4.data());
        p.dst.port = load_be16(l4.data() + 2);
        p.tcp_seq = load_be32(l4.data() + 4);
        p.tcp_flags = l4[13];
        p.payload = l4.subspan(data_off);
        return p;
    }
    return fail(DecodeError::unsupported_transport);
}

} // namespace hepd::pcap
