// Public captures from other projects (tests/fixtures/third-party/README.md) through the capture
// source: every SIP message tshark finds in them, no more. Expected figures are tshark's, read
// with the commands in that README, not this code's output.
#include "support/third_party.hpp"

#include "pcap/capture_source.hpp"

#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

using namespace hepd;
using namespace hepd::pcap;

namespace {

struct Sip {
    std::string first_line;
    std::string src;
    std::string dst;
    shard::Transport transport;
};

struct Run {
    std::vector<Sip> sip;
    CaptureStats stats;
    FileError error = FileError::none;
};

Run run(const std::string& name) {
    CaptureSource source;
    Run r;
    auto sink = [&](const shard::Datagram& d) {
        if (d.kind != PayloadClass::sip) return;
        const std::string text(as_text(d.payload));
        r.sip.push_back(Sip{text.substr(0, text.find("\r\n")), d.src.to_string(), d.dst.to_string(), d.transport});
    };
    r.error = source.read_file(test::third_party_fixture(name), sink);
    source.finish();
    r.stats = source.stats();
    return r;
}

// "INVITE" for a request, "407" for a response: tshark's sip.Method / sip.Status-Code.
std::map<std::string, int> tally(const std::vector<Sip>& messages) {
    std::map<std::string, int> n;
    for (const Sip& m : messages) {
        const std::string& l = m.first_line;
        ++n[l.rfind("SIP/2.0 ", 0) == 0 ? l.substr(8, 3) : l.substr(0, l.find(' '))];
    }
    return n;
}

void check_accounting(const CaptureStats& s) {
    CHECK(s.frames == s.decode_errors_total() + s.fragments.fragments - s.fragments.reassembled + s.packets_total());
}

}  // namespace

TEST_CASE("third-party: sngrep aaa.pcap, 81 SIP messages over UDP, keep-alives left out",
          "[pcap][fixture][third-party]") {
    const Run r = run("aaa.pcap");
    CHECK(r.error == FileError::none);
    CHECK(r.stats.frames == 691);
    CHECK(r.sip.size() == 81);
    const std::map<std::string, int> want = {{"INVITE", 11}, {"ACK", 7}, {"CANCEL", 11}, {"REGISTER", 18},
                                             {"100", 7},     {"183", 1}, {"200", 3},     {"401", 14},
                                             {"403", 3},     {"407", 3}, {"408", 2},     {"480", 1}};
    CHECK(tally(r.sip) == want);
    check_accounting(r.stats);
}

TEST_CASE("third-party: sngrep ipip.pcap, SIP over TCP port 5090 partly inside IPv4-in-IPv4",
          "[pcap][fixture][third-party]") {
    const Run r = run("ipip.pcap");
    CHECK(r.error == FileError::none);
    REQUIRE(r.sip.size() == 4);
    CHECK(r.sip[0].first_line == "INVITE sip:1bdaa608131517540001@172.28.1.3;transport=tcp SIP/2.0");
    CHECK(r.sip[1].first_line.rfind("SIP/2.0 183 ", 0) == 0);
    CHECK(r.sip[2].first_line == "SIP/2.0 200 OK");
    CHECK(r.sip[3].first_line.rfind("BYE ", 0) == 0);
    // The tunnelled 183 and 200 carry the inner addresses.
    CHECK(r.sip[1].src == "10.15.193.31:33093");
    CHECK(r.sip[1].dst == "10.15.197.103:5090");
    for (const Sip& m : r.sip) CHECK(m.transport == shard::Transport::tcp);
    CHECK(r.stats.tunnelled[static_cast<std::size_t>(TunnelKind::ip_in_ip)] == 2);
    CHECK(r.stats.decode_errors_total() == 0);
    CHECK(r.stats.tcp.messages == 4);
    check_accounting(r.stats);
}

TEST_CASE("third-party: heplify sip_tcp_websocket.pcap, 39 SIP messages, 11 of them over WebSocket",
          "[pcap][fixture][third-party]") {
    const Run r = run("sip_tcp_websocket.pcap");
    CHECK(r.error == FileError::none);
    CHECK(r.sip.size() == 39);
    const std::map<std::string, int> want = {{"INVITE", 5}, {"ACK", 5}, {"BYE", 4}, {"OPTIONS", 1}, {"100", 4},
                                             {"180", 2},    {"183", 8}, {"200", 9}, {"407", 1}};
    CHECK(tally(r.sip) == want);
    std::vector<std::string> over_ws;
    for (const Sip& m : r.sip)
        if (m.transport == shard::Transport::tcp) over_ws.push_back(tally({m}).begin()->first);
    // Frames 11, 13, 15, 18, 19, 24, 34, 46, 49, 52, 56.
    CHECK(over_ws ==
          std::vector<std::string>{"INVITE", "407", "ACK", "INVITE", "100", "180", "183", "200", "ACK", "BYE", "200"});
    const TcpStats& t = r.stats.tcp;
    CHECK(t.websocket_upgrades == 2);
    CHECK(t.websocket_messages == 11);
    for (const auto e : t.websocket_errors) CHECK(e == 0);
    CHECK(t.leftover_bytes == 0);
    check_accounting(r.stats);
}

TEST_CASE("keep-alives of white space on a SIP port are not SIP messages", "[pcap][classify]") {
    CaptureSource source;
    int sip = 0;
    for (const std::string payload : {"     ", "\r\n\r\n", "\t \r\n", "OPTIONS sip:a SIP/2.0\r\n\r\n"}) {
        // clang-format off
        std::vector<std::uint8_t> frame = {0x45, 0, 0, 0, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
                                           0x13, 0xc4, 0x13, 0xc4, 0, 0, 0, 0};
        // clang-format on
        frame.insert(frame.end(), payload.begin(), payload.end());
        frame[3] = static_cast<std::uint8_t>(frame.size());
        frame[25] = static_cast<std::uint8_t>(frame.size() - 20);
        Frame f;
        f.link_type = LinkType::raw;
        f.data = ByteSpan(frame);
        source.process(f, [&](const shard::Datagram& d) { sip += d.kind == PayloadClass::sip ? 1 : 0; });
    }
    CHECK(sip == 1);
    CHECK(source.stats().packets[static_cast<std::size_t>(PacketClass::unknown_udp)] == 3);
}
