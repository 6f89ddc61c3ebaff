// The codec of a stream known only from RTCP-JSON reports (rtpengine, Kamailio's rtpproxy: HEP
// type 5 with the Call-ID as correlation id), from SIP to the stream table as the daemon wires
// them: the dialog table's bindings go to the stream table, the reports come from the offerer's
// or the answerer's RTCP address. RFC 3264: the call uses the answer's first format that the
// offer also had, not the offer's first.
#include "../sip/dialog_test_util.hpp"
#include "rtp/reported_stream.hpp"
#include "rtp/stream_table.hpp"
#include "stream_test_support.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <string_view>

using namespace hepd;
using namespace hepd::rtp;

namespace {

// The daemon's wiring, on one shard: every binding (and every end of one) to the stream table.
struct ToStreamTable final : sip::MediaSink {
    explicit ToStreamTable(StreamTable& t) : table(t) {}
    void on_media_binding(const MediaBinding& b) noexcept override {
        if (b.dialog_ended) {
            table.unbind(b.media, b.peer, b.call_id, b.dialog, b.time);
        } else {
            table.bind(b);
        }
    }
    StreamTable& table;
};

std::string sdp(const std::string& ip, int port, const std::string& formats, const std::string& maps) {
    return "v=0\no=- 1 1 IN IP4 " + ip + "\ns=-\nc=IN IP4 " + ip + "\nt=0 0\nm=audio " + std::to_string(port) +
           " RTP/AVP " + formats + "\n" + maps + "a=sendrecv\n";
}

std::string report(std::uint32_t reporter, std::uint32_t source, int jitter) {
    return R"({"ssrc":)" + std::to_string(reporter) + R"(,"type":201,"report_count":1,"report_blocks":[{)" +
           R"("source_ssrc":)" + std::to_string(source) + R"(,"highest_seq_no":500,"fraction_lost":0,"ia_jitter":)" +
           std::to_string(jitter) + R"(,"packets_lost":0,"lsr":0,"dlsr":0}]})";
}

constexpr std::string_view kCallId = "call-1@example.net";
Endpoint a_rtcp() { return stream_test::ep("10.0.0.1:20001"); }  // the offerer's RTP is :20000
Endpoint b_rtcp() { return stream_test::ep("10.0.0.3:30001"); }  // the answerer's RTP is :30000

struct Call {
    StreamTable table;
    ToStreamTable to_table{table};
    sip::DialogTable dialogs{sip::DialogConfig{}, &to_table};
    std::string text;

    void sip(const sip::test::Sip& m, std::string_view src, std::string_view dst, std::int64_t at_ms) {
        text = m.text();
        PacketMeta meta;
        meta.time = sip::test::ms(at_ms);
        meta.src = sip::test::ep(src);
        meta.dst = sip::test::ep(dst);
        meta.agent = 1;
        dialogs.process(text, meta);
    }
    // The offer (A to B), and unless `answer` is empty the 200 OK's answer.
    void setup(const std::string& offer_formats, const std::string& offer_maps, const std::string& answer_formats = {},
               const std::string& answer_maps = {}) {
        const sip::test::Sip invite = sip::test::Sip{}.with_body(sdp("10.0.0.1", 20000, offer_formats, offer_maps));
        sip(invite, sip::test::A, sip::test::B, 0);
        if (answer_formats.empty()) return;
        sip(invite.with_to_tag("callee").resp(200).with_body(sdp("10.0.0.3", 30000, answer_formats, answer_maps)),
            sip::test::B, sip::test::A, 900);
    }
    // A re-INVITE from A (CSeq `cseq`) with `formats`, and B's 200 OK answering `answer_formats`,
    // both on the addresses of the first offer and answer.
    void reinvite(std::uint32_t cseq, const std::string& formats, const std::string& maps,
                  const std::string& answer_formats, const std::string& answer_maps, std::int64_t at_ms) {
        const sip::test::Sip again = sip::test::Sip{}
                                         .req("INVITE", "z9hG4bK-re" + std::to_string(cseq), cseq)
                                         .with_to_tag("callee")
                                         .with_body(sdp("10.0.0.1", 20000, formats, maps));
        sip(again, sip::test::A, sip::test::B, at_ms);
        sip(again.resp(200).with_body(sdp("10.0.0.3", 30000, answer_formats, answer_maps)), sip::test::B, sip::test::A,
            at_ms + 100);
    }
    // RTCP-JSON from `reporter` to `peer` about SSRC 0xE, jitter `jitter` timestamp units.
    const ReportedStream* reported_by(const Endpoint& reporter, const Endpoint& peer, std::int64_t at_ms = 5'000,
                                      int jitter = 80) {
        table.on_rtcp_json(stream_test::meta_at(at_ms * 1000, reporter, peer), kCallId,
                           stream_test::span_of(std::string_view(report(0xA, 0xE, jitter))));
        return table.find_reported(kCallId, 0xE);
    }
};

constexpr const char* kOpusFirst =
    "a=rtpmap:111 opus/48000/2\na=rtpmap:0 PCMU/8000\na=rtpmap:101 telephone-event/8000\n";
constexpr const char* kPcmuOnly = "a=rtpmap:0 PCMU/8000\na=rtpmap:101 telephone-event/8000\n";

}  // namespace

