// SDP -> MediaBinding: endpoints from c= + m=, codecs from the m= format list.
#include "sip/dialog_media.hpp"

#include "dialog_test_util.hpp"
#include "sip/sdp_side_store.hpp"

#include <catch2/catch.hpp>

using namespace hepd;
using namespace hepd::sip;
using namespace hepd::sip::test;

namespace {

// Audio + a declined video section + video; session-level c=.
const std::string kOffer = R"(v=0
o=alice 2890844526 2890844526 IN IP4 192.0.2.10
s=-
c=IN IP4 192.0.2.10
t=0 0
m=audio 49170 RTP/AVP 0 8 101
a=rtpmap:101 telephone-event/8000
a=fmtp:101 0-15
m=video 0 RTP/AVP 31
m=video 51372 RTP/AVP 96 97
a=rtpmap:96 H264/90000
)";

// Media-level IPv6 c=, an opus stereo mapping.
const std::string kAnswer = R"(v=0
o=bob 1 1 IN IP6 2001:db8::5
s=-
t=0 0
m=audio 3456 RTP/SAVPF 111 9
c=IN IP6 2001:db8::5
a=rtpmap:111 opus/48000/2
)";

struct ExpectedCodec {
    int pt;
    std::string_view name;
    std::uint32_t rate;
    int channels;
};

void check_codecs(const MediaBinding& b, std::initializer_list<ExpectedCodec> expected) {
    REQUIRE(b.codec_count == expected.size());
    std::size_t i = 0;
    for (const auto& e : expected) {
        INFO("codec " << i);
        CHECK(b.codecs[i].payload_type == e.pt);
        CHECK(b.codecs[i].name_view() == e.name);
        CHECK(b.codecs[i].clock_rate == e.rate);
        CHECK(b.codecs[i].channels == e.channels);
        ++i;
    }
}

}  // namespace

TEST_CASE("media: SDP of the offer and the answer become bindings", "[sip][dialog][media]") {
    Harness h;
    const Sip invite = Sip{}.with_body(kOffer);
    h.send(invite, A, B, ms(0));
    REQUIRE(h.sink.got.size() == 2);  // the declined video (port 0) gives none

    const MediaBinding& audio = h.sink.got[0].binding;
    CHECK(h.sink.got[0].call_id == "call-1@example.net");
    CHECK(audio.media == ep("192.0.2.10:49170"));
    CHECK(audio.time == ms(0));
    // CodecInfo keeps 14 characters: "telephone-event" loses its last letter (core/media_binding.hpp).
    check_codecs(audio, {{0, "PCMU", 8000, 1}, {8, "PCMA", 8000, 1}, {101, "telephone-event", 8000, 1}});

    const MediaBinding& video = h.sink.got[1].binding;
    CHECK(video.media == ep("192.0.2.10:51372"));
    check_codecs(video, {{96, "H264", 90000, 1}, {97, "", 0, 1}});  // 97 has no rtpmap

    CHECK(audio.peer.port == 0);  // an offer: the other end is not known yet

    h.send(invite.with_to_tag("tt").resp(200).with_body(kAnswer), B, A, ms(900));
    // The answer's audio, paired with the offer's; then the offer's audio learns its peer.
    REQUIRE(h.sink.got.size() == 4);
    const MediaBinding& answer = h.sink.got[2].binding;
    CHECK(answer.media == ep("[2001:db8::5]:3456"));
    CHECK(answer.peer == ep("192.0.2.10:49170"));
    CHECK(answer.time == ms(900));
    check_codecs(answer, {{111, "opus", 48000, 2}, {9, "G722", 8000, 1}});
    const MediaBinding& back = h.sink.got[3].binding;
    CHECK(back.media == ep("192.0.2.10:49170"));
    CHECK(back.peer == ep("[2001:db8::5]:3456"));
    // Its own codecs came with the offer; it carries the answer's, which tell the offer's address
    // which of its formats the call chose.
    CHECK(back.codecs_of_peer);
    check_codecs(back, {{111, "opus", 48000, 2}, {9, "G722", 8000, 1}});
    CHECK_FALSE(answer.codecs_of_peer);
    CHECK_FALSE(h.sink.got[0].binding.codecs_of_peer);  // not `audio`: the answer grew the vector
    CHECK(h.sink.got[3].call_id == "call-1@example.net");
    CHECK(h.stats().media_bindings.value() == 4);

    SECTION("a retransmission does not announce again") {
        CHECK(h.send(invite, A, B, ms(500)) == Disposition::retransmission);
        CHECK(h.sink.got.size() == 4);
    }
    SECTION("ACK, UPDATE, PRACK and 183 carry SDP too; BYE and OPTIONS answers do not") {
        const Sip tagged = invite.with_to_tag("tt");
        h.send(tagged.req("ACK", "z9hG4bK-a2", 1).with_body(kOffer), A, B, ms(901));
        h.send(tagged.req("UPDATE", "z9hG4bK-a3", 2).with_body(kOffer), A, B, ms(902));
        h.send(tagged.req("UPDATE", "z9hG4bK-a3", 2).resp(200).with_body(kAnswer), B, A, ms(903));
        h.send(tagged.req("PRACK", "z9hG4bK-a4", 3).with_body(kAnswer), A, B, ms(904));
        h.send(tagged.req("BYE", "z9hG4bK-a5", 4).with_body(kOffer), A, B, ms(905));
        h.send(tagged.req("BYE", "z9hG4bK-a5", 4).resp(200).with_body(kAnswer), B, A, ms(906));
        // Each SDP against the other direction's last one: its own sections, plus the audio
        // line paired back (the video has no usable answer). The PRACK's SDP (the answer's
        // addresses) takes the place of this direction's offer: the offer's audio address and
        // its video's (its third m= line), named by no side now, are released.
        std::size_t released = 0;
        for (const auto& got : h.sink.got) released += got.binding.dialog_ended ? 1 : 0;
        CHECK(released == 2);
        CHECK(h.sink.got.size() == 4 + 3 + 3 + 2 + 2 + released);
        CHECK(h.stats().media_bindings.value() == 14);
    }
}

