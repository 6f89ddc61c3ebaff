// Streams known only from RTCP-JSON reports as first-class streams (their final figures in the
// per-stream statistics under source="rtcp", their call and codec from the reporter's binding),
// and a dialog's bindings going when the dialog ends (StreamTable::unbind).
#include "rtp/reported_stream.hpp"

#include "rtp/emodel.hpp"
#include "rtp/ntp.hpp"
#include "rtp/stream_table.hpp"
#include "stream_test_support.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <string>

using namespace hepd;
using namespace hepd::rtp;
using namespace hepd::rtp::stream_test;

namespace {

const Endpoint uac = ep("10.0.0.1:30000");
const Endpoint uac_rtcp = ep("10.0.0.1:30001");
const Endpoint engine_a = ep("10.0.0.9:20000");  // rtpengine's address facing the caller
const Endpoint engine_b = ep("10.0.0.9:20002");  // and the one facing the callee
const Endpoint uas = ep("10.0.0.2:40000");

StreamTableConfig small_config() {
    StreamTableConfig c;
    c.max_streams = 16;
    c.max_pending_media = 16;
    c.max_reported_streams = 16;
    c.stream_idle_timeout_us = 5'000'000;
    c.pending_media_timeout_us = 60'000'000;
    return c;
}

std::string rtcp_json(std::uint32_t reporter, std::uint32_t source, int fraction_lost, int lost, int jitter,
                      std::uint32_t lsr = 0, std::uint32_t dlsr = 0) {
    return R"({"ssrc":)" + std::to_string(reporter) + R"(,"type":201,"report_count":1,"report_blocks":[{)" +
           R"("source_ssrc":)" + std::to_string(source) + R"(,"highest_seq_no":500,"fraction_lost":)" +
           std::to_string(fraction_lost) + R"(,"ia_jitter":)" + std::to_string(jitter) + R"(,"packets_lost":)" +
           std::to_string(lost) + R"(,"lsr":)" + std::to_string(lsr) + R"(,"dlsr":)" + std::to_string(dlsr) + "}]}";
}

MediaBinding with_dialog(MediaBinding b, std::uint32_t dialog, const Endpoint& peer = {}) {
    b.dialog = dialog;
    b.peer = peer;
    return b;
}

}  // namespace

TEST_CASE("summarize_reported: mean loss, jitter at the codec clock, RTT, E-model MOS",
          "[rtp][stream][rtcp_json][reported]") {
    ReportedStream s;
    s.view.reports = 4;
    s.view.fraction_lost = 13;  // the last interval
    s.view.cumulative_lost = 20;
    s.view.jitter = 80;
    s.view.rtt_us = 120'000;
    s.fraction_lost_sum = 4 * 64;  // 25 % on average
    s.max_jitter = 160;

    SECTION("codec unknown: 8 kHz, G.711-like impairment") {
        const ReportedSummary r = summarize_reported(s, QualityOptions{});
        CHECK(r.reports == 4);
        CHECK(r.lost == 20);
        CHECK(r.lost_clamped == 20);
        CHECK(r.fraction_lost == Approx(13 / 256.0));
        CHECK(r.loss_percent == Approx(25.0));
        CHECK(r.clock_rate == 8000);
        CHECK(r.jitter_ms == Approx(10.0));
        CHECK(r.max_jitter_ms == Approx(20.0));
        REQUIRE(r.has_rtt);
        CHECK(r.rtt_ms == Approx(120.0));
        REQUIRE(r.has_quality);
        CHECK(r.one_way_delay_ms == Approx(60.0 + 2.0 * 20.0));
        const EmodelResult e = evaluate(codec_impairment(Codec::unknown), {25.0, 1.0, 100.0});
        CHECK(r.mos == Approx(e.mos));
        CHECK(r.r_factor == Approx(e.r));
        CHECK(r.mos < 3.0);  // a quarter of the packets lost is a bad call
    }
    SECTION("G.722 binding: its 8 kHz RTP clock; opus: 48 kHz") {
        s.codec = Codec::opus;
        s.clock_rate = 48000;
        const ReportedSummary r = summarize_reported(s, QualityOptions{});
        CHECK(r.codec == Codec::opus);
        CHECK(r.max_jitter_ms == Approx(160.0 / 48.0));
    }
    SECTION("no report block, no RTT: no quality") {
        s.view = ReceiverView{};
        s.fraction_lost_sum = 0;
        const ReportedSummary r = summarize_reported(s, QualityOptions{});
        CHECK_FALSE(r.has_quality);
        CHECK_FALSE(r.has_rtt);
        CHECK(r.mos == 0.0);
    }
    SECTION("a negative cumulative count (duplicates) is no loss") {
        s.view.cumulative_lost = -3;
        CHECK(summarize_reported(s, QualityOptions{}).lost_clamped == 0);
    }
}

