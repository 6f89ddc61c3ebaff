#include "sip/sdp.hpp"

#include "test_util.hpp"

#include <catch2/catch.hpp>

#include <set>
#include <string>

using namespace hepd::sip;
using hepd::IpAddress;
using hepd::sip::test::crlf;
using hepd::sip::test::keep;

namespace {

SessionDescription sdp_ok(std::string input) {
    const std::string_view text = keep(std::move(input));
    auto result = parse_sdp(text);
    INFO("sdp: " << text);
    REQUIRE(result.ok());
    return result.value();
}

SdpError sdp_error(std::string_view text) {
    auto result = parse_sdp(text);
    INFO("sdp: " << text);
    REQUIRE_FALSE(result.ok());
    return result.error();
}

// An audio + video offer, modelled on RFC 4317 section 2.1 and RFC 3264 examples.
const std::string kOffer = crlf(R"(v=0
o=alice 2890844526 2890844527 IN IP4 host.atlanta.example.com
s=Call with video
c=IN IP4 192.0.2.10
t=0 0
a=recvonly
m=audio 49170 RTP/AVP 0 8 97 101
a=rtpmap:0 PCMU/8000
a=rtpmap:97 opus/48000/2
a=rtpmap:101 telephone-event/8000
a=fmtp:101 0-15
a=fmtp:97 minptime=10;useinbandfec=1
a=ptime:20
a=maxptime:40
a=rtcp:53020 IN IP4 192.0.2.11
a=mid:audio1
m=video 51372/2 RTP/AVPF 31 96
c=IN IP6 2001:db8::2
a=rtpmap:96 H264/90000
a=sendonly
a=rtcp-mux
a=label:cam-1
)");

}  // namespace

TEST_CASE("SDP: session and media fields of an audio+video offer", "[sip][sdp]") {
    const SessionDescription sd = sdp_ok(kOffer);
    CHECK(sd.version == 0);
    CHECK(sd.origin.present);
    CHECK(sd.origin.username == "alice");
    CHECK(sd.origin.session_id == "2890844526");
    CHECK(sd.origin.session_version == "2890844527");
    CHECK(sd.origin.session_id_value == 2890844526u);
    CHECK(sd.origin.session_version_value == 2890844527u);
    CHECK(sd.origin.network_type == "IN");
    CHECK(sd.origin.address_type == AddressType::ip4);
    CHECK(sd.origin.address == "host.atlanta.example.com");
    CHECK(sd.session_name == "Call with video");
    CHECK(sd.connection.present());
    CHECK(sd.connection.network_type == "IN");
    CHECK(sd.connection.address_type == AddressType::ip4);
    CHECK(sd.connection.address_type_text == "IP4");
    CHECK(sd.connection.address == "192.0.2.10");
    CHECK(sd.connection.ttl == 0);
    CHECK(sd.connection.address_count == 1);
    CHECK(sd.direction == Direction::recvonly);
    CHECK(sd.malformed_lines == 0);
    REQUIRE(sd.media_count == 2);
    CHECK(sd.media_overflow == 0);

    const Media& audio = sd.media[0];
    CHECK(audio.type == "audio");
    CHECK(audio.port == 49170);
    CHECK(audio.port_count == 1);
    CHECK(audio.proto == MediaProto::rtp_avp);
    CHECK(audio.proto_text == "RTP/AVP");
    CHECK(audio.formats == "0 8 97 101");
    REQUIRE(audio.payload_type_count == 4);
    CHECK(audio.payload_types[0] == 0);
    CHECK(audio.payload_types[1] == 8);
    CHECK(audio.payload_types[2] == 97);
    CHECK(audio.payload_types[3] == 101);
    CHECK(audio.payload_type_list().size() == 4);
    CHECK_FALSE(audio.connection.present());
    CHECK(audio.direction == Direction::unspecified);
    CHECK(audio.ptime == 20);
    CHECK(audio.maxptime == 40);
    CHECK(audio.rtcp_port == 53020);
    CHECK(audio.rtcp_connection.address == "192.0.2.11");
    CHECK_FALSE(audio.rtcp_mux);
    CHECK(audio.mid == "audio1");
    CHECK(audio.label.empty());

    const Media& video = sd.media[1];
    CHECK(video.type == "video");
    CHECK(video.port == 51372);
    CHECK(video.port_count == 2);
    CHECK(video.proto == MediaProto::rtp_avpf);
    CHECK(video.payload_type_count == 2);
    CHECK(video.connection.address_type == AddressType::ip6);
    CHECK(video.connection.address == "2001:db8::2");
    CHECK(video.direction == Direction::sendonly);
    CHECK(video.rtcp_mux);
    CHECK(video.label == "cam-1");
    CHECK(video.ptime == 0);

    CHECK(sd.rtpmap_count == 4);
    CHECK(sd.fmtp_count == 2);

    // Section texts split at the m= lines.
    CHECK(sd.session_text.substr(0, 4) == "v=0\r");
    CHECK(sd.session_text.substr(sd.session_text.size() - 12) == "a=recvonly\r\n");
    CHECK(audio.text.substr(0, 8) == "m=audio ");
    CHECK(audio.text.substr(audio.text.size() - 14) == "a=mid:audio1\r\n");
    CHECK(video.text.substr(0, 8) == "m=video ");
    CHECK(video.text.substr(video.text.size() - 15) == "a=label:cam-1\r\n");
}

