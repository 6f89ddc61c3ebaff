#include "app/pcap_command.hpp"

#include "app/pcap_progress.hpp"
#include "app/wiring.hpp"
#include "core/process_usage.hpp"
#include "pcap/split_reader.hpp"
#include "records/offline_records.hpp"
#include "report/collector.hpp"
#include "report/run_report.hpp"
#include "shard/pipeline.hpp"
#include "shard/shard_worker.hpp"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <thread>

namespace hepd::app {

namespace {

constexpr int kExitDataError = 65;  // EX_DATAERR

// The same lines the daemon writes (daemon/records), in record order.
bool write_records(const std::string& path, std::vector<std::unique_ptr<records::ShardEvents>>& shards) {
    std::vector<records::ShardEvents*> events;
    events.reserve(shards.size());
    for (auto& s : shards) events.push_back(s.get());
    records::OfflineResult result;
    const auto calls = records::join_offline(events, result);
    std::ofstream file;
    if (path != "-") file.open(path, std::ios::binary | std::ios::trunc);
    std::ostream& out = path == "-" ? std::cout : file;
    for (const auto& r : calls) out << records::record_line(r);
    out.flush();
    if (!out) {
        std::fprintf(stderr, "hepd: cannot write %s\n", path.c_str());
        return false;
    }
    return true;
}

}  // namespace

int run_pcap(const PcapArgs& args, const config::Config& cfg) {
    const auto wall0 = std::chrono::steady_clock::now();
    const double cpu0 = process_cpu_seconds();
    // --cores 0 means automatic, as for the daemon.
    const std::uint32_t shards = args.cores.value_or(0) != 0
                                     ? *args.cores
                                     : config::effective_shard_count(cfg.shards, std::thread::hardware_concurrency());

    peer::PeerDirectory peers;
    publish_peers(peers, cfg, intake::AgentMap{});  // offline, every packet is agent "other"
    auto sc = shard_config(cfg);
    sc.peers = &peers;
    sc.dialogs.keep_caller_identity = !args.records_path.empty();  // --records, not the file's records.enabled
    std::vector<std::unique_ptr<report::ShardCollector>> collectors;
    std::vector<std::unique_ptr<records::ShardEvents>> record_events;  // with --records
    std::vector<shard::ShardWorker*> workers;
    std::vector<std::unique_ptr<shard::Worker>> owned;
    for (std::uint32_t i = 0; i < shards; ++i) {
        collectors.push_back(std::make_unique<report::ShardCollector>(20));
        rtp::StreamSink* stream_sink = collectors.back().get();
        sip::DialogSink* dialog_sink = collectors.back().get();
        if (!args.records_path.empty()) {
            record_events.push_back(std::make_unique<records::ShardEvents>(stream_sink, dialog_sink, &peers));
            stream_sink = record_events.back().get();
            dialog_sink = record_events.back().get();
        }
        auto w = std::make_unique<shard::ShardWorker>(sc, stream_sink);
        w->dialogs().set_sink(dialog_sink);
        workers.push_back(w.get());
        owned.push_back(std::move(w));
    }
    shard::PipelineOptions po;
    po.shards = shards;
    // One shard: the datagrams go straight to it on this thread. Several: every shard's thread
    // reads the capture itself (Pipeline::run_readers), so the reading scales with the shards.
    po.producers = shards == 1 ? 1 : 0;
    po.lossless = true;  // a capture is read in full: nothing is dropped for speed
    po.batch_datagrams = cfg.shards.batch_size;
    shard::Pipeline pipeline(po, std::move(owned));

    PcapProgress progress(stderr, args.files);
    report::RunInfo info;
    info.files = args.files;
    info.shards = shards;
    pcap::CaptureStats capture;
    if (shards == 1) {
        const pcap::CaptureOptions options = capture_options(cfg);
        pcap::CaptureSource source(options);
        pipeline.start();
        auto& producer = pipeline.producer(0);
        Timestamp last{};
        std::uint64_t datagrams = 0;
        auto push = [&](const shard::Datagram& d) {
            ++datagrams;
            if (d.time > last) last = d.time;
            producer.push(d);
        };
        auto on_progress = [&](std::uint64_t offset, std::uint64_t size) { progress.update(offset, size, datagrams); };
        const pcap::CaptureSource::ProgressSink progress_sink(on_progress);
        for (std::size_t i = 0; i < args.files.size(); ++i) {
            progress.start_file(i);
            std::string message;
            // Opened here so that the producer knows its bytes (Producer::stable_input).
            const auto opened = pcap::FileReader::open(args.files[i], options.max_inflated_bytes);
            if (opened) producer.stable_input(opened->bytes());
            const pcap::FileError read = source.read_opened(args.files[i], opened, push, &message, &progress_sink);
            producer.end_input();  // before the bytes go with `opened`
            if (read != pcap::FileError::none) {
                info.error = message;
                break;
            }
        }
        source.finish();
        producer.flush();
        pipeline.finish(last);
        capture = source.stats();
    } else {
        // Every shard's thread reads: each decodes its share of the frames, and takes its own.
        pcap::SplitReader reader(args.files, shards, capture_options(cfg));
        struct Observer final : pcap::SplitReader::Observer {
            explicit Observer(PcapProgress& p) : line(p) {}
            void file_started(std::size_t index) override { line.start_file(index); }
            void progress(std::uint64_t offset, std::uint64_t size, std::uint64_t datagrams) override {
                line.update(offset, size, datagrams);
            }
            PcapProgress& line;
        } observer(progress);
        pipeline.run_readers([&](std::size_t shard, shard::Pipeline::Feed& feed) {
            reader.read(shard, feed, shard == 0 ? &observer : nullptr);
        });
        info.error = reader.error();
        capture = reader.stats();
    }
    if (!info.error.empty()) {
        progress.finish();
        std::fprintf(stderr, "hepd: %s\n", info.error.c_str());
    }
    progress.finish();
    // With one shard this thread did all the work; with several it only waited for the shards.
    info.reader_cpu_seconds = thread_cpu_seconds();
    info.shard_cpu_seconds = pipeline.shard_cpu_seconds();
    info.bindings_waiting_peak = pipeline.bindings_waiting_peak();
    info.table_bytes = shard::total_table_memory_bytes(workers);

    // The shard threads have ended: their tables and statistics are this thread's to read now.
    sip::DialogStats dialog_stats;
    rtp::StreamStats stream_stats;
    shard::DuplicateStats duplicate_stats;
    report::RunInputs inputs;
    for (std::uint32_t i = 0; i < shards; ++i) {
        collectors[i]->collect_remaining(workers[i]->dialogs());
        if (!record_events.empty()) record_events[i]->collect_remaining(workers[i]->dialogs());
        dialog_stats.merge(workers[i]->dialogs().stats());
        stream_stats.merge(workers[i]->streams().stats());
        duplicate_stats.merge(workers[i]->duplicate_stats());
        inputs.collectors.push_back(collectors[i].get());
    }
    inputs.capture = &capture;
    inputs.dialogs = &dialog_stats;
    inputs.streams = &stream_stats;
    inputs.duplicates = &duplicate_stats;
    info.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    info.cpu_seconds = process_cpu_seconds() - cpu0;
    // Read at the end, when the tables have reached their high-water mark (their storage is
    // kept for reuse, not returned). The anonymous part leaves out the mapped capture file.
    if (const auto usage = read_process_usage()) {
        info.peak_rss_bytes = usage->peak_resident_bytes;
        info.rss_anon_bytes = usage->resident_anon_bytes;
    }

    if (!args.records_path.empty() && !write_records(args.records_path, record_events)) return kExitDataError;

    const auto doc = report::build_report(info, inputs);
    if (args.report) {
        std::cout << report::render_text(doc);
    } else if (args.json_path != "-" && args.records_path != "-") {
        std::cout << report::render_summary(doc) << "\n";
    }
    if (!args.json_path.empty()) {
        if (args.json_path == "-") {
            std::cout << report::render_json(doc);
        } else {
            std::ofstream out(args.json_path);
            out << report::render_json(doc);
            if (!out) {
                std::fprintf(stderr, "hepd: cannot write %s\n", args.json_path.c_str());
                return kExitDataError;
            }
        }
    }
    return info.error.empty() ? 0 : kExitDataError;
}

}  // namespace hepd::app
