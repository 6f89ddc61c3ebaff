// IP fragment reassembly and TCP stream reassembly, driven with hand-built packets.
#include "pcap/decode.hpp"
#include "pcap/ip_reassembly.hpp"
#include "pcap/tcp_reassembly.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

using namespace hepd;
using namespace hepd::pcap;

namespace {

IpAddress v4(std::uint8_t last) {
    const std::uint8_t b[4] = {10, 0, 0, last};
    return IpAddress::v4(std::span<const std::uint8_t, 4>(b, 4));
}

// `bytes` must outlive the packet.
IpPacket fragment(const std::string& bytes, std::uint32_t offset, bool more, std::int64_t us = 0, std::uint32_t id = 7,
                  std::uint8_t src = 1) {
    IpPacket f;
    f.time = Timestamp{us};
    f.src = v4(src);
    f.dst = v4(2);
    f.protocol = 17;
    f.fragment = true;
    f.more_fragments = more;
    f.fragment_id = id;
    f.fragment_offset = offset;
    f.payload = as_bytes(bytes);
    return f;
}

std::string text(const IpPacket& p) { return std::string(as_text(p.payload)); }

}  // namespace

TEST_CASE("decode_ip reports IPv4 fragment fields", "[pcap][fragments]") {
    // 10.0.0.1 -> 10.0.0.2, id 0x1234, MF set, offset 185 * 8 = 1480, UDP, 4 bytes of payload.
    const std::vector<std::uint8_t> ip{0x45, 0, 0, 24, 0x12, 0x34, 0x20, 185, 64,  17,  0,   0,
                                       10,   0, 0, 1,  10,   0,    0,    2,   'a', 'b', 'c', 'd'};
    Frame f{Timestamp{5}, LinkType::raw, ByteSpan(ip), 24};
    IpPacket p;
    REQUIRE(decode_ip(f, p) == DecodeError::none);
    CHECK(p.fragment);
    CHECK(p.more_fragments);
    CHECK(p.fragment_id == 0x1234);
    CHECK(p.fragment_offset == 1480);
    CHECK(p.protocol == 17);
    CHECK(p.src.to_string() == "10.0.0.1");
    CHECK(as_text(p.payload) == "abcd");
    CHECK(p.time.us == 5);
    L4Packet l4;
    CHECK(decode_frame_into(f, l4) == DecodeError::ip_fragment);

    auto df = ip;
    df[6] = 0x40;  // Don't Fragment alone: a whole datagram
    df[7] = 0;
    Frame g{Timestamp{}, LinkType::raw, ByteSpan(df), 24};
    REQUIRE(decode_ip(g, p) == DecodeError::none);
    CHECK_FALSE(p.fragment);
}

TEST_CASE("decode_ip reports IPv6 fragment headers and skips atomic ones", "[pcap][fragments]") {
    std::vector<std::uint8_t> ip(40, 0);
    ip[0] = 0x60;
    ip[6] = 44;  // fragment header next
    ip[7] = 64;
    ip[8] = 0x20;
    ip[9] = 0x01;
    ip[23] = 1;
    ip[24] = 0x20;
    ip[25] = 0x01;
    ip[39] = 2;
    // Fragment header: next 17, offset 100 (*8 = 800), M set, id 0xdeadbeef; then 8 bytes.
    const std::vector<std::uint8_t> fh{17, 0, 0x03, 0x21, 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8};
    ip.insert(ip.end(), fh.begin(), fh.end());
    ip[5] = static_cast<std::uint8_t>(fh.size());
    Frame f{Timestamp{}, LinkType::raw, ByteSpan(ip), static_cast<std::uint32_t>(ip.size())};
    IpPacket p;
    REQUIRE(decode_ip(f, p) == DecodeError::none);
    CHECK(p.fragment);
    CHECK(p.more_fragments);
    CHECK(p.fragment_offset == 800);
    CHECK(p.fragment_id == 0xdeadbeef);
    CHECK(p.protocol == 17);
    CHECK(p.payload.size() == 8);
    CHECK(p.src.to_string() == "2001::1");

    // Atomic fragment (offset 0, M clear, RFC 6946): the UDP header right after it is decoded.
    auto atomic = ip;
    atomic[42] = 0;
    atomic[43] = 0;
    const std::vector<std::uint8_t> udp{0x13, 0xc4, 0x13, 0xc4, 0, 8, 0, 0};
    std::copy(udp.begin(), udp.end(), atomic.begin() + 48);
    Frame a{Timestamp{}, LinkType::raw, ByteSpan(atomic), static_cast<std::uint32_t>(atomic.size())};
    REQUIRE(decode_ip(a, p) == DecodeError::none);
    CHECK_FALSE(p.fragment);
    auto l4 = decode_frame(a);
    REQUIRE(l4.ok());
    CHECK(l4->transport == Transport::udp);
    CHECK(l4->dst.port == 5060);
    CHECK(l4->payload.empty());
}

