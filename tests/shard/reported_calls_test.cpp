// An rtpengine estate as hepd sees it: SIP and RTCP-JSON reports, no RTP. Through 1, 2 and 4
// shards: every report joins its call, every reported stream finishes into the statistics under
// source="rtcp" with its dialog and codec, and once the dialogs leave their tables the end of
// their bindings reaches the shards that own the media addresses, so that none stays pending.
#include "gen/call_generator.hpp"
#include "shard/dispatch.hpp"
#include "shard/pipeline.hpp"
#include "shard/shard_worker.hpp"

#include <catch2/catch.hpp>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

using namespace hepd;

namespace {

struct Reported {
    rtp::ReportedStream stream;
    std::string reason;
};

class Recorder final : public rtp::StreamSink {
public:
    void on_stream_finished(const rtp::FinishedStream&) override { ++measured; }
    void on_reported_stream_finished(const rtp::FinishedReported& f) override {
        reported[{std::string(f.key.call_id.view()), f.key.ssrc}].push_back(
            {f.stream, std::string(rtp::to_string(f.reason))});
    }
    std::map<std::pair<std::string, std::uint32_t>, std::vector<Reported>> reported;
    std::uint64_t measured = 0;
};

struct Outcome {
    std::map<std::pair<std::string, std::uint32_t>, std::vector<Reported>> reported;
    std::uint64_t measured = 0;
    std::size_t pending = 0;
    std::size_t bindings = 0;
    std::size_t dialogs = 0;
    rtp::StreamStats streams;
    std::uint64_t bindings_sent = 0, bindings_received = 0;
    std::uint64_t unbinds_sent = 0, unbinds_received = 0;
};

constexpr std::int64_t kIdleUs = 5'000'000;

// `after_us` after the last generated packet, every shard sees one more datagram: its clock
// moves past the dialogs' linger and (unless `idle_us` is longer) the streams' idle timeout.
Outcome run(const gen::CorpusOptions& o, std::size_t shards, std::int64_t after_us, gen::Truth& truth,
            std::int64_t idle_us = kIdleUs) {
    shard::ShardConfig config;
    config.streams.stream_idle_timeout_us = idle_us;
    std::vector<std::unique_ptr<Recorder>> recorders;
    std::vector<shard::ShardWorker*> workers;
    std::vector<std::unique_ptr<shard::Worker>> owned;
    for (std::size_t i = 0; i < shards; ++i) {
        recorders.push_back(std::make_unique<Recorder>());
        auto w = std::make_unique<shard::ShardWorker>(config, recorders.back().get());
        workers.push_back(w.get());
        owned.push_back(std::move(w));
    }
    shard::PipelineOptions po;
    po.shards = shards;
    po.lossless = true;
    po.queue_batches = 8;
    po.batch_datagrams = 64;
    shard::Pipeline pipeline(po, std::move(owned));
    pipeline.start();
    Timestamp last{};
    truth = gen::generate(
        o, [&](Timestamp t, const Endpoint& s, const Endpoint& d, ByteSpan p, const gen::PacketInfo& info) {
            last = t;
            if (info.kind == gen::PacketKind::rtp || info.kind == gen::PacketKind::rtcp) return;  // rtpengine's view
            shard::Datagram dg;
            dg.time = t;
            dg.src = s;
            dg.dst = d;
            dg.kind = info.kind == gen::PacketKind::sip ? PayloadClass::sip : PayloadClass::rtcp_json;
            if (info.kind == gen::PacketKind::rtcp_json) dg.hep_payload_type = 5;
            dg.correlation_id = info.correlation_id;
            dg.payload = p;
            pipeline.producer(0).push(dg);
        });
    const Timestamp later{last.us + after_us};
    std::vector<std::string> ids;
    for (std::size_t s = 0; s < shards; ++s) {
        for (int k = 0;; ++k) {
            shard::Datagram tick;
            tick.time = later;
            tick.kind = PayloadClass::log;
            std::string id = "tick-" + std::to_string(k);
            tick.correlation_id = id;
            if (shard::shard_of(tick, shards) != s) continue;
            ids.push_back(std::move(id));
            tick.correlation_id = ids.back();
            pipeline.producer(0).push(tick);
            break;
        }
    }
    pipeline.producer(0).flush();
    pipeline.finish(later);

    Outcome out;
    for (std::size_t i = 0; i < shards; ++i) {
        for (auto& [k, v] : recorders[i]->reported) out.reported[k].insert(out.reported[k].end(), v.begin(), v.end());
        out.measured += recorders[i]->measured;
        out.pending += workers[i]->streams().pending_size();
        out.bindings += workers[i]->streams().bindings_size();
        out.dialogs += workers[i]->dialogs().size();
        out.streams.merge(workers[i]->streams().stats());
        out.bindings_sent += workers[i]->stats().bindings_sent.value();
        out.bindings_received += workers[i]->stats().bindings_received.value();
        out.unbinds_sent += workers[i]->stats().unbinds_sent.value();
        out.unbinds_received += workers[i]->stats().unbinds_received.value();
    }
    return out;
}

gen::CorpusOptions corpus() {
    gen::CorpusOptions o;
    o.calls = 60;
    o.media_seconds = 3.0;
    o.loss_percent = 4;
    o.jitter_ms = 8;
    o.failed_percent = 10;
    o.cancelled_percent = 10;
    o.call_interval_us = 20'000;
    o.rtcp_json = true;
    o.stream_idle_timeout_us = kIdleUs;
    return o;
}

}  // namespace

