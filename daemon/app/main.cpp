// hepd: command line, configuration, wiring of listeners, signals. The only code tests do not
// link; they run the built binary instead.
#include "app/cli.hpp"
#include "app/pcap_command.hpp"
#include "app/wiring.hpp"
#include "config/config.hpp"
#include "core/log.hpp"
#include "core/version.hpp"
#include "hep/payload_type.hpp"
#include "intake/hep_intake.hpp"
#include "ingest/ingest_control.hpp"
#include "ingest/ingest_path.hpp"
#include "ingest/listeners.hpp"
#include "ingest/producer_sink.hpp"
#include "ingest/udp_receiver.hpp"
#include "export/collector.hpp"
#include "export/exporter.hpp"
#include "shard/pipeline.hpp"
#include "shard/shard_worker.hpp"
#include "snapshot/snapshot.hpp"

#include <boost/asio.hpp>
#include <spdlog/spdlog.h>
#ifdef HEPD_WITH_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <thread>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

namespace {

using namespace hepd;

constexpr int kExitUsage = 64;     // EX_USAGE
constexpr int kExitUnavailable = 69;  // EX_UNAVAILABLE: cannot bind a listener
constexpr int kExitDataError = 65;    // EX_DATAERR: a file that is not what it should be
constexpr int kExitCantCreate = 73;   // EX_CANTCREAT: unusable state directory

config::Config load_config(const app::CommandLine& cl) {
    config::Config cfg = cl.config_path.empty() ? config::defaults() : config::load_file(cl.config_path);
    // A repeated --hep-listen builds one list; every other flag sets its key once more.
    std::string listen;
    for (const auto& o : cl.overrides) {
        if (o.key == "hep.listen") {
            listen += (listen.empty() ? "" : ",") + o.value;
        } else {
            config::apply_override(cfg, o.key, o.value, o.flag);
        }
    }
    if (!listen.empty()) config::apply_override(cfg, "hep.listen", listen, "--hep-listen");
    return cfg;
}

void log_summary(const intake::IntakeStats& s, std::string_view when) {
    std::uint64_t decode_errors = 0;
    for (const auto& n : s.decode_errors) decode_errors += n.value();
    spdlog::info("{}: {} HEP packets received, {} accepted (sip {}, rtcp {}, rtcp_json {}, qos {}, log {}, other {}), "
                 "{} decode errors, {} dropped by the rate limit, {} dropped for auth, {} not allowed",
                 when, s.received(), s.accepted(), s.by_class(PayloadClass::sip), s.by_class(PayloadClass::rtcp),
                 s.by_class(PayloadClass::rtcp_json), s.by_class(PayloadClass::qos), s.by_class(PayloadClass::log),
                 s.by_class(PayloadClass::other), decode_errors, s.drops(intake::DropReason::rate_limit),
                 s.drops(intake::DropReason::auth), s.drops(intake::DropReason::not_allowed));
}

// SIGHUP: re-read the file and apply what can change live; say what could not.
void reload(const std::string& path, config::Config& current, ingest::IngestControl& control) {
    if (path.empty()) {
        spdlog::warn("SIGHUP: no --config file to reload (running on the embedded defaults)");
        return;
    }
    config::Config next;
    try {
        next = config::load_file(path);
    } catch (const config::ConfigError& e) {
        spdlog::error("SIGHUP: configuration not reloaded: {}", e.what());
        return;
    }
    control.update(app::ingest_policy(next));
    set_log_level(config::to_string(next.log_level));
    std::vector<std::string> fixed;
    if (!(next.hep.listen == current.hep.listen && next.hep.udp == current.hep.udp && next.hep.tcp == current.hep.tcp))
        fixed.emplace_back("hep listeners");
    if (!(next.metrics == current.metrics)) fixed.emplace_back("metrics");
    if (!(next.state == current.state)) fixed.emplace_back("state");
    if (!(next.shards == current.shards) || !(next.tables == current.tables) || !(next.timers == current.timers))
        fixed.emplace_back("shards, tables and timers");
    if (!(next.hep.payload_types == current.hep.payload_types) ||
        next.hep.max_decompressed_bytes != current.hep.max_decompressed_bytes ||
        next.hep.clock_offset_limit != current.hep.clock_offset_limit)
        fixed.emplace_back("payload types, decompression cap and clock offset limit");
    spdlog::info("SIGHUP: reloaded rate limits, auth key, allow list, agent names and log level from {}", path);
    if (!fixed.empty()) {
        std::string list;
        for (const auto& f : fixed) list += (list.empty() ? "" : ", ") + f;
        spdlog::warn("SIGHUP: changes to {} need a restart and were not applied", list);
    }
    const auto keep = current;
    current = keep;
    current.hep.rate_limit = next.hep.rate_limit;
    current.hep.auth_key = next.hep.auth_key;
    current.hep.allow = next.hep.allow;
    current.agents = next.agents;
    current.log_level = next.log_level;
}

// Snapshot bookkeeping shared with the scrape threads.
struct SnapshotState {
    std::atomic<double> last_duration_seconds{0};
    std::atomic<std::uint64_t> failures{0};
    std::atomic<double> last_success_unix_seconds{0};
    std::atomic<bool> writing{false};
};

void notify_systemd(const char* state) {
#ifdef HEPD_WITH_SYSTEMD
    sd_notify(0, state);
#else
    (void)state;
#endif
}

// Writes the images on the calling thread; updates the figures the exporter reads.
void write_images(const std::vector<snapshot::ShardImage>& images, const std::string& path, SnapshotState& st,
                  const Clock& wall) {
    const auto t0 = std::chrono::steady_clock::now();
    snapshot::SnapshotMeta meta;
    meta.written_at = wall.now();
    const auto result = snapshot::write_snapshot(images, path, meta);
    st.last_duration_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!result) {
        st.failures.fetch_add(1);
        spdlog::error("snapshot not written: {}", result.error().message);
        return;
    }
    st.last_success_unix_seconds = wall.now().as_seconds();
    spdlog::info("snapshot written to {}: {} bytes, {} dialogs, {} streams in {:.3f} s", path, result->bytes,
                 result->counts.dialogs, result->counts.streams, st.last_duration_seconds.load());
}

