// Real messages from sipp 3.6.1 and Kamailio 5.6.3 (tests/sip/data, cut from the fixture
// tests/fixtures/sipp-10-calls-g711-via-kamailio.pcap, frames 2, 3, 4, 6, 9 and 963). Expected values were read
// with tshark 4.0, not with this parser.
#include "core/bytes.hpp"
#include "sip/message.hpp"
#include "sip/sdp.hpp"
#include "support/fixtures.hpp"
#include "test_util.hpp"

#include <catch2/catch.hpp>

#include <iterator>
#include <map>
#include <set>
#include <string>

using namespace hepd::sip;
using hepd::IpAddress;
using hepd::sip::test::read_data;

namespace {

// The proxy (Kamailio) inserted its own Via, without a port, above sipp's.
constexpr std::string_view kProxyBranch = "z9hG4bKb2ec.e58e8450ae9f40e832f305d828699131.0";

}  // namespace

TEST_CASE("capture: INVITE relayed by Kamailio, with SDP", "[sip][capture]") {
    const std::string_view text = read_data("kamailio_invite_sdp.sip");
    REQUIRE(text.size() == 651);
    const auto m = parse_message(text);
    REQUIRE(m.ok());
    CHECK(m->method == Method::invite);
    CHECK(m->request_uri == "sip:service@127.0.0.1:5060");
    CHECK(m->call_id == "1-15403@127.0.0.1");
    CHECK(m->cseq.number == 1);
    CHECK(m->cseq.method == Method::invite);
    CHECK(m->from.display_name == "sipp");
    CHECK(m->from.uri == "sip:sipp@127.0.0.1:5061");
    CHECK(m->from.tag == "15403SIPpTag091");
    CHECK(m->to.display_name == "service");
    CHECK(m->to.uri == "sip:service@127.0.0.1:5060");
    CHECK_FALSE(m->to.has_tag);
    CHECK(m->via_count == 2);
    CHECK(m->top_via.transport == Transport::udp);
    CHECK(m->top_via.host == "127.0.0.1");
    CHECK(m->top_via.port == 0);
    CHECK(m->top_via.branch == kProxyBranch);
    CHECK(m->max_forwards == 69u);
    CHECK(m->contact.uri == "sip:sipp@127.0.0.1:5061");
    CHECK_FALSE(m->contact.angle_brackets);
    CHECK(m->find_header("Subject") == std::optional<std::string_view>("Performance Test"));
    CHECK(m->content_type == "application/sdp");
    CHECK(m->content_length == 189u);  // written "Content-Length:   189" by sipp
    CHECK(m->body.size() == 189);
    CHECK_FALSE(m->body_truncated);
    CHECK_FALSE(m->body_excess);

    const auto sdp = parse_sdp(m->body);
    REQUIRE(sdp.ok());
    CHECK(sdp->origin.username == "user1");
    CHECK(sdp->origin.session_id == "53655765");
    CHECK(sdp->origin.session_version_value == 2353687637u);
    CHECK(sdp->origin.address == "127.0.0.1");
    CHECK(sdp->session_name == "-");
    CHECK(sdp->connection.address == "127.0.0.1");
    REQUIRE(sdp->media_count == 1);
    CHECK(sdp->media[0].type == "audio");
    CHECK(sdp->media[0].port == 16000);
    CHECK(sdp->media[0].proto == MediaProto::rtp_avp);
    REQUIRE(sdp->media[0].payload_type_count == 2);
    CHECK(sdp->media[0].payload_types[0] == 8);
    CHECK(sdp->media[0].payload_types[1] == 101);
    CHECK(find_rtpmap(*sdp, 0, 8)->encoding == "PCMA");
    CHECK(find_rtpmap(*sdp, 0, 101)->encoding == "telephone-event");
    CHECK(find_rtpmap(*sdp, 0, 101)->clock_rate == 8000);
    CHECK(find_fmtp(*sdp, 0, 101) == std::optional<std::string_view>("0-11,16"));
    CHECK(effective_direction(*sdp, 0) == Direction::sendrecv);
    const auto ep = media_endpoint(*sdp, 0);
    REQUIRE(ep.has_value());
    CHECK(ep->address == *IpAddress::parse("127.0.0.1"));
    CHECK(ep->port == 16000);
}

TEST_CASE("capture: Kamailio's own 100 Trying", "[sip][capture]") {
    const auto m = parse_message(read_data("kamailio_100_trying.sip"));
    REQUIRE(m.ok());
    CHECK(m->status_code == 100);
    CHECK(m->reason_phrase == "trying -- your call is important to us");
    CHECK(m->method == Method::invite);
    CHECK(m->server == "kamailio (5.6.3 (x86_64/linux))");
    CHECK(m->via_count == 1);
    CHECK(m->top_via.port == 5061);
    CHECK(m->top_via.branch == "z9hG4bK-15403-1-0");
    CHECK(m->content_length == 0u);
}

TEST_CASE("capture: sipp UAS 180 with a comma-joined Via", "[sip][capture]") {
    const auto m = parse_message(read_data("sipp_uas_180_ringing.sip"));
    REQUIRE(m.ok());
    CHECK(m->status_code == 180);
    CHECK(m->reason_phrase == "Ringing");
    CHECK(m->call_id == "1-15403@127.0.0.1");
    CHECK(m->to.tag == "15393SIPpTag011");
    CHECK(m->from.tag == "15403SIPpTag091");
    CHECK(m->via_count == 2);
    CHECK(m->count_headers("Via") == 1);
    CHECK(m->top_via.branch == kProxyBranch);
    CHECK(m->contact.uri == "sip:127.0.0.1:5070;transport=UDP");
    CHECK(m->contact.angle_brackets);
    CHECK(m->body.empty());
}