TEST_CASE("RTCP-JSON-only calls: reported streams finish into the statistics, bindings go with their dialogs",
          "[shard][rtcp_json][unbind]") {
    const gen::CorpusOptions o = corpus();
    gen::Truth truth;
    // 40 s: past the 32 s dialog linger and the 5 s stream idle timeout.
    const Outcome one = run(o, 1, 40'000'000, truth);

    std::size_t reported_truth = 0;
    for (const auto& s : truth.streams)
        if (s.has_receiver) ++reported_truth;
    REQUIRE(reported_truth > 0);
    CHECK(one.measured == 0);
    CHECK(one.reported.size() == reported_truth);
    for (const auto& s : truth.streams) {
        if (!s.has_receiver) continue;
        INFO(s.call_id << " SSRC " << s.ssrc);
        const auto it = one.reported.find({s.call_id, s.ssrc});
        REQUIRE(it != one.reported.end());
        REQUIRE(it->second.size() == 1);
        const Reported& r = it->second.front();
        CHECK(r.reason == "idle");
        CHECK(r.stream.view.reports == s.receiver.reports);
        CHECK(r.stream.view.cumulative_lost == s.receiver.cumulative_lost);
        CHECK(r.stream.view.jitter == s.receiver.jitter);
        CHECK(r.stream.dialog != 0);                   // linked to its dialog
        CHECK(r.stream.codec != rtp::Codec::unknown);  // and to the codec of its SDP
    }
    const rtp::ReportedStreamStats& rs = one.streams.reported;
    CHECK(rs.finished_total() == reported_truth);
    CHECK(rs.mos.count() == reported_truth);
    CHECK(rs.jitter_seconds.count() == reported_truth);
    CHECK(rs.loss_ratio.count() == reported_truth);
    CHECK(rs.rtt_seconds.count() > 0);
    CHECK(one.streams.streams_finished_total() == 0);

    // Every dialog left its table, and with it every binding of its SDP.
    CHECK(one.dialogs == 0);
    CHECK(one.pending == 0);
    CHECK(one.bindings == 0);
    CHECK(one.streams.pending_bindings.value() == 0);
    CHECK(one.streams.pending_bindings_expired.value() == 0);
    CHECK(one.streams.bindings_released.value() > 0);
    CHECK(one.unbinds_sent > 0);
    CHECK(one.unbinds_received == one.unbinds_sent);

    for (const std::size_t n : {2, 4}) {
        INFO(n << " shards");
        gen::Truth again;
        const Outcome many = run(o, n, 40'000'000, again);
        CHECK(many.reported.size() == one.reported.size());
        for (const auto& [key, list] : one.reported) {
            const auto it = many.reported.find(key);
            REQUIRE(it != many.reported.end());
            REQUIRE(it->second.size() == list.size());
            CHECK(it->second.front().stream == list.front().stream);
        }
        CHECK(many.pending == 0);
        CHECK(many.bindings == 0);
        CHECK(many.streams.pending_bindings.value() == 0);
        CHECK(many.streams.bindings_released.value() == one.streams.bindings_released.value());
        CHECK(many.unbinds_sent == one.unbinds_sent);
        CHECK(many.unbinds_received == many.unbinds_sent);
        CHECK(many.bindings_received == many.bindings_sent);
        CHECK(many.streams.reported.mos.count() == rs.mos.count());
        CHECK(many.streams.reported.mos.sum() == Approx(rs.mos.sum()));
    }
}

TEST_CASE("before the linger ends the bindings stay: late reports and packets still find their call",
          "[shard][unbind]") {
    const gen::CorpusOptions o = corpus();
    gen::Truth truth;
    // 10 s: the streams are idle, the dialogs still linger (32 s).
    const Outcome early = run(o, 2, 10'000'000, truth);
    CHECK(early.dialogs > 0);
    CHECK(early.unbinds_sent == 0);
    CHECK(early.pending > 0);
    CHECK(early.streams.bindings_released.value() == 0);
}

TEST_CASE("a dialog's end finishes its reported streams (call_ended) on the shard of their reporter",
          "[shard][rtcp_json][unbind]") {
    const gen::CorpusOptions o = corpus();
    gen::Truth truth;
    const Outcome by_idle = run(o, 1, 40'000'000, truth);
    REQUIRE(!by_idle.reported.empty());
    // Idle timeout 60 s: at 40 s the dialogs have left their tables (32 s linger), the reported
    // streams have not gone idle.
    for (const std::size_t n : {1, 2, 4}) {
        INFO(n << " shards");
        gen::Truth again;
        const Outcome ended = run(o, n, 40'000'000, again, 60'000'000);
        CHECK(ended.reported.size() == by_idle.reported.size());
        for (const auto& [key, list] : by_idle.reported) {
            INFO(key.first << " SSRC " << key.second);
            const auto it = ended.reported.find(key);
            REQUIRE(it != ended.reported.end());
            REQUIRE(it->second.size() == 1);  // once
            CHECK(it->second.front().reason == "call_ended");
            CHECK(it->second.front().stream == list.front().stream);  // with the same figures
        }
        const rtp::ReportedStreamStats& rs = ended.streams.reported;
        CHECK(rs.finished[static_cast<std::size_t>(rtp::FinishReason::call_ended)].value() == by_idle.reported.size());
        CHECK(rs.finished_total() == by_idle.reported.size());
        CHECK(rs.mos.count() == by_idle.streams.reported.mos.count());
        CHECK(rs.mos.sum() == Approx(by_idle.streams.reported.mos.sum()));
        CHECK(ended.streams.reported_streams_active.value() == 0);
        CHECK(ended.bindings == 0);
        CHECK(ended.unbinds_received == ended.unbinds_sent);
    }
}