// The state directory must exist and be writable before anything else starts: a snapshot that
// cannot be written would lose the calls in progress at the next restart.
bool prepare_state_dir(const std::string& dir) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) {
        spdlog::critical("state directory {}: {}", dir, ec.message());
        return false;
    }
    if (access(dir.c_str(), R_OK | W_OK | X_OK) != 0) {
        spdlog::critical("state directory {} is not readable and writable: {}", dir, std::strerror(errno));
        return false;
    }
    return true;
}

int run_daemon(const config::Config& initial, const std::string& config_path) {
    config::Config cfg = initial;
    setup_logging(config::to_string(cfg.log_level));
    spdlog::info("hepd {} ({}) starting", kVersion, kGitCommit);
    if (!prepare_state_dir(cfg.state.dir)) return kExitCantCreate;
    const std::string snapshot_path = cfg.state.dir + "/hepd.snapshot";

    boost::asio::io_context io(1);
    const SystemClock clock;
    const SteadyClock steady;
    ingest::IngestControl control(app::ingest_policy(cfg), steady);
    if (cfg.hep.rate_limit.rate == 0) {
        spdlog::info("HEP rate limit: none");
    } else {
        spdlog::info("HEP rate limit: {} packets/s, burst {}", cfg.hep.rate_limit.rate,
                     cfg.hep.rate_limit.burst == 0 ? cfg.hep.rate_limit.rate : cfg.hep.rate_limit.burst);
    }

    // Shards: restored from the last snapshot (re-routed to today's shard count) before they start.
    const std::uint32_t shard_count = config::effective_shard_count(cfg.shards, std::thread::hardware_concurrency());
    auto sc = app::shard_config(cfg);
    sc.flush_at_end = false;  // open calls go to the snapshot, not into the statistics
    std::vector<shard::ShardWorker*> workers;
    std::vector<std::unique_ptr<shard::Worker>> owned;
    for (std::uint32_t i = 0; i < shard_count; ++i) {
        auto w = std::make_unique<shard::ShardWorker>(sc);
        workers.push_back(w.get());
        owned.push_back(std::move(w));
    }
    SnapshotState snap_state;
    if (std::filesystem::exists(snapshot_path)) {
        std::string detail;
        auto file = snapshot::read_snapshot(snapshot_path, &detail);
        if (!file) {
            snap_state.failures.fetch_add(1);
            spdlog::error("snapshot {} refused ({}: {}); starting empty. {}", snapshot_path,
                          snapshot::to_string(file.error()), snapshot::describe(file.error()), detail);
        } else {
            const auto counts = snapshot::restore(*file, workers);
            spdlog::info("restored {} records from {} ({} dialogs, {} streams, {} refused) into {} shards",
                         counts.restored(), snapshot_path, counts.dialogs.restored, counts.streams.restored,
                         counts.refused(), shard_count);
        }
    }

    std::size_t udp_threads = 0;
    if (cfg.hep.udp.enabled) udp_threads = cfg.hep.listen.size() * std::max<std::uint32_t>(cfg.hep.udp.receive_threads, 1);
    shard::PipelineOptions po;
    po.shards = shard_count;
    po.producers = udp_threads + 1;  // every UDP receive thread, and the TCP thread
    po.queue_batches = cfg.shards.queue_batches;
    po.batch_datagrams = cfg.shards.batch_size;
    po.threaded = true;
    po.idle_tick_us = 1'000'000;
    shard::Pipeline pipeline(po, std::move(owned));
    spdlog::info("{} reconstruction shards", shard_count);

    ingest::IngestPathOptions path_options;
    path_options.intake = app::live_intake_options(cfg);
    std::vector<std::unique_ptr<ingest::ProducerSink>> sinks;
    std::size_t next_producer = 0;
    auto new_sink = [&](std::size_t) -> ingest::DatagramSink& {
        return *sinks.emplace_back(std::make_unique<ingest::ProducerSink>(pipeline.producer(next_producer++)));
    };
    // The TCP listeners all run on this thread's io_context and share one path.
    ingest::IngestPath tcp_path(control, new_sink(0), clock, path_options);
    std::vector<std::unique_ptr<ingest::UdpReceiver>> udp;
    std::vector<std::unique_ptr<ingest::TcpListener>> tcp;
    for (const auto& at : cfg.hep.listen) {
        try {
            if (cfg.hep.udp.enabled) {
                ingest::UdpOptions o;
                o.listen = at;
                o.threads = cfg.hep.udp.receive_threads;
                o.batch_size = cfg.hep.udp.batch_size;
                o.receive_buffer_bytes = cfg.hep.udp.receive_buffer_bytes;
                udp.push_back(std::make_unique<ingest::UdpReceiver>(o, control, path_options, new_sink, clock));
                spdlog::info("listening for HEP on udp://{} ({} receive threads)",
                             udp.back()->local_endpoint().to_string(), udp.back()->threads());
            }
            if (cfg.hep.tcp.enabled) {
                ingest::TcpOptions o;
                o.listen = at;
                o.max_connections = cfg.hep.tcp.max_connections;
                o.max_frame_bytes = cfg.hep.tcp.max_frame_bytes;
                o.idle_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(cfg.hep.tcp.idle_timeout);
                tcp.push_back(std::make_unique<ingest::TcpListener>(io, o, tcp_path));
                spdlog::info("listening for HEP on tcp://{}", tcp.back()->local_endpoint().to_string());
            }
        } catch (const boost::system::system_error& e) {
            spdlog::critical("cannot listen on {}: {}", at.to_string(), e.code().message());
            return kExitUnavailable;
        }
    }

    // Prometheus: per-shard and per-thread statistics, merged at scrape time.
    auto collector = std::make_shared<metrics::Collector>(
        metrics::CollectorOptions{metrics::agent_names(control.policy()->agents), metrics::this_build()});
    for (auto* w : workers) collector->add_shard(*w);
    collector->add_intake(tcp_path.stats());
    for (const auto& r : udp)
        for (std::size_t i = 0; i < r->threads(); ++i) collector->add_intake(r->path(i).stats());
    for (const auto& l : tcp) collector->add_tcp(l->stats());
    collector->set_pipeline(pipeline);
    collector->set_kernel_drops([&udp] {
        std::uint64_t n = 0;
        for (const auto& r : udp) n += r->kernel_drops();
        return n;
    });
    collector->set_snapshot([&snap_state] {
        return metrics::SnapshotFigures{snap_state.last_duration_seconds.load(), snap_state.failures.load(),
                                        snap_state.last_success_unix_seconds.load()};
    });
    std::unique_ptr<metrics::Exporter> exporter;
    try {
        exporter = std::make_unique<metrics::Exporter>(metrics::ExporterOptions{cfg.metrics.listen, cfg.metrics.path},
                                                       collector);
    } catch (const metrics::ExporterError& e) {
        spdlog::critical("cannot serve metrics: {}", e.what());
        return kExitUnavailable;
    }
    spdlog::info("metrics at {}", exporter->url());

    pipeline.start();
    for (auto& r : udp) r->start();

    auto merged = [&] {
        intake::IntakeStats total;
        total.merge(tcp_path.stats());
        for (const auto& r : udp) total.merge(r->merged_stats());
        return total;
    };

    // Periodic snapshots: the shards copy their tables between two batches (a short pause), a
    // background thread writes the file; ingest never waits for the disk.
    std::thread writer;
    auto snapshot_now = [&] {
        if (snap_state.writing.exchange(true)) {
            spdlog::warn("snapshot still being written; skipping this interval");
            return;
        }
        if (writer.joinable()) writer.join();
        auto images = std::make_shared<std::vector<snapshot::ShardImage>>(workers.size());
        pipeline.run_on_shards([&](std::size_t i, shard::Worker&) { (*images)[i] = snapshot::capture(*workers[i]); });
        writer = std::thread([images, &snapshot_path, &snap_state, &clock] {
            write_images(*images, snapshot_path, snap_state, clock);
            snap_state.writing = false;
        });
    };
    boost::asio::steady_timer snapshot_timer(io);
    std::function<void()> schedule_snapshot = [&] {
        if (cfg.state.snapshot_interval.count() <= 0) return;
        snapshot_timer.expires_after(cfg.state.snapshot_interval);
        snapshot_timer.async_wait([&](boost::system::error_code ec) {
            if (ec) return;
            snapshot_now();
            schedule_snapshot();
        });
    };
    schedule_snapshot();

    boost::asio::signal_set signals(io, SIGINT, SIGTERM, SIGHUP);
    std::function<void()> wait_signal = [&] {
        signals.async_wait([&](boost::system::error_code ec, int signo) {
            if (ec) return;
            if (signo == SIGHUP) {
                reload(config_path, cfg, control);
                wait_signal();
                return;
            }
            spdlog::info("signal {} received, stopping", signo);
            notify_systemd("STOPPING=1");
            for (auto& l : udp) l->stop();
            for (auto& l : tcp) l->close();
            io.stop();
        });
    };
    wait_signal();

    boost::asio::steady_timer summary(io);
    std::function<void()> schedule_summary = [&] {
        summary.expires_after(std::chrono::seconds(60));
        summary.async_wait([&](boost::system::error_code ec) {
            if (ec) return;
            log_summary(merged(), "last minute");
            schedule_summary();
        });
    };
    schedule_summary();

#ifdef HEPD_WITH_SYSTEMD
    boost::asio::steady_timer watchdog(io);
    std::uint64_t watchdog_us = 0;
    std::function<void()> pet = [&] {
        notify_systemd("WATCHDOG=1");
        watchdog.expires_after(std::chrono::microseconds(watchdog_us / 2));
        watchdog.async_wait([&](boost::system::error_code ec) {
            if (!ec) pet();
        });
    };
    if (sd_watchdog_enabled(0, &watchdog_us) > 0 && watchdog_us > 0) pet();
#endif

    notify_systemd("READY=1");
    spdlog::info("ready; Ctrl-C or SIGTERM stops, SIGHUP reloads");
    io.run();

    // Shutdown: no more input; the shards drain their queues, then the final snapshot.
    for (auto& r : udp) r->stop();
    for (auto& s : sinks) s->flush();
    pipeline.finish(clock.now());
    if (writer.joinable()) writer.join();
    if (cfg.state.snapshot_on_shutdown) {
        std::vector<snapshot::ShardImage> images;
        for (auto* w : workers) images.push_back(snapshot::capture(*w));
        write_images(images, snapshot_path, snap_state, clock);
    }
    exporter->stop();
    log_summary(merged(), "at exit");
    return 0;
}
}  // namespace