TEST_CASE("SDP helpers: connection, direction, rtpmap, fmtp, endpoints", "[sip][sdp]") {
    const SessionDescription sd = sdp_ok(kOffer);

    SECTION("effective connection: media overrides session") {
        REQUIRE(effective_connection(sd, 0) != nullptr);
        CHECK(effective_connection(sd, 0)->address == "192.0.2.10");
        CHECK(effective_connection(sd, 1)->address == "2001:db8::2");
        CHECK(effective_connection(sd, 2) == nullptr);
    }
    SECTION("effective direction: media overrides session default") {
        CHECK(effective_direction(sd, 0) == Direction::recvonly);
        CHECK(effective_direction(sd, 1) == Direction::sendonly);
        CHECK(to_string(Direction::sendonly) == "sendonly");
    }
    SECTION("rtpmap: dynamic from the section, static from RFC 3551") {
        const auto opus = find_rtpmap(sd, 0, 97);
        REQUIRE(opus.has_value());
        CHECK(opus->encoding == "opus");
        CHECK(opus->clock_rate == 48000);
        CHECK(opus->channels == 2);
        CHECK(opus->media_index == 0);
        const auto pcmu = find_rtpmap(sd, 0, 0);
        REQUIRE(pcmu.has_value());
        CHECK(pcmu->encoding == "PCMU");
        CHECK(pcmu->clock_rate == 8000);
        CHECK(pcmu->channels == 1);
        // PT 8 has no a=rtpmap line in the offer: the static table answers.
        const auto pcma = find_rtpmap(sd, 0, 8);
        REQUIRE(pcma.has_value());
        CHECK(pcma->encoding == "PCMA");
        CHECK(pcma->clock_rate == 8000);
        // Mappings belong to their section: 96 is H264 in video only.
        CHECK_FALSE(find_rtpmap(sd, 0, 96).has_value());
        const auto h264 = find_rtpmap(sd, 1, 96);
        REQUIRE(h264.has_value());
        CHECK(h264->encoding == "H264");
        CHECK(h264->clock_rate == 90000);
        const auto h261 = find_rtpmap(sd, 1, 31);
        REQUIRE(h261.has_value());
        CHECK(h261->encoding == "H261");
        CHECK(h261->clock_rate == 90000);
        CHECK_FALSE(find_rtpmap(sd, 5, 0).has_value());
    }
    SECTION("fmtp") {
        CHECK(find_fmtp(sd, 0, 101) == std::optional<std::string_view>("0-15"));
        CHECK(find_fmtp(sd, 0, 97) == std::optional<std::string_view>("minptime=10;useinbandfec=1"));
        CHECK(find_fmtp(sd, 0, 0) == std::nullopt);
        CHECK(find_fmtp(sd, 1, 101) == std::nullopt);
    }
    SECTION("media and RTCP endpoints") {
        const auto audio = media_endpoint(sd, 0);
        REQUIRE(audio.has_value());
        CHECK(audio->address == *IpAddress::parse("192.0.2.10"));
        CHECK(audio->port == 49170);
        const auto audio_rtcp = rtcp_endpoint(sd, 0);
        REQUIRE(audio_rtcp.has_value());
        CHECK(audio_rtcp->address == *IpAddress::parse("192.0.2.11"));
        CHECK(audio_rtcp->port == 53020);
        const auto video = media_endpoint(sd, 1);
        REQUIRE(video.has_value());
        CHECK(video->address == *IpAddress::parse("2001:db8::2"));
        CHECK(video->port == 51372);
        // rtcp-mux: RTCP shares the RTP port.
        const auto video_rtcp = rtcp_endpoint(sd, 1);
        REQUIRE(video_rtcp.has_value());
        CHECK(video_rtcp->port == 51372);
        CHECK_FALSE(media_endpoint(sd, 2).has_value());
    }
    SECTION("find_attribute over section texts") {
        CHECK(find_attribute(sd.media[0].text, "rtpmap") == std::optional<std::string_view>("0 PCMU/8000"));
        CHECK(find_attribute(sd.media[0].text, "MID") == std::optional<std::string_view>("audio1"));
        const auto mux = find_attribute(sd.media[1].text, "rtcp-mux");
        REQUIRE(mux.has_value());
        CHECK(mux->empty());
        CHECK(find_attribute(sd.session_text, "recvonly").has_value());
        CHECK(find_attribute(sd.session_text, "rtpmap") == std::nullopt);
        CHECK(find_attribute(sd.media[1].text, "mid") == std::nullopt);
    }
}