TEST_CASE("decode_transport skips IPv6 extension headers left after reassembly", "[pcap][fragments]") {
    // Destination options (8 bytes, next = UDP) then UDP 5060 -> 5080 with "hi".
    // clang-format off
    const std::vector<std::uint8_t> bytes{17,   0,    1,    4, 0,  0, 0, 0,   0x13,
                                          0xc4, 0x13, 0xd8, 0, 10, 0, 0, 'h', 'i'};
    // clang-format on
    IpPacket ip;
    const std::uint8_t a[16] = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    ip.src = IpAddress::v6(std::span<const std::uint8_t, 16>(a, 16));
    ip.dst = ip.src;
    ip.protocol = 60;
    ip.payload = ByteSpan(bytes);
    L4Packet p;
    REQUIRE(decode_transport(ip, p) == DecodeError::none);
    CHECK(p.transport == Transport::udp);
    CHECK(p.ip_protocol == 17);
    CHECK(p.src.port == 5060);
    CHECK(p.dst.port == 5080);
    CHECK(as_text(p.payload) == "hi");
    // Truncated inside the extension header.
    ip.payload = ByteSpan(bytes.data(), 6);
    CHECK(decode_transport(ip, p) == DecodeError::truncated_ip);
}

TEST_CASE("reassembly: every arrival order of four fragments gives the same datagram", "[pcap][fragments]") {
    const std::vector<std::string> parts{std::string(16, 'a'), std::string(16, 'b'), std::string(16, 'c'), "tail"};
    std::vector<int> order{0, 1, 2, 3};
    int permutations = 0;
    do {
        Reassembler r;
        IpPacket out;
        int completed_at = -1;
        for (int i = 0; i < 4; ++i) {
            const int k = order[static_cast<std::size_t>(i)];
            const auto idx = static_cast<std::size_t>(k);
            if (r.add(fragment(parts[idx], static_cast<std::uint32_t>(16 * k), k != 3, 100 + i), out)) completed_at = i;
        }
        CHECK(completed_at == 3);
        CHECK(text(out) == std::string(16, 'a') + std::string(16, 'b') + std::string(16, 'c') + "tail");
        CHECK_FALSE(out.fragment);
        CHECK(out.protocol == 17);
        CHECK(out.src == v4(1));
        CHECK(out.dst == v4(2));
        CHECK(out.time.us == 103);  // the completing fragment's time
        CHECK(r.stats().fragments == 4);
        CHECK(r.stats().reassembled == 1);
        CHECK(r.active() == 0);
        ++permutations;
    } while (std::next_permutation(order.begin(), order.end()));
    CHECK(permutations == 24);
}

TEST_CASE("reassembly: duplicates are ignored, overlaps keep the first bytes", "[pcap][fragments]") {
    Reassembler r;
    IpPacket out;
    const std::string a(16, 'A');
    const std::string b(16, 'B');
    const std::string c(8, 'C');
    CHECK_FALSE(r.add(fragment(a, 0, true), out));
    CHECK_FALSE(r.add(fragment(a, 0, true), out));
    CHECK(r.stats().duplicates == 1);
    CHECK_FALSE(r.add(fragment(b, 8, true), out));  // bytes 8..15 already held
    CHECK(r.stats().overlaps == 1);
    REQUIRE(r.add(fragment(c, 24, false), out));
    CHECK(text(out) == std::string(16, 'A') + std::string(8, 'B') + std::string(8, 'C'));

    // A late copy covering a gap on both sides of held bytes fills only the gaps.
    Reassembler s;
    const std::string mid(8, 'm');
    const std::string wide(24, 'w');
    CHECK_FALSE(s.add(fragment(mid, 8, true), out));
    CHECK_FALSE(s.add(fragment(wide, 0, true), out));
    REQUIRE(s.add(fragment(std::string("end!"), 24, false), out));
    CHECK(text(out) == std::string(8, 'w') + std::string(8, 'm') + std::string(8, 'w') + "end!");
    CHECK(s.stats().overlaps == 1);
}

