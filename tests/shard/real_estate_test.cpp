// Ground truth for media and Call-IDs that real estates re-use (issue 8): sipp pcap_play restarting
// the same SSRC/sequence/timestamp on every call of a pair, SBCs carrying them on, re-used
// Call-IDs, a re-INVITE moving media, early media, an SSRC change, a capture starting mid-call,
// and RTCP (raw, XR, RTCP-JSON) about streams on other shards. Generated calls go through the
// real shards (1, 2 and 4 of them) and must come out exactly as the generator says, identically
// for every shard count.
//
// Several streams now share (source, destination, SSRC), so a stream is known by those and the
// arrival of its first packet. Mismatches are tallied per check over all streams and calls (one
// CHECK per check, with a count and the first example), so that a failing run says how much is
// wrong, not only where it first went wrong.
#include "generated_run.hpp"
#include "rtp/emodel.hpp"
#include "rtp/rtcp_json.hpp"
#include "rtp/rtcp_packet.hpp"
#include "rtp/rtp_packet.hpp"
#include "shard/pipeline.hpp"
#include "shard/shard_worker.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

using namespace hepd;
using namespace hepd::test;

namespace {

// ---- checking ----------------------------------------------------------------------------------

// Mismatches per check: how many, and the first one in words.
class Tally {
public:
    explicit Tally(std::vector<std::string> checks) {
        for (auto& c : checks) failures_[std::move(c)] = 0;
    }
    void fail(const std::string& check, const std::string& example) {
        if (failures_[check]++ == 0) examples_[check] = example;
    }
    // One CHECK per check, so that a passing run shows them all and a failing one says how bad.
    void report(const char* what, std::size_t total) const {
        for (const auto& [check, n] : failures_) {
            INFO(what << ": " << check << ": " << n << " of " << total << " wrong"
                      << (n ? ", first: " + examples_.at(check) : std::string()));
            CHECK(n == 0);
        }
    }

private:
    std::map<std::string, std::uint64_t> failures_;
    std::map<std::string, std::string> examples_;
};

std::string describe(const gen::StreamTruth& st) {
    std::ostringstream s;
    s << "call " << st.call_index << " [" << (st.call_id.empty() ? "no Call-ID" : st.call_id) << "] "
      << st.src.to_string() << " -> " << st.dst.to_string() << " ssrc " << st.ssrc << " first " << st.first.us << " ("
      << st.received << " packets, expected finish " << gen::to_string(st.finish) << ")";
    return s.str();
}

template <class A, class B>
std::string got(const A& hepd, const B& truth) {
    std::ostringstream s;
    s << ": hepd " << hepd << ", truth " << truth;
    return s.str();
}

// The MOS of a loss-free, jitter-free G.711 A-law stream: what every unimpaired stream must get.
double codec_maximum_mos(const rtp::QualityOptions& quality) {
    return rtp::evaluate(rtp::codec_impairment(rtp::Codec::pcma, quality.g711_plc), rtp::EmodelInput{}).mos;
}

struct Expect {
    bool mos_at_maximum = false;  // the corpus is unimpaired: every stream at the codec's maximum
};

void check_streams(const gen::CorpusOptions& o, const gen::Truth& truth, const Outcome& out, const Expect& e) {
    const bool rtcp = o.rtcp || o.rtcp_json;
    const double top = codec_maximum_mos(config_for(o).streams.quality);
    // The SDP names the codec of a dynamic payload type: a stream of a known call has its call's.
    const rtp::Codec codec = o.codec == gen::VoiceCodec::opus ? rtp::Codec::opus : rtp::Codec::pcma;
    Tally t({"stream found",
             "Call-ID",
             "codec",
             "packets",
             "last packet",
             "lost",
             "duplicates",
             "jitter",
             "MOS",
             "finish reason (rebound)",
             "finish reason (restarted)",
             "finish reason (idle)",
             "finish reason (flushed)",
             "receiver reports",
             "receiver fraction lost",
             "receiver cumulative lost",
             "receiver jitter",
             "receiver RTT",
             "XR reports",
             "XR metrics"});
    // hepd's streams per (src, dst, SSRC): tells a merged stream from a missing one.
    std::map<std::tuple<Endpoint, Endpoint, std::uint32_t>, std::vector<std::int64_t>> by_key;
    for (const auto& [id, r] : out.streams)
        by_key[{std::get<0>(id), std::get<1>(id), std::get<2>(id)}].push_back(std::get<3>(id));

    for (const gen::StreamTruth& st : truth.streams) {
        const auto it = out.streams.find(StreamId{st.src, st.dst, st.ssrc, st.first.us});
        if (it == out.streams.end()) {
            const auto& same = by_key[{st.src, st.dst, st.ssrc}];
            std::ostringstream s;
            s << describe(st) << ": hepd has " << same.size() << " stream(s) on this (src, dst, SSRC)";
            if (!same.empty()) s << ", the first from " << same.front();
            t.fail("stream found", s.str());
            continue;
        }
        const StreamRecord& r = it->second;
        const std::string who = describe(st);
        if (r.call_id != st.call_id) t.fail("Call-ID", who + got("[" + r.call_id + "]", "[" + st.call_id + "]"));
        if (!st.call_id.empty() && r.summary.codec != codec)
            t.fail("codec", who + got(rtp::to_string(r.summary.codec), rtp::to_string(codec)));
        if (r.stream.packets != st.received) t.fail("packets", who + got(r.stream.packets, st.received));
        if (r.stream.last != st.last) t.fail("last packet", who + got(r.stream.last.us, st.last.us));
        const auto lost = static_cast<std::int64_t>(st.lost) - static_cast<std::int64_t>(st.duplicates);
        if (r.summary.lost != lost) t.fail("lost", who + got(r.summary.lost, lost));
        if (r.stream.duplicates != st.duplicates) t.fail("duplicates", who + got(r.stream.duplicates, st.duplicates));
        if (std::fabs(r.summary.jitter_ms - st.jitter_ms) > 0.01 * st.jitter_ms + 1e-6)
            t.fail("jitter", who + got(r.summary.jitter_ms, st.jitter_ms));
        // Unimpaired: a stream of two packets or more passed probation and scores the maximum; a
        // single packet (a capture's start or end cuts the stream) is scored not at all.
        if (e.mos_at_maximum && st.received < 2 && r.summary.has_quality)
            t.fail("MOS of a single packet", who + got(r.summary.mos, "none"));
        if (e.mos_at_maximum && st.received >= 2 && (!r.summary.has_quality || std::fabs(r.summary.mos - top) > 1e-9))
            t.fail("MOS", who + got(r.summary.mos, top));
        if (st.finish != gen::ExpectedFinish::unknown && r.reason != gen::to_string(st.finish))
            t.fail("finish reason (" + std::string(gen::to_string(st.finish)) + ")",
                   who + got(r.reason, gen::to_string(st.finish)));
        if (!rtcp) continue;
        const rtp::ReceiverView& v = r.stream.receiver.get();
        const gen::ReceiverTruth& want = st.receiver;
        if (v.reports != want.reports) t.fail("receiver reports", who + got(v.reports, want.reports));
        if (!st.has_receiver) continue;
        if (v.fraction_lost != want.fraction_lost)
            t.fail("receiver fraction lost", who + got(int{v.fraction_lost}, int{want.fraction_lost}));
        if (v.cumulative_lost != want.cumulative_lost)
            t.fail("receiver cumulative lost", who + got(v.cumulative_lost, want.cumulative_lost));
        if (v.jitter != want.jitter) t.fail("receiver jitter", who + got(v.jitter, want.jitter));
        if (v.rtt_us != want.rtt_us) t.fail("receiver RTT", who + got(v.rtt_us, want.rtt_us));
        if (v.xr_reports != want.xr_reports) t.fail("XR reports", who + got(v.xr_reports, want.xr_reports));
        if (want.xr_reports > 0 &&
            (v.xr_loss_rate != want.xr_loss_rate || v.xr_discard_rate != want.xr_discard_rate ||
             v.xr_r_factor != want.xr_r_factor || v.xr_mos_lq_x10 != want.xr_mos_lq_x10 ||
             v.xr_mos_cq_x10 != want.xr_mos_cq_x10 || v.xr_round_trip_ms != want.xr_round_trip_ms))
            t.fail("XR metrics", who + got(int{v.xr_r_factor}, int{want.xr_r_factor}));
    }
    t.report("streams", truth.streams.size());
    INFO("hepd finished " << out.stream_records << " streams (" << out.streams.size()
                          << " distinct keys), the truth has " << truth.streams.size());
    CHECK(out.stream_records == truth.streams.size());
    CHECK(out.streams.size() == truth.streams.size());
}

void check_calls(const gen::Truth& truth, const Outcome& out) {
    Tally t({"dialog found", "outcome", "final status", "PDD", "setup", "duration", "re-INVITEs", "Q.850"});
    for (const gen::CallTruth& call : truth.calls) {
        const auto it = out.dialogs.find({call.call_id, call.from_tag});
        const std::string who = "call " + std::to_string(call.index) + " [" + call.call_id + " " + call.from_tag + "]";
        if (it == out.dialogs.end()) {
            t.fail("dialog found", who);
            continue;
        }
        const sip::Dialog& d = it->second;
        if (d.pdd_us() != call.pdd_us) t.fail("PDD", who + got(d.pdd_us(), call.pdd_us));
        if (d.final_status != call.final_code) t.fail("final status", who + got(d.final_status, call.final_code));
        if (d.reinvites != call.reinvites) t.fail("re-INVITEs", who + got(d.reinvites, call.reinvites));
        switch (call.outcome) {
        case gen::CallOutcome::completed:
            if (d.outcome() != sip::DialogOutcome::completed) t.fail("outcome", who + " not completed");
            if (d.setup_us() != call.setup_us) t.fail("setup", who + got(d.setup_us(), call.setup_us));
            if (d.duration_us() != call.duration_us) t.fail("duration", who + got(d.duration_us(), call.duration_us));
            break;
        case gen::CallOutcome::failed:
            if (d.outcome() != sip::DialogOutcome::failed) t.fail("outcome", who + " not failed");
            if (d.q850_cause != 17) t.fail("Q.850", who + got(d.q850_cause, 17));
            break;
        case gen::CallOutcome::cancelled:
            if (d.outcome() != sip::DialogOutcome::cancelled) t.fail("outcome", who + " not cancelled");
            break;
        }
    }
    t.report("calls", truth.calls.size());
    CHECK(out.dialogs.size() == truth.calls.size());
}

void check_same(const Outcome& one, const Outcome& many) {
    CHECK(many.queue_drops == 0);
    CHECK(many.dialogs == one.dialogs);
    CHECK(many.stream_records == one.stream_records);
    CHECK(many.streams == one.streams);
    if (many.streams != one.streams) {
        std::size_t differ = 0;
        for (const auto& [id, r] : one.streams) {
            const auto it = many.streams.find(id);
            if (it == many.streams.end() || !(it->second == r)) ++differ;
        }
        WARN(differ << " of " << one.streams.size() << " stream records differ or are missing");
    }
    CHECK(many.reported == one.reported);
    CHECK(many.report == one.report);
    if (many.report != one.report) WARN(nlohmann::json::diff(one.report, many.report).dump(1));
}

// The generator's truth, the 1-shard run against it, and 2 and 4 shards against the 1-shard run.
gen::Truth verify(const gen::CorpusOptions& o, const Expect& e = {}) {
    gen::Truth truth;
    const Outcome one = run(o, 1, &truth);
    CHECK(one.queue_drops == 0);
    check_calls(truth, one);
    check_streams(o, truth, one, e);
    for (std::size_t shards : {2, 4}) {
        INFO("shards " << shards);
        check_same(one, run(o, shards));
    }
    return truth;
}

std::map<gen::ExpectedFinish, std::size_t> finishes(const gen::Truth& truth) {
    std::map<gen::ExpectedFinish, std::size_t> n;
    for (const auto& s : truth.streams) ++n[s.finish];
    return n;
}

std::size_t completed(const gen::Truth& truth) {
    std::size_t n = 0;
    for (const auto& c : truth.calls) n += c.outcome == gen::CallOutcome::completed;
    return n;
}

// Streams never overlap on a re-used pair: a pair is taken again only after its call ended.
void check_no_overlap(const gen::Truth& truth) {
    std::map<std::pair<Endpoint, Endpoint>, std::vector<std::pair<std::int64_t, std::int64_t>>> spans;
    for (const auto& s : truth.streams) spans[{s.src, s.dst}].emplace_back(s.first.us, s.last.us);
    std::size_t overlaps = 0;
    for (auto& [pair, v] : spans) {
        std::sort(v.begin(), v.end());
        for (std::size_t i = 1; i < v.size(); ++i) overlaps += v[i].first <= v[i - 1].second;
    }
    CHECK(overlaps == 0);
}

gen::CorpusOptions impaired() {
    gen::CorpusOptions o;
    o.media_seconds = 1.0;
    o.loss_percent = 3;
    o.duplicate_percent = 1;
    o.reorder_percent = 2;
    o.jitter_ms = 5;
    return o;
}

}  // namespace

