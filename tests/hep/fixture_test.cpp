// The Kamailio siptrace captures (tests/fixtures), decoded message by message. Expected values
// were read with independent tools, not with this code: Wireshark 4.0 has no HEP dissector, so
// sngrep 1.6 (`sngrep -N -E -I FILE -O out.pcap`, its own HEP parser) wrote the encapsulated SIP
// out as plain packets, and tshark read those (`-e frame.time_epoch -e ip.src -e udp.srcport
// -e ip.dst -e udp.dstport -e sip.Method -e sip.Status-Code -e sip.CSeq.method -e sip.Call-ID
// -e udp.length`); the HEP time is what sngrep put in the record header. Chunk-level facts came
// from tshark display filters on the raw HEP bytes: `data.data[83:10] ==
// 00:00:00:0c:00:0a:00:00:07:d1` (capture id 2001, all 60), `data.data[76:7] ==
// 00:00:00:0b:00:07:01` (payload type SIP, all 60), `data.data[93:6] == 00:00:00:11:00:17`
// (correlation id of 17 bytes: frames 1 8 9 16 17 24 25 32 33 40 41 45 49 53 57). For TCP the
// client stream came from `tshark -z follow,tcp,raw,0`, was cut at the HEP lengths and replayed
// as UDP through sngrep the same way; `tcp.payload[93:6] == 00:00:00:11:00:17` gave the same
// correlation-id positions. In this capture each segment holds one message, so the test also
// re-delivers the stream in pieces that split and join messages. The tables were checked once
// more against the raw bytes by a stand-alone Python walk of the HEP3 chunks (type/length, no
// code of this project): times, ports, first line, Call-ID, payload size, correlation chunk,
// capture id 2001 and payload type 1 agree for all 120 messages.
#include "hep/decoder.hpp"
#include "hep/encoder.hpp"
#include "hep/framer.hpp"
#include "hep/timestamp.hpp"
#include "pcap/reader.hpp"
#include "support/fixtures.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

using namespace hepd;
using namespace hepd::hep;

