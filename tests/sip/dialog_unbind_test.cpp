// The end of a dialog's media bindings: when a dialog leaves the table (end of its linger, or
// evicted at the cap) the media sink gets one MediaBinding::dialog_ended per media address its
// SDP named, so that the shards owning those addresses drop the bindings (rtp::StreamTable::unbind).
#include "dialog_test_util.hpp"
#include "sip/dialog_table.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

using namespace hepd;
using namespace hepd::sip;
using namespace hepd::sip::test;

namespace {

std::string sdp(std::string_view address, int port) {
    return "v=0\no=- 1 1 IN IP4 " + std::string(address) + "\ns=-\nc=IN IP4 " + std::string(address) +
           "\nt=0 0\nm=audio " + std::to_string(port) + " RTP/AVP 8 101\na=rtpmap:101 telephone-event/8000\n";
}

std::vector<RecordingSink::Copy> ended(const RecordingSink& sink) {
    std::vector<RecordingSink::Copy> out;
    for (const auto& c : sink.got)
        if (c.binding.dialog_ended) out.push_back(c);
    return out;
}

bool names(const std::vector<RecordingSink::Copy>& list, std::string_view media) {
    return std::any_of(list.begin(), list.end(), [&](const auto& c) { return c.binding.media == ep(media); });
}

// A call relayed by a proxy that anchors media (rtpengine): four media addresses on two hops.
void relayed_call(Harness& h, const Sip& invite) {
    h.send(invite.with_body(sdp("192.0.2.10", 49170)), A, P, ms(0));
    h.send(invite.with_branch("z9hG4bK-p1").with_body(sdp("192.0.2.99", 20000)), P, B, ms(5));
    const Sip ok = invite.with_to_tag("tt").resp(200);
    h.send(ok.with_branch("z9hG4bK-p1").with_body(sdp("192.0.2.20", 3456)), B, P, ms(900));
    h.send(ok.with_body(sdp("192.0.2.99", 20002)), P, A, ms(905));
    const Sip tagged = invite.with_to_tag("tt");
    h.send(tagged.req("ACK", "z9hG4bK-a2", 1), A, P, ms(910));
    h.send(tagged.req("ACK", "z9hG4bK-p2", 1), P, B, ms(915));
    h.send(tagged.req("BYE", "z9hG4bK-a3", 2), A, P, ms(10'000));
    h.send(tagged.req("BYE", "z9hG4bK-p3", 2), P, B, ms(10'005));
    h.send(tagged.req("BYE", "z9hG4bK-p3", 2).resp(200), B, P, ms(10'010));
    h.send(tagged.req("BYE", "z9hG4bK-a3", 2).resp(200), P, A, ms(10'015));
}

}  // namespace

TEST_CASE("unbind: a dialog leaving the table ends the bindings of every media address it named",
          "[sip][dialog][media][unbind]") {
    Harness h;
    const Sip invite;
    relayed_call(h, invite);
    REQUIRE(h.dialog() != nullptr);
    CHECK(h.dialog()->finished());
    const std::size_t bindings = h.sink.got.size();
    CHECK(ended(h.sink).empty());

    // Still lingering (32 s): late messages still match, nothing ends yet.
    h.table.expire(ms(10'015 + 31'000));
    CHECK(ended(h.sink).empty());

    h.table.expire(ms(10'015 + 33'000));
    CHECK(h.dialog() == nullptr);
    const auto list = ended(h.sink);
    CHECK(h.sink.got.size() == bindings + 4);
    REQUIRE(list.size() == 4);  // each address once (with its peer), whatever the number of bindings
    CHECK(names(list, "192.0.2.10:49170"));
    CHECK(names(list, "192.0.2.99:20000"));
    CHECK(names(list, "192.0.2.20:3456"));
    CHECK(names(list, "192.0.2.99:20002"));
    // Each with the other end of its media line on the same hop.
    const auto peer_of = [&](std::string_view media) {
        for (const auto& c : list)
            if (c.binding.media == ep(media)) return c.binding.peer;
        return Endpoint{};
    };
    CHECK(peer_of("192.0.2.10:49170") == ep("192.0.2.99:20002"));
    CHECK(peer_of("192.0.2.99:20002") == ep("192.0.2.10:49170"));
    CHECK(peer_of("192.0.2.99:20000") == ep("192.0.2.20:3456"));
    CHECK(peer_of("192.0.2.20:3456") == ep("192.0.2.99:20000"));
    for (const auto& c : list) {
        CHECK(c.call_id == "call-1@example.net");
        CHECK(c.binding.dialog == tag_id("caller-tag"));
        CHECK(c.binding.codec_count == 0);
        // Dated when the dialog left: the end of its linger, not whenever expire() noticed it.
        CHECK(c.binding.time.us >= ms(10'000 + 32'000).us);
        CHECK(c.binding.time.us <= ms(10'015 + 32'000).us);
    }
    // Nothing more later on.
    h.table.expire(ms(200'000));
    CHECK(ended(h.sink).size() == 4);
}

TEST_CASE("unbind: an evicted dialog ends its bindings too; a dialog without SDP sends nothing",
          "[sip][dialog][media][unbind]") {
    DialogConfig config;
    config.max_dialogs = 1;
    Harness h(config);
    const Sip first;
    h.send(first.with_body(sdp("192.0.2.10", 49170)), A, B, ms(0));
    CHECK(ended(h.sink).empty());

    Sip second;
    second.call_id = "call-2@example.net";
    h.send(second, A, B, ms(10));  // no SDP; evicts the first call
    auto list = ended(h.sink);
    REQUIRE(list.size() == 1);
    CHECK(list[0].call_id == "call-1@example.net");
    CHECK(list[0].binding.media == ep("192.0.2.10:49170"));
    CHECK(list[0].binding.peer.port == 0);        // never answered
    CHECK(list[0].binding.time.us == ms(10).us);  // dated by the message that evicted it

    Sip third;
    third.call_id = "call-3@example.net";
    h.send(third, A, B, ms(20));  // evicts the second, which named no media
    CHECK(ended(h.sink).size() == 1);
}

TEST_CASE("unbind: every m= line's address is released, a third one too (audio, video, a second audio)",
          "[sip][dialog][media][unbind]") {
    const auto three = [](std::string_view address, int audio, int video, int second) {
        return "v=0\no=- 1 1 IN IP4 " + std::string(address) + "\ns=-\nc=IN IP4 " + std::string(address) +
               "\nt=0 0\nm=audio " + std::to_string(audio) + " RTP/AVP 8\nm=video " + std::to_string(video) +
               " RTP/AVP 96\na=rtpmap:96 H264/90000\nm=audio " + std::to_string(second) + " RTP/AVP 0\n";
    };
    Harness h;
    const Sip invite;
    h.send(invite.with_body(three("192.0.2.10", 20000, 20002, 20004)), A, B, ms(0));
    const Sip ok = invite.with_to_tag("tt").resp(200);
    h.send(ok.with_body(three("192.0.2.20", 30000, 0, 40000)), B, A, ms(100));  // video declined
    const Sip tagged = invite.with_to_tag("tt");
    h.send(tagged.req("ACK", "z9hG4bK-a2", 1), A, B, ms(110));
    // The third line is bound with its peer, as the first two are.
    bool third_paired = false;
    for (const auto& c : h.sink.got)
        third_paired |= c.binding.media == ep("192.0.2.10:20004") && c.binding.peer == ep("192.0.2.20:40000");
    CHECK(third_paired);
    h.send(tagged.req("BYE", "z9hG4bK-a3", 2), A, B, ms(1'000));
    h.send(tagged.req("BYE", "z9hG4bK-a3", 2).resp(200), B, A, ms(1'010));
    h.table.expire(ms(1'010 + 33'000));
    CHECK(h.dialog() == nullptr);
    const auto list = ended(h.sink);
    CHECK(list.size() == 5);
    CHECK(names(list, "192.0.2.10:20000"));
    CHECK(names(list, "192.0.2.10:20002"));
    CHECK(names(list, "192.0.2.10:20004"));
    CHECK(names(list, "192.0.2.20:30000"));
    CHECK(names(list, "192.0.2.20:40000"));
    for (const auto& c : list)
        if (c.binding.media == ep("192.0.2.10:20004")) CHECK(c.binding.peer == ep("192.0.2.20:40000"));
}

TEST_CASE("unbind: RTCP addresses of their own (a=rtcp, odd RTP ports) are bound, paired and released",
          "[sip][dialog][media][unbind][rtcp]") {
    const auto with_rtcp = [](std::string_view address, int port, std::string_view extra) {
        return sdp(address, port) + std::string(extra);
    };
    Harness h;
    const Sip invite;
    h.send(invite.with_body(with_rtcp("192.0.2.10", 20000, "a=rtcp:20555\n")), A, B, ms(0));
    const Sip ok = invite.with_to_tag("tt").resp(200);
    h.send(ok.with_body(sdp("192.0.2.20", 30001)), B, A, ms(100));  // odd RTP port: RTCP on 30002
    const Sip tagged = invite.with_to_tag("tt");
    h.send(tagged.req("ACK", "z9hG4bK-a2", 1), A, B, ms(110));
    const auto rtcp_binding = [&](std::string_view media, std::string_view peer) {
        return std::any_of(h.sink.got.begin(), h.sink.got.end(), [&](const auto& c) {
            return c.binding.rtcp && !c.binding.dialog_ended && c.binding.media == ep(media) &&
                   (peer.empty() ? c.binding.peer.port == 0 : c.binding.peer == ep(peer)) &&
                   c.binding.codec_count == 2 &&
                   c.binding.codecs_of_peer == (media == "192.0.2.10:20555" && !peer.empty());
        });
    };
    CHECK(rtcp_binding("192.0.2.10:20555", ""));                  // the offer's, with its codecs
    CHECK(rtcp_binding("192.0.2.20:30002", "192.0.2.10:20555"));  // the answer's, paired
    CHECK(
        rtcp_binding("192.0.2.10:20555", "192.0.2.20:30002"));  // the offer's learns its peer and the answer's formats
    // Plain RTP bindings are no RTCP ones; an even port's RTCP (port + 1) needs none.
    for (const auto& c : h.sink.got)
        if (c.binding.media == ep("192.0.2.10:20000") || c.binding.media == ep("192.0.2.20:30001"))
            CHECK_FALSE(c.binding.rtcp);

    h.send(tagged.req("BYE", "z9hG4bK-a3", 2), A, B, ms(1'000));
    h.send(tagged.req("BYE", "z9hG4bK-a3", 2).resp(200), B, A, ms(1'010));
    h.table.expire(ms(1'010 + 33'000));
    const auto list = ended(h.sink);
    CHECK(list.size() == 4);
    CHECK(names(list, "192.0.2.10:20000"));
    CHECK(names(list, "192.0.2.20:30001"));
    CHECK(names(list, "192.0.2.10:20555"));
    CHECK(names(list, "192.0.2.20:30002"));
    for (const auto& c : list) {
        if (c.binding.media == ep("192.0.2.10:20555")) CHECK(c.binding.peer == ep("192.0.2.20:30002"));
        if (c.binding.media == ep("192.0.2.20:30002")) CHECK(c.binding.peer == ep("192.0.2.10:20555"));
    }
}
