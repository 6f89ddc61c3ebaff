// Ground truth: generated calls with known answers go through the real shards (1, 2 and 4 of
// them) and must come out exactly as the generator says, identically for every shard count.
#include "gen/call_generator.hpp"
#include "report/collector.hpp"
#include "report/run_report.hpp"
#include "shard/pipeline.hpp"
#include "shard/shard_worker.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

using namespace hepd;

namespace {

using StreamId = std::tuple<Endpoint, Endpoint, std::uint32_t>;

// Everything a run leaves behind, keyed so that runs with different shard counts compare.
struct Outcome {
    std::map<std::pair<std::string, std::string>, sip::Dialog> dialogs;
    std::map<StreamId, rtp::Stream> streams;
    std::map<StreamId, rtp::StreamSummary> summaries;
    std::map<StreamId, std::string> stream_calls;
    std::uint64_t queue_drops = 0;
    nlohmann::json report;
};

class Recorder final : public rtp::StreamSink, public sip::DialogSink {
public:
    void on_stream_finished(const rtp::FinishedStream& f) override {
        const StreamId id{f.key.src, f.key.dst, f.key.ssrc};
        streams[id] = f.stream;
        summaries[id] = f.summary;
        stream_calls[id] = f.binding ? f.binding->call_id : std::string();
        collector.on_stream_finished(f);
    }
    void on_dialog_removed(std::string_view call_id, std::string_view from_tag, const sip::Dialog& d,
                           bool evicted) override {
        dialogs[{std::string(call_id), std::string(from_tag)}] = d;
        collector.on_dialog_removed(call_id, from_tag, d, evicted);
    }
    std::map<std::pair<std::string, std::string>, sip::Dialog> dialogs;
    std::map<StreamId, rtp::Stream> streams;
    std::map<StreamId, rtp::StreamSummary> summaries;
    std::map<StreamId, std::string> stream_calls;
    report::ShardCollector collector;
};

Outcome run(const gen::CorpusOptions& options, std::size_t shards, gen::Truth* truth_out = nullptr,
            shard::ShardConfig config = {}) {
    std::vector<std::unique_ptr<Recorder>> recorders;
    std::vector<shard::ShardWorker*> workers;
    std::vector<std::unique_ptr<shard::Worker>> owned;
    for (std::size_t i = 0; i < shards; ++i) {
        recorders.push_back(std::make_unique<Recorder>());
        auto w = std::make_unique<shard::ShardWorker>(config, recorders.back().get());
        w->dialogs().set_sink(recorders.back().get());
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
    const auto truth = gen::generate(options, [&](Timestamp t, const Endpoint& s, const Endpoint& d, ByteSpan p) {
        shard::Datagram dg;
        dg.time = t;
        dg.src = s;
        dg.dst = d;
        dg.kind = (d.port == 5060 || s.port == 5060) ? shard::PayloadKind::sip : shard::PayloadKind::rtp;
        dg.payload = p;
        pipeline.producer(0).push(dg);
        last = t;
    });
    pipeline.producer(0).flush();
    pipeline.finish(last);

    Outcome out;
    sip::DialogStats ds;
    rtp::StreamStats ss;
    report::RunInputs inputs;
    pcap::CaptureStats capture;
    for (std::size_t i = 0; i < shards; ++i) {
        auto& r = *recorders[i];
        workers[i]->dialogs().for_each([&](std::string_view c, std::string_view f, const sip::Dialog& d) {
            r.dialogs[{std::string(c), std::string(f)}] = d;
        });
        r.collector.collect_remaining(workers[i]->dialogs());
        out.dialogs.insert(r.dialogs.begin(), r.dialogs.end());
        out.streams.insert(r.streams.begin(), r.streams.end());
        out.summaries.insert(r.summaries.begin(), r.summaries.end());
        out.stream_calls.insert(r.stream_calls.begin(), r.stream_calls.end());
        ds.merge(workers[i]->dialogs().stats());
        ss.merge(workers[i]->streams().stats());
        inputs.collectors.push_back(&r.collector);
    }
    inputs.capture = &capture;
    inputs.dialogs = &ds;
    inputs.streams = &ss;
    report::RunInfo info;
    out.report = report::build_report(info, inputs);
    out.report.erase("shards");
    out.report.erase("run");
    out.queue_drops = pipeline.queue_full_drops();
    if (truth_out != nullptr) *truth_out = truth;
    return out;
}

} // namespace

TEST_CASE("generated calls reconstruct exactly, with 1, 2 and 4 shards alike", "[shard][truth]") {
    gen::CorpusOptions o;
    o.calls = 300;
    o.media_seconds = 2.0;
    o.loss_percent = 3;
    o.duplicate_percent = 1;
    o.reorder_percent = 2;
    o.jitter_ms = 6;
    o.failed_percent = 10;
    o.cancelled_percent = 10;
    o.call_interval_us = 7000;

    gen::Truth truth;
    const Outcome one = run(o, 1, &truth);
    REQUIRE(one.queue_drops == 0);

    // Dialogs: every call, with its outcome, PDD, setup and duration to the microsecond.
    REQUIRE(one.dialogs.size() == truth.calls.size());
    for (const auto& call : truth.calls) {
        const auto it = one.dialogs.find({call.call_id, call.from_tag});
        REQUIRE(it != one.dialogs.end());
        const sip::Dialog& d = it->second;
        INFO(call.call_id);
        CHECK(d.pdd_us() == call.pdd_us);
        CHECK(d.final_status == call.final_code);
        switch (call.outcome) {
        case gen::CallOutcome::completed:
            CHECK(d.outcome() == sip::DialogOutcome::completed);
            CHECK(d.setup_us() == call.setup_us);
            CHECK(d.duration_us() == call.duration_us);
            break;
        case gen::CallOutcome::failed:
            CHECK(d.outcome() == sip::DialogOutcome::failed);
            CHECK(d.q850_cause == 17);
            break;
        case gen::CallOutcome::cancelled: CHECK(d.outcome() == sip::DialogOutcome::cancelled); break;
        }
    }

    // Streams: exact loss and duplicates, joined to their call, jitter within 1 % of RFC 3550.
    REQUIRE(one.streams.size() == truth.streams.size());
    for (const auto& st : truth.streams) {
        const StreamId id{st.src, st.dst, st.ssrc};
        const auto it = one.summaries.find(id);
        REQUIRE(it != one.summaries.end());
        INFO(st.call_id << " ssrc " << st.ssrc);
        CHECK(it->second.lost == static_cast<std::int64_t>(st.lost) - static_cast<std::int64_t>(st.duplicates));
        CHECK(one.streams.at(id).duplicates == st.duplicates);
        CHECK(one.stream_calls.at(id) == st.call_id);
        CHECK(it->second.jitter_ms == Approx(st.jitter_ms).epsilon(0.01).margin(1e-6));
    }

    // The same input through 2 and 4 shards: identical records and identical statistics.
    for (std::size_t shards : {2, 4}) {
        const Outcome many = run(o, shards);
        INFO("shards " << shards);
        CHECK(many.queue_drops == 0);
        CHECK(many.dialogs == one.dialogs);
        CHECK(many.streams == one.streams);
        CHECK(many.stream_calls == one.stream_calls);
        CHECK(many.report == one.report);
        if (many.report != one.report) WARN(nlohmann::json::diff(one.report, many.report).dump(1));
    }
}

TEST_CASE("a flood of unique calls beyond the caps keeps memory flat and counts evictions", "[shard][limits]") {
    shard::ShardConfig config;
    config.dialogs.max_dialogs = 200;
    config.streams.max_streams = 300;
    config.streams.max_pending_media = 300;
    gen::CorpusOptions o;
    o.calls = 3000;
    o.media_seconds = 0.2;
    o.call_interval_us = 1000;  // ~1,500 calls overlap: far beyond the caps

    std::size_t memory_small = 0;
    std::size_t memory_large = 0;
    for (std::uint32_t calls : {1500U, 3000U}) {
        o.calls = calls;
        std::vector<std::unique_ptr<shard::Worker>> owned;
        auto w = std::make_unique<shard::ShardWorker>(config);
        auto* worker = w.get();
        owned.push_back(std::move(w));
        shard::Pipeline pipeline({}, std::move(owned));
        std::size_t peak = 0;
        std::uint64_t n = 0;
        gen::generate(o, [&](Timestamp t, const Endpoint& s, const Endpoint& d, ByteSpan p) {
            shard::Datagram dg;
            dg.time = t;
            dg.src = s;
            dg.dst = d;
            dg.kind = (d.port == 5060 || s.port == 5060) ? shard::PayloadKind::sip : shard::PayloadKind::rtp;
            dg.payload = p;
            pipeline.producer(0).push(dg);
            if (++n % 1000 == 0)
                peak = std::max(peak, worker->dialogs().memory_bytes() + worker->streams().memory_bytes());
            REQUIRE(worker->dialogs().size() <= 200);
            REQUIRE(worker->streams().size() <= 300);
        });
        const auto& ds = worker->dialogs().stats();
        const auto& ss = worker->streams().stats();
        CHECK(ds.dialog_evictions.value() > 0);
        CHECK(ds.finished(sip::DialogOutcome::evicted) > 0);
        CHECK(ss.evictions[static_cast<std::size_t>(rtp::StreamTableKind::streams)].value() > 0);
        // Every dialog created is still in the table or was counted leaving it.
        std::uint64_t finished = 0;
        for (const auto& c : ds.dialogs_finished) finished += c.value();
        CHECK(ds.dialogs_created.value() >= calls);
        CHECK(worker->dialogs().size() <= ds.dialogs_created.value());
        (calls == 1500 ? memory_small : memory_large) = peak;
    }
    // Twice the calls, same memory: the tables are capped, not growing.
    CHECK(memory_large <= memory_small + memory_small / 10);
}
