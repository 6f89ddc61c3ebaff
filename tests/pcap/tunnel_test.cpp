// Tunnels mirrored traffic arrives in (IP-in-IP, GRE, ERSPAN, VXLAN), built byte by byte after
// their RFCs / the ERSPAN draft, decoded by decode_frame() and by the CaptureSource.
#include "pcap/capture_source.hpp"
#include "pcap/decode.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

using namespace hepd;
using namespace hepd::pcap;

namespace {

using Bytes = std::vector<std::uint8_t>;

Bytes cat(Bytes a, const Bytes& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

void put16(Bytes& b, std::size_t at, std::uint16_t v) {
    b[at] = static_cast<std::uint8_t>(v >> 8);
    b[at + 1] = static_cast<std::uint8_t>(v);
}

// IPv4 header (no options) + payload; `frag` is the flags/offset word.
Bytes ipv4(std::uint8_t proto, std::uint8_t src, std::uint8_t dst, const Bytes& payload, std::uint16_t frag = 0,
           std::uint16_t id = 1) {
    Bytes h = {0x45, 0, 0, 0, 0, 0, 0, 0, 64, proto, 0, 0, 10, 0, 0, src, 10, 0, 0, dst};
    put16(h, 2, static_cast<std::uint16_t>(20 + payload.size()));
    put16(h, 4, id);
    put16(h, 6, frag);
    return cat(h, payload);
}

Bytes ipv6(std::uint8_t next, std::uint8_t src, std::uint8_t dst, const Bytes& payload) {
    Bytes h(40, 0);
    h[0] = 0x60;
    put16(h, 4, static_cast<std::uint16_t>(payload.size()));
    h[6] = next;
    h[7] = 64;
    h[8] = 0x20;
    h[9] = 0x01;
    h[10] = 0x0d;
    h[11] = 0xb8;
    h[23] = src;
    h[24] = 0x20;
    h[25] = 0x01;
    h[26] = 0x0d;
    h[27] = 0xb8;
    h[39] = dst;
    return cat(h, payload);
}

Bytes udp(std::uint16_t sport, std::uint16_t dport, const Bytes& payload) {
    Bytes h(8, 0);
    put16(h, 0, sport);
    put16(h, 2, dport);
    put16(h, 4, static_cast<std::uint16_t>(8 + payload.size()));
    return cat(h, payload);
}

Bytes text(const std::string& s) { return Bytes(s.begin(), s.end()); }

// Ethernet II; a non-zero `vlan` adds one 802.1Q tag.
Bytes ethernet(std::uint16_t type, const Bytes& payload, std::uint16_t vlan = 0) {
    Bytes h = {2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1};
    if (vlan != 0) {
        h.insert(h.end(), {0x81, 0x00, 0, 0});
        put16(h, h.size() - 2, vlan);
    }
    h.insert(h.end(), {0, 0});
    put16(h, h.size() - 2, type);
    return cat(h, payload);
}

// GRE with the optional words its flags announce (values are arbitrary: they are skipped).
Bytes gre(std::uint16_t type, const Bytes& payload, bool checksum = false, bool key = false, bool seq = false,
          std::uint16_t extra_flags = 0) {
    std::uint16_t flags = extra_flags;
    if (checksum) flags |= 0x8000;
    if (key) flags |= 0x2000;
    if (seq) flags |= 0x1000;
    Bytes h(4, 0);
    put16(h, 0, flags);
    put16(h, 2, type);
    if (checksum) h.insert(h.end(), {0xab, 0xcd, 0, 0});
    if (key) h.insert(h.end(), {0, 0, 0x30, 0x39});
    if (seq) h.insert(h.end(), {0, 0, 0, 7});
    return cat(h, payload);
}

// ERSPAN type II header: version 1, VLAN 5, session 3, index 0.
Bytes erspan2(const Bytes& frame, std::uint8_t version = 1) {
    Bytes h = {static_cast<std::uint8_t>(version << 4), 0x05, 0x00, 0x03, 0, 0, 0, 0};
    return cat(h, frame);
}

// ERSPAN type III header: version 2, a timestamp, frame type `ft`, O bit with an 8-byte subheader.
Bytes erspan3(const Bytes& frame, bool platform, std::uint8_t ft = 0, std::uint8_t version = 2) {
    Bytes h = {static_cast<std::uint8_t>(version << 4), 0x05, 0x00, 0x03, 0x12, 0x34, 0x56, 0x78, 0, 0, 0, 0};
    h[10] = static_cast<std::uint8_t>(ft << 2);
    if (platform) {
        h[11] |= 0x01;
        h.insert(h.end(), {0x08, 0, 0, 0, 0, 0, 0, 0});
    }
    return cat(h, frame);
}

Bytes vxlan(const Bytes& frame, std::uint8_t flags = 0x08) {
    Bytes h = {flags, 0, 0, 0, 0, 0x12, 0x34, 0};
    return udp(50123, kVxlanPort, cat(h, frame));
}

// The packet every tunnel carries: 10.0.0.1:5060 -> 10.0.0.2:5080, UDP, "hi".
Bytes inner_v4() { return ipv4(17, 1, 2, udp(5060, 5080, text("hi"))); }
Bytes inner_v6() { return ipv6(17, 1, 2, udp(5060, 5080, text("hi"))); }

constexpr std::uint16_t kIpv4 = 0x0800;
constexpr std::uint16_t kIpv6 = 0x86dd;

// Owns the frame its views point into (a move keeps the vector's buffer), so that
// `const Decoded d = decode(ethernet(...));` outlives the temporary frame.
struct Decoded {
    Bytes frame;
    DecodeError error = DecodeError::none;
    L4Packet l4;
    IpPacket ip;
};

Decoded decode(Bytes frame_bytes, LinkType link = LinkType::ethernet) {
    Decoded d;
    d.frame = std::move(frame_bytes);
    Frame f;
    f.link_type = link;
    f.data = ByteSpan(d.frame);
    d.error = decode_frame_into(f, d.l4);
    (void)decode_ip(f, d.ip);
    return d;
}

void check_inner(const Decoded& d, bool v6 = false) {
    REQUIRE(d.error == DecodeError::none);
    CHECK(d.l4.transport == Transport::udp);
    CHECK(d.l4.src.to_string() == (v6 ? "[2001:db8::1]:5060" : "10.0.0.1:5060"));
    CHECK(d.l4.dst.to_string() == (v6 ? "[2001:db8::2]:5080" : "10.0.0.2:5080"));
    CHECK(as_text(d.l4.payload) == "hi");
}

}  // namespace

TEST_CASE("tunnels: IP-in-IP in both outer families, both inner families", "[pcap][tunnel]") {
    SECTION("IPv4 in IPv4 (protocol 4)") {
        const Decoded d = decode(ethernet(kIpv4, ipv4(4, 7, 8, inner_v4())));
        check_inner(d);
        CHECK(d.ip.tunnel == TunnelKind::ip_in_ip);
        CHECK(d.ip.tunnel_depth == 1);
    }
    SECTION("IPv6 in IPv4 (protocol 41)") { check_inner(decode(ethernet(kIpv4, ipv4(41, 7, 8, inner_v6()))), true); }
    SECTION("IPv4 in IPv6") { check_inner(decode(ethernet(kIpv6, ipv6(4, 7, 8, inner_v4())))); }
    SECTION("IPv6 in IPv6, on a raw-IP link") { check_inner(decode(ipv6(41, 7, 8, inner_v6()), LinkType::raw), true); }
    SECTION("a plain packet is not a tunnel") {
        const Decoded d = decode(ethernet(kIpv4, inner_v4()));
        check_inner(d);
        CHECK(d.ip.tunnel == TunnelKind::none);
        CHECK(d.ip.tunnel_depth == 0);
    }
}

TEST_CASE("tunnels: GRE with its optional words, IP and Ethernet inside", "[pcap][tunnel]") {
    for (int bits = 0; bits < 8; ++bits) {
        const bool c = (bits & 1) != 0, k = (bits & 2) != 0, s = (bits & 4) != 0;
        CAPTURE(c, k, s);
        const Decoded d = decode(ethernet(kIpv4, ipv4(47, 7, 8, gre(kIpv4, inner_v4(), c, k, s))));
        check_inner(d);
        CHECK(d.ip.tunnel == TunnelKind::gre);
    }
    check_inner(decode(ethernet(kIpv6, ipv6(47, 7, 8, gre(kIpv6, inner_v6(), false, true)))), true);
    SECTION("transparent Ethernet bridging (0x6558), with the inner VLAN kept") {
        const Decoded d = decode(ethernet(kIpv4, ipv4(47, 7, 8, gre(0x6558, ethernet(kIpv4, inner_v4(), 42)))));
        check_inner(d);
        CHECK(d.ip.vlan == 42);
        CHECK(d.l4.vlan == 42);
    }
    SECTION("the outer VLAN stays when the inner frame is untagged") {
        const Decoded d = decode(ethernet(kIpv4, ipv4(47, 7, 8, gre(kIpv4, inner_v4())), 7));
        CHECK(d.l4.vlan == 7);
    }
}

TEST_CASE("tunnels: ERSPAN types I, II and III", "[pcap][tunnel]") {
    const Bytes frame = ethernet(kIpv4, inner_v4());
    SECTION("type I: 0x88BE without a GRE sequence number has no ERSPAN header") {
        const Decoded d = decode(ethernet(kIpv4, ipv4(47, 7, 8, gre(0x88be, frame))));
        check_inner(d);
        CHECK(d.ip.tunnel == TunnelKind::erspan);
    }
    SECTION("type II: 8-byte header after a sequenced GRE header") {
        check_inner(decode(ethernet(kIpv4, ipv4(47, 7, 8, gre(0x88be, erspan2(frame), false, false, true)))));
    }
    SECTION("type III: 12-byte header") {
        check_inner(decode(ethernet(kIpv4, ipv4(47, 7, 8, gre(0x22eb, erspan3(frame, false), false, false, true)))));
    }
    SECTION("type III with the platform-specific subheader (O bit)") {
        check_inner(decode(ethernet(kIpv6, ipv6(47, 7, 8, gre(0x22eb, erspan3(frame, true), false, false, true)))));
    }
    SECTION("bad version, or a frame type other than Ethernet") {
        CHECK(decode(ethernet(kIpv4, ipv4(47, 7, 8, gre(0x88be, erspan2(frame, 2), false, false, true)))).error ==
              DecodeError::bad_tunnel_header);
        CHECK(decode(ethernet(kIpv4, ipv4(47, 7, 8, gre(0x22eb, erspan3(frame, false, 0, 1))))).error ==
              DecodeError::bad_tunnel_header);
        CHECK(decode(ethernet(kIpv4, ipv4(47, 7, 8, gre(0x22eb, erspan3(inner_v4(), false, 2))))).error ==
              DecodeError::unsupported_tunnel);
    }
}

TEST_CASE("tunnels: VXLAN on UDP 4789 over IPv4 and IPv6", "[pcap][tunnel]") {
    const Bytes frame = ethernet(kIpv4, inner_v4());
    const Decoded d = decode(ethernet(kIpv4, ipv4(17, 7, 8, vxlan(frame))));
    check_inner(d);
    CHECK(d.ip.tunnel == TunnelKind::vxlan);
    check_inner(decode(ethernet(kIpv6, ipv6(17, 7, 8, vxlan(ethernet(kIpv6, inner_v6()))))), true);
    SECTION("without the I flag: counted, not guessed at") {
        CHECK(decode(ethernet(kIpv4, ipv4(17, 7, 8, vxlan(frame, 0x00)))).error == DecodeError::bad_tunnel_header);
    }
    SECTION("the same bytes to another port are plain UDP") {
        Bytes outer = ipv4(17, 7, 8, vxlan(frame));
        put16(outer, 20 + 2, 4790);
        const Decoded p = decode(ethernet(kIpv4, outer));
        REQUIRE(p.error == DecodeError::none);
        CHECK(p.l4.dst.port == 4790);
        CHECK(p.l4.payload.size() == 8 + frame.size());
        CHECK(p.ip.tunnel == TunnelKind::none);
    }
    SECTION("ARP inside is not IP") {
        CHECK(decode(ethernet(kIpv4, ipv4(17, 7, 8, vxlan(ethernet(0x0806, Bytes(28, 0)))))).error ==
              DecodeError::not_ip);
    }
}

TEST_CASE("tunnels: nesting is followed up to kMaxTunnelDepth levels", "[pcap][tunnel]") {
    // VXLAN in GRE in IPv6-in-IPv4: three levels, the outermost one reported.
    const Bytes v6_outer = ipv6(47, 5, 6, gre(kIpv4, ipv4(17, 7, 8, vxlan(ethernet(kIpv4, inner_v4())))));
    const Decoded d = decode(ethernet(kIpv4, ipv4(41, 3, 4, v6_outer)));
    check_inner(d);
    CHECK(d.ip.tunnel == TunnelKind::ip_in_ip);
    CHECK(d.ip.tunnel_depth == 3);

    Bytes nested = inner_v4();
    for (int level = 1; level <= kMaxTunnelDepth + 1; ++level) {
        nested = ipv4(4, 7, 8, nested);
        CAPTURE(level);
        const Decoded n = decode(ethernet(kIpv4, nested));
        if (level <= kMaxTunnelDepth) {
            check_inner(n);
            CHECK(n.ip.tunnel_depth == level);
        } else {
            CHECK(n.error == DecodeError::tunnel_too_deep);
        }
    }
}

TEST_CASE("tunnels: GRE headers that are refused", "[pcap][tunnel]") {
    const auto outer = [](const Bytes& g) { return decode(ethernet(kIpv4, ipv4(47, 7, 8, g))).error; };
    CHECK(outer(gre(kIpv4, inner_v4(), false, false, false, 0x0001)) == DecodeError::unsupported_tunnel);  // PPTP
    CHECK(outer(gre(kIpv4, inner_v4(), false, false, false, 0x4000)) == DecodeError::bad_tunnel_header);   // routing
    CHECK(outer(gre(kIpv4, inner_v4(), false, false, false, 0x0800)) ==
          DecodeError::bad_tunnel_header);                                       // strict route
    CHECK(outer(gre(0x8847, Bytes(20, 0))) == DecodeError::unsupported_tunnel);  // MPLS
    // A keep-alive: GRE in IP in GRE, protocol type 0.
    CHECK(outer(gre(kIpv4, ipv4(47, 8, 7, gre(0, {})))) == DecodeError::unsupported_tunnel);
    // An inner IP header that is not IP.
    CHECK(outer(gre(kIpv4, Bytes(20, 0x55))) == DecodeError::bad_ip_header);
}

TEST_CASE("tunnels: every truncation of each encapsulation is an error, never a read past the end", "[pcap][tunnel]") {
    const Bytes frame = ethernet(kIpv4, inner_v4());
    struct Case {
        const char* name;
        Bytes outer_payload;  // what follows the outer IPv4 header
        std::uint8_t proto;
        std::size_t header;  // bytes of tunnel header (up to the inner Ethernet or IP header)
        DecodeError cut_in_header;
    };
    const std::vector<Case> cases = {
        {"ipip", inner_v4(), 4, 20, DecodeError::truncated_ip},
        {"6in4", inner_v6(), 41, 40, DecodeError::truncated_ip},
        {"gre", gre(kIpv4, inner_v4(), true, true, true), 47, 16, DecodeError::truncated_tunnel},
        {"gre-ethernet", gre(0x6558, frame), 47, 4, DecodeError::truncated_tunnel},
        {"erspan2", gre(0x88be, erspan2(frame), false, false, true), 47, 16, DecodeError::truncated_tunnel},
        {"erspan3", gre(0x22eb, erspan3(frame, true), false, false, true), 47, 28, DecodeError::truncated_tunnel},
        {"vxlan", vxlan(frame), 17, 16, DecodeError::truncated_tunnel},
    };
    for (const Case& c : cases) {
        CAPTURE(c.name);
        const Bytes whole = ipv4(c.proto, 7, 8, c.outer_payload);
        check_inner(decode(whole, LinkType::raw), c.proto == 41);
        // The capture cut short (snap length) anywhere before the payload "hi": the IP length
        // promises more than there is.
        for (std::size_t keep = 20; keep < whole.size() - 2; ++keep) {
            CAPTURE(keep);
            const Bytes cut(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(keep));
            const Decoded d = decode(cut, LinkType::raw);
            CHECK(d.error != DecodeError::none);
            if (c.proto == 17 && keep < 20 + 4)
                CHECK(d.error == DecodeError::truncated_transport);  // no destination port: plain UDP
            else if (keep < 20 + c.header)
                CHECK(d.error == c.cut_in_header);
        }
        // The inner Ethernet header cut short, reported as the tunnel's.
        if (c.proto != 4 && c.proto != 41 && std::string(c.name) != "gre") {
            const Bytes cut(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(20 + c.header + 10));
            CHECK(decode(cut, LinkType::raw).error == DecodeError::truncated_tunnel);
        }
    }
}

TEST_CASE("tunnels: the capture source decapsulates, counts and reassembles around them", "[pcap][tunnel]") {
    CaptureOptions options;
    options.sip_ports = {5080};
    CaptureSource source(options);
    std::vector<std::string> got;
    auto sink = [&](const shard::Datagram& d) {
        got.push_back(d.src.to_string() + " " + d.dst.to_string() + " " + std::string(as_text(d.payload)));
    };
    const auto feed = [&](const Bytes& bytes) {
        Frame f;
        f.link_type = LinkType::ethernet;
        f.data = ByteSpan(bytes);
        source.process(f, sink);
    };
    const std::string sip = "OPTIONS sip:b SIP/2.0\r\nCall-ID: t\r\nContent-Length: 0\r\n\r\n";
    const Bytes inner = ipv4(17, 1, 2, udp(5060, 5080, text(sip)), 0, 77);

    feed(ethernet(kIpv4, ipv4(47, 7, 8, gre(0x6558, ethernet(kIpv4, inner)))));
    feed(ethernet(kIpv4, ipv4(17, 7, 8, vxlan(ethernet(kIpv4, inner)))));

    // An outer datagram fragmented in two (offsets in 8-byte units): decapsulated once whole.
    const Bytes tunnelled = gre(kIpv4, inner);
    const Bytes first(tunnelled.begin(), tunnelled.begin() + 40);
    const Bytes second(tunnelled.begin() + 40, tunnelled.end());
    feed(ethernet(kIpv4, ipv4(47, 7, 8, second, 40 / 8, 9)));
    feed(ethernet(kIpv4, ipv4(47, 7, 8, first, 0x2000, 9)));

    // The inner datagram fragmented inside an unfragmented tunnel.
    const Bytes inner_l4 = udp(5060, 5080, text(sip));
    const Bytes a(inner_l4.begin(), inner_l4.begin() + 32);
    const Bytes b(inner_l4.begin() + 32, inner_l4.end());
    feed(ethernet(kIpv4, ipv4(4, 7, 8, ipv4(17, 1, 2, a, 0x2000, 11))));
    feed(ethernet(kIpv4, ipv4(4, 7, 8, ipv4(17, 1, 2, b, 32 / 8, 11))));

    // Both: inner fragments, each inside a fragmented outer datagram.
    const Bytes outer_a = ipv4(17, 1, 2, a, 0x2000, 12);
    const Bytes outer_b = ipv4(17, 1, 2, b, 32 / 8, 12);
    feed(ethernet(kIpv4, ipv4(4, 7, 8, Bytes(outer_a.begin(), outer_a.begin() + 24), 0x2000, 13)));
    feed(ethernet(kIpv4, ipv4(4, 7, 8, Bytes(outer_a.begin() + 24, outer_a.end()), 24 / 8, 13)));
    feed(ethernet(kIpv4, ipv4(4, 7, 8, Bytes(outer_b.begin(), outer_b.begin() + 24), 0x2000, 14)));
    feed(ethernet(kIpv4, ipv4(4, 7, 8, Bytes(outer_b.begin() + 24, outer_b.end()), 24 / 8, 14)));

    // Refused encapsulations are counted by reason.
    feed(ethernet(kIpv4, ipv4(47, 7, 8, gre(0x8847, Bytes(20, 0)))));
    feed(ethernet(kIpv4, ipv4(47, 7, 8, Bytes{0x00, 0x00})));
    source.finish();

    const std::string want = "10.0.0.1:5060 10.0.0.2:5080 " + sip;
    CHECK(got == std::vector<std::string>(5, want));
    const CaptureStats s = source.stats();
    CHECK(s.frames == 12);
    CHECK(s.tunnelled[static_cast<std::size_t>(TunnelKind::gre)] == 2);
    CHECK(s.tunnelled[static_cast<std::size_t>(TunnelKind::vxlan)] == 1);
    CHECK(s.tunnelled[static_cast<std::size_t>(TunnelKind::ip_in_ip)] == 4);  // 2 frames + 2 outer datagrams
    CHECK(s.decode_errors[static_cast<std::size_t>(DecodeError::unsupported_tunnel)] == 1);
    CHECK(s.decode_errors[static_cast<std::size_t>(DecodeError::truncated_tunnel)] == 1);
    CHECK(s.fragments.reassembled == 5);
    CHECK(s.frames == s.decode_errors_total() + s.fragments.fragments - s.fragments.reassembled + s.packets_total());
}
