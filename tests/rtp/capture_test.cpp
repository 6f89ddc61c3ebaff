// Real packets: sipp 3.6.1 media (G.711 A-law, PT 8, and RFC 2833 telephone-event, PT 101)
// captured on lo; see data/README.md. Expected values were read with tshark.
#include "core/bytes.hpp"
#include "rtp/demux.hpp"
#include "rtp/rtp_packet.hpp"
#include "support/fixtures.hpp"
#include "test_bytes.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

using namespace hepd;
using namespace hepd::rtp;
using namespace hepd::rtp::test;

namespace {

Bytes data_file(const std::string& name) {
    return hepd::test::read_binary_file(std::string(HEPD_SOURCE_DIR) + "/tests/rtp/data/" + name);
}

struct Header {
    bool marker;
    int payload_type;
    std::uint16_t sequence;
    std::uint32_t timestamp;
    std::uint32_t ssrc;
    std::size_t payload_size;
};

void check_header(const RtpPacket& p, const Header& expected) {
    CHECK_FALSE(p.padding);
    CHECK_FALSE(p.extension);
    CHECK(p.csrcs.empty());
    CHECK(p.header_size == 12);
    CHECK(p.marker == expected.marker);
    CHECK(p.payload_type == expected.payload_type);
    CHECK(p.sequence == expected.sequence);
    CHECK(p.timestamp == expected.timestamp);
    CHECK(p.ssrc == expected.ssrc);
    CHECK(p.payload.size() == expected.payload_size);
}

// UDP payloads of a classic little-endian, microsecond, Ethernet/IPv4 pcap.
struct Datagram {
    std::uint16_t source_port;
    std::uint16_t destination_port;
    ByteSpan payload;
};

std::vector<Datagram> udp_datagrams(const Bytes& file) {
    std::vector<Datagram> out;
    REQUIRE(file.size() >= 24);
    REQUIRE(load_le32(file.data()) == 0xa1b2c3d4u);
    std::size_t offset = 24;
    while (file.size() - offset >= 16) {
        const std::size_t captured = load_le32(file.data() + offset + 8);
        offset += 16;
        REQUIRE(captured <= file.size() - offset);
        const std::uint8_t* frame = file.data() + offset;
        offset += captured;
        if (captured < 14 + 20 + 8 || load_be16(frame + 12) != 0x0800) continue;
        const std::uint8_t* ip = frame + 14;
        const std::size_t ihl = 4 * std::size_t{ip[0] & 0x0fu};
        if (ip[9] != 17 || captured < 14 + ihl + 8) continue;
        const std::uint8_t* udp = ip + ihl;
        const std::size_t udp_length = load_be16(udp + 4);
        REQUIRE(udp_length >= 8);
        REQUIRE(14 + ihl + udp_length <= captured);
        out.push_back({load_be16(udp), load_be16(udp + 2), ByteSpan(udp + 8, udp_length - 8)});
    }
    return out;
}

}  // namespace

TEST_CASE("G.711 A-law packets from sipp", "[rtp][capture]") {
    SECTION("first packet of the stream carries the marker") {
        const Bytes bytes = data_file("sipp_g711a_first_marker.bin");
        REQUIRE(bytes.size() == 252);
        CHECK(classify(span_of(bytes)) == PacketKind::rtp);
        const auto r = parse_rtp(span_of(bytes));
        REQUIRE(r.ok());
        check_header(*r, {true, 8, 59133, 240, 0xdee0ee8fu, 240});
        CHECK(r->payload.front() == 0xd5);  // A-law silence
        CHECK(r->payload.back() == 0xd5);
    }
    SECTION("next packet: seq + 1, timestamp + 240 samples (30 ms at 8 kHz)") {
        const Bytes bytes = data_file("sipp_g711a_second.bin");
        const auto r = parse_rtp(span_of(bytes));
        REQUIRE(r.ok());
        check_header(*r, {false, 8, 59134, 480, 0xdee0ee8fu, 240});
    }
}

TEST_CASE("RFC 2833 telephone-event packets from sipp", "[rtp][capture]") {
    struct Case {
        const char* file;
        Header header;
        Bytes event;  // event, E|R|volume, duration
    };
    const std::vector<Case> cases{
        {"sipp_dtmf_start.bin", {true, 101, 7984, 13280, 0x0e05384eu, 4}, {0x01, 0x0a, 0x00, 0x00}},
        {"sipp_dtmf_continue.bin", {false, 101, 7985, 13280, 0x0e05384eu, 4}, {0x01, 0x0a, 0x01, 0x40}},
        {"sipp_dtmf_end.bin", {false, 101, 7991, 13280, 0x0e05384eu, 4}, {0x01, 0x8a, 0x08, 0xc0}},
    };
    for (const Case& c : cases) {
        CAPTURE(c.file);
        const Bytes bytes = data_file(c.file);
        REQUIRE(bytes.size() == 16);
        CHECK(classify(span_of(bytes)) == PacketKind::rtp);
        const auto r = parse_rtp(span_of(bytes));
        REQUIRE(r.ok());
        check_header(*r, c.header);
        CHECK(bytes_of(r->payload) == c.event);
    }
    // tshark: event 1 (DTMF "1"), volume 10; durations 0, 320, 2240 with End set on the last.
    const Bytes end_bytes = data_file("sipp_dtmf_end.bin");  // the parse result views these octets
    const auto end = parse_rtp(span_of(end_bytes));
    REQUIRE(end.ok());
    CHECK((end->payload[1] & 0x80) != 0);
    CHECK((end->payload[1] & 0x3f) == 10);
    CHECK(load_be16(end->payload.data() + 2) == 2240);
}

TEST_CASE("every datagram of the sipp capture", "[rtp][capture]") {
    const std::string name = "sipp-10-calls-g711-via-kamailio.pcap";
    const Bytes file = hepd::test::read_binary_file(hepd::test::fixture_path(name));
    int g711 = 0, events = 0, markers = 0, event_ends = 0, sip = 0;
    for (const Datagram& d : udp_datagrams(file)) {
        const auto r = parse_rtp(d.payload);
        if (d.source_port == 26000 || d.destination_port == 26000) {
            CHECK(classify(d.payload) == PacketKind::rtp);
            REQUIRE(r.ok());
            markers += r->marker ? 1 : 0;
            if (r->payload_type == 8) {
                ++g711;
                CHECK(r->ssrc == 0xdee0ee8fu);
                CHECK(r->payload.size() == 240);
            } else {
                REQUIRE(r->payload_type == 101);
                ++events;
                CHECK(r->ssrc == 0x0e05384eu);
                REQUIRE(r->payload.size() == 4);
                event_ends += (r->payload[1] & 0x80) != 0 ? 1 : 0;
            }
        } else {
            // SIP text: 'I', 'S', 'A', 'B' ... all read as version 1.
            ++sip;
            REQUIRE_FALSE(r.ok());
            CHECK(r.error() == RtpError::bad_version);
        }
    }
    CHECK(g711 == 680);
    CHECK(events == 200);
    CHECK(markers == 40);
    CHECK(event_ends == 60);
    CHECK(sip == 130);
}