TEST_CASE("reassembly: inconsistent, oversized and fragmented-to-bits datagrams are dropped", "[pcap][fragments]") {
    IpPacket out;
    const std::string eight(8, 'x');
    SECTION("two different ends") {
        Reassembler r;
        CHECK_FALSE(r.add(fragment(eight, 16, false), out));
        CHECK_FALSE(r.add(fragment(eight, 24, false), out));
        CHECK(r.stats().dropped[static_cast<std::size_t>(FragmentDrop::inconsistent)] == 1);
        CHECK(r.stats().dropped_fragments == 2);
        CHECK(r.active() == 0);
    }
    SECTION("a fragment past the end the last one gave") {
        Reassembler r;
        CHECK_FALSE(r.add(fragment(eight, 16, false), out));
        CHECK_FALSE(r.add(fragment(eight, 24, true), out));
        CHECK(r.stats().dropped[static_cast<std::size_t>(FragmentDrop::inconsistent)] == 1);
        // ... and a last fragment that ends before bytes already held.
        Reassembler s;
        CHECK_FALSE(s.add(fragment(eight, 24, true), out));
        CHECK_FALSE(s.add(fragment(eight, 8, false), out));
        CHECK(s.stats().dropped[static_cast<std::size_t>(FragmentDrop::inconsistent)] == 1);
    }
    SECTION("beyond 65535 bytes") {
        Reassembler r;
        CHECK_FALSE(r.add(fragment(eight, 65528, false), out));  // ends at 65536
        CHECK(r.stats().dropped[static_cast<std::size_t>(FragmentDrop::too_large)] == 1);
        Reassembler small(ReassemblyOptions{.max_datagram_bytes = 16});
        CHECK_FALSE(small.add(fragment(eight, 16, true), out));
        CHECK(small.stats().dropped[static_cast<std::size_t>(FragmentDrop::too_large)] == 1);
    }
    SECTION("too many pieces") {
        Reassembler r(ReassemblyOptions{.max_pieces = 2});
        CHECK_FALSE(r.add(fragment(eight, 0, true), out));
        CHECK_FALSE(r.add(fragment(eight, 16, true), out));
        CHECK_FALSE(r.add(fragment(eight, 8, true), out));  // joins the two: one piece again
        CHECK_FALSE(r.add(fragment(eight, 40, true), out));
        CHECK(r.stats().dropped_total() == 0);
        CHECK_FALSE(r.add(fragment(eight, 56, true), out));
        CHECK(r.stats().dropped[static_cast<std::size_t>(FragmentDrop::too_many_pieces)] == 1);
        CHECK(r.stats().dropped_fragments == 5);
    }
    CHECK(to_string(FragmentDrop::too_many_pieces) == "too_many_pieces");
}

TEST_CASE("reassembly: a lone last fragment at offset 0 is a whole datagram", "[pcap][fragments]") {
    Reassembler r;
    IpPacket out;
    REQUIRE(r.add(fragment(std::string("whole"), 0, false), out));
    CHECK(text(out) == "whole");
}

