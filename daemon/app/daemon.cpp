#include "app/daemon.hpp"

#include "app/relay_sink.hpp"
#include "app/wiring.hpp"
#include "config/units.hpp"
#include "core/log.hpp"
#include "core/version.hpp"
#include "export/collector.hpp"
#include "export/exporter.hpp"
#include "hep/payload_type.hpp"
#include "records/record_writer.hpp"
#include "records/written_records.hpp"
#include "shard/pipeline.hpp"
#include "shard/shard_worker.hpp"
#include "snapshot/snapshot.hpp"
// HEP intake and listeners.
#include "ingest/ingest_control.hpp"
#include "ingest/ingest_path.hpp"
#include "ingest/listeners.hpp"
#include "ingest/producer_sink.hpp"
#include "ingest/udp_receiver.hpp"
#include "intake/hep_intake.hpp"

#include <spdlog/spdlog.h>

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_set>
#include <utility>

namespace hepd::app {

namespace {

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
        spdlog::critical("state directory {} is not readable and writable: {}", dir, error_text(errno));
        return false;
    }
    return true;
}

intake::IntakeStats merged_stats(const ingest::IngestPath& tcp_path,
                                 const std::vector<std::unique_ptr<ingest::UdpReceiver>>& udp) {
    intake::IntakeStats total;
    total.merge(tcp_path.stats());
    for (const auto& r : udp) total.merge(r->merged_stats());
    return total;
}

void log_summary(const intake::IntakeStats& s, std::string_view when) {
    std::uint64_t decode_errors = 0;
    for (const auto& n : s.decode_errors) decode_errors += n.value();
    std::string by_class;
    for (std::size_t c = 0; c < kPayloadClassCount; ++c) {
        const auto cls = static_cast<PayloadClass>(c);
        by_class += fmt::format("{}{} {}", c == 0 ? "" : ", ", to_string(cls), s.by_class(cls));
    }
    spdlog::info(
        "{}: {} HEP packets received, {} accepted, {} decode errors, {} dropped by the rate limit, "
        "{} dropped for auth, {} not allowed, {} dropped by full shard queues; decoded by type: {}",
        when, s.received(), s.accepted(), decode_errors, s.drops(intake::DropReason::rate_limit),
        s.drops(intake::DropReason::auth), s.drops(intake::DropReason::not_allowed),
        s.drops(intake::DropReason::queue_full), by_class);
}

// SIGHUP: re-read the file, apply the command line's flags again (as at start-up, so that only
// what the file changed is compared) and apply what can change live; say what could not.
void reload(const std::string& path, const std::vector<Override>& overrides, config::Config& current,
            ingest::IngestControl& control, peer::PeerDirectory& peers, metrics::Collector* collector) {
    if (path.empty()) {
        spdlog::warn("SIGHUP: no --config file to reload (running on the embedded defaults)");
        return;
    }
    config::Config next;
    try {
        next = load_config(path, overrides);
    } catch (const config::ConfigError& e) {
        spdlog::error("SIGHUP: configuration not reloaded: {}", e.what());
        return;
    }
    control.update(app::ingest_policy(next, control.policy().get()));
    app::publish_peers(peers, next, control.policy()->agents);
    if (collector != nullptr) collector->publish_agent_names(metrics::agent_names(control.policy()->agents));
    set_log_level(config::to_string(next.log_level));
    std::vector<std::string> fixed;
    if (!(next.hep.listen == current.hep.listen && next.hep.udp == current.hep.udp && next.hep.tcp == current.hep.tcp))
        fixed.emplace_back("hep listeners");
    if (!(next.metrics == current.metrics)) fixed.emplace_back("metrics");
    if (!(next.relay == current.relay)) fixed.emplace_back("relay");
    if (!(next.state == current.state)) fixed.emplace_back("state");
    if (!(next.records == current.records)) fixed.emplace_back("records");
    if (!(next.shards == current.shards) || !(next.tables == current.tables) || !(next.timers == current.timers))
        fixed.emplace_back("shards, tables and timers");
    if (!(next.hep.payload_types == current.hep.payload_types) ||
        next.hep.max_decompressed_bytes != current.hep.max_decompressed_bytes ||
        next.hep.clock_offset_limit != current.hep.clock_offset_limit)
        fixed.emplace_back("payload types, decompression cap and clock offset limit");
    if (!(next.duplicates == current.duplicates)) fixed.emplace_back("duplicates");
    spdlog::info("SIGHUP: reloaded rate limits, auth key, allow list, agent names, peer groups and log level from {}",
                 path);
    if (!fixed.empty()) {
        std::string list;
        for (const auto& f : fixed) list += (list.empty() ? "" : ", ") + f;
        spdlog::warn("SIGHUP: changes to {} need a restart and were not applied", list);
    }
    current.hep.rate_limit = next.hep.rate_limit;
    current.hep.auth_key = next.hep.auth_key;
    current.hep.allow = next.hep.allow;
    current.agents = next.agents;
    current.peers = next.peers;
    current.log_level = next.log_level;
}

