#pragma once
// Pure L2-L4 decoding of captured frames: link layer (Ethernet with VLAN/QinQ, Linux SLL/SLL2,
// raw IP, BSD/OpenBSD loopback), IPv4/IPv6 (extension headers skipped, fragments reported with
// what reassembly needs), the tunnels mirrored traffic arrives in (IP-in-IP, GRE, ERSPAN, VXLAN)
// and UDP/TCP. Bytes in, views out: no allocation, no I/O, no exceptions.
#include "core/address.hpp"
#include "core/bytes.hpp"
#include "core/result.hpp"
#include "core/time.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace hepd::pcap {

// LINKTYPE_* values from the tcpdump registry. pcapng interfaces carry any 16-bit value: values
// not listed here are kept as they are and decode as unsupported_link.
enum class LinkType : std::uint32_t {
    null_loopback = 0,  // BSD loopback: 4-byte family in the capturing host's byte order
    ethernet = 1,
    raw = 101,
    loop = 108,  // OpenBSD loopback: 4-byte family in network byte order
    linux_sll = 113,
    ipv4 = 228,
    ipv6 = 229,
    linux_sll2 = 276,
};

// Link types as a small closed set (a report/metric label): the known ones, then `other`.
inline constexpr std::size_t kLinkTypeSlots = 9;
// Inline: every frame is counted by its link.
constexpr std::size_t link_type_slot(LinkType type) noexcept {
    switch (type) {
    case LinkType::null_loopback: return 0;
    case LinkType::ethernet: return 1;
    case LinkType::raw: return 2;
    case LinkType::loop: return 3;
    case LinkType::linux_sll: return 4;
    case LinkType::ipv4: return 5;
    case LinkType::ipv6: return 6;
    case LinkType::linux_sll2: return 7;
    }
    return 8;
}
std::string_view link_type_slot_name(std::size_t slot) noexcept;
std::string_view to_string(LinkType type) noexcept;

struct Frame {
    Timestamp time;
    LinkType link_type = LinkType::ethernet;  // per frame: pcapng interfaces differ
    ByteSpan data;                            // captured bytes (may be shorter than orig_length)
    std::uint32_t orig_length = 0;
    std::uint32_t interface_id = 0;  // pcapng interface within its section; 0 for pcap
};

enum class Transport : std::uint8_t { udp, tcp, other };

// Encapsulations decapsulate() removes; a small closed set (a report label).
enum class TunnelKind : std::uint8_t {
    none,
    ip_in_ip,  // IPv4 or IPv6 in IPv4 or IPv6 (IP protocols 4 and 41)
    gre,       // IP or Ethernet (0x6558) in GRE (IP protocol 47)
    erspan,    // Ethernet in ERSPAN type I, II or III, in GRE
    vxlan,     // Ethernet in VXLAN (UDP destination port 4789)
};
inline constexpr std::size_t kTunnelKindCount = 5;
std::string_view to_string(TunnelKind kind) noexcept;

// Encapsulations removed from one frame at most; deeper nesting is tunnel_too_deep (a hostile
// frame cannot make the walk long, and real mirroring nests one or two levels).
inline constexpr int kMaxTunnelDepth = 4;
inline constexpr std::uint16_t kVxlanPort = 4789;

// The network layer of one frame. For a fragment, payload is the fragment's share of the
// upper-layer bytes (IPv6: what follows the fragment header) and protocol is the upper-layer
// protocol the reassembled datagram will carry.
struct IpPacket {
    Timestamp time;
    IpAddress src;
    IpAddress dst;
    std::uint8_t protocol = 0;
    std::uint16_t vlan = 0;                // innermost VLAN id, 0 when untagged
    TunnelKind tunnel = TunnelKind::none;  // the outermost encapsulation removed
    std::uint8_t tunnel_depth = 0;         // encapsulations removed
    bool fragment = false;                 // a piece of a larger datagram: reassemble before L4
    bool more_fragments = false;
    std::uint32_t fragment_id = 0;      // IPv4: 16-bit identification; IPv6: 32-bit
    std::uint32_t fragment_offset = 0;  // in bytes
    ByteSpan payload;                   // bounded by the IP length and the capture
};

struct L4Packet {
    Timestamp time;
    Endpoint src;
    Endpoint dst;
    Transport transport = Transport::other;
    std::uint8_t ip_protocol = 0;
    std::uint16_t vlan = 0;      // innermost VLAN id, 0 when untagged
    std::uint32_t tcp_seq = 0;   // TCP only
    std::uint8_t tcp_flags = 0;  // TCP only
    ByteSpan payload;            // UDP/TCP payload, bounded by the IP length and the capture
};

namespace tcp_flag {
inline constexpr std::uint8_t fin = 0x01;
inline constexpr std::uint8_t syn = 0x02;
inline constexpr std::uint8_t rst = 0x04;
inline constexpr std::uint8_t ack = 0x10;
}  // namespace tcp_flag

enum class DecodeError : std::uint8_t {
    none,
    unsupported_link,
    truncated_link,
    not_ip,  // ARP, LLDP…: skipped, not an error worth alarming on
    truncated_ip,
    bad_ip_header,
    ip_fragment,  // decode_frame() only: the frame is a fragment (see decode_ip)
    unsupported_transport,
    truncated_transport,
    truncated_tunnel,    // a GRE, ERSPAN or VXLAN header, or the Ethernet header in one, cut short
    bad_tunnel_header,   // GRE routing/strict-route bits, VXLAN without its I flag, wrong ERSPAN version
    unsupported_tunnel,  // GRE version 1 (PPTP), GRE carrying MPLS or keep-alives, ERSPAN of IP frames
    tunnel_too_deep,     // more than kMaxTunnelDepth encapsulations
};
inline constexpr std::size_t kDecodeErrorCount = 13;
std::string_view to_string(DecodeError e) noexcept;

// Link and network layers, tunnels removed (decapsulate()). Returns DecodeError::none and fills
// `out` on success. A fragment (of the outermost packet, or of one inside a tunnel) is returned
// as it is: decapsulate the reassembled datagram.
DecodeError decode_ip(const Frame& frame, IpPacket& out) noexcept;

// Replaces a whole (unfragmented) packet that is a tunnel by the packet inside it, level by
// level, until the payload is not a tunnel or is a fragment. `p.tunnel_depth` counts the levels
// already removed, towards kMaxTunnelDepth. On error `p` may hold an intermediate level.
DecodeError decapsulate(IpPacket& p) noexcept;

// Transport layer of a complete (never fragmented, or reassembled) IP payload. IPv6 extension
// headers still at the front of the payload (they may follow a fragment header) are skipped.
DecodeError decode_transport(const IpPacket& ip, L4Packet& out) noexcept;

// The common case in one pass: an untagged Ethernet frame with a whole IPv4 packet carrying UDP
// that is not VXLAN. Fills `out` exactly as decode_ip() and decode_transport() would and returns
// true; anything else (other links, VLANs, IPv6, fragments, tunnels, TCP, any header those two
// would refuse) returns false for them to take, with their errors.
bool decode_plain_udp(const Frame& frame, L4Packet& out) noexcept;

// Both steps; a fragment is reported as DecodeError::ip_fragment.
DecodeError decode_frame_into(const Frame& frame, L4Packet& out) noexcept;
Result<L4Packet, DecodeError> decode_frame(const Frame& frame) noexcept;

}  // namespace hepd::pcap