TEST_CASE("SDP: static payload type table (RFC 3551)", "[sip][sdp]") {
    struct Row {
        std::uint8_t pt;
        const char* encoding;
        std::uint32_t clock;
        std::uint8_t channels;
    };
    const Row rows[] = {
        {0, "PCMU", 8000, 1},   {3, "GSM", 8000, 1},    {4, "G723", 8000, 1},   {5, "DVI4", 8000, 1},
        {6, "DVI4", 16000, 1},  {7, "LPC", 8000, 1},    {8, "PCMA", 8000, 1},   {9, "G722", 8000, 1},
        {10, "L16", 44100, 2},  {11, "L16", 44100, 1},  {12, "QCELP", 8000, 1}, {13, "CN", 8000, 1},
        {14, "MPA", 90000, 1},  {15, "G728", 8000, 1},  {16, "DVI4", 11025, 1}, {17, "DVI4", 22050, 1},
        {18, "G729", 8000, 1},  {25, "CelB", 90000, 1}, {26, "JPEG", 90000, 1}, {28, "nv", 90000, 1},
        {31, "H261", 90000, 1}, {32, "MPV", 90000, 1},  {33, "MP2T", 90000, 1}, {34, "H263", 90000, 1},
    };
    std::set<int> assigned;
    for (const Row& row : rows) {
        INFO("pt " << int(row.pt));
        const auto map = static_rtpmap(row.pt);
        REQUIRE(map.has_value());
        CHECK(map->payload_type == row.pt);
        CHECK(map->encoding == row.encoding);
        CHECK(map->clock_rate == row.clock);
        CHECK(map->channels == row.channels);
        assigned.insert(row.pt);
    }
    for (int pt = 0; pt < 128; ++pt) {
        if (assigned.count(pt) != 0) continue;
        INFO("pt " << pt);
        CHECK_FALSE(static_rtpmap(static_cast<std::uint8_t>(pt)).has_value());
    }
    CHECK_FALSE(static_rtpmap(255).has_value());
}

TEST_CASE("SDP: connection address forms", "[sip][sdp]") {
    SECTION("IPv4 multicast with TTL") {
        const auto sd = sdp_ok("v=0\r\nc=IN IP4 224.2.36.42/127\r\nm=audio 5000 RTP/AVP 0\r\n");
        CHECK(sd.connection.address == "224.2.36.42");
        CHECK(sd.connection.ttl == 127);
        CHECK(sd.connection.address_count == 1);
    }
    SECTION("IPv4 multicast with TTL and address count") {
        const auto sd = sdp_ok("v=0\r\nc=IN IP4 224.2.1.1/127/3\r\n");
        CHECK(sd.connection.address == "224.2.1.1");
        CHECK(sd.connection.ttl == 127);
        CHECK(sd.connection.address_count == 3);
    }
    SECTION("IPv6 multicast with address count, no TTL") {
        const auto sd = sdp_ok("v=0\r\nc=IN IP6 FF15::101/3\r\n");
        CHECK(sd.connection.address_type == AddressType::ip6);
        CHECK(sd.connection.address == "FF15::101");
        CHECK(sd.connection.ttl == 0);
        CHECK(sd.connection.address_count == 3);
    }
    SECTION("IPv6 unicast, media level only") {
        const auto sd = sdp_ok("v=0\r\nm=audio 7078 RTP/AVP 9\r\nc=IN IP6 ::1\r\n");
        CHECK_FALSE(sd.connection.present());
        CHECK(sd.media[0].connection.address == "::1");
        const auto ep = media_endpoint(sd, 0);
        REQUIRE(ep.has_value());
        CHECK(ep->address == *IpAddress::parse("::1"));
        CHECK(ep->port == 7078);
        const auto g722 = find_rtpmap(sd, 0, 9);
        REQUIRE(g722.has_value());
        CHECK(g722->clock_rate == 8000);
    }
    SECTION("unknown address type and a host name") {
        const auto sd = sdp_ok("v=0\r\nc=IN XY somewhere\r\nm=audio 1 RTP/AVP 0\r\n");
        CHECK(sd.connection.address_type == AddressType::other);
        CHECK_FALSE(media_endpoint(sd, 0).has_value());
        const auto named = sdp_ok("v=0\r\nc=IN IP4 media.example.com\r\nm=audio 1 RTP/AVP 0\r\n");
        CHECK(named.connection.address == "media.example.com");
        CHECK_FALSE(media_endpoint(named, 0).has_value());
    }
    SECTION("no c= anywhere") {
        const auto sd = sdp_ok("v=0\r\nm=audio 1 RTP/AVP 0\r\n");
        CHECK(effective_connection(sd, 0) == nullptr);
        CHECK_FALSE(media_endpoint(sd, 0).has_value());
        CHECK_FALSE(rtcp_endpoint(sd, 0).has_value());
    }
    SECTION("bad c= lines are fatal") {
        CHECK(sdp_error("v=0\r\nc=IN IP4\r\n") == SdpError::bad_connection);
        CHECK(sdp_error("v=0\r\nc=\r\n") == SdpError::bad_connection);
        CHECK(sdp_error("v=0\r\nc=IN IP4 1.2.3.4 extra\r\n") == SdpError::bad_connection);
        CHECK(sdp_error("v=0\r\nc=IN IP4 224.1.1.1/256\r\n") == SdpError::bad_connection);
        CHECK(sdp_error("v=0\r\nc=IN IP4 224.1.1.1/1/0\r\n") == SdpError::bad_connection);
        CHECK(sdp_error("v=0\r\nc=IN IP6 ff15::1/3/2\r\n") == SdpError::bad_connection);
        CHECK(sdp_error("v=0\r\nc=IN IP4 /5\r\n") == SdpError::bad_connection);
        CHECK(sdp_error("v=0\r\nm=audio 1 RTP/AVP 0\r\nc=IN\r\n") == SdpError::bad_connection);
    }
}

