// SIP over WebSocket in TCP streams: the handshake and frame helpers, then the reassembler fed
// hand-built frames (RFC 6455 section 5) split, fragmented, masked and broken in every way.
#include "pcap/websocket.hpp"

#include "pcap/capture_source.hpp"
#include "pcap/tcp_reassembly.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

using namespace hepd;
using namespace hepd::pcap;

namespace {

using Bytes = std::vector<std::uint8_t>;

// One frame. `mask` empty: unmasked (server to client); `len_bytes` forces the 16- or 64-bit
// length encoding (0: the shortest).
Bytes ws_frame(std::uint8_t opcode, const std::string& payload, bool fin = true, const Bytes& mask = {},
               int len_bytes = 0, bool rsv1 = false) {
    Bytes f;
    f.push_back(static_cast<std::uint8_t>((fin ? 0x80 : 0) | (rsv1 ? 0x40 : 0) | opcode));
    const std::uint8_t m = mask.empty() ? 0 : 0x80;
    const std::size_t n = payload.size();
    if (len_bytes == 8 || n > 65535) {
        f.push_back(m | 127);
        for (int i = 7; i >= 0; --i) f.push_back(static_cast<std::uint8_t>(static_cast<std::uint64_t>(n) >> (8 * i)));
    } else if (len_bytes == 2 || n > 125) {
        f.push_back(m | 126);
        f.push_back(static_cast<std::uint8_t>(n >> 8));
        f.push_back(static_cast<std::uint8_t>(n));
    } else {
        f.push_back(static_cast<std::uint8_t>(m | n));
    }
    f.insert(f.end(), mask.begin(), mask.end());
    for (std::size_t i = 0; i < n; ++i)
        f.push_back(static_cast<std::uint8_t>(payload[i]) ^ (mask.empty() ? 0 : mask[i % 4]));
    return f;
}

Bytes text(const std::string& s) { return Bytes(s.begin(), s.end()); }
Bytes cat(Bytes a, const Bytes& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

const std::string kRequest =
    "GET / HTTP/1.1\r\nHost: proxy.example.com\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: sip\r\n"
    "Sec-WebSocket-Version: 13\r\n\r\n";
const std::string kResponse =
    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\nSec-WebSocket-Protocol: sip\r\n\r\n";
// RFC 7118 lets a SIP message over WebSocket go without Content-Length.
const std::string kRegister =
    "REGISTER sip:proxy.example.com SIP/2.0\r\nVia: SIP/2.0/WSS df7jal23ls0d.invalid;branch=z9hG4bKasudf\r\n"
    "From: <sip:alice@example.com>;tag=65bnmj\r\nTo: <sip:alice@example.com>\r\nCall-ID: aiuy7k9njasd\r\n"
    "CSeq: 1 REGISTER\r\n\r\n";
const std::string kOk = "SIP/2.0 200 OK\r\nCall-ID: aiuy7k9njasd\r\nCSeq: 1 REGISTER\r\nContent-Length: 0\r\n\r\n";
const Bytes kMask = {0x37, 0xfa, 0x21, 0x3d};

struct Messages {
    std::vector<std::string> texts;
    void operator()(const TcpMessage& m) {
        CHECK(m.protocol == StreamProtocol::sip);
        texts.emplace_back(as_text(m.bytes));
    }
};

IpAddress v4(std::uint8_t last) {
    const std::uint8_t b[4] = {10, 0, 0, last};
    return IpAddress::v4(std::span<const std::uint8_t, 4>(b, 4));
}

// `data` must outlive the packet.
L4Packet segment(std::uint32_t seq, const Bytes& data, std::uint16_t sport = 40000, std::uint16_t dport = 8080,
                 std::uint8_t flags = tcp_flag::ack) {
    L4Packet p;
    p.src = Endpoint{v4(1), sport};
    p.dst = Endpoint{v4(2), dport};
    p.transport = Transport::tcp;
    p.ip_protocol = 6;
    p.tcp_seq = seq;
    p.tcp_flags = flags;
    p.payload = ByteSpan(data);
    return p;
}

// Feeds `stream` as one direction of a connection, cut into segments at `cuts`.
Messages feed(TcpReassembler& r, const Bytes& stream, const std::vector<std::size_t>& cuts = {}) {
    Messages got;
    std::size_t from = 0;
    std::vector<std::size_t> ends = cuts;
    ends.push_back(stream.size());
    for (const std::size_t to : ends) {
        const Bytes piece(stream.begin() + static_cast<std::ptrdiff_t>(from),
                          stream.begin() + static_cast<std::ptrdiff_t>(to));
        r.segment(segment(1000 + static_cast<std::uint32_t>(from), piece), StreamProtocol::sip, got);
        from = to;
    }
    return got;
}

std::uint64_t ws_errors(const TcpReassembler& r, WebSocketError e) {
    return r.stats().websocket_errors[static_cast<std::size_t>(e)];
}

}  // namespace

TEST_CASE("websocket: frame headers with 7-, 16- and 64-bit lengths, masked or not", "[pcap][websocket]") {
    const std::string small(100, 'a'), medium(300, 'b');
    struct Case {
        Bytes frame;
        std::size_t header;
        std::uint64_t payload;
        bool masked;
    };
    const std::vector<Case> cases = {
        {ws_frame(1, small), 2, 100, false},
        {ws_frame(1, small, true, kMask), 6, 100, true},
        {ws_frame(2, medium), 4, 300, false},
        {ws_frame(2, medium, true, kMask), 8, 300, true},
        {ws_frame(1, small, true, {}, 8), 10, 100, false},
        {ws_frame(1, small, true, kMask, 8), 14, 100, true},
    };
    for (const Case& c : cases) {
        CAPTURE(c.header);
        const WsFrame f = parse_ws_frame(ByteSpan(c.frame), 65535);
        REQUIRE(f.status == WsFrameStatus::complete);
        CHECK(f.header_size == c.header);
        CHECK(f.payload_size == c.payload);
        CHECK(f.masked == c.masked);
        CHECK(f.fin);
        CHECK(f.size() == c.frame.size());
        if (c.masked) CHECK(Bytes(f.mask.begin(), f.mask.end()) == kMask);
        // Every shorter prefix needs more.
        for (std::size_t n = 0; n < c.frame.size(); ++n)
            CHECK(parse_ws_frame(ByteSpan(c.frame.data(), n), 65535).status == WsFrameStatus::need_more);
        // A cap below the payload refuses it as soon as the length is readable.
        CHECK(parse_ws_frame(ByteSpan(c.frame.data(), c.header - (c.masked ? 4 : 0)), 99).status ==
              WsFrameStatus::too_large);
    }
    // A 64-bit length of 2^63 + 5 and one of 2^40: refused, never wrapped.
    Bytes huge = {0x82, 0xff, 0x80, 0, 0, 0, 0, 0, 0, 5};
    CHECK(parse_ws_frame(ByteSpan(huge), 65535).status == WsFrameStatus::too_large);
    huge = {0x82, 0x7f, 0, 0, 0x01, 0, 0, 0, 0, 0};
    CHECK(parse_ws_frame(ByteSpan(huge), 65535).status == WsFrameStatus::too_large);

    Bytes data = text("abcdefgh");
    unmask(data.data(), 3, {1, 2, 3, 4});
    unmask(data.data() + 3, 5, {1, 2, 3, 4}, 3);
    Bytes expect = text("abcdefgh");
    for (std::size_t i = 0; i < expect.size(); ++i) expect[i] ^= static_cast<std::uint8_t>(1 + i % 4);
    CHECK(data == expect);
}

TEST_CASE("websocket: handshakes", "[pcap][websocket]") {
    CHECK(classify_stream_start(as_bytes("GET / HTTP/1.1\r\n")) == StreamStart::http);
    CHECK(classify_stream_start(as_bytes("HTTP/1.1 101 ")) == StreamStart::http);
    CHECK(classify_stream_start(as_bytes("GE")) == StreamStart::need_more);
    CHECK(classify_stream_start(as_bytes("")) == StreamStart::need_more);
    CHECK(classify_stream_start(as_bytes("INVITE sip:a SIP/2.0\r\n")) == StreamStart::other);
    CHECK(classify_stream_start(as_bytes("\r\n")) == StreamStart::other);

    const Handshake req = parse_handshake(kRequest);
    CHECK(req.request);
    CHECK(req.upgrade);
    CHECK(req.sip_protocol);
    CHECK(req.upgrades());
    const Handshake resp = parse_handshake(kResponse);
    CHECK(resp.switching);
    CHECK(resp.upgrades());
    CHECK(parse_handshake("get / HTTP/1.1\r\nUpgrade: websocket\r\n").upgrades() ==
          false);  // methods are case-sensitive
    CHECK(parse_handshake("GET / HTTP/1.1\r\nupgrade:  WebSocket \r\nSEC-WEBSOCKET-PROTOCOL: chat, SIP\r\n")
              .sip_protocol);
    CHECK(parse_handshake("GET / HTTP/1.1\r\nUpgrade: h2c\r\n").upgrades() == false);
    CHECK(parse_handshake("HTTP/1.1 200 OK\r\nUpgrade: websocket\r\n").upgrades() == false);
    CHECK(parse_handshake("HTTP/1.1 1010 X\r\nUpgrade: websocket\r\n").upgrades() == false);
    CHECK(parse_handshake("POST / HTTP/1.1\r\nUpgrade: websocket\r\n").upgrades() == false);

    CHECK(looks_like_sip_websocket(as_bytes(kRequest)));
    CHECK(looks_like_sip_websocket(as_bytes(kResponse)));
    // The header goes on in the next segment: the Upgrade header seen so far is enough to follow
    // the stream (which checks the subprotocol later); without it, it is not.
    CHECK(looks_like_sip_websocket(as_bytes(kRequest.substr(0, kRequest.size() - 2))));
    CHECK_FALSE(looks_like_sip_websocket(as_bytes(kRequest.substr(0, kRequest.find("Upgrade")))));
    std::string chat = kRequest;
    chat.replace(chat.find("Protocol: sip"), 13, "Protocol: xmpp");
    CHECK_FALSE(looks_like_sip_websocket(as_bytes(chat)));  // another application's WebSocket
    CHECK_FALSE(looks_like_sip_websocket(as_bytes("GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n")));
}

TEST_CASE("websocket: both directions of a SIP WebSocket connection, split at every byte", "[pcap][websocket]") {
    const Bytes client = cat(text(kRequest), ws_frame(1, kRegister, true, kMask));
    for (std::size_t cut = 1; cut < client.size(); ++cut) {
        CAPTURE(cut);
        TcpReassembler r;
        const Messages got = feed(r, client, {cut});
        REQUIRE(got.texts == std::vector<std::string>{kRegister});
        CHECK(r.stats().websocket_upgrades == 1);
        CHECK(r.stats().websocket_messages == 1);
        CHECK(r.stats().messages == 1);
    }
    const Bytes server = cat(cat(text(kResponse), ws_frame(1, kOk)), ws_frame(2, kOk, true, {}, 2));
    TcpReassembler r;
    const Messages got = feed(r, server);  // handshake and both frames in one segment
    CHECK(got.texts == std::vector<std::string>{kOk, kOk});
    CHECK(r.stats().websocket_frames == 2);
    r.finish();
    CHECK(r.stats().leftover_bytes == 0);
}

TEST_CASE("websocket: fragmented messages, control frames between them, keep-alives", "[pcap][websocket]") {
    const Bytes mask2 = {9, 8, 7, 6};
    const std::string a = kRegister.substr(0, 50), b = kRegister.substr(50, 100), c = kRegister.substr(150);
    const Bytes stream =
        cat(cat(cat(cat(cat(text(kRequest), ws_frame(1, a, false, kMask)), ws_frame(9, "ping", true, mask2)),
                    ws_frame(0, b, false, mask2)),
                ws_frame(0, c, true, kMask)),
            cat(ws_frame(1, "\r\n\r\n", true, kMask), ws_frame(8, "\x03\xe8", true, kMask)));
    TcpReassembler r;
    const Messages got = feed(r, stream, {kRequest.size() + 3, kRequest.size() + 90});
    CHECK(got.texts == std::vector<std::string>{kRegister});
    const TcpStats& s = r.stats();
    CHECK(s.websocket_frames == 6);
    CHECK(s.websocket_control_frames == 2);
    CHECK(s.websocket_keepalives == 1);
    CHECK(s.websocket_messages == 1);
    for (const auto e : s.websocket_errors) CHECK(e == 0);
}

TEST_CASE("websocket: broken frames are counted and the stream resumes", "[pcap][websocket]") {
    const Bytes head = text(kRequest);
    const Bytes good = ws_frame(1, kRegister, true, kMask);
    SECTION("a frame beyond max_message_bytes: dropped with its segment, the next segment frames again") {
        TcpOptions o;
        o.max_message_bytes = 1024;
        TcpReassembler r(o);
        const Bytes big = ws_frame(1, std::string(5000, 'x'), true, kMask);
        const Messages got = feed(r, cat(cat(head, big), good), {head.size(), head.size() + big.size()});
        CHECK(got.texts == std::vector<std::string>{kRegister});
        CHECK(ws_errors(r, WebSocketError::frame_too_large) == 1);
        CHECK(r.stats().resync_bytes_dropped > 0);
    }
    SECTION("a reserved opcode") {
        TcpReassembler r;
        const Bytes bad = ws_frame(3, "zz", true, kMask);
        const Messages got = feed(r, cat(cat(head, bad), good), {head.size() + bad.size()});
        CHECK(got.texts == std::vector<std::string>{kRegister});
        CHECK(ws_errors(r, WebSocketError::bad_frame) == 1);
    }
    SECTION("a fragmented or oversized control frame") {
        TcpReassembler r;
        const Bytes bad = ws_frame(9, "p", false);
        const Bytes big_ping = ws_frame(9, std::string(126, 'p'));
        feed(r, cat(cat(cat(head, bad), big_ping), good),
             {head.size() + bad.size(), head.size() + bad.size() + big_ping.size()});
        CHECK(ws_errors(r, WebSocketError::bad_frame) == 2);
        CHECK(r.stats().websocket_messages == 1);
    }
    SECTION("a continuation with nothing begun, and a new message before the last one ended") {
        TcpReassembler r;
        const Bytes stream = cat(cat(cat(head, ws_frame(0, "lost", true)), ws_frame(1, "half of", false)), good);
        const Messages got = feed(r, stream);
        CHECK(got.texts == std::vector<std::string>{kRegister});
        CHECK(ws_errors(r, WebSocketError::unexpected_continuation) == 2);
    }
    SECTION("compressed (permessage-deflate) messages are skipped whole, fragments included") {
        TcpReassembler r;
        const Bytes stream =
            cat(cat(cat(head, ws_frame(1, "\x01\x02", false, kMask, 0, true)), ws_frame(0, "\x03", true, kMask)), good);
        const Messages got = feed(r, stream);
        CHECK(got.texts == std::vector<std::string>{kRegister});
        CHECK(ws_errors(r, WebSocketError::compressed) == 1);
        CHECK(r.stats().websocket_messages == 1);
    }
    SECTION("a fragmented message growing beyond max_message_bytes is dropped, its other fragments too") {
        TcpOptions o;
        o.max_message_bytes = 600;
        TcpReassembler r(o);
        const std::string part(400, 'y');
        const Bytes stream =
            cat(cat(cat(cat(head, ws_frame(1, part, false)), ws_frame(0, part, false)), ws_frame(0, part, true)), good);
        const Messages got = feed(r, stream);
        CHECK(got.texts == std::vector<std::string>{kRegister});
        CHECK(ws_errors(r, WebSocketError::frame_too_large) == 1);
    }
    SECTION("a gap inside a fragmented message loses that message only") {
        TcpReassembler r;
        const Bytes f1 = ws_frame(1, "first part", false);
        const Bytes f2 = ws_frame(0, "second part", false);
        const Bytes f3 = ws_frame(0, "last part", true);
        const Bytes stream = cat(cat(cat(cat(head, f1), f2), f3), good);
        Messages got;
        const auto at = [&](std::size_t off) { return 1000 + static_cast<std::uint32_t>(off); };
        const Bytes p1(stream.begin(), stream.begin() + static_cast<std::ptrdiff_t>(head.size() + f1.size()));
        const std::size_t after_f2 = head.size() + f1.size() + f2.size();
        const Bytes p3(stream.begin() + static_cast<std::ptrdiff_t>(after_f2), stream.end());
        r.segment(segment(at(0), p1), StreamProtocol::sip, got);
        // f2 never arrives.
        r.segment(segment(at(after_f2), p3), StreamProtocol::sip, got);
        CHECK(got.texts.empty());  // held out of order behind the hole
        r.finish();
        CHECK(r.stats().leftover_bytes == 10);  // "first part", never completed

        TcpOptions o;
        o.max_out_of_order_segments = 0;  // no room: the hole is skipped at once
        TcpReassembler g(o);
        Messages got2;
        g.segment(segment(at(0), p1), StreamProtocol::sip, got2);
        g.segment(segment(at(after_f2), p3), StreamProtocol::sip, got2);
        CHECK(g.stats().gaps_skipped == 1);
        CHECK(got2.texts == std::vector<std::string>{kRegister});  // "last part" went with its message
    }
}

TEST_CASE("websocket: HTTP that does not upgrade, and a handshake that never ends", "[pcap][websocket]") {
    SECTION("a refused upgrade: the rest of that direction is skipped") {
        TcpReassembler r;
        const Bytes stream = cat(text("HTTP/1.1 403 Forbidden\r\nContent-Length: 3\r\n\r\nno!"), ws_frame(1, kOk));
        const Messages got = feed(r, stream);
        CHECK(got.texts.empty());
        CHECK(ws_errors(r, WebSocketError::not_upgraded) == 1);
        CHECK(r.stats().sip_framing_errors[0] + r.stats().sip_framing_errors[1] + r.stats().sip_framing_errors[2] == 0);
    }
    SECTION("a handshake beyond max_message_bytes") {
        TcpOptions o;
        o.max_message_bytes = 512;
        TcpReassembler r(o);
        const std::string head = "GET / HTTP/1.1\r\nCookie: " + std::string(1000, 'c') + "\r\n\r\n";
        feed(r, text(head), {300});
        CHECK(ws_errors(r, WebSocketError::handshake_too_large) == 1);
    }
    SECTION("on a SIP port any WebSocket upgrade is taken; on a sniffed stream only the sip subprotocol's") {
        std::string chat = kRequest;
        chat.replace(chat.find("Protocol: sip"), 13, "Protocol: mqtt");
        const Bytes stream = cat(text(chat), ws_frame(1, kRegister, true, kMask));
        TcpReassembler listed;
        Messages got;
        listed.segment(segment(1, stream), StreamProtocol::sip, got);
        CHECK(got.texts == std::vector<std::string>{kRegister});
        TcpReassembler sniffed;
        Messages none;
        sniffed.segment(segment(1, stream), StreamProtocol::sip, none, true);
        CHECK(none.texts.empty());
        CHECK(ws_errors(sniffed, WebSocketError::not_upgraded) == 1);
    }
    SECTION("a stream on a SIP port that starts with SIP stays SIP") {
        TcpReassembler r;
        const Messages got = feed(r, text(kOk), {2});
        CHECK(got.texts == std::vector<std::string>{kOk});
        CHECK(r.stats().websocket_upgrades == 0);
    }
    SECTION("a new connection on the same 4-tuple starts with its own handshake") {
        TcpReassembler r;
        Messages got;
        const Bytes first = cat(text(kRequest), ws_frame(1, kRegister, true, kMask));
        const Bytes second = text(kOk);
        r.segment(segment(99, {}, 40000, 8080, tcp_flag::syn), StreamProtocol::sip, got);
        r.segment(segment(100, first), StreamProtocol::sip, got);
        r.segment(segment(5000, {}, 40000, 8080, tcp_flag::syn), StreamProtocol::sip, got);
        r.segment(segment(5001, second), StreamProtocol::sip, got);
        CHECK(got.texts == std::vector<std::string>{kRegister, kOk});
        CHECK(r.stats().streams_restarted == 1);
    }
}

TEST_CASE("capture source: SIP and SIP WebSocket found on TCP ports not listed", "[pcap][websocket][classify]") {
    CaptureOptions options;
    options.sniff_sip = GENERATE(true, false);
    CaptureSource source(options);  // sip_ports = {5060}
    std::vector<std::string> got;
    auto sink = [&](const shard::Datagram& d) { got.emplace_back(as_text(d.payload)); };
    const auto seg = [&](const Bytes& data, std::uint16_t sport, std::uint16_t dport, std::uint32_t seq) {
        const L4Packet p = segment(seq, data, sport, dport);
        Frame f;  // a raw IPv4 + TCP frame
        Bytes ip = {0x45, 0, 0, 0, 0, 0, 0, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2};
        Bytes tcp(20, 0);
        tcp[0] = static_cast<std::uint8_t>(sport >> 8);
        tcp[1] = static_cast<std::uint8_t>(sport);
        tcp[2] = static_cast<std::uint8_t>(dport >> 8);
        tcp[3] = static_cast<std::uint8_t>(dport);
        tcp[4] = static_cast<std::uint8_t>(seq >> 24);
        tcp[5] = static_cast<std::uint8_t>(seq >> 16);
        tcp[6] = static_cast<std::uint8_t>(seq >> 8);
        tcp[7] = static_cast<std::uint8_t>(seq);
        tcp[12] = 0x50;
        tcp[13] = p.tcp_flags;
        Bytes frame = cat(cat(ip, tcp), data);
        frame[2] = static_cast<std::uint8_t>(frame.size() >> 8);
        frame[3] = static_cast<std::uint8_t>(frame.size());
        f.link_type = LinkType::raw;
        f.data = ByteSpan(frame);
        source.process(f, sink);
    };
    // SIP on 5090 (sngrep's ipip.pcap): the first segment opens the stream, the rest follow it
    // even when they do not start a message.
    const Bytes invite = text(kOk);
    seg(Bytes(invite.begin(), invite.begin() + 30), 33093, 5090, 1);
    seg(Bytes(invite.begin() + 30, invite.end()), 33093, 5090, 31);
    // WebSocket on 8080: the handshake opens it, whole or cut before its end.
    const Bytes ws = cat(text(kRequest), ws_frame(1, kRegister, true, kMask));
    seg(ws, 43380, 8080, 1);
    const std::size_t cut = kRequest.find("Sec-WebSocket-Protocol");
    seg(Bytes(ws.begin(), ws.begin() + static_cast<std::ptrdiff_t>(cut)), 43384, 8080, 1);
    seg(Bytes(ws.begin() + static_cast<std::ptrdiff_t>(cut), ws.end()), 43384, 8080,
        1 + static_cast<std::uint32_t>(cut));
    // Other TCP stays skipped: plain HTTP, a WebSocket for another protocol, a mid-stream piece.
    seg(text("GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n"), 43381, 80, 1);
    std::string chat = kRequest;
    chat.replace(chat.find("Protocol: sip"), 13, "Protocol: mqtt");
    seg(text(chat), 43382, 8080, 1);
    seg(text("Content-Length: 0\r\n\r\n"), 43383, 5090, 1);
    // A long header cut before its subprotocol is followed, then refused for being another
    // application's: no message comes out of it.
    const Bytes mqtt = cat(text(chat), ws_frame(1, kRegister, true, kMask));
    seg(Bytes(mqtt.begin(), mqtt.begin() + static_cast<std::ptrdiff_t>(cut)), 43385, 8080, 1);
    seg(Bytes(mqtt.begin() + static_cast<std::ptrdiff_t>(cut), mqtt.end()), 43385, 8080,
        1 + static_cast<std::uint32_t>(cut));
    source.finish();
    const CaptureStats s = source.stats();
    if (options.sniff_sip) {
        CHECK(got == std::vector<std::string>{kOk, kRegister, kRegister});
        CHECK(s.packets[static_cast<std::size_t>(PacketClass::sip_tcp)] == 7);
        CHECK(s.packets[static_cast<std::size_t>(PacketClass::other_tcp)] == 3);
        CHECK(s.tcp.streams_opened == 4);
        CHECK(s.tcp.websocket_upgrades == 2);
        CHECK(s.tcp.websocket_errors[static_cast<std::size_t>(WebSocketError::not_upgraded)] == 1);
    } else {
        CHECK(got.empty());
        CHECK(s.packets[static_cast<std::size_t>(PacketClass::other_tcp)] == 10);
        CHECK(s.tcp.streams_opened == 0);
    }
}