TEST_CASE("RTCP-JSON only: a reported stream takes the answer's codec, not the offer's first",
          "[rtp][stream][rtcp_json][reported][codec]") {
    Call call;
    call.setup("111 0 101", kOpusFirst, "0 101", kPcmuOnly);

    SECTION("reported by the offerer") {
        const ReportedStream* r = call.reported_by(a_rtcp(), b_rtcp());
        REQUIRE(r != nullptr);
        CHECK(r->codec == Codec::pcmu);
        CHECK(r->clock_rate == 8000);
        CHECK(summarize_reported(*r, {}).max_jitter_ms == Approx(10.0));  // 80 units at 8 kHz
    }
    SECTION("reported by the answerer") {
        const ReportedStream* r = call.reported_by(b_rtcp(), a_rtcp());
        REQUIRE(r != nullptr);
        CHECK(r->codec == Codec::pcmu);
        CHECK(r->clock_rate == 8000);
    }
}

TEST_CASE("RTCP-JSON only: the answer's first format the offer had, matched by number or by name",
          "[rtp][stream][rtcp_json][reported][codec]") {
    Call call;
    SECTION("the answer lists a format the offer did not have first") {
        call.setup("0 18 8 101", "a=rtpmap:101 telephone-event/8000\n", "9 18 0 101",
                   "a=rtpmap:101 telephone-event/8000\n");
        const ReportedStream* r = call.reported_by(a_rtcp(), b_rtcp());
        REQUIRE(r != nullptr);
        CHECK(r->codec == Codec::g729);
    }
    SECTION("the answer numbers the offer's codec otherwise (RFC 3264 6.1 SHOULD, not MUST)") {
        call.setup("111 9 101", "a=rtpmap:111 opus/48000/2\na=rtpmap:101 telephone-event/8000\n", "96 101",
                   "a=rtpmap:96 opus/48000/2\na=rtpmap:101 telephone-event/8000\n");
        const ReportedStream* r = call.reported_by(a_rtcp(), b_rtcp());
        REQUIRE(r != nullptr);
        CHECK(r->codec == Codec::opus);
        CHECK(r->clock_rate == 48000);
    }
    SECTION("the answer puts G.722 before the offer's first") {
        call.setup("0 9 101", "a=rtpmap:101 telephone-event/8000\n", "9 0 101",
                   "a=rtpmap:9 G722/8000\na=rtpmap:101 telephone-event/8000\n");
        const ReportedStream* r = call.reported_by(a_rtcp(), b_rtcp());
        REQUIRE(r != nullptr);
        CHECK(r->codec == Codec::g722);
    }
}

