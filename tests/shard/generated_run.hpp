#pragma once
// Generated calls through real shards: the generator's packets into a lossless pipeline of 1 or
// more ShardWorkers, and everything the run leaves behind, keyed so that runs with different
// shard counts compare. Shared by the ground-truth tests of this folder.
#include "gen/call_generator.hpp"
#include "pcap/capture_source.hpp"
#include "report/collector.hpp"
#include "report/run_report.hpp"
#include "shard/pipeline.hpp"
#include "shard/shard_worker.hpp"

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

namespace hepd::test {

using StreamId = std::tuple<Endpoint, Endpoint, std::uint32_t, std::int64_t>;  // src, dst, SSRC, first packet
using DialogId = std::pair<std::string, std::string>;                          // Call-ID, From-tag
using ReportedId = std::pair<std::string, std::uint32_t>;                      // Call-ID, SSRC

struct StreamRecord {
    rtp::Stream stream;
    rtp::StreamSummary summary;
    std::string call_id;
    std::string reason;

    // The summary is derived from the stream and its binding: comparing it adds nothing.
    friend bool operator==(const StreamRecord& a, const StreamRecord& b) {
        return a.stream == b.stream && a.call_id == b.call_id && a.reason == b.reason;
    }
};

// Everything a run leaves behind, keyed so that runs with different shard counts compare.
struct Outcome {
    std::map<DialogId, sip::Dialog> dialogs;
    std::map<StreamId, StreamRecord> streams;
    std::uint64_t stream_records = 0;  // finished streams reported (a repeated key would hide one)
    // Receiver views from RTCP-JSON that today's table keeps apart from the measured streams.
    std::map<ReportedId, std::vector<rtp::ReportedStream>> reported;
    std::uint64_t queue_drops = 0;
    shard::DuplicateStats duplicates;  // merged over shards (also in the report)
    nlohmann::json report;
};

// Two capture agents mirroring every packet: the first (capture id 1) sends it at its time, the
// second (capture id 2) `delay_us` later; the shards' duplicate filter has `window_us`.
struct Mirror {
    std::int64_t delay_us = 300;
    std::int64_t window_us = 50'000;
};

class Recorder final : public rtp::StreamSink, public sip::DialogSink {
public:
    void on_stream_finished(const rtp::FinishedStream& f) override {
        const StreamId id{f.key.src, f.key.dst, f.key.ssrc, f.stream.first.us};
        streams[id] =
            StreamRecord{f.stream, f.summary, f.binding ? std::string(f.binding->call_id.view()) : std::string(),
                         std::string(rtp::to_string(f.reason))};
        ++records;
        collector.on_stream_finished(f);
    }
    void on_reported_stream_finished(const rtp::FinishedReported& f) override {
        reported[{std::string(f.key.call_id.view()), f.key.ssrc}].push_back(f.stream);
    }
    void on_dialog_removed(std::string_view call_id, std::string_view from_tag, const sip::Dialog& d,
                           const sip::CallerIdentity& caller, bool evicted) override {
        dialogs[{std::string(call_id), std::string(from_tag)}] = d;
        collector.on_dialog_removed(call_id, from_tag, d, caller, evicted);
    }
    std::map<DialogId, sip::Dialog> dialogs;
    std::map<StreamId, StreamRecord> streams;
    std::map<ReportedId, std::vector<rtp::ReportedStream>> reported;
    std::uint64_t records = 0;
    report::ShardCollector collector;
};

inline PayloadClass kind_of(gen::PacketKind k) {
    switch (k) {
    case gen::PacketKind::sip: return PayloadClass::sip;
    case gen::PacketKind::rtp: return PayloadClass::rtp;
    case gen::PacketKind::rtcp: return PayloadClass::rtcp;
    case gen::PacketKind::rtcp_json: return PayloadClass::rtcp_json;
    }
    return PayloadClass::other;
}

// The collector configuration a corpus assumes (its stream idle timeout).
inline shard::ShardConfig config_for(const gen::CorpusOptions& o) {
    shard::ShardConfig config;
    config.streams.stream_idle_timeout_us = o.stream_idle_timeout_us;
    return config;
}

// How the input reaches several shards: every shard reads it itself (Pipeline::run_readers, as
// `hepd pcap` does), or one producer routes it to them (ordered mode).
enum class Intake { reader_per_shard, one_producer };

// The generated input, in input order, to `push` (each call generates it afresh: the generator
// is deterministic).
template <class Push>
gen::Truth generate_input(const gen::CorpusOptions& options, const Mirror* mirror, Push&& push) {
    // The second agent's copies, queued in time order with their own bytes.
    struct Copy {
        shard::Datagram datagram;
        std::vector<std::uint8_t> bytes;
        std::string correlation_id;
    };
    std::deque<Copy> copies;
    auto push_copies_until = [&](Timestamp t) {
        while (!copies.empty() && copies.front().datagram.time <= t) {
            Copy& c = copies.front();
            c.datagram.payload = ByteSpan(c.bytes.data(), c.bytes.size());
            c.datagram.correlation_id = c.correlation_id;
            push(c.datagram);
            copies.pop_front();
        }
    };
    auto truth = gen::generate(
        options, [&](Timestamp t, const Endpoint& s, const Endpoint& d, ByteSpan p, const gen::PacketInfo& info) {
            push_copies_until(t);
            shard::Datagram dg;
            dg.time = t;
            dg.src = s;
            dg.dst = d;
            dg.kind = kind_of(info.kind);
            if (info.kind == gen::PacketKind::rtcp_json) dg.hep_payload_type = 5;
            dg.correlation_id = info.correlation_id;
            dg.payload = p;
            if (mirror != nullptr) {
                dg.capture_id = 1;
                dg.from_agent = true;
            }
            push(dg);
            if (mirror != nullptr) {
                Copy c{dg, std::vector<std::uint8_t>(p.begin(), p.end()), std::string(info.correlation_id)};
                c.datagram.capture_id = 2;
                c.datagram.time = Timestamp{t.us + mirror->delay_us};
                copies.push_back(std::move(c));
            }
        });
    push_copies_until(Timestamp{INT64_MAX});
    return truth;
}

inline Outcome run(const gen::CorpusOptions& options, std::size_t shards, gen::Truth* truth_out = nullptr,
                   const Mirror* mirror = nullptr, Intake intake = Intake::reader_per_shard) {
    shard::ShardConfig config = config_for(options);
    if (mirror != nullptr) config.duplicates.window_us = mirror->window_us;
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
    const bool readers = shards > 1 && intake == Intake::reader_per_shard;
    if (readers) po.producers = 0;
    shard::Pipeline pipeline(po, std::move(owned));
    gen::Truth truth;
    if (readers) {
        pipeline.run_readers([&](std::size_t shard, shard::Pipeline::Feed& feed) {
            auto t = generate_input(options, mirror, [&](const shard::Datagram& d) { feed.push(d); });
            if (shard == 0) truth = std::move(t);
        });
    } else {
        pipeline.start();
        Timestamp last{};
        truth = generate_input(options, mirror, [&](const shard::Datagram& d) {
            pipeline.producer(0).push(d);
            if (d.time > last) last = d.time;
        });
        pipeline.producer(0).flush();
        pipeline.finish(last);
    }

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
        out.stream_records += r.records;
        for (auto& [k, v] : r.reported) out.reported[k].insert(out.reported[k].end(), v.begin(), v.end());
        ds.merge(workers[i]->dialogs().stats());
        ss.merge(workers[i]->streams().stats());
        out.duplicates.merge(workers[i]->duplicate_stats());
        inputs.collectors.push_back(&r.collector);
    }
    inputs.capture = &capture;
    inputs.dialogs = &ds;
    inputs.streams = &ss;
    inputs.duplicates = &out.duplicates;
    report::RunInfo info;
    out.report = report::build_report(info, inputs);
    out.report.erase("shards");
    out.report.erase("run");
    out.queue_drops = pipeline.queue_full_drops();
    if (truth_out != nullptr) *truth_out = std::move(truth);
    return out;
}

}  // namespace hepd::test