sigset_t stop_and_reload_signals() noexcept {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    return set;
}

}  // namespace

void hold_signals() noexcept {
    const sigset_t set = stop_and_reload_signals();
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

void release_signals() noexcept {
    const sigset_t set = stop_and_reload_signals();
    pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

Daemon::Daemon(config::Config cfg, std::string config_path, std::vector<Override> overrides)
    : cfg_(std::move(cfg)),
      config_path_(std::move(config_path)),
      overrides_(std::move(overrides)),
      snapshot_path_(cfg_.state.dir + "/hepd.snapshot") {}

Daemon::~Daemon() = default;

int Daemon::run() {
    if (const int failure = start(); failure != 0) return failure;
    io_.run();
    shutdown();
    return 0;
}

int Daemon::start() {
    spdlog::info("hepd {} ({}) starting", kVersion, kGitCommit);
    if (!prepare_state_dir(cfg_.state.dir)) return kExitCantCreate;

    control_ = std::make_unique<ingest::IngestControl>(app::ingest_policy(cfg_), steady_);
    if (cfg_.hep.rate_limit.rate == 0) {
        spdlog::info("HEP rate limit: none");
    } else {
        spdlog::info("HEP rate limit: {} packets/s, burst {}", cfg_.hep.rate_limit.rate,
                     cfg_.hep.rate_limit.burst == 0 ? cfg_.hep.rate_limit.rate : cfg_.hep.rate_limit.burst);
    }

    // Shards: restored from the last snapshot (re-routed to today's shard count) before they start.
    // Never more busy threads than cores: the automatic count leaves the receive threads theirs.
    std::size_t udp_threads = 0;
    if (cfg_.hep.udp.enabled)
        udp_threads = cfg_.hep.listen.size() * std::max<std::uint32_t>(cfg_.hep.udp.receive_threads, 1);
    const std::uint32_t shard_count = config::effective_shard_count(cfg_.shards, std::thread::hardware_concurrency(),
                                                                    static_cast<unsigned>(udp_threads));
    auto sc = app::shard_config(cfg_);
    sc.flush_at_end = false;
    app::publish_peers(peers_, cfg_, control_->policy()->agents);
    sc.peers = &peers_;  // open calls go to the snapshot, not into the statistics
    std::vector<std::unique_ptr<shard::Worker>> owned;
    if (cfg_.records.enabled) {
        auto options = app::record_writer_options(cfg_);
        options.peers = &peers_;
        spdlog::info("call records to {}", options.file.path);
        records_ = std::make_unique<records::RecordWriter>(std::move(options), shard_count, steady_, clock_);
    }
    for (std::uint32_t i = 0; i < shard_count; ++i) {
        auto w = std::make_unique<shard::ShardWorker>(sc, records_ ? &records_->shard(i) : nullptr);
        if (records_) w->dialogs().set_sink(&records_->shard(i));
        workers_.push_back(w.get());
        owned.push_back(std::move(w));
    }
    restore_snapshot();

    shard::PipelineOptions po;
    po.shards = shard_count;
    po.producers = udp_threads + 1;  // every UDP receive thread, and the TCP thread
    po.queue_batches = cfg_.shards.queue_batches;
    po.batch_datagrams = cfg_.shards.batch_size;
    po.threaded = true;
    po.idle_tick_us = 1'000'000;  // an idle shard wakes once a second to expire what has timed out
    po.clock = &steady_;
    pipeline_ = std::make_unique<shard::Pipeline>(po, std::move(owned));
    if (restored_) pipeline_->seed_clock(clock_.now());
    spdlog::info("{} reconstruction shards", shard_count);

    start_relays(po.producers);
    if (const int failure = open_listeners(); failure != 0) return failure;
    snapshots_ = std::make_unique<SnapshotScheduler>(
        snapshot_path_, cfg_.state.snapshot_interval, [this] { return capture_shards(); }, snapshot_state_, clock_);
    if (const int failure = serve_metrics(); failure != 0) return failure;

    if (records_) records_->start();
    pipeline_->start();
    for (auto& r : udp_) r->start();
    snapshots_->start();

    signals_.emplace(io_, SIGINT, SIGTERM, SIGHUP);
    wait_signal();
    // The handlers exist: what came during start-up is delivered now, to this thread only (the
    // others were created with the signals blocked), and io_.run() acts on it.
    release_signals();
    schedule_summary();
    if (!notifier_.problem().empty()) spdlog::warn("not notifying the service manager: {}", notifier_.problem());
    if (notifier_.watchdog_interval().count() > 0) pet_watchdog();
    notify_manager("READY=1");
    spdlog::info("ready; Ctrl-C or SIGTERM stops, SIGHUP reloads");
    return 0;
}

void Daemon::restore_snapshot() {
    if (!std::filesystem::exists(snapshot_path_)) return;
    std::string detail;
    auto file = snapshot::read_snapshot(snapshot_path_, &detail);
    if (!file) {
        snapshot_state_.failures.fetch_add(1);
        spdlog::error("snapshot {} refused ({}: {}); starting empty. {}", snapshot_path_,
                      snapshot::to_string(file.error()), snapshot::describe(file.error()), detail);
        set_aside_refused_snapshot();
        return;
    }
    const auto counts = snapshot::restore(*file, workers_);
    restored_ = counts.restored() > 0;
    spdlog::info("restored {} records from {} ({} dialogs, {} streams, {} refused) into {} shards", counts.restored(),
                 snapshot_path_, counts.dialogs.restored, counts.streams.restored, counts.refused(), workers_.size());
    // The snapshot is the state of its moment: after a crash (or a long stop) the messages of the
    // interval since then are missing from the restored calls.
    const Timestamp as_of = file->header.written_at;
    if (records_ && counts.dialogs.restored > 0) skip_written_records(*file);
    if (as_of.us != 0) {
        spdlog::warn(
            "restored state as of {}, {:.1f} s before this start: SIP and media signalled in between were "
            "not seen",
            format_iso8601(as_of), static_cast<double>(clock_.now().us - as_of.us) / 1e6);
    }
}

// After a crash, calls the snapshot holds may have had their records written since it was taken:
// those records are in the record files, and are not written a second time (RECORDS.md).
void Daemon::skip_written_records(const snapshot::SnapshotFile& file) {
    std::unordered_set<std::string> restored;
    for (const auto& d : file.records.dialogs) restored.insert(records::record_key(d.call_id, d.from_tag));
    const Timestamp taken = file.header.captured_at.us != 0 ? file.header.captured_at : file.header.written_at;
    auto written = records::find_written(records_->path(), taken, restored);
    if (written.empty()) return;
    spdlog::info(
        "{} calls restored from the snapshot have had their records written since it was taken (in {}): "
        "not written again",
        written.size(), records_->path());
    records_->skip_written(std::move(written));
}

// The next snapshot would replace a refused file: it is kept beside, under a name of its own, for
// whoever looks into why it was refused.
void Daemon::set_aside_refused_snapshot() {
    // 2024-01-02T03:04:05.000006Z -> 20240102T030405Z
    std::string stamp = format_iso8601(clock_.now()).substr(0, 19) + "Z";
    std::erase_if(stamp, [](char c) { return c == '-' || c == ':'; });
    const std::string base = snapshot_path_ + ".corrupt-" + stamp;
    std::string aside = base;
    for (int n = 2; std::filesystem::exists(aside) && n < 100; ++n) aside = base + "-" + std::to_string(n);
    std::error_code ec;
    std::filesystem::rename(snapshot_path_, aside, ec);
    if (ec) {
        spdlog::error("refused snapshot {} could not be moved aside ({}); the next snapshot replaces it",
                      snapshot_path_, ec.message());
        return;
    }
    spdlog::warn("refused snapshot moved aside to {}", aside);
    remove_old_refused_snapshots();
}

// A daemon restarted in a loop on a bad disk would otherwise fill the state directory with
// refused copies: the newest kKeptRefusedSnapshots are enough to look into.
void Daemon::remove_old_refused_snapshots() {
    const std::filesystem::path snapshot(snapshot_path_);
    const std::string prefix = snapshot.filename().string() + ".corrupt-";
    std::vector<std::filesystem::path> refused;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(snapshot.parent_path(), ec)) {
        if (entry.path().filename().string().starts_with(prefix)) refused.push_back(entry.path());
    }
    if (ec || refused.size() <= kKeptRefusedSnapshots) return;
    // Their names sort by time: the stamp, then -2, -3... for more in the same second.
    std::sort(refused.begin(), refused.end());
    for (std::size_t i = 0; i + kKeptRefusedSnapshots < refused.size(); ++i) {
        if (std::filesystem::remove(refused[i], ec)) {
            spdlog::info("removed an older refused snapshot, {}", refused[i].string());
        } else if (ec) {
            spdlog::warn("older refused snapshot {} not removed ({})", refused[i].string(), ec.message());
        }
    }
}

// Before the listeners: each destination connects while they open, and has one queue per
// receive thread (the pipeline's producers).
void Daemon::start_relays(std::size_t producers) {
    for (const auto& d : cfg_.relay) {
        relays_.push_back(std::make_unique<relay::Relay>(app::relay_options(d, producers)));
        relays_.back()->start();
        spdlog::info("relay {}: every accepted HEP message goes to {} ({} queue per receive thread)", d.name,
                     relays_.back()->url(), config::format_size(d.queue_bytes));
    }
}

int Daemon::open_listeners() {
    ingest::IngestPathOptions path_options;
    path_options.intake = app::intake_options(cfg_);
    path_options.max_batch_age = cfg_.shards.max_batch_age;
    auto new_sink = [this](std::size_t) -> ingest::DatagramSink& {
        const std::size_t index = sinks_.size();
        auto& producer = pipeline_->producer(index);
        auto& sink = *sinks_.emplace_back(std::make_unique<ingest::ProducerSink>(producer));
        if (relays_.empty()) return sink;
        std::vector<relay::Relay::Producer*> queues;
        for (auto& r : relays_) queues.push_back(&r->producer(index));
        return *relay_sinks_.emplace_back(std::make_unique<RelayingSink>(sink, std::move(queues)));
    };
    // The TCP listeners all run on the io thread and share one path.
    tcp_path_ = std::make_unique<ingest::IngestPath>(*control_, new_sink(0), clock_, path_options);
    for (const auto& at : cfg_.hep.listen) {
        try {
            if (cfg_.hep.udp.enabled) {
                ingest::UdpOptions o;
                o.listen = at;
                o.threads = cfg_.hep.udp.receive_threads;
                o.batch_size = cfg_.hep.udp.batch_size;
                o.receive_buffer_bytes = cfg_.hep.udp.receive_buffer_bytes;
                udp_.push_back(std::make_unique<ingest::UdpReceiver>(o, *control_, path_options, new_sink, clock_));
                spdlog::info("listening for HEP on udp://{} ({} receive threads)",
                             udp_.back()->local_endpoint().to_string(), udp_.back()->threads());
            }
            if (cfg_.hep.tcp.enabled) {
                ingest::TcpOptions o;
                o.listen = at;
                o.max_connections = cfg_.hep.tcp.max_connections;
                o.max_frame_bytes = cfg_.hep.tcp.max_frame_bytes;
                o.idle_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(cfg_.hep.tcp.idle_timeout);
                tcp_.push_back(std::make_unique<ingest::TcpListener>(io_, o, *tcp_path_));
                spdlog::info("listening for HEP on tcp://{}", tcp_.back()->local_endpoint().to_string());
            }
        } catch (const boost::system::system_error& e) {
            spdlog::critical("cannot listen on {}: {}", at.to_string(), e.code().message());
            return kExitUnavailable;
        }
    }
    return 0;
}

// Prometheus: per-shard and per-thread statistics, merged at scrape time.
int Daemon::serve_metrics() {
    collector_ = std::make_shared<metrics::Collector>(
        metrics::CollectorOptions{metrics::agent_names(control_->policy()->agents), metrics::this_build(), &peers_});
    for (auto* w : workers_) collector_->add_shard(*w);
    collector_->add_intake(tcp_path_->stats());
    collector_->add_source_limiter(tcp_path_->source_stats());
    for (const auto& r : udp_)
        for (std::size_t i = 0; i < r->threads(); ++i) {
            collector_->add_intake(r->path(i).stats());
            collector_->add_source_limiter(r->path(i).source_stats());
        }
    for (const auto& l : tcp_) collector_->add_tcp(l->stats());
    for (const auto& r : relays_) collector_->add_relay(*r);
    collector_->set_pipeline(*pipeline_);
    collector_->set_kernel_drops([this] {
        std::uint64_t n = 0;
        for (const auto& r : udp_) n += r->kernel_drops();
        return n;
    });
    collector_->set_snapshot([this] {
        return metrics::SnapshotFigures{snapshot_state_.last_duration_seconds.load(), snapshot_state_.failures.load(),
                                        snapshot_state_.last_success_unix_seconds.load(),
                                        snapshot_state_.last_shard_pause_seconds.load()};
    });
    if (records_) {
        collector_->set_records([this] {
            const auto& s = records_->stats();
            metrics::RecordFigures f;
            f.written = s.written.value();
            f.bytes = s.bytes.value();
            f.rotations = s.rotations.value();
            f.write_errors = s.write_errors.value();
            f.reopens = s.reopens.value();
            f.truncated_lines = s.truncated_lines.value();
            for (std::size_t r = 0; r < s.dropped.size(); ++r) f.dropped[r] = s.dropped[r].value();
            // Queue drops are counted by the shards as they happen, not when the writer looks.
            f.dropped[static_cast<std::size_t>(records::DropReason::queue_full)] = records_->queue_drops();
            f.unbound_streams = s.unbound_streams.value();
            f.held = s.held.value();
            f.waiting = s.waiting.value();
            return f;
        });
    }
    try {
        exporter_ = std::make_unique<metrics::Exporter>(
            metrics::ExporterOptions{cfg_.metrics.listen, cfg_.metrics.path}, collector_);
    } catch (const metrics::ExporterError& e) {
        spdlog::critical("cannot serve metrics: {}", e.what());
        return kExitUnavailable;
    }
    spdlog::info("metrics at {}", exporter_->url());
    return 0;
}

// Copies the shards' tables between two of their batches (a short pause for each shard); after
// Pipeline::finish, on the calling thread. The images are made ready here first (image_room: the
// previous capture or the shard's published table sizes, a tenth larger), so that the pause is a
// copy into memory already touched: page faults and string allocations (a VM pays microseconds
// for a fault) stay on this thread, from the first snapshot after a start on.
std::vector<snapshot::ShardImage> Daemon::capture_shards() {
    const auto t0 = std::chrono::steady_clock::now();
    captured_counts_.resize(workers_.size());
    std::vector<snapshot::ShardImage> images;
    images.reserve(workers_.size());
    for (std::size_t i = 0; i < workers_.size(); ++i) {
        const shard::ShardStats& s = workers_[i]->stats();
        const auto published = [](const Gauge& g) {
            return static_cast<std::uint64_t>(std::max<std::int64_t>(g.value(), 0));
        };
        const snapshot::RecordCounts now{published(s.dialog_records), published(s.transaction_records),
                                         published(s.stream_records), published(s.binding_records),
                                         published(s.reported_stream_records)};
        images.push_back(snapshot::prepare_image(snapshot::image_room(captured_counts_[i], now)));
    }
    const auto t1 = std::chrono::steady_clock::now();
    pipeline_->run_on_shards([&](std::size_t i, shard::Worker&) { snapshot::capture(*workers_[i], images[i]); });
    const auto t2 = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < images.size(); ++i) captured_counts_[i] = images[i].counts();
    snapshot_state_.last_shard_pause_seconds = std::chrono::duration<double>(t2 - t1).count();
    spdlog::debug("snapshot images made ready in {:.3f} s, shards paused {:.3f} s to fill them",
                  std::chrono::duration<double>(t1 - t0).count(), std::chrono::duration<double>(t2 - t1).count());
    return images;
}

