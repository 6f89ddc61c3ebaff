#include "app/pcap_command.hpp"

#include "app/pcap_progress.hpp"
#include "app/wiring.hpp"
#include "core/process_usage.hpp"
#include "records/offline_records.hpp"
#include "report/collector.hpp"
#include "report/run_report.hpp"
#include "shard/dispatch.hpp"
#include "shard/pipeline.hpp"
#include "shard/shard_worker.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
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

    // One source per reader; every reader sees the same input and the same errors, and the
    // first one's figures (progress, errors) speak for all. Each skips the plain media other
    // readers own (MediaSharing), so the capture statistics are the first one's with the
    // others' own media added.
    std::vector<std::unique_ptr<pcap::CaptureSource>> sources;
    for (std::uint32_t i = 0; i < shards; ++i)
        sources.push_back(std::make_unique<pcap::CaptureSource>(capture_options(cfg)));
    // Each file is opened (mapped, or inflated) once, by whichever reader comes first; every
    // reader walks its own clone of that opening, and the last one done lets it go.
    struct Opening {
        std::once_flag once;
        std::optional<Result<pcap::FileReader, pcap::FileError>> reader;
        std::atomic<std::size_t> done{0};
    };
    std::vector<Opening> openings(args.files.size());
    const auto open_file = [&](std::size_t i) -> const Result<pcap::FileReader, pcap::FileError>& {
        std::call_once(openings[i].once, [&] {
            openings[i].reader.emplace(pcap::FileReader::open(args.files[i], capture_options(cfg).max_inflated_bytes));
        });
        return *openings[i].reader;
    };
    PcapProgress progress(stderr, args.files);
    report::RunInfo info;
    info.files = args.files;
    info.shards = shards;
    // With several shards, `feed` is the reader's shard: it may hold its media in the file's own
    // bytes while the file is open.
    const auto read_input = [&](std::size_t reader, const auto& push, shard::Pipeline::Feed* feed) {
        pcap::CaptureSource& source = *sources[reader];
        std::uint64_t datagrams = 0;
        auto sink = [&](const shard::Datagram& d) {
            ++datagrams;
            push(d);
        };
        auto on_progress = [&](std::uint64_t offset, std::uint64_t size) { progress.update(offset, size, datagrams); };
        const pcap::CaptureSource::ProgressSink progress_sink(on_progress);
        auto passed = [&](Timestamp time) {
            ++datagrams;
            feed->pass(time);
        };
        auto kept = [&](const shard::Datagram& d) {
            ++datagrams;
            feed->push_own(d);
        };
        const pcap::MediaSharing sharing{reader, shards, passed, kept};
        if (feed != nullptr) source.share_media(&sharing);
        for (std::size_t i = 0; i < args.files.size(); ++i) {
            const std::string& path = args.files[i];
            if (reader == 0) progress.start_file(i);
            std::string message;
            const auto& opened = open_file(i);
            if (opened && feed != nullptr) feed->stable_input(opened->bytes());
            const auto err = source.read_opened(path, opened, sink, &message, reader == 0 ? &progress_sink : nullptr);
            if (feed != nullptr) feed->end_input();
            if (openings[i].done.fetch_add(1, std::memory_order_acq_rel) + 1 == sources.size())
                openings[i].reader.reset();
            if (err != pcap::FileError::none) {
                if (reader == 0) {
                    // The reader's message names the file already.
                    info.error = message.empty() ? path + ": " + std::string(pcap::to_string(err)) : message;
                    progress.finish();
                    std::fprintf(stderr, "hepd: %s\n", info.error.c_str());
                }
                break;
            }
        }
        source.finish();
        source.share_media(nullptr);
    };
    if (shards == 1) {
        pipeline.start();
        auto& producer = pipeline.producer(0);
        Timestamp last{};
        read_input(
            0,
            [&](const shard::Datagram& d) {
                if (d.time > last) last = d.time;
                producer.push(d);
            },
            nullptr);
        producer.flush();
        pipeline.finish(last);
    } else {
        pipeline.run_readers([&](std::size_t shard, shard::Pipeline::Feed& feed) {
            read_input(
                shard, [&](const shard::Datagram& d) { feed.push(d); }, &feed);
        });
    }
    progress.finish();
    // With one shard this thread did all the work; with several it only waited for the shards.
    info.reader_cpu_seconds = thread_cpu_seconds();
    info.shard_cpu_seconds = pipeline.shard_cpu_seconds();
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
    auto capture = sources[0]->stats();
    for (std::size_t i = 1; i < sources.size(); ++i) capture.add_frames(sources[i]->owned_media());
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
            std::cout << doc.dump(2) << "\n";
        } else {
            std::ofstream out(args.json_path);
            out << doc.dump(2) << "\n";
            if (!out) {
                std::fprintf(stderr, "hepd: cannot write %s\n", args.json_path.c_str());
                return kExitDataError;
            }
        }
    }
    return info.error.empty() ? 0 : kExitDataError;
}

}  // namespace hepd::app