namespace {

struct Expected {
    std::uint32_t seconds;
    std::uint32_t micros;
    std::uint16_t src_port;
    std::uint16_t dst_port;
    const char* first;  // request method or status code
    const char* cseq_method;
    const char* call_id;
    std::size_t payload_size;
    bool correlation;  // chunk 0x11 = Call-ID, only on requests Kamailio received
};

// kamailio-siptrace-hep3-udp.pcap, in capture order.
const Expected udp_expected[] = {
    {1796013063, 512829, 5061, 5060, "INVITE", "INVITE", "1-18897@127.0.0.1", 509, true},
    {1796013063, 513079, 5060, 5061, "100", "INVITE", "1-18897@127.0.0.1", 316, false},
    {1796013063, 513234, 5060, 5070, "INVITE", "INVITE", "1-18897@127.0.0.1", 591, false},
    {1796013063, 514157, 5070, 5060, "180", "INVITE", "1-18897@127.0.0.1", 386, false},
    {1796013063, 514546, 5060, 5061, "180", "INVITE", "1-18897@127.0.0.1", 309, false},
    {1796013063, 514934, 5070, 5060, "200", "INVITE", "1-18897@127.0.0.1", 545, false},
    {1796013063, 515173, 5060, 5061, "200", "INVITE", "1-18897@127.0.0.1", 468, false},
    {1796013063, 515409, 5061, 5060, "ACK", "ACK", "1-18897@127.0.0.1", 359, true},
    {1796013063, 712536, 5061, 5060, "INVITE", "INVITE", "2-18897@127.0.0.1", 509, true},
    {1796013063, 713120, 5060, 5061, "100", "INVITE", "2-18897@127.0.0.1", 316, false},
    {1796013063, 713370, 5060, 5070, "INVITE", "INVITE", "2-18897@127.0.0.1", 591, false},
    {1796013063, 713663, 5070, 5060, "180", "INVITE", "2-18897@127.0.0.1", 386, false},
    {1796013063, 713742, 5060, 5061, "180", "INVITE", "2-18897@127.0.0.1", 309, false},
    {1796013063, 715212, 5070, 5060, "200", "INVITE", "2-18897@127.0.0.1", 545, false},
    {1796013063, 715380, 5060, 5061, "200", "INVITE", "2-18897@127.0.0.1", 468, false},
    {1796013063, 715635, 5061, 5060, "ACK", "ACK", "2-18897@127.0.0.1", 359, true},
    {1796013063, 912540, 5061, 5060, "INVITE", "INVITE", "3-18897@127.0.0.1", 509, true},
    {1796013063, 913068, 5060, 5061, "100", "INVITE", "3-18897@127.0.0.1", 316, false},
    {1796013063, 913354, 5060, 5070, "INVITE", "INVITE", "3-18897@127.0.0.1", 591, false},
    {1796013063, 913609, 5070, 5060, "180", "INVITE", "3-18897@127.0.0.1", 386, false},
    {1796013063, 913668, 5060, 5061, "180", "INVITE", "3-18897@127.0.0.1", 309, false},
    {1796013063, 914986, 5070, 5060, "200", "INVITE", "3-18897@127.0.0.1", 545, false},
    {1796013063, 915254, 5060, 5061, "200", "INVITE", "3-18897@127.0.0.1", 468, false},
    {1796013063, 915441, 5061, 5060, "ACK", "ACK", "3-18897@127.0.0.1", 359, true},
    {1796013064, 112688, 5061, 5060, "INVITE", "INVITE", "4-18897@127.0.0.1", 509, true},
    {1796013064, 112878, 5060, 5061, "100", "INVITE", "4-18897@127.0.0.1", 316, false},
    {1796013064, 112976, 5060, 5070, "INVITE", "INVITE", "4-18897@127.0.0.1", 591, false},
    {1796013064, 113227, 5070, 5060, "180", "INVITE", "4-18897@127.0.0.1", 386, false},
    {1796013064, 113311, 5060, 5061, "180", "INVITE", "4-18897@127.0.0.1", 309, false},
    {1796013064, 114362, 5070, 5060, "200", "INVITE", "4-18897@127.0.0.1", 545, false},
    {1796013064, 114610, 5060, 5061, "200", "INVITE", "4-18897@127.0.0.1", 468, false},
    {1796013064, 114854, 5061, 5060, "ACK", "ACK", "4-18897@127.0.0.1", 359, true},
    {1796013064, 312693, 5061, 5060, "INVITE", "INVITE", "5-18897@127.0.0.1", 509, true},
    {1796013064, 313027, 5060, 5061, "100", "INVITE", "5-18897@127.0.0.1", 316, false},
    {1796013064, 313149, 5060, 5070, "INVITE", "INVITE", "5-18897@127.0.0.1", 591, false},
    {1796013064, 313336, 5070, 5060, "180", "INVITE", "5-18897@127.0.0.1", 386, false},
    {1796013064, 313396, 5060, 5061, "180", "INVITE", "5-18897@127.0.0.1", 309, false},
    {1796013064, 314645, 5070, 5060, "200", "INVITE", "5-18897@127.0.0.1", 545, false},
    {1796013064, 314706, 5060, 5061, "200", "INVITE", "5-18897@127.0.0.1", 468, false},
    {1796013064, 314851, 5061, 5060, "ACK", "ACK", "5-18897@127.0.0.1", 359, true},
    {1796013064, 520186, 5061, 5060, "BYE", "BYE", "1-18897@127.0.0.1", 359, true},
    {1796013064, 520758, 5060, 5070, "BYE", "BYE", "1-18897@127.0.0.1", 441, false},
    {1796013064, 520918, 5070, 5060, "200", "BYE", "1-18897@127.0.0.1", 378, false},
    {1796013064, 521128, 5060, 5061, "200", "BYE", "1-18897@127.0.0.1", 301, false},
    {1796013064, 720301, 5061, 5060, "BYE", "BYE", "2-18897@127.0.0.1", 359, true},
    {1796013064, 720526, 5060, 5070, "BYE", "BYE", "2-18897@127.0.0.1", 441, false},
    {1796013064, 720886, 5070, 5060, "200", "BYE", "2-18897@127.0.0.1", 378, false},
    {1796013064, 721125, 5060, 5061, "200", "BYE", "2-18897@127.0.0.1", 301, false},
    {1796013064, 920458, 5061, 5060, "BYE", "BYE", "3-18897@127.0.0.1", 359, true},
    {1796013064, 920683, 5060, 5070, "BYE", "BYE", "3-18897@127.0.0.1", 441, false},
    {1796013064, 921023, 5070, 5060, "200", "BYE", "3-18897@127.0.0.1", 378, false},
    {1796013064, 921088, 5060, 5061, "200", "BYE", "3-18897@127.0.0.1", 301, false},
    {1796013065, 119987, 5061, 5060, "BYE", "BYE", "4-18897@127.0.0.1", 359, true},
    {1796013065, 120523, 5060, 5070, "BYE", "BYE", "4-18897@127.0.0.1", 441, false},
    {1796013065, 120702, 5070, 5060, "200", "BYE", "4-18897@127.0.0.1", 378, false},
    {1796013065, 120846, 5060, 5061, "200", "BYE", "4-18897@127.0.0.1", 301, false},
    {1796013065, 320201, 5061, 5060, "BYE", "BYE", "5-18897@127.0.0.1", 359, true},
    {1796013065, 320452, 5060, 5070, "BYE", "BYE", "5-18897@127.0.0.1", 441, false},
    {1796013065, 320693, 5070, 5060, "200", "BYE", "5-18897@127.0.0.1", 378, false},
    {1796013065, 321863, 5060, 5061, "200", "BYE", "5-18897@127.0.0.1", 301, false},
};

// kamailio-siptrace-hep3-tcp.pcap, in stream order.
const Expected tcp_expected[] = {
    {1796013073, 288323, 5061, 5060, "INVITE", "INVITE", "1-19189@127.0.0.1", 509, true},
    {1796013073, 289245, 5060, 5061, "100", "INVITE", "1-19189@127.0.0.1", 316, false},
    {1796013073, 289493, 5060, 5070, "INVITE", "INVITE", "1-19189@127.0.0.1", 591, false},
    {1796013073, 289908, 5070, 5060, "180", "INVITE", "1-19189@127.0.0.1", 386, false},
    {1796013073, 290260, 5060, 5061, "180", "INVITE", "1-19189@127.0.0.1", 309, false},
    {1796013073, 290722, 5070, 5060, "200", "INVITE", "1-19189@127.0.0.1", 545, false},
    {1796013073, 290829, 5060, 5061, "200", "INVITE", "1-19189@127.0.0.1", 468, false},
    {1796013073, 291081, 5061, 5060, "ACK", "ACK", "1-19189@127.0.0.1", 359, true},
    {1796013073, 488379, 5061, 5060, "INVITE", "INVITE", "2-19189@127.0.0.1", 509, true},
    {1796013073, 488827, 5060, 5061, "100", "INVITE", "2-19189@127.0.0.1", 316, false},
    {1796013073, 489024, 5060, 5070, "INVITE", "INVITE", "2-19189@127.0.0.1", 591, false},
    {1796013073, 489235, 5070, 5060, "180", "INVITE", "2-19189@127.0.0.1", 386, false},
    {1796013073, 489295, 5060, 5061, "180", "INVITE", "2-19189@127.0.0.1", 309, false},
    {1796013073, 490678, 5070, 5060, "200", "INVITE", "2-19189@127.0.0.1", 545, false},
    {1796013073, 490834, 5060, 5061, "200", "INVITE", "2-19189@127.0.0.1", 468, false},
    {1796013073, 491096, 5061, 5060, "ACK", "ACK", "2-19189@127.0.0.1", 359, true},
    {1796013073, 688979, 5061, 5060, "INVITE", "INVITE", "3-19189@127.0.0.1", 509, true},
    {1796013073, 689596, 5060, 5061, "100", "INVITE", "3-19189@127.0.0.1", 316, false},
    {1796013073, 690004, 5060, 5070, "INVITE", "INVITE", "3-19189@127.0.0.1", 591, false},
    {1796013073, 690126, 5070, 5060, "180", "INVITE", "3-19189@127.0.0.1", 386, false},
    {1796013073, 690559, 5060, 5061, "180", "INVITE", "3-19189@127.0.0.1", 309, false},
    {1796013073, 691214, 5070, 5060, "200", "INVITE", "3-19189@127.0.0.1", 545, false},
    {1796013073, 691428, 5060, 5061, "200", "INVITE", "3-19189@127.0.0.1", 468, false},
    {1796013073, 691665, 5061, 5060, "ACK", "ACK", "3-19189@127.0.0.1", 359, true},
    {1796013073, 889063, 5061, 5060, "INVITE", "INVITE", "4-19189@127.0.0.1", 509, true},
    {1796013073, 889567, 5060, 5061, "100", "INVITE", "4-19189@127.0.0.1", 316, false},
    {1796013073, 889765, 5060, 5070, "INVITE", "INVITE", "4-19189@127.0.0.1", 591, false},
    {1796013073, 889977, 5070, 5060, "180", "INVITE", "4-19189@127.0.0.1", 386, false},
    {1796013073, 890047, 5060, 5061, "180", "INVITE", "4-19189@127.0.0.1", 309, false},
    {1796013073, 891287, 5070, 5060, "200", "INVITE", "4-19189@127.0.0.1", 545, false},
    {1796013073, 891472, 5060, 5061, "200", "INVITE", "4-19189@127.0.0.1", 468, false},
    {1796013073, 891623, 5061, 5060, "ACK", "ACK", "4-19189@127.0.0.1", 359, true},
    {1796013074, 88630, 5061, 5060, "INVITE", "INVITE", "5-19189@127.0.0.1", 509, true},
    {1796013074, 89445, 5060, 5061, "100", "INVITE", "5-19189@127.0.0.1", 316, false},
    {1796013074, 89570, 5060, 5070, "INVITE", "INVITE", "5-19189@127.0.0.1", 591, false},
    {1796013074, 89777, 5070, 5060, "180", "INVITE", "5-19189@127.0.0.1", 386, false},
    {1796013074, 89879, 5060, 5061, "180", "INVITE", "5-19189@127.0.0.1", 309, false},
    {1796013074, 90892, 5070, 5060, "200", "INVITE", "5-19189@127.0.0.1", 545, false},
    {1796013074, 91146, 5060, 5061, "200", "INVITE", "5-19189@127.0.0.1", 468, false},
    {1796013074, 91333, 5061, 5060, "ACK", "ACK", "5-19189@127.0.0.1", 359, true},
    {1796013074, 296672, 5061, 5060, "BYE", "BYE", "1-19189@127.0.0.1", 359, true},
    {1796013074, 297227, 5060, 5070, "BYE", "BYE", "1-19189@127.0.0.1", 441, false},
    {1796013074, 297422, 5070, 5060, "200", "BYE", "1-19189@127.0.0.1", 378, false},
    {1796013074, 297759, 5060, 5061, "200", "BYE", "1-19189@127.0.0.1", 301, false},
    {1796013074, 496507, 5061, 5060, "BYE", "BYE", "2-19189@127.0.0.1", 359, true},
    {1796013074, 496754, 5060, 5070, "BYE", "BYE", "2-19189@127.0.0.1", 441, false},
    {1796013074, 497063, 5070, 5060, "200", "BYE", "2-19189@127.0.0.1", 378, false},
    {1796013074, 497263, 5060, 5061, "200", "BYE", "2-19189@127.0.0.1", 301, false},
    {1796013074, 696799, 5061, 5060, "BYE", "BYE", "3-19189@127.0.0.1", 359, true},
    {1796013074, 697422, 5060, 5070, "BYE", "BYE", "3-19189@127.0.0.1", 441, false},
    {1796013074, 697573, 5070, 5060, "200", "BYE", "3-19189@127.0.0.1", 378, false},
    {1796013074, 697861, 5060, 5061, "200", "BYE", "3-19189@127.0.0.1", 301, false},
    {1796013074, 896776, 5061, 5060, "BYE", "BYE", "4-19189@127.0.0.1", 359, true},
    {1796013074, 899715, 5070, 5060, "200", "BYE", "4-19189@127.0.0.1", 378, false},
    {1796013074, 900247, 5060, 5061, "200", "BYE", "4-19189@127.0.0.1", 301, false},
    {1796013074, 900414, 5060, 5070, "BYE", "BYE", "4-19189@127.0.0.1", 441, false},
    {1796013075, 96889, 5061, 5060, "BYE", "BYE", "5-19189@127.0.0.1", 359, true},
    {1796013075, 97541, 5060, 5070, "BYE", "BYE", "5-19189@127.0.0.1", 441, false},
    {1796013075, 97628, 5070, 5060, "200", "BYE", "5-19189@127.0.0.1", 378, false},
    {1796013075, 97725, 5060, 5061, "200", "BYE", "5-19189@127.0.0.1", 301, false},
};

// A small local search so that these tests do not depend on the SIP parser: the Call-ID header
// (long or compact form) of a SIP message, up to the end of its line.
std::string call_id_of(std::string_view sip) {
    std::size_t pos = 0;
    while ((pos = sip.find("\r\n", pos)) != std::string_view::npos) {
        pos += 2;
        const std::string_view line = sip.substr(pos, sip.find("\r\n", pos) - pos);
        const std::size_t colon = line.find(':');
        if (colon == std::string_view::npos) continue;
        std::string name(line.substr(0, colon));
        while (!name.empty() && name.back() == ' ') name.pop_back();
        std::transform(name.begin(), name.end(), name.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        if (name != "call-id" && name != "i") continue;
        std::string_view value = line.substr(colon + 1);
        while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
        return std::string(value);
    }
    return {};
}

std::string first_token(std::string_view sip) {
    if (sip.rfind("SIP/2.0 ", 0) == 0) return std::string(sip.substr(8, 3));
    return std::string(sip.substr(0, sip.find(' ')));
}

void check_message(const Message& m, const Expected& e) {
    CHECK(m.version == 3);
    CHECK(m.ip_family == 2);
    CHECK(m.ip_protocol == 17);
    const IpAddress loopback = IpAddress::v4(0x7f000001u);
    CHECK(m.src == Endpoint{loopback, e.src_port});
    CHECK(m.dst == Endpoint{loopback, e.dst_port});
    CHECK(m.seconds == e.seconds);
    CHECK(m.micros == e.micros);
    CHECK(m.has_capture_id());
    CHECK(m.capture_id == 2001u);
    CHECK(m.payload_type == 1);
    CHECK_FALSE(m.compressed);
    CHECK(m.payload.size() == e.payload_size);
    const std::string_view sip = as_text(m.payload);
    CHECK(first_token(sip) == e.first);
    CHECK(sip.find(std::string(" ") + e.cseq_method + "\r\n") != std::string_view::npos);
    CHECK(call_id_of(sip) == e.call_id);
    CHECK(m.has_correlation_id() == e.correlation);
    if (e.correlation) CHECK(as_text(m.correlation_id) == e.call_id);
    // Chunks 1,2,3,4,7,8,9,10,11,12,[17],15 and nothing else.
    std::uint32_t present =
        Message::bit(Field::ip_family) | Message::bit(Field::ip_protocol) | Message::bit(Field::src_address) |
        Message::bit(Field::dst_address) | Message::bit(Field::src_port) | Message::bit(Field::dst_port) |
        Message::bit(Field::seconds) | Message::bit(Field::micros) | Message::bit(Field::payload_type) |
        Message::bit(Field::capture_id) | Message::bit(Field::payload);
    if (e.correlation) present |= Message::bit(Field::correlation_id);
    CHECK(m.present == present);
}

}  // namespace

TEST_CASE("fixture: Kamailio siptrace HEPv3 over UDP", "[hep][fixture]") {
    const std::string path = hepd::test::fixture_path("kamailio-siptrace-hep3-udp.pcap");
    auto opened = pcap::FileReader::open(path);
    REQUIRE(opened.ok());
    pcap::FileReader& reader = opened.value();
    pcap::Frame frame;
    std::size_t index = 0;
    std::set<std::string> call_ids;
    Timestamp first_time{}, last_time{};
    while (reader.next(frame)) {
        CAPTURE(index);
        const auto packet = pcap::decode_frame(frame);
        REQUIRE(packet.ok());
        REQUIRE(packet->transport == pcap::Transport::udp);
        CHECK(packet->dst.port == 9060);
        REQUIRE(index < std::size(udp_expected));
        const Expected& e = udp_expected[index];
        const auto m = decode(packet->payload);
        REQUIRE(m.ok());
        check_message(m.value(), e);
        // The correlation id adds a 23-byte chunk; the other eleven chunks take 99 bytes.
        CHECK(packet->payload.size() == e.payload_size + 99 + (e.correlation ? 23 : 0));
        // Kamailio stamps the message just before sending it: a few tens of microseconds.
        const auto t = normalise_timestamp(m.value(), frame.time);
        CHECK(t.fixup == TimestampFixup::none);
        CHECK(t.time == Timestamp::from_parts(e.seconds, e.micros));
        CHECK(frame.time.us - t.time.us >= 0);
        CHECK(frame.time.us - t.time.us < 1000);
        // Re-encoding gives the very bytes Kamailio sent (same chunk order).
        std::vector<std::uint8_t> again;
        REQUIRE(encode_v3(m.value(), again));
        CHECK(again == std::vector<std::uint8_t>(packet->payload.begin(), packet->payload.end()));
        call_ids.insert(call_id_of(as_text(m->payload)));
        if (index == 0) first_time = t.time;
        last_time = t.time;
        ++index;
    }
    CHECK(reader.error() == pcap::FileError::none);
    CHECK(index == 60);
    CHECK(call_ids == std::set<std::string>{"1-18897@127.0.0.1", "2-18897@127.0.0.1", "3-18897@127.0.0.1",
                                            "4-18897@127.0.0.1", "5-18897@127.0.0.1"});
    // First and last decoded HEP times: 2026-11-30T04:31:03.512829Z .. 04:31:05.321863Z as sngrep
    // showed them (`date -u -d @1796013063` is 2026-11-30 04:31:03).
    CHECK(first_time == Timestamp::from_parts(1796013063, 512829));
    CHECK(last_time == Timestamp::from_parts(1796013065, 321863));
}

TEST_CASE("fixture: Kamailio siptrace HEPv3 over TCP, reassembled and framed", "[hep][fixture][framer]") {
    const std::string path = hepd::test::fixture_path("kamailio-siptrace-hep3-tcp.pcap");
    auto opened = pcap::FileReader::open(path);
    REQUIRE(opened.ok());
    pcap::FileReader& reader = opened.value();

    // Client -> 9060 segments, ordered by sequence number relative to the SYN.
    struct Segment {
        std::uint32_t offset;
        std::vector<std::uint8_t> bytes;
    };
    std::vector<Segment> segments;
    std::optional<std::uint32_t> isn;
    pcap::Frame frame;
    while (reader.next(frame)) {
        const auto packet = pcap::decode_frame(frame);
        REQUIRE(packet.ok());
        if (packet->transport != pcap::Transport::tcp || packet->dst.port != 9060) continue;
        if ((packet->tcp_flags & 0x02) != 0) isn = packet->tcp_seq;  // SYN
        if (packet->payload.empty()) continue;
        REQUIRE(isn.has_value());
        segments.push_back({packet->tcp_seq - *isn - 1, {packet->payload.begin(), packet->payload.end()}});
    }
    std::stable_sort(segments.begin(), segments.end(),
                     [](const Segment& a, const Segment& b) { return a.offset < b.offset; });
    std::vector<std::uint8_t> stream;
    for (const auto& s : segments) {
        REQUIRE(s.offset == stream.size());  // no gap, no retransmission in this capture
        stream.insert(stream.end(), s.bytes.begin(), s.bytes.end());
    }
    // tshark -z follow,tcp,raw,0: 31,095 bytes from the client.
    CHECK(stream.size() == 31095);

    const StreamFramer framer;
    auto decode_all = [&](std::size_t piece) {
        std::vector<std::uint8_t> buffer;
        std::size_t index = 0;
        std::set<std::string> call_ids;
        for (std::size_t fed = 0; fed < stream.size();) {
            const std::size_t n = std::min(piece, stream.size() - fed);
            buffer.insert(buffer.end(), stream.begin() + static_cast<std::ptrdiff_t>(fed),
                          stream.begin() + static_cast<std::ptrdiff_t>(fed + n));
            fed += n;
            for (;;) {
                const FrameStatus s = framer.next(buffer);
                REQUIRE_FALSE(s.is_error());
                if (s.need_more()) break;
                CAPTURE(piece, index);
                REQUIRE(index < std::size(tcp_expected));
                const auto m = decode(ByteSpan(buffer.data(), s.size));
                REQUIRE(m.ok());
                check_message(m.value(), tcp_expected[index]);
                call_ids.insert(call_id_of(as_text(m->payload)));
                buffer.erase(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(s.size));
                ++index;
            }
        }
        CHECK(buffer.empty());
        // The five calls sipp made (tshark's sip.Call-ID on the sngrep output), each seen.
        CHECK(call_ids == std::set<std::string>{"1-19189@127.0.0.1", "2-19189@127.0.0.1", "3-19189@127.0.0.1",
                                                "4-19189@127.0.0.1", "5-19189@127.0.0.1"});
        return index;
    };
    // As captured (whole stream at once), then in awkward piece sizes.
    CHECK(decode_all(stream.size()) == 60);
    CHECK(decode_all(1) == 60);
    CHECK(decode_all(7) == 60);
    CHECK(decode_all(1460) == 60);
}