TEST_CASE("a reported stream that finishes feeds the stream statistics under source rtcp",
          "[rtp][stream][rtcp_json][reported]") {
    StreamTable t(small_config());
    RecordingSink sink;
    t.set_sink(&sink);
    // The caller's SDP: G.729 at uac; rtpengine's answer to it: engine_a. No RTP is captured.
    t.bind(with_dialog(media_binding(uac, "call-1", 0, {codec(18, "G729", 8000), codec(101, "telephone-event", 8000)}),
                       7, engine_a));
    t.bind(with_dialog(media_binding(engine_a, "call-1", 10, {codec(18, "G729", 8000)}), 7, uac));
    REQUIRE(t.pending_size() == 2);

    // The caller reports on what rtpengine sends it: three reports, 10 %, 20 %, 0 % lost.
    const std::int64_t t0 = kBaseUs + 1'000'000;
    const std::uint32_t lsr = ntp_middle32(ntp_from_unix_micros(t0));
    t.on_rtcp_json(meta_at(1'000'000, uac_rtcp, engine_a), "call-1", span_of(rtcp_json(0xA, 0xE, 26, 5, 40)));
    t.on_rtcp_json(meta_at(2'000'000, uac_rtcp, engine_a), "call-1", span_of(rtcp_json(0xA, 0xE, 51, 17, 240)));
    // Sent 100 ms after the SR it answers, which it held for 50 ms: RTT 50 ms.
    t.on_rtcp_json(PacketMeta{Timestamp{t0 + 100'000}, uac_rtcp, engine_a, 0}, "call-1",
                   span_of(rtcp_json(0xA, 0xE, 0, 17, 80, lsr, 3277)));
    REQUIRE(t.reported_size() == 1);
    const ReportedStream* r = t.find_reported("call-1", 0xE);
    REQUIRE(r != nullptr);
    CHECK(r->dialog == 7);
    // The call's bindings and its reported stream hold one Call-ID block.
    const Binding* at_uac = t.find_binding(uac, engine_a);
    const Binding* at_engine = t.find_binding(engine_a, uac);
    REQUIRE(at_uac != nullptr);
    REQUIRE(at_engine != nullptr);
    CHECK(at_engine->call_id.shares(at_uac->call_id));
    t.for_each_reported(
        [&](const ReportedKey& key, const ReportedStream&) { CHECK(key.call_id.shares(at_uac->call_id)); });
    CHECK(r->codec == Codec::g729);  // telephone-event is never the voice codec
    CHECK(r->clock_rate == 8000);
    CHECK(r->max_jitter == 240);
    CHECK(r->fraction_lost_sum == 77);

    const StreamStats& st = t.stats();
    CHECK(st.reported.finished_total() == 0);
    t.expire(Timestamp{kBaseUs + 2'100'000 + 5'000'000});
    CHECK(t.reported_size() == 0);

    REQUIRE(sink.reported.size() == 1);
    const auto& [key, finished] = sink.reported[0];
    CHECK(key.call_id == "call-1");
    CHECK(key.ssrc == 0xE);
    CHECK(finished.dialog == 7);
    const ReportedSummary sum = summarize_reported(finished, t.config().quality);
    CHECK(sum.loss_percent == Approx(100.0 * 77 / 256.0 / 3));
    CHECK(sum.max_jitter_ms == Approx(30.0));
    CHECK(sum.rtt_ms == Approx(50.0).margin(0.1));

    CHECK(st.reported.finished[static_cast<std::size_t>(FinishReason::idle)].value() == 1);
    CHECK(st.reported.by_codec[static_cast<std::size_t>(CodecLabel::g729)].value() == 1);
    CHECK(st.reported.lost_packets.value() == 17);
    CHECK(st.reported.jitter_seconds.count() == 1);
    CHECK(st.reported.jitter_seconds.sum() == Approx(0.030));
    CHECK(st.reported.loss_ratio.count() == 1);
    CHECK(st.reported.loss_ratio.sum() == Approx(sum.loss_percent / 100.0));
    CHECK(st.reported.mos.count() == 1);
    CHECK(st.reported.mos.sum() == Approx(sum.mos));
    CHECK(st.reported.rtt_seconds.count() == 1);
    CHECK(st.reported.rtt_seconds.sum() == Approx(0.050).margin(1e-4));
    // Nothing measured: the measured families stay where they were.
    CHECK(st.streams_finished_total() == 0);
    CHECK(st.mos.count() == 0);
    CHECK(st.lost_packets.value() == 0);

    StreamStats merged;
    merged.merge(st);
    merged.merge(st);
    CHECK(merged.reported.finished_total() == 2);
    CHECK(merged.reported.mos.count() == 2);
    CHECK(merged.reported.lost_packets.value() == 34);
}

TEST_CASE("a reported stream without a binding of its call: dialog and codec unknown, 8 kHz",
          "[rtp][stream][rtcp_json][reported]") {
    StreamTable t(small_config());
    t.bind(with_dialog(media_binding(uac, "another-call", 0, {codec(0, "PCMU", 8000)}), 3));
    t.on_rtcp_json(meta_at(0, uac_rtcp, engine_a), "call-2", span_of(rtcp_json(1, 2, 0, 0, 16)));
    const ReportedStream* r = t.find_reported("call-2", 2);
    REQUIRE(r != nullptr);
    CHECK(r->dialog == 0);
    CHECK(r->codec == Codec::unknown);
    t.finish_all(Timestamp{kBaseUs + 1});
    const StreamStats& st = t.stats();
    CHECK(st.reported.finished[static_cast<std::size_t>(FinishReason::flushed)].value() == 1);
    CHECK(st.reported.by_codec[static_cast<std::size_t>(CodecLabel::other)].value() == 1);
    CHECK(st.reported.jitter_seconds.sum() == Approx(0.002));
    CHECK(st.reported.rtt_seconds.count() == 0);
    CHECK(st.reported.mos.sum() == Approx(evaluate(codec_impairment(Codec::unknown), {0.0, 1.0, 4.0}).mos));
}

TEST_CASE("measured streams: per-stream loss ratio and RTT histograms", "[rtp][stream][reported]") {
    StreamTable t(small_config());
    RecordingSink sink;
    t.set_sink(&sink);
    // Sequence numbers 100..110 except 105: one lost.
    for (int i = 0; i <= 10; ++i) {
        if (i == 5) continue;
        t.on_rtp(meta_at(i * 20'000LL, uac, uas),
                 make_rtp(8, static_cast<std::uint16_t>(100 + i), static_cast<std::uint32_t>(i * 160), 0x77));
    }
    t.finish_all(Timestamp{kBaseUs + 1'000'000});
    REQUIRE(sink.finished.size() == 1);
    CHECK(sink.finished[0].summary.lost == 1);
    CHECK(t.stats().loss_ratio.count() == 1);
    CHECK(t.stats().loss_ratio.sum() > 0.0);
    CHECK(t.stats().loss_ratio.sum() == Approx(sink.finished[0].summary.loss_percent / 100.0));
    CHECK(t.stats().rtt_seconds.count() == 0);  // no RTCP about it
    CHECK(t.stats().reported.finished_total() == 0);
}

TEST_CASE("unbind: the ended dialog's pending bindings of an address go, whatever their peer",
          "[rtp][stream][binding][unbind]") {
    StreamTable t(small_config());
    // Offer (no peer), answer pairs it with engine_a (the answered offer's binding goes then);
    // another dialog of the same Call-ID (a re-used Call-ID, From-tag 9) and another call share
    // the address.
    t.bind(with_dialog(media_binding(uac, "call-1", 0, {codec(8, "PCMA", 8000)}), 7));
    t.bind(with_dialog(media_binding(uac, "call-1", 10, {}), 7, engine_a));
    t.bind(with_dialog(media_binding(uac, "call-1", 20, {}), 9, engine_b));
    t.bind(with_dialog(media_binding(uac, "call-2", 30, {}), 1, uas));
    t.bind(with_dialog(media_binding(engine_a, "call-1", 10, {}), 7, uac));
    t.bind(with_dialog(media_binding(uas, "call-1", 40, {}), 7));  // an offer on another leg
    CHECK(t.pending_size() == 5);
    CHECK(t.stats().pending_bindings.value() == 5);

    // An address the dialog never named, or another dialog: nothing happens.
    t.unbind(engine_b, uac, "call-1", 7);
    t.unbind(uac, engine_a, "call-1", 8);
    CHECK(t.pending_size() == 5);

    // Its RTCP port (the same key), and no peer: found by the walk.
    t.unbind(Endpoint{uac.address, static_cast<std::uint16_t>(uac.port + 1)}, Endpoint{}, "call-1", 7);
    CHECK(t.pending_size() == 4);
    CHECK(t.stats().bindings_released.value() == 1);
    CHECK(t.find_binding(uac, engine_a) == nullptr);
    REQUIRE(t.find_binding(uac, engine_b) != nullptr);
    CHECK(t.find_binding(uac, engine_b)->dialog == 9);
    REQUIRE(t.find_binding(uac, uas) != nullptr);

    t.unbind(engine_a, uac, "call-1", 7);
    t.unbind(uas, Endpoint{}, "call-1", 7);
    t.unbind(uac, engine_b, "call-1", 9);
    t.unbind(uac, uas, "call-2", 1);
    CHECK(t.pending_size() == 0);
    CHECK(t.bindings_size() == 0);
    CHECK(t.media_size() == 0);  // nothing left at those addresses
    CHECK(t.stats().pending_bindings.value() == 0);
    CHECK(t.stats().bindings_released.value() == 5);
    CHECK(t.stats().pending_bindings_expired.value() == 0);
}

TEST_CASE("unbind: a binding in use goes when its last stream leaves; until then its streams keep the call",
          "[rtp][stream][binding][unbind]") {
    StreamTable t(small_config());
    RecordingSink sink;
    t.set_sink(&sink);
    t.bind(with_dialog(media_binding(uas, "call-1", 0, {codec(8, "PCMA", 8000)}), 7, uac));
    for (int i = 0; i < 5; ++i)
        t.on_rtp(meta_at(i * 20'000LL, uac, uas),
                 make_rtp(8, static_cast<std::uint16_t>(i), static_cast<std::uint32_t>(i * 160), 0x1));
    CHECK(t.pending_size() == 0);

    t.unbind(uas, uac, "call-1", 7);
    CHECK(t.bindings_size() == 1);  // still in use
    CHECK(t.stats().bindings_released.value() == 0);
    // A late packet still belongs to the call.
    t.on_rtp(meta_at(100'000, uac, uas), make_rtp(8, 5, 800, 0x1));
    REQUIRE(t.binding_of({uac, uas, 0x1}) != nullptr);

    t.expire(Timestamp{kBaseUs + 100'000 + 5'000'000});
    REQUIRE(sink.finished.size() == 1);
    CHECK(sink.finished[0].bound);
    CHECK(sink.finished[0].call_id == "call-1");
    CHECK(t.bindings_size() == 0);
    CHECK(t.pending_size() == 0);
    CHECK(t.stats().pending_bindings.value() == 0);
    CHECK(t.stats().bindings_released.value() == 1);
    CHECK(t.media_size() == 0);

    SECTION("the same dialog binding the address again makes it a call's binding again") {
        t.bind(with_dialog(media_binding(uas, "call-1", 200'000, {}), 7, uac));
        t.on_rtp(meta_at(300'000, uac, uas), make_rtp(8, 100, 0, 0x2));
        t.unbind(uas, uac, "call-2", 7);
        t.finish_all(Timestamp{kBaseUs + 400'000});
        CHECK(t.bindings_size() == 1);  // not released: it stays for later streams
        CHECK(t.pending_size() == 1);
    }
}

TEST_CASE("unbind: on an address shared by many calls, each call's pair is found directly",
          "[rtp][stream][binding][unbind]") {
    StreamTableConfig c = small_config();
    c.max_pending_media = 400;
    StreamTable t(c);
    // One media server port answering 300 calls, each from its own caller address.
    const auto caller = [](int i) { return Endpoint{uac.address, static_cast<std::uint16_t>(10000 + 2 * i)}; };
    for (int i = 0; i < 300; ++i)
        t.bind(with_dialog(media_binding(uas, "call-" + std::to_string(i), i, {}), 5, caller(i)));
    CHECK(t.pending_size() == 300);
    // The oldest call, far beyond the walk's reach from the newest binding.
    t.unbind(uas, caller(0), "call-0", 5);
    CHECK(t.pending_size() == 299);
    CHECK(t.find_binding(uas, caller(0)) == nullptr);
    CHECK(t.stats().bindings_released.value() == 1);
    for (int i = 1; i < 300; ++i) t.unbind(uas, caller(i), "call-" + std::to_string(i), 5);
    CHECK(t.pending_size() == 0);
    CHECK(t.media_size() == 0);
    CHECK(t.stats().bindings_released.value() == 300);
}

TEST_CASE("the end of its call finishes a reported stream at once (call_ended); other calls' stay",
          "[rtp][stream][rtcp_json][reported][unbind]") {
    StreamTable t(small_config());
    RecordingSink sink;
    t.set_sink(&sink);
    // The caller's address carries two calls, each paired with its own rtpengine address.
    t.bind(with_dialog(media_binding(uac, "call-1", 0, {codec(8, "PCMA", 8000)}), 7, engine_a));
    t.bind(with_dialog(media_binding(uac, "call-2", 0, {codec(0, "PCMU", 8000)}), 3, engine_b));
    // call-1: reports on two SSRCs (rtpengine changed its SSRC); call-2: one.
    t.on_rtcp_json(meta_at(1'000'000, uac_rtcp, engine_a), "call-1", span_of(rtcp_json(0xA, 0xE, 26, 5, 40)));
    t.on_rtcp_json(meta_at(2'000'000, uac_rtcp, engine_a), "call-1", span_of(rtcp_json(0xA, 0xE, 51, 17, 240)));
    t.on_rtcp_json(meta_at(2'000'000, uac_rtcp, engine_a), "call-1", span_of(rtcp_json(0xA, 0xD, 0, 0, 8)));
    t.on_rtcp_json(meta_at(2'000'000, uac_rtcp, engine_b), "call-2", span_of(rtcp_json(0xB, 0xF, 0, 1, 16)));
    REQUIRE(t.reported_size() == 3);
    // RTP of call-1 captured to the caller keeps its binding in use past the call's end.
    for (int i = 0; i < 5; ++i)
        t.on_rtp(meta_at(i * 20'000LL, engine_a, uac),
                 make_rtp(8, static_cast<std::uint16_t>(i), static_cast<std::uint32_t>(i * 160), 0x55));
    const ReportedStream before = *t.find_reported("call-1", 0xE);
    CHECK(before.dialog == 7);

    t.unbind(uac, engine_a, "call-1", 7);
    REQUIRE(sink.reported.size() == 2);
    for (std::size_t i = 0; i < 2; ++i) {
        CHECK(sink.reported[i].first.call_id == "call-1");
        CHECK(sink.reported_reasons[i] == FinishReason::call_ended);
    }
    const auto e = sink.reported[0].first.ssrc == 0xE ? sink.reported[0] : sink.reported[1];
    CHECK(e.first.ssrc == 0xE);
    CHECK(e.second == before);  // its figures, as they were
    CHECK(t.find_reported("call-1", 0xE) == nullptr);
    CHECK(t.find_reported("call-1", 0xD) == nullptr);
    REQUIRE(t.find_reported("call-2", 0xF) != nullptr);
    CHECK(t.reported_size() == 1);
    const StreamStats& st = t.stats();
    CHECK(st.reported.finished[static_cast<std::size_t>(FinishReason::call_ended)].value() == 2);
    CHECK(st.reported.finished_total() == 2);
    CHECK(st.reported.by_codec[static_cast<std::size_t>(CodecLabel::pcma)].value() == 2);
    CHECK(st.reported.mos.count() == 2);
    CHECK(st.reported.lost_packets.value() == 17);
    CHECK(st.reported_streams_active.value() == 1);
    // The measured stream goes on, and its binding (released) with it.
    CHECK(st.streams_finished_total() == 0);
    CHECK(t.find_binding(uac, engine_a) != nullptr);
    CHECK(st.bindings_released.value() == 0);

    SECTION("a late report while the binding lingers: a new reported stream, linked to nothing, ends by idle") {
        t.on_rtcp_json(meta_at(3'000'000, uac_rtcp, engine_a), "call-1", span_of(rtcp_json(0xA, 0xE, 0, 17, 40)));
        REQUIRE(t.find_reported("call-1", 0xE) != nullptr);
        CHECK(t.find_reported("call-1", 0xE)->dialog == 7);  // still named by the released binding
        t.unbind(uac, engine_a, "call-1", 7);                // the end again: nothing left to finish
        CHECK(sink.reported.size() == 2);
        t.expire(Timestamp{kBaseUs + 9'000'000});
        REQUIRE(sink.reported.size() == 4);  // call-2's and the late one
        CHECK(sink.reported_reasons[2] == FinishReason::idle);
        CHECK(sink.reported_reasons[3] == FinishReason::idle);
        CHECK(sink.reported[3].first.call_id == "call-1");
        CHECK(t.reported_size() == 0);
        CHECK(st.reported_streams_active.value() == 0);
        CHECK(st.bindings_released.value() == 1);  // with its last measured stream
        CHECK(t.bindings_size() == 1);             // call-2's
    }
    SECTION("a late report once the binding is gone names no dialog and ends by idle") {
        t.expire(Timestamp{kBaseUs + 7'000'000});
        CHECK(t.find_binding(uac, engine_a) == nullptr);
        CHECK(st.bindings_released.value() == 1);
        t.on_rtcp_json(meta_at(8'000'000, uac_rtcp, engine_a), "call-1", span_of(rtcp_json(0xA, 0xE, 0, 17, 40)));
        const ReportedStream* late = t.find_reported("call-1", 0xE);
        REQUIRE(late != nullptr);
        CHECK(late->dialog == 0);
        t.unbind(uac, engine_a, "call-1", 7);
        CHECK(t.reported_size() == 1);
        t.expire(Timestamp{kBaseUs + 14'000'000});
        CHECK(t.reported_size() == 0);
        REQUIRE(sink.reported.size() == 4);
        CHECK(sink.reported_reasons.back() == FinishReason::idle);
        CHECK(st.reported.finished[static_cast<std::size_t>(FinishReason::idle)].value() == 2);
        CHECK(st.reported.finished[static_cast<std::size_t>(FinishReason::call_ended)].value() == 2);
    }
}

TEST_CASE("a reported stream linked to an offer's binding is the answer's when the answer comes",
          "[rtp][stream][rtcp_json][reported][unbind]") {
    StreamTable t(small_config());
    RecordingSink sink;
    t.set_sink(&sink);
    t.bind(with_dialog(media_binding(uac, "call-1", 0, {codec(8, "PCMA", 8000)}), 7));
    // Early media: reports before the answer, matched to the offer (no peer yet).
    t.on_rtcp_json(meta_at(1'000'000, uac_rtcp, engine_a), "call-1", span_of(rtcp_json(0xA, 0xE, 0, 0, 40)));
    REQUIRE(t.find_reported("call-1", 0xE) != nullptr);
    CHECK(t.find_reported("call-1", 0xE)->dialog == 7);
    t.bind(with_dialog(media_binding(uac, "call-1", 1'500'000, {}), 7, engine_a));
    CHECK(t.find_binding(uac) == nullptr);  // the offer's binding went, answered
    t.unbind(uac, engine_a, "call-1", 7);
    REQUIRE(sink.reported.size() == 1);
    CHECK(sink.reported_reasons[0] == FinishReason::call_ended);
    CHECK(t.reported_size() == 0);
    CHECK(t.bindings_size() == 0);
}

TEST_CASE("addresses re-used call after call: the answer that takes over the last call's pair keeps its offer's codecs",
          "[rtp][stream][rtcp_json][reported][reuse]") {
    // sipp and SBCs offer the same media address in call after call; the answer names the
    // offerer's address again without codecs, and the pair it lands on is the previous call's.
    StreamTable t(small_config());
    t.bind(with_dialog(media_binding(uac, "call-1", 0, {codec(111, "opus", 48000)}), 7));
    t.bind(with_dialog(media_binding(uac, "call-1", 100'000, {}), 7, engine_a));
    const Binding* first = t.find_binding(uac, engine_a);
    REQUIRE(first != nullptr);
    REQUIRE(first->codec_count == 1);
    CHECK(first->codec(0) == Codec::opus);

    t.bind(with_dialog(media_binding(uac, "call-2", 5'000'000, {codec(97, "iLBC", 8000)}), 8));
    t.bind(with_dialog(media_binding(uac, "call-2", 5'100'000, {}), 8, engine_a));
    const Binding* pair = t.find_binding(uac, engine_a);
    REQUIRE(pair != nullptr);
    CHECK(pair->call_id == "call-2");
    CHECK(pair->dialog == 8);
    REQUIRE(pair->codec_count == 1);
    CHECK(pair->codec(0) == Codec::ilbc);
    CHECK(pair->clock_rate(0) == 8000);
    CHECK(t.find_binding(uac) == nullptr);  // call 2's offer, answered

    // The offerer's reports on call 2 name its dialog and codec (the jitter's clock).
    t.on_rtcp_json(meta_at(5'500'000, uac_rtcp, engine_a), "call-2", span_of(rtcp_json(0xA, 0xE, 0, 0, 40)));
    const ReportedStream* reported = t.find_reported("call-2", 0xE);
    REQUIRE(reported != nullptr);
    CHECK(reported->dialog == 8);
    CHECK(reported->codec == Codec::ilbc);
    CHECK(reported->clock_rate == 8000);
}

TEST_CASE("a binding dropped for another reason than its call's end: its reported streams end by idle",
          "[rtp][stream][rtcp_json][reported][unbind]") {
    StreamTableConfig c = small_config();
    c.max_pending_media = 2;
    c.pending_media_timeout_us = 2'000'000;
    StreamTable t(c);
    RecordingSink sink;
    t.set_sink(&sink);
    t.bind(with_dialog(media_binding(uac, "call-1", 0, {codec(8, "PCMA", 8000)}), 7, engine_a));
    std::int64_t last_report = 1'000'000;
    bool other_call_reports = false;
    t.on_rtcp_json(meta_at(last_report, uac_rtcp, engine_a), "call-1", span_of(rtcp_json(0xA, 0xE, 0, 0, 40)));
    REQUIRE(t.find_reported("call-1", 0xE) != nullptr);
    REQUIRE(t.find_reported("call-1", 0xE)->dialog == 7);

    SECTION("expired: no stream came within pending_media_timeout") {
        t.expire(Timestamp{kBaseUs + 2'500'000});
        CHECK(t.stats().pending_bindings_expired.value() == 1);
    }
    SECTION("evicted: the binding table was full") {
        t.bind(with_dialog(media_binding(uas, "call-8", 100'000, {}), 1, engine_b));
        t.bind(with_dialog(media_binding(engine_b, "call-9", 200'000, {}), 2, uas));
        CHECK(t.stats().evictions[static_cast<std::size_t>(StreamTableKind::pending_media)].value() == 1);
        other_call_reports = true;  // below
    }
    SECTION("taken: another call's SDP for the same pair, whose end must not finish this call's reports") {
        t.bind(with_dialog(media_binding(uac, "call-9", 1'500'000, {}), 4, engine_a));
        t.unbind(uac, engine_a, "call-9", 4);
        CHECK(t.stats().bindings_released.value() == 1);
    }
    SECTION("restored from a snapshot: links are not restored") {
        ReportedStream restored = *t.find_reported("call-1", 0xE);
        restored.last = Timestamp{kBaseUs + 1'800'000};
        last_report = 1'800'000;
        StreamTable again(c);
        again.set_sink(&sink);
        again.bind(with_dialog(media_binding(uac, "call-1", 0, {codec(8, "PCMA", 8000)}), 7, engine_a));
        REQUIRE(again.insert_reported(ReportedKey{CompactText("call-1"), 0xE}, restored));
        again.unbind(uac, engine_a, "call-1", 7);
        CHECK(again.bindings_size() == 0);
        CHECK(again.reported_size() == 1);
        again.expire(Timestamp{kBaseUs + last_report + 5'000'000});
        REQUIRE(sink.reported.size() == 1);
        CHECK(sink.reported_reasons[0] == FinishReason::idle);
        CHECK(again.reported_size() == 0);
        return;
    }
    CHECK(t.find_binding(uac, engine_a) == nullptr);  // that call's binding is gone
    t.unbind(uac, engine_a, "call-1", 7);
    CHECK(sink.reported.empty());
    CHECK(t.reported_size() == 1);
    t.on_rtcp_json(meta_at(1'900'000, uac_rtcp, engine_a), "call-1", span_of(rtcp_json(0xA, 0xE, 0, 0, 40)));
    last_report = 1'900'000;
    // After an eviction, call-9's binding has taken call-1's place; its report links to it and
    // must stay linked when call-1's stream unlinks itself below. (RTP keeps the binding from
    // expiring as a pending one.)
    if (other_call_reports) {
        t.on_rtp(meta_at(1'950'000, uas, engine_b), make_rtp(0, 1, 0, 0x77));
        t.on_rtcp_json(meta_at(1'950'000, engine_b, uas), "call-9", span_of(rtcp_json(0xB, 0x9, 0, 0, 40)));
    }
    t.expire(Timestamp{kBaseUs + last_report + 5'000'000});
    REQUIRE(sink.reported.size() == 1);
    CHECK(sink.reported_reasons[0] == FinishReason::idle);
    CHECK(t.stats().reported.finished[static_cast<std::size_t>(FinishReason::call_ended)].value() == 0);
    if (other_call_reports) {
        t.unbind(engine_b, uas, "call-9", 2);
        REQUIRE(sink.reported.size() == 2);
        CHECK(sink.reported[1].first.call_id == "call-9");
        CHECK(sink.reported_reasons[1] == FinishReason::call_ended);
    }
    CHECK(t.reported_size() == 0);
}

TEST_CASE("a reported stream already idle when its call ended finishes as idle, whenever expire() runs",
          "[rtp][stream][rtcp_json][reported][unbind]") {
    StreamTable t(small_config());
    RecordingSink sink;
    t.set_sink(&sink);
    t.bind(with_dialog(media_binding(uac, "call-1", 0, {codec(8, "PCMA", 8000)}), 7, engine_a));
    t.on_rtcp_json(meta_at(1'000'000, uac_rtcp, engine_a), "call-1", span_of(rtcp_json(0xA, 0xE, 0, 0, 40)));
    t.on_rtcp_json(meta_at(2'000'000, uac_rtcp, engine_a), "call-1", span_of(rtcp_json(0xA, 0xD, 0, 0, 40)));
    // The dialog left its table 6 s in (no expire() ran meanwhile): 0xE's last report was 5 s
    // (stream_idle_timeout) before, 0xD's 4 s.
    t.unbind(uac, engine_a, "call-1", 7, Timestamp{kBaseUs + 6'000'000});
    REQUIRE(sink.reported.size() == 2);
    for (std::size_t i = 0; i < 2; ++i) {
        INFO("SSRC " << sink.reported[i].first.ssrc);
        CHECK(sink.reported_reasons[i] ==
              (sink.reported[i].first.ssrc == 0xE ? FinishReason::idle : FinishReason::call_ended));
    }
    CHECK(t.reported_size() == 0);
}

// The memory figure (hepd_table_memory_bytes) is kept up to date as Call-IDs come and go, not
// recounted: after every step of a churn of bindings, re-bindings to other calls, unbinds,
// reports and expiry, with caps small enough to evict, it equals a recount of the tables.
TEST_CASE("the Call-ID text the stream table holds is counted as it comes and goes", "[rtp][stream][table][memory]") {
    StreamTableConfig c = small_config();
    c.max_streams = 8;
    c.max_pending_media = 6;
    c.max_reported_streams = 5;
    StreamTable t(c);
    const auto recount = [&t] {
        std::size_t bytes = 0;
        t.for_each_binding(
            [&](const Endpoint&, const Endpoint&, const Binding& b, bool, bool) { bytes += b.call_id.heap_bytes(); });
        t.for_each_reported([&](const ReportedKey& k, const ReportedStream&) { bytes += k.call_id.heap_bytes(); });
        return bytes;
    };
    std::uint64_t state = 42;
    const auto next = [&state](std::uint64_t n) {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        return (state >> 33) % n;
    };
    std::size_t most = 0;
    for (int step = 0; step < 4000; ++step) {
        const std::int64_t at = step * 50'000LL;
        // Short Call-IDs fit the small-string buffer, long ones do not: both kinds churn.
        const std::string call = next(3) == 0 ? "c" + std::to_string(next(9))
                                              : "a-long-call-id-" + std::to_string(next(9)) + "@pbx.example.com";
        const Endpoint media{IpAddress::v4(0x0a000100 + static_cast<std::uint32_t>(next(6))), 20000};
        const Endpoint peer = next(2) == 0 ? Endpoint{} : Endpoint{IpAddress::v4(0x0a000200), 30000};
        switch (next(5)) {
        case 0:
        case 1: t.bind(with_dialog(media_binding(media, call, at, {codec(8, "PCMA", 8000)}), 1, peer)); break;
        case 2: t.unbind(media, peer, call, 1, Timestamp{kBaseUs + at}); break;
        case 3:
            t.on_rtcp_json(meta_at(at, Endpoint{media.address, 20001}, uac), call,
                           span_of(rtcp_json(static_cast<std::uint32_t>(next(4)), 7, 0, 0, 8)));
            break;
        default: t.expire(Timestamp{kBaseUs + at}); break;
        }
        INFO("step " << step);
        REQUIRE(t.key_heap_bytes() == recount());
        most = std::max(most, t.key_heap_bytes());
    }
    CHECK(most > 0);
    CHECK(t.stats().evictions[static_cast<std::size_t>(StreamTableKind::reported_streams)].value() > 0);
}