TEST_CASE("reassembly: timeouts on packet time, eviction at the cap, leftovers at the end", "[pcap][fragments]") {
    const std::string eight(8, 'x');
    IpPacket out;
    Reassembler r(ReassemblyOptions{.max_datagrams = 2, .timeout_us = 1'000'000});
    CHECK_FALSE(r.add(fragment(eight, 0, true, 0, 1), out));
    CHECK_FALSE(r.add(fragment(eight, 0, true, 999'999, 2), out));
    CHECK(r.active() == 2);
    // 1 s after the first: it times out; the second is still within its second.
    CHECK_FALSE(r.add(fragment(eight, 0, true, 1'000'000, 3), out));
    CHECK(r.stats().dropped[static_cast<std::size_t>(FragmentDrop::timeout)] == 1);
    CHECK(r.active() == 2);
    // A fourth datagram: the oldest (id 2) is evicted.
    CHECK_FALSE(r.add(fragment(eight, 0, true, 1'000'001, 4), out));
    CHECK(r.stats().dropped[static_cast<std::size_t>(FragmentDrop::evicted)] == 1);
    // id 2's end now starts a new datagram instead of completing the evicted one; id 3 still completes.
    CHECK_FALSE(r.add(fragment(eight, 8, false, 1'000'002, 2), out));
    CHECK(r.stats().dropped[static_cast<std::size_t>(FragmentDrop::evicted)] == 2);  // id 3 was older than id 4
    REQUIRE(r.add(fragment(eight, 8, false, 1'000'003, 4), out));
    CHECK(out.fragment_id == 4);
    CHECK(r.active() == 1);
    r.expire(Timestamp{1'500'000});
    CHECK(r.active() == 1);
    r.finish();
    CHECK(r.active() == 0);
    CHECK(r.stats().dropped[static_cast<std::size_t>(FragmentDrop::incomplete_at_end)] == 1);
    CHECK(r.stats().fragments == 6);
    CHECK(r.stats().reassembled == 1);
    CHECK(r.stats().dropped_fragments == 4);
}

TEST_CASE("reassembly: datagrams differing in any key field do not mix", "[pcap][fragments]") {
    Reassembler r;
    IpPacket out;
    const std::string a(8, 'a');
    const std::string b(8, 'b');
    CHECK_FALSE(r.add(fragment(a, 0, true, 0, 1, 1), out));
    CHECK_FALSE(r.add(fragment(b, 8, false, 0, 1, 3), out));  // other source
    CHECK_FALSE(r.add(fragment(b, 8, false, 0, 2, 1), out));  // other id
    auto other_proto = fragment(b, 8, false, 0, 1, 1);
    other_proto.protocol = 6;
    CHECK_FALSE(r.add(other_proto, out));
    CHECK(r.active() == 4);
    REQUIRE(r.add(fragment(b, 8, false, 0, 1, 1), out));
    CHECK(text(out) == a + b);
}

// ---------------------------------------------------------------------------------------------

namespace {

struct Messages {
    std::vector<std::string> texts;
    std::vector<std::int64_t> times;
    std::vector<std::string> sources;
    void operator()(const TcpMessage& m) {
        texts.emplace_back(as_text(m.bytes));
        times.push_back(m.time.us);
        sources.push_back(m.src.to_string());
    }
};

// `data` must outlive the packet.
L4Packet segment(std::uint32_t seq, const std::string& data, std::uint8_t flags = tcp_flag::ack, std::int64_t us = 0,
                 std::uint16_t sport = 40000) {
    L4Packet p;
    p.time = Timestamp{us};
    p.src = Endpoint{v4(1), sport};
    p.dst = Endpoint{v4(2), 5060};
    p.transport = Transport::tcp;
    p.ip_protocol = 6;
    p.tcp_seq = seq;
    p.tcp_flags = flags;
    p.payload = as_bytes(data);
    return p;
}

const std::string kOptions = "OPTIONS sip:a SIP/2.0\r\nCall-ID: 1\r\nContent-Length: 0\r\n\r\n";
const std::string kMessage = "MESSAGE sip:a SIP/2.0\r\nCall-ID: 2\r\nContent-Length: 5\r\n\r\nhello";

}  // namespace

TEST_CASE("tcp: every split of two messages gives the same two messages", "[pcap][tcp]") {
    const std::string stream = kOptions + kMessage;
    for (std::size_t k = 0; k <= stream.size(); ++k) {
        for (std::size_t j = k; j <= stream.size(); j += 7) {
            CAPTURE(k, j);
            TcpReassembler r;
            Messages got;
            const std::string syn;
            r.segment(segment(99, syn, tcp_flag::syn), StreamProtocol::sip, got);
            const std::string a = stream.substr(0, k);
            const std::string b = stream.substr(k, j - k);
            const std::string c = stream.substr(j);
            r.segment(segment(100, a, tcp_flag::ack, 1), StreamProtocol::sip, got);
            r.segment(segment(100 + static_cast<std::uint32_t>(k), b, tcp_flag::ack, 2), StreamProtocol::sip, got);
            r.segment(segment(100 + static_cast<std::uint32_t>(j), c, tcp_flag::ack, 3), StreamProtocol::sip, got);
            REQUIRE(got.texts == std::vector<std::string>{kOptions, kMessage});
            // Each message carries the time of the segment that completed it.
            const std::int64_t first = k >= kOptions.size() ? 1 : (j >= kOptions.size() ? 2 : 3);
            CHECK(got.times[0] == first);
            CHECK(r.stats().messages == 2);
            CHECK(r.stats().leftover_bytes == 0);
        }
    }
}

TEST_CASE("tcp: out of order, retransmitted and overlapping segments", "[pcap][tcp]") {
    const std::string stream = kOptions + kMessage + kOptions;
    const auto n = static_cast<std::uint32_t>(stream.size());
    const std::uint32_t base = 1000;
    const std::string p1 = stream.substr(0, 30);
    const std::string p2 = stream.substr(30, 40);
    const std::string p3 = stream.substr(70, 50);
    const std::string p4 = stream.substr(120);
    const std::string overlap = stream.substr(20, 60);  // 20..80: 10 bytes beyond what is held
    TcpReassembler r;
    Messages got;
    r.segment(segment(base, p1), StreamProtocol::sip, got);  // mid-stream start: no SYN
    r.segment(segment(base + 120, p4), StreamProtocol::sip, got);
    r.segment(segment(base + 70, p3), StreamProtocol::sip, got);
    r.segment(segment(base + 70, p3), StreamProtocol::sip, got);  // the same held segment again
    CHECK(got.texts.empty());
    r.segment(segment(base, p1), StreamProtocol::sip, got);            // retransmission
    r.segment(segment(base + 20, overlap), StreamProtocol::sip, got);  // fills 30..80, drains 70..
    r.segment(segment(base + 30, p2), StreamProtocol::sip, got);       // now all old
    CHECK(got.texts == std::vector<std::string>{kOptions, kMessage, kOptions});
    const TcpStats& s = r.stats();
    CHECK(s.streams_opened == 1);
    CHECK(s.out_of_order_segments == 3);
    CHECK(s.retransmitted_segments == 2);
    CHECK(s.overlapping_segments == 1);
    CHECK(s.messages == 3);
    CHECK(s.segments == 7);
    CHECK(s.payload_bytes == 30 + (n - 120) + 50 + 50 + 30 + 60 + 40);
    CHECK(r.streams() == 1);
}

TEST_CASE("tcp: sequence numbers wrap inside a message", "[pcap][tcp]") {
    const std::uint32_t isn = 0xffffffe0;
    TcpReassembler r;
    Messages got;
    const std::string empty;
    r.segment(segment(isn, empty, tcp_flag::syn), StreamProtocol::sip, got);
    const std::string a = kMessage.substr(0, 50);
    const std::string b = kMessage.substr(50);
    // The second piece first: it sits after the wrap.
    r.segment(segment(isn + 1 + 50, b), StreamProtocol::sip, got);
    CHECK(r.stats().out_of_order_segments == 1);
    r.segment(segment(isn + 1, a), StreamProtocol::sip, got);
    CHECK(got.texts == std::vector<std::string>{kMessage});
    r.segment(segment(isn + 1, a), StreamProtocol::sip, got);  // a retransmission across the wrap
    CHECK(r.stats().retransmitted_segments == 1);
}

TEST_CASE("tcp: FIN, RST and a reused 4-tuple", "[pcap][tcp]") {
    TcpReassembler r;
    Messages got;
    const std::string empty;
    const std::string half = kOptions.substr(0, 20);
    r.segment(segment(1, empty, tcp_flag::syn), StreamProtocol::sip, got);
    r.segment(segment(2 + 20, empty, tcp_flag::fin | tcp_flag::ack), StreamProtocol::sip,
              got);  // FIN before data
    CHECK(r.streams() == 1);
    r.segment(segment(2, half), StreamProtocol::sip, got);
    CHECK(r.stats().streams_closed_fin == 1);
    CHECK(r.stats().leftover_bytes == 20);  // an unfinished message when the stream closed
    CHECK(r.streams() == 0);

    r.segment(segment(500, half, tcp_flag::ack, 0, 40001), StreamProtocol::sip, got);
    r.segment(segment(520, empty, tcp_flag::rst, 0, 40001), StreamProtocol::sip, got);
    CHECK(r.stats().streams_closed_rst == 1);
    CHECK(r.stats().leftover_bytes == 40);
    r.segment(segment(520, empty, tcp_flag::rst, 0, 40001), StreamProtocol::sip, got);  // nothing to close
    CHECK(r.stats().ignored_segments == 1);

    r.segment(segment(900, empty, tcp_flag::syn, 0, 40002), StreamProtocol::sip, got);
    r.segment(segment(901, half, tcp_flag::ack, 0, 40002), StreamProtocol::sip, got);
    r.segment(segment(900, empty, tcp_flag::syn, 0, 40002), StreamProtocol::sip,
              got);  // retransmitted SYN: same ISN
    CHECK(r.stats().streams_restarted == 0);
    r.segment(segment(7000, empty, tcp_flag::syn, 0, 40002), StreamProtocol::sip, got);  // new connection
    CHECK(r.stats().streams_restarted == 1);
    CHECK(r.stats().leftover_bytes == 60);
    r.segment(segment(7001, kOptions, tcp_flag::ack, 0, 40002), StreamProtocol::sip, got);
    CHECK(got.texts == std::vector<std::string>{kOptions});
    r.finish();
    CHECK(r.streams() == 0);
}

TEST_CASE("tcp: a framing error drops the stream's buffer and resumes at the next segment", "[pcap][tcp]") {
    TcpReassembler r;
    Messages got;
    const std::string bad = "NOT SIP AT ALL\r\nno colon here\r\n\r\n";
    r.segment(segment(1, bad), StreamProtocol::sip, got);
    CHECK(got.texts.empty());
    CHECK(r.stats().sip_framing_errors[static_cast<std::size_t>(sip::FramingError::bad_header_line)] == 1);
    CHECK(r.stats().resync_bytes_dropped == bad.size());
    const std::string keepalive_then_message = "\r\n\r\n" + kOptions;
    r.segment(segment(1 + static_cast<std::uint32_t>(bad.size()), keepalive_then_message), StreamProtocol::sip, got);
    CHECK(got.texts == std::vector<std::string>{kOptions});
    // A missing Content-Length is an error on a stream (RFC 3261 18.3).
    const std::string no_length = "BYE sip:a SIP/2.0\r\nCall-ID: 3\r\n\r\n";
    TcpReassembler s;
    s.segment(segment(1, no_length), StreamProtocol::sip, got);
    CHECK(s.stats().sip_framing_errors[static_cast<std::size_t>(sip::FramingError::missing_content_length)] == 1);
}

TEST_CASE("tcp: HEP streams are cut with the HEP framer", "[pcap][tcp]") {
    // Two minimal HEPv3 messages (header only, 6 bytes each... plus one 10-byte one) in one segment.
    const std::string two = std::string("HEP3\x00\x06", 6) + std::string(
                                                                 "HEP3\x00\x0a"
                                                                 "abcd",
                                                                 10);
    TcpReassembler r;
    Messages got;
    r.segment(segment(1, two), StreamProtocol::hep, got);
    REQUIRE(got.texts.size() == 2);
    CHECK(got.texts[0] == std::string("HEP3\x00\x06", 6));
    CHECK(got.texts[1] == std::string("HEP3\x00\x0a"
                                      "abcd",
                                      10));
    const std::string garbage = "GET / HTTP/1.1\r\n";
    r.segment(segment(17, garbage), StreamProtocol::hep, got);
    CHECK(r.stats().hep_framing_errors[static_cast<std::size_t>(hep::FramerError::not_hep)] == 1);
    const std::string split_a = std::string("HEP3\x00", 5);
    const std::string split_b = std::string("\x08xy", 3);
    r.segment(segment(17 + static_cast<std::uint32_t>(garbage.size()), split_a), StreamProtocol::hep, got);
    r.segment(segment(17 + static_cast<std::uint32_t>(garbage.size()) + 5, split_b), StreamProtocol::hep, got);
    REQUIRE(got.texts.size() == 3);
    CHECK(got.texts[2] == std::string("HEP3\x00\x08xy", 8));
}

TEST_CASE("tcp: streams are capped, least recently active evicted", "[pcap][tcp]") {
    TcpReassembler r(TcpOptions{.max_streams = 2});
    Messages got;
    const std::string half = kOptions.substr(0, 10);
    r.segment(segment(1, half, tcp_flag::ack, 0, 1), StreamProtocol::sip, got);
    r.segment(segment(1, half, tcp_flag::ack, 0, 2), StreamProtocol::sip, got);
    const std::string second = kOptions.substr(10, 10);
    r.segment(segment(11, second, tcp_flag::ack, 0, 1), StreamProtocol::sip,
              got);                                                              // port 1 is now the newest
    r.segment(segment(1, half, tcp_flag::ack, 0, 3), StreamProtocol::sip, got);  // evicts port 2
    CHECK(r.stats().streams_evicted == 1);
    CHECK(r.stats().leftover_bytes == 10);
    CHECK(r.streams() == 2);
    // Port 1's stream survived with its 20 bytes: the rest of the message completes it.
    const std::string rest = kOptions.substr(20);
    r.segment(segment(21, rest, tcp_flag::ack, 0, 1), StreamProtocol::sip, got);
    CHECK(got.texts == std::vector<std::string>{kOptions});
    CHECK(got.sources == std::vector<std::string>{"10.0.0.1:1"});
}

TEST_CASE("tcp: a hole that never fills is given up within the bounds", "[pcap][tcp]") {
    TcpReassembler r(TcpOptions{.max_out_of_order_segments = 2});
    Messages got;
    const std::string lost = kOptions;  // never arrives
    const auto gap = static_cast<std::uint32_t>(lost.size());
    const std::string m = kMessage;
    const auto ml = static_cast<std::uint32_t>(m.size());
    r.segment(segment(1, kMessage.substr(0, 1)), StreamProtocol::sip, got);  // 'M' starts the stream
    // ... then the hole, then three whole messages after it.
    r.segment(segment(2 + gap, m), StreamProtocol::sip, got);
    r.segment(segment(2 + gap + ml, m), StreamProtocol::sip, got);
    CHECK(got.texts.empty());
    r.segment(segment(2 + gap + 2 * ml, m), StreamProtocol::sip, got);  // no room: skip the hole
    CHECK(r.stats().gaps_skipped == 1);
    CHECK(r.stats().resync_bytes_dropped == 1);  // the lone 'M'
    CHECK(got.texts == std::vector<std::string>{m, m, m});
}

TEST_CASE("tcp: per-stream bytes are capped", "[pcap][tcp]") {
    // Out-of-order data beyond max_stream_bytes is not held.
    TcpReassembler r(TcpOptions{.max_stream_bytes = 100, .max_message_bytes = 100});
    Messages got;
    const std::string big(80, 'x');
    r.segment(segment(1, kOptions.substr(0, 5)), StreamProtocol::sip, got);
    r.segment(segment(100, big), StreamProtocol::sip, got);
    CHECK(r.stats().out_of_order_segments == 1);
    r.segment(segment(300, big), StreamProtocol::sip, got);  // 5 + 80 + 80 > 100
    CHECK(r.stats().gaps_skipped >= 1);
    // A message larger than max_message_bytes is a framing error, not a growing buffer.
    TcpReassembler s(TcpOptions{.max_stream_bytes = 100, .max_message_bytes = 100});
    const std::string huge = "MESSAGE sip:a SIP/2.0\r\nContent-Length: 500\r\n\r\n" + std::string(500, 'b');
    s.segment(segment(1, huge), StreamProtocol::sip, got);
    CHECK(s.stats().sip_framing_errors[static_cast<std::size_t>(sip::FramingError::message_too_large)] == 1);
}