TEST_CASE("RTCP-JSON only, the offer known and no answer yet: a codec only when the offer leaves no choice",
          "[rtp][stream][rtcp_json][reported][codec]") {
    Call call;
    SECTION("several codecs offered: open until the answer, then the answer's") {
        call.setup("111 0 101", kOpusFirst);
        const ReportedStream* r = call.reported_by(a_rtcp(), b_rtcp(), 500);
        REQUIRE(r != nullptr);
        CHECK(r->codec == Codec::unknown);
        CHECK(r->clock_rate == 0);  // 8 kHz assumed (kAssumedReportedClockRate)
        const sip::test::Sip invite = sip::test::Sip{}.with_body(sdp("10.0.0.1", 20000, "111 0 101", kOpusFirst));
        call.sip(invite.with_to_tag("callee").resp(200).with_body(sdp("10.0.0.3", 30000, "0 101", kPcmuOnly)),
                 sip::test::B, sip::test::A, 900);
        r = call.reported_by(a_rtcp(), b_rtcp(), 5'000);
        REQUIRE(r != nullptr);
        CHECK(r->codec == Codec::pcmu);
        CHECK(r->clock_rate == 8000);
    }
    SECTION("one voice codec offered: that one") {
        call.setup("8 101", "a=rtpmap:8 PCMA/8000\na=rtpmap:101 telephone-event/8000\n");
        const ReportedStream* r = call.reported_by(a_rtcp(), b_rtcp(), 500);
        REQUIRE(r != nullptr);
        CHECK(r->codec == Codec::pcma);
    }
}

TEST_CASE("RTCP-JSON only: a re-INVITE that changes the codec on the same addresses changes the reported stream's",
          "[rtp][stream][rtcp_json][reported][codec]") {
    SECTION("G.711 to G.729, reported by either end") {
        for (const bool by_offerer : {true, false}) {
            CAPTURE(by_offerer);
            Call call;
            call.setup("0 101", kPcmuOnly, "0 101", kPcmuOnly);
            const Endpoint reporter = by_offerer ? a_rtcp() : b_rtcp();
            const Endpoint peer = by_offerer ? b_rtcp() : a_rtcp();
            const ReportedStream* r = call.reported_by(reporter, peer, 5'000);
            REQUIRE(r != nullptr);
            CHECK(r->codec == Codec::pcmu);
            const double pcmu_mos = summarize_reported(*r, {}).mos;
            const char* g729 = "a=rtpmap:18 G729/8000\na=rtpmap:101 telephone-event/8000\n";
            call.reinvite(2, "18 101", g729, "18 101", g729, 6'000);
            r = call.reported_by(reporter, peer, 10'000);
            REQUIRE(r != nullptr);
            CHECK(r->codec == Codec::g729);
            CHECK(r->clock_rate == 8000);
            const ReportedSummary s = summarize_reported(*r, {});
            CHECK(s.codec == Codec::g729);
            CHECK(s.mos < pcmu_mos);  // G.729's Ie 11, not G.711's
        }
    }
    SECTION("opus to PCMA (a transfer to a PSTN leg): the largest jitter keeps its time") {
        Call call;
        const char* opus = "a=rtpmap:111 opus/48000/2\na=rtpmap:101 telephone-event/8000\n";
        call.setup("111 101", opus, "111 101", opus);
        const ReportedStream* r = call.reported_by(a_rtcp(), b_rtcp(), 5'000, 960);  // 20 ms at 48 kHz
        REQUIRE(r != nullptr);
        CHECK(r->codec == Codec::opus);
        CHECK(summarize_reported(*r, {}).max_jitter_ms == Approx(20.0));
        const char* pcma = "a=rtpmap:8 PCMA/8000\na=rtpmap:101 telephone-event/8000\n";
        call.reinvite(2, "8 101", pcma, "8 101", pcma, 6'000);
        r = call.reported_by(a_rtcp(), b_rtcp(), 10'000, 80);  // 10 ms at 8 kHz
        REQUIRE(r != nullptr);
        CHECK(r->codec == Codec::pcma);
        CHECK(r->clock_rate == 8000);
        const ReportedSummary s = summarize_reported(*r, {});
        CHECK(s.max_jitter_ms == Approx(20.0));  // the opus report's, not 960 units read at 8 kHz
        CHECK(s.jitter_ms == Approx(10.0));
    }
}

TEST_CASE("take_codec: the largest reported jitter moves to the new clock, not from an unknown one",
          "[rtp][reported][codec]") {
    ReportedStream s;
    s.max_jitter = 160;
    take_codec(s, Codec::pcmu, 0);
    take_codec(s, Codec::opus, 48000);  // from unknown: the receiver counted in 48 kHz all along
    CHECK(s.max_jitter == 160);
    take_codec(s, Codec::g722, 8000);
    CHECK(s.max_jitter == 27);  // 160 / 6, rounded
    CHECK(s.codec == Codec::g722);
    CHECK(s.clock_rate == 8000);
    take_codec(s, Codec::opus, 48000);
    CHECK(s.max_jitter == 162);
}