TEST_CASE("sipp pcap_play on re-used pairs: one stream per call, the previous one rebound", "[shard][truth]") {
    gen::CorpusOptions o = impaired();
    o.calls = 240;
    o.stream_pairs = 12;
    o.media_reuse = gen::MediaReuse::restart;
    o.failed_percent = 5;
    o.cancelled_percent = 5;
    o.call_interval_us = 7000;

    gen::Truth truth = gen::generate(o, [](Timestamp, const Endpoint&, const Endpoint&, ByteSpan) {});
    // The generator: every completed call has its two streams, the same SSRC on every call of a
    // pair, and each stream but the last on its pair ends when the next call's SDP rebinds it.
    REQUIRE(truth.streams.size() == 2 * completed(truth));
    check_no_overlap(truth);
    const auto f = finishes(truth);
    CHECK(f.count(gen::ExpectedFinish::flushed) == 1);
    CHECK(f.at(gen::ExpectedFinish::flushed) <= 2 * o.stream_pairs);
    CHECK(f.at(gen::ExpectedFinish::rebound) + f.at(gen::ExpectedFinish::flushed) == truth.streams.size());
    for (const auto& s : truth.streams) CHECK((s.ssrc & 0xF000'0000U) == 0x1000'0000U);

    verify(o);
}

TEST_CASE("Opus on re-used pairs: every call's streams and reports at its own codec and clock", "[shard][truth]") {
    // Only the SDP's rtpmap names payload type 111: a call whose answer lands on the previous
    // call's pair must still find its offer's codecs, or its streams are measured at no clock.
    gen::CorpusOptions o = impaired();
    o.codec = gen::VoiceCodec::opus;
    o.calls = 120;
    o.stream_pairs = 8;
    o.call_interval_us = 7000;
    o.media_seconds = 2.5;  // RTCP's periodic reports and the final one
    o.rtcp_json = true;
    SECTION("sipp: every call restarts the pair's SSRC and sequence") {
        o.media_reuse = gen::MediaReuse::restart;
        verify(o);
    }
    SECTION("SBC: the pair's SSRC and sequence carry on") {
        o.media_reuse = gen::MediaReuse::continue_;
        verify(o);
    }
}

TEST_CASE("sipp pcap_play without signalling: the RTP restart ends the stream, not loss", "[shard][truth]") {
    gen::CorpusOptions o;
    o.calls = 120;
    o.stream_pairs = 8;
    o.sip = false;
    o.media_reuse = gen::MediaReuse::restart;

    gen::Truth truth = gen::generate(o, [](Timestamp, const Endpoint&, const Endpoint&, ByteSpan) {});
    REQUIRE(truth.streams.size() == 240);
    CHECK(truth.calls.empty());
    CHECK(truth.hidden_calls == 120);
    const auto f = finishes(truth);
    CHECK(f.at(gen::ExpectedFinish::restarted) == 240 - 16);
    CHECK(f.at(gen::ExpectedFinish::flushed) == 16);

    verify(o, Expect{.mos_at_maximum = true});
}

TEST_CASE("SBC re-using pairs with continuing SSRC and sequence: the next call's SDP splits them", "[shard][truth]") {
    gen::CorpusOptions o;
    o.calls = 200;
    o.stream_pairs = 10;
    o.media_reuse = gen::MediaReuse::continue_;
    o.call_interval_us = 5000;

    gen::Truth truth = gen::generate(o, [](Timestamp, const Endpoint&, const Endpoint&, ByteSpan) {});
    REQUIRE(truth.streams.size() == 400);
    check_no_overlap(truth);
    const auto f = finishes(truth);
    CHECK(f.at(gen::ExpectedFinish::rebound) == 400 - 20);
    CHECK(f.at(gen::ExpectedFinish::flushed) == 20);

    verify(o, Expect{.mos_at_maximum = true});
}

TEST_CASE("SBC continuing media without signalling: one stream per pair, a new one after an idle address",
          "[shard][truth]") {
    gen::CorpusOptions o;
    o.calls = 40;
    o.stream_pairs = 4;
    o.sip = false;
    o.media_reuse = gen::MediaReuse::continue_;

    SECTION("calls close together cannot be told apart") {
        gen::Truth truth = gen::generate(o, [](Timestamp, const Endpoint&, const Endpoint&, ByteSpan) {});
        REQUIRE(truth.streams.size() == 8);
        for (const auto& s : truth.streams) {
            CHECK(s.calls == 10);
            CHECK(s.lost == 0);
            CHECK(s.finish == gen::ExpectedFinish::flushed);
        }
        verify(o, Expect{.mos_at_maximum = true});
    }
    SECTION("an address idle longer than the stream idle timeout starts a new stream") {
        o.stream_idle_timeout_us = 2'000'000;
        o.reuse_gap_us = 3'000'000;
        gen::Truth truth = gen::generate(o, [](Timestamp, const Endpoint&, const Endpoint&, ByteSpan) {});
        REQUIRE(truth.streams.size() == 80);
        const auto f = finishes(truth);
        CHECK(f.at(gen::ExpectedFinish::idle) >= 80 - 8);
        verify(o, Expect{.mos_at_maximum = true});
    }
}

TEST_CASE("re-used Call-IDs: an INVITE with the Call-ID of an ended call is a new dialog", "[shard][truth]") {
    gen::CorpusOptions o;
    o.calls = 300;
    o.call_ids = 20;
    o.failed_percent = 10;
    o.cancelled_percent = 10;
    o.call_interval_us = 4000;

    gen::Truth truth = gen::generate(o, [](Timestamp, const Endpoint&, const Endpoint&, ByteSpan) {});
    REQUIRE(truth.calls.size() == 300);
    std::map<std::string, std::size_t> per_id;
    for (const auto& c : truth.calls) ++per_id[c.call_id];
    CHECK(per_id.size() == 20);

    verify(o, Expect{.mos_at_maximum = true});
}

TEST_CASE("a re-INVITE moving the caller's media: the call's new streams follow it", "[shard][truth]") {
    gen::CorpusOptions o;
    o.calls = 120;
    o.reinvite.every = 2;
    o.stream_pairs = 20;  // and the next call on the pair moves it back
    o.call_interval_us = 5000;

    gen::Truth truth = gen::generate(o, [](Timestamp, const Endpoint&, const Endpoint&, ByteSpan) {});
    std::size_t moved = 0;
    for (const auto& c : truth.calls) moved += c.reinvites;
    REQUIRE(moved == 60);
    REQUIRE(truth.streams.size() == 2 * 120 + 2 * 60);
    std::size_t to_new_port = 0;
    for (const auto& s : truth.streams) to_new_port += s.dst.port % 4 == 2;
    CHECK(to_new_port == 60);

    verify(o, Expect{.mos_at_maximum = true});
}

TEST_CASE("early media: the announcement's stream and the answer's both belong to the call", "[shard][truth]") {
    gen::CorpusOptions o;
    o.calls = 120;
    o.early_media.every = 2;
    o.stream_pairs = 20;
    o.call_interval_us = 5000;

    gen::Truth truth = gen::generate(o, [](Timestamp, const Endpoint&, const Endpoint&, ByteSpan) {});
    REQUIRE(truth.streams.size() == 2 * 120 + 60);
    std::size_t early = 0;
    for (const auto& c : truth.calls) early += c.early_media;
    CHECK(early == 60);

    verify(o, Expect{.mos_at_maximum = true});
}

TEST_CASE("an SSRC change mid-call is a new stream of the same call, not loss", "[shard][truth]") {
    gen::CorpusOptions o;
    o.calls = 120;
    o.ssrc_change.every = 2;
    o.stream_pairs = 20;
    o.call_interval_us = 5000;

    SECTION("unimpaired") {
        gen::Truth truth = gen::generate(o, [](Timestamp, const Endpoint&, const Endpoint&, ByteSpan) {});
        REQUIRE(truth.streams.size() == 2 * 120 + 60);
        for (const auto& s : truth.streams) CHECK(s.lost == 0);
        verify(o, Expect{.mos_at_maximum = true});
    }
    SECTION("with loss, duplicates, reordering and jitter") {
        const gen::CorpusOptions base = o;
        o = impaired();
        o.calls = base.calls;
        o.ssrc_change = base.ssrc_change;
        o.stream_pairs = base.stream_pairs;
        o.call_interval_us = base.call_interval_us;
        verify(o);
    }
}

TEST_CASE("a capture starting mid-call: streams without their SDP have no Call-ID", "[shard][truth]") {
    gen::CorpusOptions o;
    o.calls = 300;
    o.stream_pairs = 30;
    o.call_interval_us = 7000;
    o.capture_from_us = 1'500'000;

    gen::Truth truth = gen::generate(o, [](Timestamp, const Endpoint&, const Endpoint&, ByteSpan) {});
    CHECK(truth.hidden_calls > 0);
    CHECK(truth.hidden_calls < 300);
    CHECK(truth.calls.size() + truth.hidden_calls == 300);
    std::size_t anonymous = 0;
    for (const auto& s : truth.streams) anonymous += s.call_id.empty();
    CHECK(anonymous > 0);

    verify(o, Expect{.mos_at_maximum = true});
}

TEST_CASE("RTCP receiver views land beside the measured stream, whatever shard owns the call", "[shard][truth][rtcp]") {
    gen::CorpusOptions o = impaired();
    o.calls = 160;
    o.stream_pairs = 16;
    o.call_interval_us = 6000;
    o.media_seconds = 2.5;  // a few periodic reports and the final one

    SECTION("raw SR/RR with XR VoIP metrics, every call on a pair of its own") {
        o.stream_pairs = 0;
        o.rtcp = true;
        o.rtcp_xr = true;
        verify(o);
    }
    SECTION("raw SR/RR with XR VoIP metrics") {
        o.rtcp = true;
        o.rtcp_xr = true;
        gen::Truth truth = verify(o);
        CHECK(truth.rtcp_packets > 0);
        std::size_t with_rtt = 0;
        for (const auto& s : truth.streams) {
            CHECK(s.has_receiver);
            with_rtt += s.receiver.rtt_us != gen::kNoRtt;
        }
        CHECK(with_rtt == truth.streams.size());
    }
    SECTION("RTCP-JSON as rtpengine mirrors it (correlation id = Call-ID)") {
        o.rtcp_json = true;
        gen::Truth truth = verify(o);
        CHECK(truth.rtcp_json_packets > 0);
    }
    SECTION("RTCP-JSON with re-used Call-IDs and SBC-continued media") {
        o.rtcp_json = true;
        o.call_ids = 16;
        o.media_reuse = gen::MediaReuse::continue_;
        verify(o);
    }
}

TEST_CASE("the generator's RTCP, RTCP-JSON and RTP parse, one report block each", "[shard][truth][gen]") {
    gen::CorpusOptions o = impaired();
    o.calls = 60;
    o.stream_pairs = 6;
    o.media_seconds = 2.5;
    o.reinvite.every = 3;
    o.early_media.every = 4;
    o.rtcp = true;
    o.rtcp_xr = true;
    o.rtcp_json = true;
    std::map<std::string, std::size_t> bad;
    std::size_t rtcp = 0;
    std::size_t json = 0;
    const gen::Truth truth =
        gen::generate(o, [&](Timestamp, const Endpoint& s, const Endpoint& d, ByteSpan p, const gen::PacketInfo& info) {
            switch (info.kind) {
            case gen::PacketKind::sip: break;
            case gen::PacketKind::rtp:
                if (!rtp::parse_rtp(p)) ++bad["rtp"];
                break;
            case gen::PacketKind::rtcp: {
                ++rtcp;
                if (s.port % 2 != 1 || d.port % 2 != 1) ++bad["rtcp ports"];
                const auto compound = rtp::parse_rtcp(p);
                if (!compound || !compound->starts_with_report()) {
                    ++bad["rtcp compound"];
                    break;
                }
                std::size_t blocks = 0;
                std::size_t voip = 0;
                for (const rtp::RtcpPacket packet : *compound) {
                    if (packet.type == rtp::RtcpType::sr) {
                        const auto sr = rtp::parse_sender_report(packet);
                        if (sr)
                            blocks += sr->report_blocks.size();
                        else
                            ++bad["sr"];
                    } else if (packet.type == rtp::RtcpType::rr) {
                        const auto rr = rtp::parse_receiver_report(packet);
                        if (rr)
                            blocks += rr->report_blocks.size();
                        else
                            ++bad["rr"];
                    } else if (packet.type == rtp::RtcpType::sdes) {
                        const auto sdes = rtp::parse_sdes(packet);
                        if (!sdes || sdes->size() != 1 || (*sdes->begin()).cname().empty()) ++bad["sdes"];
                    } else if (packet.type == rtp::RtcpType::xr) {
                        const auto xr = rtp::parse_xr(packet);
                        if (!xr) {
                            ++bad["xr"];
                            continue;
                        }
                        for (const rtp::XrBlock b : *xr)
                            voip += b.type == rtp::XrBlockType::voip_metrics && rtp::parse_voip_metrics(b);
                    }
                }
                if (blocks != 1) ++bad["report blocks"];
                if (voip != 1) ++bad["voip metrics"];
                break;
            }
            case gen::PacketKind::rtcp_json: {
                ++json;
                if (info.correlation_id.empty()) ++bad["correlation id"];
                const auto report = rtp::parse_rtcp_json(as_text(p));
                if (!report || report->block_count != 1 || !report->has_ssrc) ++bad["rtcp-json"];
                break;
            }
            }
        });
    CHECK(bad.empty());
    for (const auto& [what, n] : bad) WARN(what << ": " << n);
    CHECK(rtcp == truth.rtcp_packets);
    CHECK(json == truth.rtcp_json_packets);
    CHECK(rtcp == json);
    CHECK(rtcp > 0);
}

TEST_CASE("everything at once: re-used pairs and Call-IDs, scenarios, RTCP, a late capture", "[shard][truth]") {
    gen::CorpusOptions o = impaired();
    o.calls = 240;
    o.stream_pairs = 24;
    o.call_ids = 30;
    o.failed_percent = 5;
    o.cancelled_percent = 5;
    o.reinvite.percent = 20;
    o.early_media.percent = 20;
    o.ssrc_change.percent = 20;
    o.capture_from_us = 1'000'000;
    o.rtcp = true;
    o.rtcp_xr = true;
    o.rtcp_json = true;
    o.call_interval_us = 6000;
    SECTION("PCMA") { verify(o); }
    SECTION("Opus, whose codec only the SDP names") {
        o.codec = gen::VoiceCodec::opus;
        verify(o);
    }
}

// The acceptance corpus of issue 8. About 500,000 packets per run and three runs per mode.
TEST_CASE("acceptance: 5,000 calls on 100 re-used pairs and 100 re-used Call-IDs", "[shard][truth][acceptance]") {
    const auto mode = GENERATE(gen::MediaReuse::restart, gen::MediaReuse::continue_);
    INFO((mode == gen::MediaReuse::restart ? "restart" : "continue"));
    gen::CorpusOptions o;
    o.calls = 5000;
    o.stream_pairs = 100;
    o.call_ids = 100;
    o.media_reuse = mode;

    gen::Truth truth;
    const Outcome one = run(o, 1, &truth);
    REQUIRE(truth.streams.size() == 10'000);
    std::uint64_t lost = 0;
    for (const auto& s : truth.streams) lost += s.lost;
    REQUIRE(lost == 0);
    CHECK(one.queue_drops == 0);
    check_calls(truth, one);
    check_streams(o, truth, one, Expect{.mos_at_maximum = true});
    std::int64_t hepd_lost = 0;
    for (const auto& [id, r] : one.streams) hepd_lost += r.summary.lost;
    CHECK(hepd_lost == 0);
    for (std::size_t shards : {2, 4}) {
        INFO("shards " << shards);
        check_same(one, run(o, shards));
    }
}