TEST_CASE("SDP: media lines", "[sip][sdp]") {
    SECTION("protocols") {
        const auto sd = sdp_ok(crlf(R"(v=0
m=audio 1 RTP/SAVP 0
m=audio 2 RTP/SAVPF 0
m=audio 3 UDP/TLS/RTP/SAVPF 111
m=audio 4 UDP/TLS/RTP/SAVP 0
m=image 5 udptl t38
m=application 6 UDP/DTLS/SCTP webrtc-datachannel
m=audio 7 udp 0
)"));
        REQUIRE(sd.media_count == 7);
        CHECK(sd.media[0].proto == MediaProto::rtp_savp);
        CHECK(sd.media[1].proto == MediaProto::rtp_savpf);
        CHECK(sd.media[2].proto == MediaProto::udp_tls_rtp_savpf);
        CHECK(sd.media[3].proto == MediaProto::udp_tls_rtp_savp);
        CHECK(sd.media[4].proto == MediaProto::other);
        CHECK(sd.media[4].proto_text == "udptl");
        CHECK(sd.media[4].formats == "t38");
        CHECK(sd.media[4].payload_type_count == 0);
        CHECK(sd.media[5].type == "application");
        CHECK(sd.media[5].formats == "webrtc-datachannel");
        CHECK(sd.media[6].proto == MediaProto::udp);
    }
    SECTION("format list beyond 32 is counted; non-RTP numbers skipped") {
        std::string m = "v=0\r\nm=audio 9 RTP/AVP";
        for (int pt = 0; pt < 40; ++pt) m += " " + std::to_string(pt);
        m += " 128 300\r\n";
        const auto sd = sdp_ok(m);
        CHECK(sd.media[0].payload_type_count == 32);
        CHECK(sd.media[0].payload_types[31] == 31);
        CHECK(sd.media[0].formats_overflow == 8);
    }
    SECTION("port 0 marks a rejected stream") {
        const auto sd = sdp_ok("v=0\r\nc=IN IP4 1.2.3.4\r\nm=video 0 RTP/AVP 96\r\n");
        CHECK(sd.media[0].port == 0);
        CHECK_FALSE(media_endpoint(sd, 0).has_value());
        CHECK_FALSE(rtcp_endpoint(sd, 0).has_value());
    }
    SECTION("RTCP defaults to port + 1") {
        const auto sd = sdp_ok("v=0\r\nc=IN IP4 1.2.3.4\r\nm=audio 4000 RTP/AVP 0\r\n");
        const auto ep = rtcp_endpoint(sd, 0);
        REQUIRE(ep.has_value());
        CHECK(ep->port == 4001);
        CHECK(ep->address == *IpAddress::parse("1.2.3.4"));
        const auto top = sdp_ok("v=0\r\nc=IN IP4 1.2.3.4\r\nm=audio 65535 RTP/AVP 0\r\n");
        CHECK_FALSE(rtcp_endpoint(top, 0).has_value());
    }
    SECTION("a=rtcp without address uses the media address") {
        const auto sd = sdp_ok("v=0\r\nc=IN IP4 1.2.3.4\r\nm=audio 4000 RTP/AVP 0\r\na=rtcp:4005\r\n");
        const auto ep = rtcp_endpoint(sd, 0);
        REQUIRE(ep.has_value());
        CHECK(ep->port == 4005);
        CHECK(ep->address == *IpAddress::parse("1.2.3.4"));
    }
    SECTION("bad m= lines are fatal") {
        CHECK(sdp_error("v=0\r\nm=audio\r\n") == SdpError::bad_media);
        CHECK(sdp_error("v=0\r\nm=audio 5000\r\n") == SdpError::bad_media);
        CHECK(sdp_error("v=0\r\nm=audio 70000 RTP/AVP 0\r\n") == SdpError::bad_media);
        CHECK(sdp_error("v=0\r\nm=audio x RTP/AVP 0\r\n") == SdpError::bad_media);
        CHECK(sdp_error("v=0\r\nm=audio 5000/0 RTP/AVP 0\r\n") == SdpError::bad_media);
        CHECK(sdp_error("v=0\r\nm=audio 5000/ RTP/AVP 0\r\n") == SdpError::bad_media);
        CHECK(sdp_error("v=0\r\nm=\r\n") == SdpError::bad_media);
    }
}

TEST_CASE("SDP: more than 8 media sections", "[sip][sdp][limits]") {
    std::string text = "v=0\r\nc=IN IP4 10.0.0.1\r\n";
    for (int i = 0; i < 10; ++i) {
        text += "m=audio " + std::to_string(10000 + 2 * i) + " RTP/AVP 0 96\r\n";
        text += "a=rtpmap:96 X" + std::to_string(i) + "/8000\r\n";
        text += "a=sendonly\r\n";
        text += "c=IN IP4 10.0.1." + std::to_string(i) + "\r\n";
    }
    const auto sd = sdp_ok(text);
    CHECK(sd.media_count == 8);
    CHECK(sd.media_overflow == 2);
    CHECK(sd.rtpmap_count == 8);
    CHECK(sd.media[7].port == 10014);
    // The dropped sections' lines did not leak into the last kept one.
    CHECK(sd.media[7].connection.address == "10.0.1.7");
    const auto last = find_rtpmap(sd, 7, 96);
    REQUIRE(last.has_value());
    CHECK(last->encoding == "X7");
    CHECK(sd.media[7].text.find("m=audio 10016") == std::string_view::npos);
}

TEST_CASE("SDP: rtpmap and fmtp pools overflow", "[sip][sdp][limits]") {
    std::string text = "v=0\r\nm=video 9 RTP/AVP";
    for (int pt = 96; pt < 96 + 30; ++pt) text += " " + std::to_string(pt);
    text += "\r\n";
    for (int pt = 96; pt < 96 + 30; ++pt) {
        text += "a=rtpmap:" + std::to_string(pt) + " VP8/90000\r\n";
        text += "a=fmtp:" + std::to_string(pt) + " p=" + std::to_string(pt) + "\r\n";
    }
    text += "m=audio 8 RTP/AVP 0 1 2 3\r\n";
    for (int pt = 0; pt < 4; ++pt) text += "a=rtpmap:" + std::to_string(pt) + " A" + std::to_string(pt) + "/8000\r\n";
    const auto sd = sdp_ok(text);
    CHECK(sd.rtpmap_count == kMaxRtpMaps);
    CHECK(sd.rtpmap_overflow == 30 + 4 - kMaxRtpMaps);
    CHECK(sd.fmtp_count == kMaxFmtps);
    CHECK(sd.fmtp_overflow == 30 - kMaxFmtps);
    CHECK(find_fmtp(sd, 0, 96 + 15) == std::optional<std::string_view>("p=111"));
    CHECK(find_fmtp(sd, 0, 96 + 16) == std::nullopt);
    // Audio's first two maps fit, the rest fall back to the static table.
    CHECK(find_rtpmap(sd, 1, 1)->encoding == "A1");
    CHECK(find_rtpmap(sd, 1, 3)->encoding == "GSM");
}

TEST_CASE("SDP: attributes", "[sip][sdp]") {
    SECTION("first rtpmap of a payload type stands; malformed ones are counted") {
        const auto sd = sdp_ok(crlf(R"(v=0
m=audio 1 RTP/AVP 96 97 98
a=rtpmap:96 AMR/8000
a=rtpmap:96 AMR-WB/16000
a=rtpmap:97 L16/16000/2
a=rtpmap:98
a=rtpmap:x PCMU/8000
a=rtpmap:200 PCMU/8000
a=rtpmap:98 /8000
a=rtpmap:98 X/0
a=rtpmap:98 X/8000/0
a=rtpmap:98 X
a=ptime:abc
a=maxptime:
a=rtcp:x
a=rtcp:9 IN
a=fmtp:
)"));
        CHECK(sd.rtpmap_count == 2);
        CHECK(find_rtpmap(sd, 0, 96)->encoding == "AMR");
        CHECK(find_rtpmap(sd, 0, 97)->channels == 2);
        CHECK(find_rtpmap(sd, 0, 97)->clock_rate == 16000);
        CHECK_FALSE(find_rtpmap(sd, 0, 98).has_value());
        CHECK(sd.malformed_lines == 12);
        CHECK(sd.media[0].rtcp_port == 9);  // the port stands, the broken address does not
        CHECK_FALSE(sd.media[0].rtcp_connection.present());
    }
    SECTION("fractional ptime, session-level ptime and direction, media overrides") {
        const auto sd = sdp_ok(crlf(R"(v=0
a=ptime:30
a=inactive
m=audio 1 RTP/AVP 0
a=ptime:20.5
m=audio 2 RTP/AVP 0
a=sendrecv
m=audio 3 RTP/AVP 0
a=recvonly
)"));
        CHECK(sd.ptime == 30);
        CHECK(sd.direction == Direction::inactive);
        CHECK(sd.media[0].ptime == 20);
        CHECK(sd.media[1].ptime == 0);
        CHECK(effective_direction(sd, 0) == Direction::inactive);
        CHECK(effective_direction(sd, 1) == Direction::sendrecv);
        CHECK(effective_direction(sd, 2) == Direction::recvonly);
    }
    SECTION("no direction anywhere means sendrecv") {
        const auto sd = sdp_ok("v=0\r\nm=audio 1 RTP/AVP 0\r\n");
        CHECK(sd.direction == Direction::unspecified);
        CHECK(sd.media[0].direction == Direction::unspecified);
        CHECK(effective_direction(sd, 0) == Direction::sendrecv);
    }
    SECTION("media-level-only attributes at session level are ignored or counted") {
        const auto sd = sdp_ok("v=0\r\na=rtpmap:0 PCMU/8000\r\na=fmtp:0 x\r\na=rtcp-mux\r\na=mid:0\r\n");
        CHECK(sd.rtpmap_count == 0);
        CHECK(sd.fmtp_count == 0);
        CHECK(sd.malformed_lines == 2);
    }
    SECTION("a second o= and a second v= are counted, not fatal") {
        const auto sd = sdp_ok("v=0\r\no=a 1 2 IN IP4 1.1.1.1\r\no=b 3 4 IN IP4 2.2.2.2\r\nv=0\r\n");
        CHECK(sd.origin.username == "a");
        CHECK(sd.malformed_lines == 2);
    }
    SECTION("malformed o= is counted; non-numeric ids keep their text") {
        const auto bad = sdp_ok("v=0\r\no=a 1 2 IN IP4\r\n");
        CHECK_FALSE(bad.origin.present);
        CHECK(bad.malformed_lines == 1);
        const auto odd = sdp_ok("v=0\r\no=- abc 99999999999999999999 IN IP6 ::1\r\n");
        CHECK(odd.origin.present);
        CHECK(odd.origin.session_id == "abc");
        CHECK(odd.origin.session_id_value == 0);
        CHECK(odd.origin.session_version_value == 0);
        CHECK(odd.origin.address_type == AddressType::ip6);
    }
}

TEST_CASE("SDP: line ends and white space", "[sip][sdp]") {
    const auto lf = sdp_ok(
        "v=0\no=- 1 1 IN IP4 127.0.0.1\ns=-\nc=IN IP4 127.0.0.1\nt=0 0\nm=audio 6000 RTP/AVP 8\na=rtpmap:8 "
        "PCMA/8000\n");
    CHECK(lf.media[0].port == 6000);
    CHECK(find_rtpmap(lf, 0, 8)->encoding == "PCMA");
    // Trailing blanks, blank lines, no final line end, doubled spaces.
    const auto sloppy =
        sdp_ok("\r\n\r\nv=0 \r\n\r\nc=IN  IP4  10.1.1.1  \r\nm=audio  5004  RTP/AVP  0  8\r\n\r\na=sendonly  ");
    CHECK(sloppy.connection.address == "10.1.1.1");
    CHECK(sloppy.media[0].port == 5004);
    CHECK(sloppy.media[0].payload_type_count == 2);
    CHECK(sloppy.media[0].direction == Direction::sendonly);
}

// Fields and separators are found a machine word at a time, so values are tried at and around
// the 8-byte boundaries, next to separators of every kind, and with bytes that only a
// byte-by-byte reader would treat alike.
TEST_CASE("SDP: field splitting corners", "[sip][sdp]") {
    SECTION("several spaces, tabs and trailing blanks between and after fields") {
        const auto sd = sdp_ok(
            "v=0\r\no= \tbob\t\t 42  7 \tIN IP4\t10.0.0.1 \t\r\nc=\tIN\t IP4  \t192.168.100.200\t\r\n"
            "m=audio \t 49170\t\tRTP/AVP\t 0 \t 8\t101 \t\r\na=rtpmap:101 \t telephone-event/8000 \t\r\n"
            "a=fmtp:101\t 0-16 \t\r\na=rtcp:\t49171 \tIN\tIP4 \t10.0.0.2\t\r\na=ptime: \t20\t\r\n");
        CHECK(sd.origin.present);
        CHECK(sd.origin.username == "bob");
        CHECK(sd.origin.session_id_value == 42);
        CHECK(sd.origin.session_version_value == 7);
        CHECK(sd.origin.address == "10.0.0.1");
        CHECK(sd.connection.network_type == "IN");
        CHECK(sd.connection.address == "192.168.100.200");
        const Media& m = sd.media[0];
        CHECK(m.type == "audio");
        CHECK(m.port == 49170);
        CHECK(m.proto == MediaProto::rtp_avp);
        CHECK(m.formats == "0 \t 8\t101");
        REQUIRE(m.payload_type_count == 3);
        CHECK(m.payload_types[2] == 101);
        CHECK(find_rtpmap(sd, 0, 101)->encoding == "telephone-event");
        CHECK(find_fmtp(sd, 0, 101) == "0-16");
        CHECK(m.rtcp_port == 49171);
        CHECK(m.rtcp_connection.address == "10.0.0.2");
        CHECK(m.ptime == 20);
        CHECK(sd.malformed_lines == 0);
    }
    SECTION("bare LF line ends with trailing blanks, and no final line end") {
        const auto sd = sdp_ok("v=0\nc=IN IP4 10.9.8.7 \t\nm=audio 4000 RTP/AVP 0\t\na=sendonly \na=mid:a1\t");
        CHECK(sd.connection.address == "10.9.8.7");
        CHECK(sd.media[0].payload_type_count == 1);
        CHECK(sd.media[0].direction == Direction::sendonly);
        CHECK(sd.media[0].mid == "a1");
    }
    SECTION("field lengths around the 8-byte word, last on the line and followed by more") {
        for (std::size_t length = 1; length <= 26; ++length) {
            const std::string host(length, 'h');
            INFO("host length " << length);
            const auto last = sdp_ok("v=0\r\nc=IN IP4 " + host + "\r\n");
            CHECK(last.connection.address == host);
            const auto mid = sdp_ok("v=0\r\no=- 1 1 IN IP4 " + host + "\r\nc=IN IP4 " + host + "/9/2\r\n");
            CHECK(mid.origin.address == host);
            CHECK(mid.connection.address == host);
            CHECK(mid.connection.ttl == 9);
            CHECK(mid.connection.address_count == 2);
            const auto user = sdp_ok("v=0\r\no=" + host + " 1 1 IN IP4 a\r\nm=" + host + " 1 RTP/AVP 0\r\n");
            CHECK(user.origin.username == host);
            CHECK(user.media[0].type == host);
            // The attribute name is `host`, unknown: only a name of its own length could match.
            const auto attribute = sdp_ok("v=0\r\nm=audio 1 RTP/AVP 0\r\na=" + host + ":x\r\na=" + host + "\r\n");
            CHECK(attribute.malformed_lines == 0);
            CHECK(find_attribute(attribute.media[0].text, host) == "x");
        }
    }
    SECTION("separators at and around the 8-byte word") {
        const auto sd = sdp_ok(
            "v=0\r\nm=audio 1 RTP/AVP 96 97 98 99\r\na=rtpmap:96 PCMU/8000\r\na=rtpmap:97 G7221/16000/1\r\n"
            "a=rtpmap:98 telephone-event/48000/2\r\na=rtpmap:99 abcdefgh/90000\r\na=maxptime:40\r\n"
            "a=ptime:123456.789\r\n");
        CHECK(find_rtpmap(sd, 0, 96)->encoding == "PCMU");
        CHECK(find_rtpmap(sd, 0, 97)->clock_rate == 16000);
        CHECK(find_rtpmap(sd, 0, 98)->encoding == "telephone-event");
        CHECK(find_rtpmap(sd, 0, 98)->clock_rate == 48000);
        CHECK(find_rtpmap(sd, 0, 98)->channels == 2);
        CHECK(find_rtpmap(sd, 0, 99)->encoding == "abcdefgh");
        CHECK(sd.media[0].maxptime == 40);
        CHECK(sd.media[0].ptime == 123456);
        CHECK(sd.malformed_lines == 0);
    }
    SECTION("control and non-ASCII bytes are field bytes, not separators") {
        const auto sd =
            sdp_ok(std::string("v=0\r\no=j\xc3\xb6rg 1 1 IN IP4 a\r\nc=IN IP4 ho\x01st\x0b\x7f\xff.example\r\n") +
                   "m=audio 1 RTP/AVP 0\r\na=mid:\x1f\r\n");
        CHECK(sd.origin.username == "j\xc3\xb6rg");
        CHECK(sd.connection.address == "ho\x01st\x0b\x7f\xff.example");
        CHECK(sd.media[0].mid == "\x1f");
        // A CR inside a line is neither a line end nor a separator.
        CHECK(sdp_ok("v=0\r\nc=IN IP4 10.0.0.1\r10.0.0.2\r\n").connection.address == "10.0.0.1\r10.0.0.2");
        CHECK(sdp_ok("v=0\r\nc=IN IP4 10.0.0.1\r\r\n").connection.address == "10.0.0.1");
    }
    SECTION("missing fields") {
        CHECK(sdp_error("v=0\r\nm=audio 5004\r\n") == SdpError::bad_media);
        CHECK(sdp_error("v=0\r\nm=audio \t \r\n") == SdpError::bad_media);
        CHECK(sdp_error("v=0\r\nm=\t\r\n") == SdpError::bad_media);
        CHECK(sdp_error("v=0\r\nc=IN \t IP4 \t\r\n") == SdpError::bad_connection);
        const auto sd = sdp_ok("v=0\r\no=- 1 1 IN\tIP4 \t\r\nm=audio 1 RTP/AVP\r\na=rtpmap:\t\r\na=fmtp: \t\r\n");
        CHECK_FALSE(sd.origin.present);
        CHECK(sd.media[0].payload_type_count == 0);
        CHECK(sd.media[0].formats.empty());
        CHECK(sd.malformed_lines == 3);
    }
    SECTION("very long lines") {
        const std::string parameters(5000, 'p');
        const std::string host(3000, 'x');
        std::string formats;
        for (int i = 0; i < 600; ++i) formats += " " + std::to_string(i % 128);
        const auto sd = sdp_ok("v=0\r\nc=IN IP4 " + host + "/1\r\nm=audio 1 RTP/AVP" + formats + "\r\na=fmtp:0 " +
                               parameters + "  \r\n");
        CHECK(sd.connection.address == host);
        CHECK(sd.connection.ttl == 1);
        CHECK(sd.media[0].payload_type_count == kMaxFormats);
        CHECK(sd.media[0].formats_overflow == 600 - kMaxFormats);
        CHECK(find_fmtp(sd, 0, 0) == parameters);
    }
    SECTION("a media section beyond the limit is dropped without parsing its formats") {
        std::string text = "v=0\r\n";
        for (std::size_t i = 0; i <= kMaxMedia; ++i)
            text += "m=audio " + std::to_string(1000 + i) + " RTP/AVP 0 x 8\r\n";
        text += "m=audio 1\r\n";
        CHECK(sdp_error(text) == SdpError::bad_media);
    }
}

TEST_CASE("SDP: errors", "[sip][sdp][errors]") {
    CHECK(sdp_error("") == SdpError::empty);
    CHECK(sdp_error("\r\n \r\n\t") == SdpError::empty);
    CHECK(sdp_error("o=- 1 1 IN IP4 1.1.1.1\r\nv=0\r\n") == SdpError::missing_version);
    CHECK(sdp_error("hello world") == SdpError::missing_version);
    CHECK(sdp_error("v=1\r\n") == SdpError::bad_version);
    CHECK(sdp_error("v=\r\n") == SdpError::bad_version);
    CHECK(sdp_error("v=0\r\nthis is not sdp\r\n") == SdpError::bad_line);
    CHECK(sdp_error("v=0\r\n=x\r\n") == SdpError::bad_line);
    CHECK(sdp_error("v=0\r\n1=x\r\n") == SdpError::bad_line);
    CHECK(sdp_error("v=0\r\na\r\n") == SdpError::bad_line);
    CHECK(sdp_error("v=0\r\n a=x\r\n") == SdpError::bad_line);

    std::set<std::string_view> names;
    for (std::size_t i = 0; i < kSdpErrorCount; ++i) {
        const std::string_view name = to_string(static_cast<SdpError>(i));
        CHECK(name != "unknown");
        names.insert(name);
    }
    CHECK(names.size() == kSdpErrorCount);
}

TEST_CASE("SDP: truncation at every length never crashes", "[sip][sdp][hostile]") {
    std::size_t ok = 0;
    for (std::size_t n = 0; n <= kOffer.size(); ++n) {
        INFO("length " << n);
        const auto result = parse_sdp(std::string_view(kOffer).substr(0, n));
        if (n == 0) {
            REQUIRE_FALSE(result.ok());
            CHECK(result.error() == SdpError::empty);
            continue;
        }
        if (!result.ok()) {
            // Only a cut inside "v=0", "c=..." or "m=..." can be fatal.
            const SdpError e = result.error();
            CHECK((e == SdpError::missing_version || e == SdpError::bad_version || e == SdpError::bad_line ||
                   e == SdpError::bad_connection || e == SdpError::bad_media));
            continue;
        }
        ++ok;
        CHECK(result->media_count <= 2);
        for (std::size_t i = 0; i < result->media_count; ++i) CHECK(result->media[i].text.size() <= n);
    }
    CHECK(ok > kOffer.size() / 2);
}