void Daemon::wait_signal() {
    signals_->async_wait([this](boost::system::error_code ec, int signo) {
        if (ec) return;
        if (signo == SIGHUP) {
            reload(config_path_, overrides_, cfg_, *control_, peers_, collector_.get());
            wait_signal();
            return;
        }
        spdlog::info("signal {} received, stopping", signo);
        notify_manager("STOPPING=1");
        for (auto& l : udp_) l->stop();
        for (auto& l : tcp_) l->close();
        io_.stop();
    });
}

void Daemon::schedule_summary() {
    summary_timer_.expires_after(std::chrono::seconds(60));
    summary_timer_.async_wait([this](boost::system::error_code ec) {
        if (ec) return;
        log_summary(merged_stats(*tcp_path_, udp_), "since start");  // logged every minute
        schedule_summary();
    });
}

void Daemon::notify_manager(std::string_view state) {
    if (notifier_.notify(state)) return;
    const int error = errno;
    // Every failure of READY or STOPPING; of the watchdog's, the first (it repeats every half period).
    if (state == "WATCHDOG=1") {
        if (watchdog_failure_logged_) return;
        watchdog_failure_logged_ = true;
    }
    spdlog::warn("could not tell the service manager {}: {}", state, error_text(error));
}

void Daemon::pet_watchdog() {
    notify_manager("WATCHDOG=1");
    watchdog_timer_.expires_after(notifier_.watchdog_interval() / 2);
    watchdog_timer_.async_wait([this](boost::system::error_code ec) {
        if (!ec) pet_watchdog();
    });
}