int main(int argc, char** argv) {
    app::CommandLine cl;
    try {
        cl = app::parse_command_line(argc, argv);
    } catch (const app::UsageError& e) {
        std::fprintf(stderr, "hepd: %s\n", e.what());
        return kExitUsage;
    }

    switch (cl.verb) {
    case app::Verb::help: std::cout << app::usage_text(); return 0;
    case app::Verb::version: std::printf("hepd %s (commit %s)\n", kVersion, kGitCommit); return 0;
    case app::Verb::snapshot_show: {
        std::string detail;
        auto file = snapshot::read_snapshot(cl.snapshot_path, &detail);
        if (!file) {
            std::fprintf(stderr, "hepd: %s: %s (%s) %s\n", cl.snapshot_path.c_str(),
                         std::string(snapshot::describe(file.error())).c_str(),
                         std::string(snapshot::to_string(file.error())).c_str(), detail.c_str());
            return kExitDataError;
        }
        std::cout << snapshot::to_json(*file) << "\n";
        return 0;
    }
    case app::Verb::check_config:
    case app::Verb::pcap:
    case app::Verb::daemon: break;
    }

    config::Config cfg;
    try {
        cfg = load_config(cl);
    } catch (const config::ConfigError& e) {
        std::fprintf(stderr, "hepd: configuration error: %s\n", e.what());
        return config::kExitConfig;
    }

    if (cl.verb == app::Verb::check_config) {
        if (cl.print_config) std::cout << config::to_yaml(cfg);
        std::fprintf(stderr, "%s: configuration ok\n", cl.config_path.c_str());
        return 0;
    }
    if (cl.verb == app::Verb::pcap) {
        setup_logging(config::to_string(cfg.log_level));
        app::PcapArgs args;
        args.files = cl.pcap_files;
        for (const auto& o : cl.overrides)
            if (o.key == "shards.count") args.cores = cfg.shards.count;
        args.report = cl.pcap_report;
        args.json_path = cl.pcap_json;
        return app::run_pcap(args, cfg);
    }
    return run_daemon(cfg, cl.config_path);
}