TEST_CASE("capture: sipp UAS 200 OK with SDP", "[sip][capture]") {
    const auto m = parse_message(read_data("sipp_uas_200_ok_sdp.sip"));
    REQUIRE(m.ok());
    CHECK(m->status_code == 200);
    CHECK(m->method == Method::invite);
    CHECK(m->cseq.number == 1);
    CHECK(m->via_count == 2);
    CHECK(m->to.tag == "15393SIPpTag011");
    CHECK(m->content_length == 130u);
    CHECK(m->body.size() == 130);
    const auto sdp = parse_sdp(m->body);
    REQUIRE(sdp.ok());
    REQUIRE(sdp->media_count == 1);
    CHECK(sdp->media[0].port == 26000);
    REQUIRE(sdp->media[0].payload_type_count == 1);
    CHECK(sdp->media[0].payload_types[0] == 0);
    CHECK(find_rtpmap(*sdp, 0, 0)->encoding == "PCMU");
    CHECK(effective_connection(*sdp, 0)->address == "127.0.0.1");
}

TEST_CASE("capture: ACK relayed by Kamailio and sipp's BYE", "[sip][capture]") {
    const auto ack = parse_message(read_data("kamailio_ack.sip"));
    REQUIRE(ack.ok());
    CHECK(ack->method == Method::ack);
    CHECK(ack->cseq.number == 1);
    CHECK(ack->cseq.method == Method::ack);
    CHECK(ack->via_count == 2);
    CHECK(ack->top_via.branch == "z9hG4bKb2ec.682d9e0b2e3e755ad4904ccdb2da8951.0");
    CHECK(ack->to.tag == "15393SIPpTag011");
    CHECK(ack->max_forwards == 69u);

    const auto bye = parse_message(read_data("sipp_uac_bye.sip"));
    REQUIRE(bye.ok());
    CHECK(bye->method == Method::bye);
    CHECK(bye->cseq.number == 2);
    CHECK(bye->via_count == 1);
    CHECK(bye->top_via.branch == "z9hG4bK-15403-1-9");
    CHECK(bye->top_via.port == 5061);
    CHECK(bye->from.tag == "15403SIPpTag091");
    CHECK(bye->to.tag == "15393SIPpTag011");
    CHECK(bye->max_forwards == 70u);
}

// Every UDP datagram on the SIP ports of the whole capture, read with a minimal classic-pcap
// walk (Ethernet, IPv4, UDP), parses; counts match tshark's.
TEST_CASE("capture: all 130 SIP messages of the sipp/Kamailio capture", "[sip][capture][fixture]") {
    const std::string name = "sipp-10-calls-g711-via-kamailio.pcap";
    const auto file = hepd::test::read_binary_file(hepd::test::fixture_path(name));
    REQUIRE(file.size() > 24);
    REQUIRE(hepd::load_le32(file.data()) == 0xa1b2c3d4u);
    REQUIRE(hepd::load_le32(file.data() + 20) == 1u);  // LINKTYPE_ETHERNET

    std::map<std::string, int> kinds;
    std::set<std::string> call_ids;
    std::map<std::uint16_t, int> media_ports;
    int sdp_bodies = 0;
    std::size_t offset = 24;
    while (offset + 16 <= file.size()) {
        const std::uint32_t caplen = hepd::load_le32(file.data() + offset + 8);
        offset += 16;
        REQUIRE(offset + caplen <= file.size());
        const std::uint8_t* frame = file.data() + offset;
        offset += caplen;
        if (caplen < 14 + 20 + 8 || hepd::load_be16(frame + 12) != 0x0800 || frame[14 + 9] != 17) continue;
        const std::size_t ihl = (frame[14] & 0x0fu) * 4u;
        const std::uint8_t* udp = frame + 14 + ihl;
        const std::uint16_t sport = hepd::load_be16(udp);
        const std::uint16_t dport = hepd::load_be16(udp + 2);
        const std::uint16_t udp_length = hepd::load_be16(udp + 4);
        const auto is_sip_port = [](std::uint16_t p) { return p == 5060 || p == 5061 || p == 5070; };
        if (!is_sip_port(sport) && !is_sip_port(dport)) continue;
        const std::string_view payload(reinterpret_cast<const char*>(udp + 8), udp_length - 8u);
        const auto m = parse_message(payload);
        INFO(payload);
        REQUIRE(m.ok());
        CHECK_FALSE(m->body_truncated);
        CHECK_FALSE(m->body_excess);
        CHECK(m->top_via.valid);
        CHECK(m->from.has_tag);
        kinds[m->is_request() ? std::string(m->method_text) : std::to_string(m->status_code)]++;
        call_ids.insert(std::string(m->call_id));
        if (!m->body.empty()) {
            const auto sdp = parse_sdp(m->body);
            REQUIRE(sdp.ok());
            REQUIRE(sdp->media_count == 1);
            ++sdp_bodies;
            media_ports[sdp->media[0].port]++;
        }
    }
    const std::map<std::string, int> expected{{"100", 10}, {"180", 20}, {"200", 40},
                                              {"ACK", 20}, {"BYE", 20}, {"INVITE", 20}};
    CHECK(kinds == expected);
    CHECK(call_ids.size() == 10);
    CHECK(sdp_bodies == 40);
    CHECK(media_ports[26000] == 20);
    for (std::uint16_t port = 16000; port <= 16036; port = static_cast<std::uint16_t>(port + 4)) {
        INFO("port " << port);
        CHECK(media_ports[port] == 2);
    }
}