// No more input; the shards drain their queues, then the final snapshot.
void Daemon::shutdown() {
    snapshots_->stop();  // one under way completes; Pipeline::finish must not run beside a capture
    for (auto& r : udp_) r->stop();
    for (auto& s : sinks_) s->flush();
    pipeline_->finish(clock_.now());
    // The final snapshot carries the tables over to the next start. Without one (not asked for,
    // or it failed: disk full, read-only) they have no restart to go on in: the calls that ended
    // get their records now, those in progress are counted (RECORDS.md, "Shutdown").
    const bool carried_over = cfg_.state.snapshot_on_shutdown && snapshots_->write_now();
    if (records_ && !carried_over) {
        std::size_t ended = 0;
        for (std::size_t i = 0; i < workers_.size(); ++i)
            ended += records_->record_remaining(i, workers_[i]->dialogs(), workers_[i]->streams());
        const auto in_progress =
            records_->stats().dropped[static_cast<std::size_t>(records::DropReason::in_progress)].value();
        spdlog::log(cfg_.state.snapshot_on_shutdown ? spdlog::level::warn : spdlog::level::info,
                    "{}: {} ended calls recorded now, {} calls in progress have no record",
                    cfg_.state.snapshot_on_shutdown ? "final snapshot failed" : "no final snapshot", ended,
                    in_progress);
    }
    // Dialogs that left the tables are in no snapshot: their records are written now.
    if (records_) records_->stop();
    // An older periodic snapshot would bring back calls that were just recorded.
    if (!carried_over) snapshots_->discard();
    // After the last receive: what was accepted is sent, within 2 s for all destinations, or
    // counted. Last, after the state is safe: a destination whose name does not resolve holds
    // its thread in getaddrinfo() for as long as the resolver tries (up to 30 s).
    relay::Relay::stop_all(relays_);
    exporter_->stop();
    log_summary(merged_stats(*tcp_path_, udp_), "at exit, since start");
}

}  // namespace hepd::app