TEST_CASE("media: 183 with early media, unusable addresses, multipart and bad SDP", "[sip][dialog][media]") {
    Harness h;
    const Sip invite;
    h.send(invite, A, B, ms(0));
    CHECK(h.sink.got.empty());

    SECTION("183 Session Progress") {
        h.send(invite.with_to_tag("tt").resp(183).with_body(kAnswer), B, A, ms(100));
        REQUIRE(h.sink.got.size() == 1);
        CHECK(h.sink.got[0].binding.media == ep("[2001:db8::5]:3456"));
        CHECK(h.dialog()->pdd_us() == 100'000);
    }
    SECTION("hold with 0.0.0.0 and a host name instead of an address") {
        const std::string held = "v=0\no=- 1 2 IN IP4 0.0.0.0\ns=-\nc=IN IP4 0.0.0.0\nt=0 0\nm=audio 4000 RTP/AVP 0\n";
        const std::string named =
            "v=0\no=- 1 2 IN IP4 h\ns=-\nc=IN IP4 media.example.net\nt=0 0\nm=audio 4000 RTP/AVP 0\n";
        h.send(invite.with_to_tag("tt").req("INVITE", "z9hG4bK-h1", 2).with_body(held), A, B, ms(100));
        h.send(invite.with_to_tag("tt").req("INVITE", "z9hG4bK-h2", 3).with_body(named), A, B, ms(200));
        CHECK(h.sink.got.empty());
        // The hold is no anomaly (RFC 3264 8.4); the host name is.
        CHECK(h.stats().anomaly(DialogAnomaly::sdp_unusable_address) == 1);
        CHECK(h.stats().media_bindings.value() == 0);
    }
    SECTION("SDP inside multipart/mixed (SIP-I: SDP beside ISUP) binds its media") {
        Sip mp = invite.with_to_tag("tt")
                     .req("INVITE", "z9hG4bK-m1", 2)
                     .with_body(
                         "--unique-boundary-1\nContent-Type: application/isup;version=itu-t92+\n"
                         "Content-Disposition: signal;handling=optional\n\n\x01\x10\x49\x20\x7f\n"
                         "--unique-boundary-1\ncontent-type:Application/SDP\n\n"
                         "v=0\no=- 1 2 IN IP4 192.0.2.9\ns=-\nc=IN IP4 192.0.2.9\nt=0 0\n"
                         "m=audio 7078 RTP/AVP 8\n\n--unique-boundary-1--\n");
        mp.content_type = "multipart/mixed; boundary=\"unique-boundary-1\"";
        h.send(mp, A, B, ms(100));
        REQUIRE(h.sink.got.size() == 1);
        CHECK(h.sink.got[0].binding.media == ep("192.0.2.9:7078"));
        CHECK(h.stats().anomaly(DialogAnomaly::multipart_body_skipped) == 0);
    }
    SECTION("multipart without an SDP part, or with one never closed, is skipped and counted") {
        Sip none = invite.with_to_tag("tt")
                       .req("INVITE", "z9hG4bK-m2", 2)
                       .with_body("--b\nContent-Type: application/pidf+xml\n\n<presence/>\n--b--\n");
        none.content_type = "multipart/mixed;boundary=b";
        h.send(none, A, B, ms(100));
        Sip cut = invite.with_to_tag("tt")
                      .req("INVITE", "z9hG4bK-m3", 3)
                      .with_body("--b\nContent-Type: application/sdp\n\nv=0\nc=IN IP4 192.0.2.9\n");
        cut.content_type = "multipart/mixed;boundary=b";
        h.send(cut, A, B, ms(200));
        CHECK(h.sink.got.empty());
        CHECK(h.stats().anomaly(DialogAnomaly::multipart_body_skipped) == 2);
    }
    SECTION("a body that is not SDP is counted by SDP error") {
        h.send(invite.with_to_tag("tt").req("INVITE", "z9hG4bK-b1", 2).with_body("hello\n"), A, B, ms(100));
        CHECK(h.sink.got.empty());
        CHECK(h.stats().sdp_errors[static_cast<std::size_t>(SdpError::missing_version)].value() == 1);
    }
    SECTION("other content types are ignored") {
        Sip other = invite.with_to_tag("tt").req("INVITE", "z9hG4bK-o1", 2).with_body(kAnswer);
        other.content_type = "application/isup";
        h.send(other, A, B, ms(100));
        CHECK(h.sink.got.empty());
        for (const auto& c : h.stats().sdp_errors) CHECK(c.value() == 0);
    }
}

TEST_CASE("media: a re-INVITE that moves the media releases the address it left", "[sip][dialog][media]") {
    // The dialog's end releases the addresses its last SDP sides name; one an earlier SDP named
    // must not stay bound for hours (pending_media_timeout), taking other calls' RTP.
    Harness h;
    const Sip invite;
    const std::string first =
        "v=0\no=- 1 1 IN IP4 192.0.2.1\ns=-\nc=IN IP4 192.0.2.1\nt=0 0\nm=audio 20000 RTP/AVP 0\n";
    const std::string moved =
        "v=0\no=- 1 2 IN IP4 192.0.2.1\ns=-\nc=IN IP4 192.0.2.1\nt=0 0\nm=audio 20100 RTP/AVP 0\n";
    const std::string answer =
        "v=0\no=- 2 1 IN IP4 192.0.2.2\ns=-\nc=IN IP4 192.0.2.2\nt=0 0\nm=audio 30000 RTP/AVP 0\n";
    h.send(invite.with_body(first), A, B, ms(0));
    h.send(invite.with_to_tag("tt").resp(200).with_body(answer), B, A, ms(100));
    const std::size_t before = h.sink.got.size();
    h.send(invite.with_to_tag("tt").req("INVITE", "z9hG4bK-r1", 2).with_body(moved), A, B, ms(5000));
    std::vector<Endpoint> released;
    for (std::size_t i = before; i < h.sink.got.size(); ++i)
        if (h.sink.got[i].binding.dialog_ended) released.push_back(h.sink.got[i].binding.media);
    CHECK(released == std::vector<Endpoint>{ep("192.0.2.1:20000")});
    // A re-INVITE that keeps the address releases nothing.
    const std::size_t after_move = h.sink.got.size();
    h.send(invite.with_to_tag("tt").req("INVITE", "z9hG4bK-r2", 3).with_body(moved), A, B, ms(9000));
    for (std::size_t i = after_move; i < h.sink.got.size(); ++i) CHECK_FALSE(h.sink.got[i].binding.dialog_ended);
}

TEST_CASE("media: the SDP part of a multipart body", "[sip][dialog][media]") {
    const std::string_view body =
        "preamble\r\n--xyz\r\n\r\nplain text part\r\n--xyz\r\n"
        "Content-Type: application/sdp\r\n\r\nv=0\r\n\r\n--xyz--\r\nepilogue";
    CHECK(sdp_part_of_multipart("multipart/mixed;boundary=xyz", body) == "v=0\r\n");
    CHECK(sdp_part_of_multipart("multipart/mixed; charset=x; BOUNDARY = \"xyz\"", body) == "v=0\r\n");
    CHECK(sdp_part_of_multipart("multipart/mixed;boundary=xy", body) == std::nullopt);  // "--xyz" is no "--xy" line
    CHECK(sdp_part_of_multipart("multipart/mixed", body) == std::nullopt);
    CHECK(sdp_part_of_multipart("multipart/mixed;boundary=", body) == std::nullopt);
    CHECK(sdp_part_of_multipart("multipart/mixed;boundary=xyz", "--xyz--\r\n") == std::nullopt);
    CHECK(sdp_part_of_multipart("multipart/mixed;boundary=xyz", "") == std::nullopt);
}

TEST_CASE("media: content types", "[sip][dialog][media]") {
    CHECK(is_sdp_content_type("application/sdp"));
    CHECK(is_sdp_content_type("Application/SDP"));
    CHECK(is_sdp_content_type("  application/sdp ;charset=utf-8"));
    CHECK(is_sdp_content_type("application/sdp;version=2"));
    CHECK_FALSE(is_sdp_content_type("application/sdpx"));
    CHECK_FALSE(is_sdp_content_type("application/sd"));
    CHECK_FALSE(is_sdp_content_type(""));
    CHECK(is_multipart_content_type("Multipart/Mixed; boundary=x"));
    CHECK_FALSE(is_multipart_content_type("application/sdp"));
}

TEST_CASE("media: emit_media_bindings keeps at most kMaxBindingCodecs codecs", "[sip][dialog][media]") {
    const std::string text =
        "v=0\r\no=- 1 1 IN IP4 192.0.2.1\r\ns=-\r\nc=IN IP4 192.0.2.1\r\nt=0 0\r\n"
        "m=audio 5004 RTP/AVP 0 3 4 5 6 7 8 9 18 96\r\n";
    const auto sdp = parse_sdp(text);
    REQUIRE(sdp.ok());
    RecordingSink sink;
    const MediaEmitResult r = emit_media_bindings(*sdp, CompactText("cid"), 1, ms(7), {}, sink);
    CHECK(r.emitted == 1);
    CHECK(r.unusable == 0);
    REQUIRE(sink.got.size() == 1);
    const MediaBinding& b = sink.got[0].binding;
    CHECK(sink.got[0].call_id == "cid");
    CHECK(b.media == ep("192.0.2.1:5004"));
    check_codecs(b, {{0, "PCMU", 8000, 1},
                     {3, "GSM", 8000, 1},
                     {4, "G723", 8000, 1},
                     {5, "DVI4", 8000, 1},
                     {6, "DVI4", 16000, 1},
                     {7, "LPC", 8000, 1},
                     {8, "PCMA", 8000, 1},
                     {9, "G722", 8000, 1}});
}

TEST_CASE("media: the SDP side store keeps two sides of one media line beside a dialog, more in pools",
          "[sip][dialog][media][memory]") {
    SdpSideStore store(8);
    const auto side = [](std::uint32_t hop, bool forward, std::uint16_t port) {
        SdpSide s;
        s.hop = hop;
        s.forward = forward;
        s.media[0] = Endpoint{IpAddress::v4(0xC0000201U), port};
        return s;
    };
    const SdpSides one_hop{side(7, true, 4000), side(7, false, 5000), SdpSide{}, SdpSide{}};
    const SdpSides two_hops{side(9, true, 6000), side(9, false, 6002), side(7, true, 4000), side(7, false, 5000)};
    const SdpSideStore::Hops hops{7, 9, 0, 0};  // the dialog's Dialog::hops

    CHECK(store.get(3, hops) == SdpSides{});  // never set: empty, nothing touched
    store.set(0, one_hop, hops);
    const std::size_t one_dialog = store.memory_bytes();
    CHECK(store.get(0, hops) == one_hop);

    store.set(1, two_hops, hops);
    CHECK(store.get(1, hops) == two_hops);
    CHECK(store.get(0, hops) == one_hop);
    const std::size_t with_pool = store.memory_bytes();
    CHECK(with_pool >= one_dialog + kSdpSides * 2 * sizeof(Endpoint));  // four sides of two lines

    // A dialog that leaves gives its pool entry to the next one seen on two hops.
    store.clear(1);
    CHECK(store.get(1, hops) == SdpSides{});
    store.set(2, two_hops, hops);
    CHECK(store.get(2, hops) == two_hops);
    store.set(0, two_hops, hops);  // a second hop seen later: a new pool entry
    CHECK(store.get(0, hops) == two_hops);
    store.set(0, one_hop, hops);  // back to one hop (a restore, say): its pool entry is free again
    CHECK(store.get(0, hops) == one_hop);
    store.set(1, two_hops, hops);
    CHECK(store.get(1, hops) == two_hops);
    CHECK(store.get(2, hops) == two_hops);
    store.clear(7);  // never set: nothing to do
    CHECK(store.get(7, hops) == SdpSides{});

    // A second media line (video) on one hop goes to the pool too, and comes back whole.
    SdpSides with_video = one_hop;
    with_video[1].media[1] = Endpoint{IpAddress::v4(0xC0000202U), 5002};
    store.set(3, with_video, hops);
    CHECK(store.get(3, hops) == with_video);
    store.set(3, one_hop, hops);
    CHECK(store.get(3, hops) == one_hop);
    // A side whose only media line was declined (port 0) still keeps its hop and direction.
    SdpSides declined = one_hop;
    declined[0].media[0] = Endpoint{};
    store.set(4, declined, hops);
    CHECK(store.get(4, hops) == declined);
    // A side on a hop past the ones the dialog keeps (a fifth hop) goes to the pool, whole.
    const SdpSides unkept_hop{side(11, true, 7000), SdpSide{}, SdpSide{}, SdpSide{}};
    store.set(5, unkept_hop, hops);
    CHECK(store.get(5, hops) == unkept_hop);
    // An IPv6 media address goes to the pool, whole; the dialog's IPv4 answer stays beside it.
    SdpSides v6 = one_hop;
    v6[0].media[0] = Endpoint{*IpAddress::parse("2001:db8::5"), 4000};
    store.set(6, v6, hops);
    CHECK(store.get(6, hops) == v6);
    store.set(6, one_hop, hops);
    CHECK(store.get(6, hops) == one_hop);
    // A third media line goes to the second pool, whole; the first pool's entries stay two lines.
    const std::size_t before_wide = store.memory_bytes();
    SdpSides three_lines = with_video;
    three_lines[0].media[2] = Endpoint{IpAddress::v4(0xC0000201U), 4004};
    store.set(3, three_lines, hops);
    CHECK(store.get(3, hops) == three_lines);
    CHECK(store.memory_bytes() >= before_wide + sizeof(SdpSides));
    store.set(3, with_video, hops);  // back to two lines: from the second pool to the first
    CHECK(store.get(3, hops) == with_video);
    store.set(4, three_lines, hops);  // the freed wide entry is taken again
    CHECK(store.get(4, hops) == three_lines);
    CHECK(store.get(3, hops) == with_video);
    store.clear(4);
    CHECK(store.get(4, hops) == SdpSides{});
}
