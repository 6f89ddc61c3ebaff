#pragma once
// The live daemon: shards restored from the last snapshot, HEP listeners, the metrics endpoint,
// periodic snapshots, signals and systemd notifications. run() starts it all, serves until SIGINT
// or SIGTERM and shuts down in order; every part is a member that releases itself, so a start-up
// failure half-way unwinds what was started.
#include "app/cli.hpp"
#include "app/service_notifier.hpp"
#include "app/snapshot_scheduler.hpp"
#include "config/config.hpp"
#include "core/time.hpp"
#include "peer/peer_groups.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// The parts, defined in daemon.cpp's includes.
namespace hepd::shard {
class Pipeline;
class ShardWorker;
}  // namespace hepd::shard
namespace hepd::ingest {
class IngestControl;
class IngestPath;
class ProducerSink;
class TcpListener;
class UdpReceiver;
}  // namespace hepd::ingest
namespace hepd::relay {
class Relay;
}  // namespace hepd::relay
namespace hepd::metrics {
class Collector;
class Exporter;
}  // namespace hepd::metrics
namespace hepd::records {
class RecordWriter;
}  // namespace hepd::records

namespace hepd::app {

class RelayingSink;

// Start-up failures (sysexits.h); the reason is logged first.
inline constexpr int kExitUnavailable = 69;  // EX_UNAVAILABLE: a HEP listener or the metrics port cannot be bound
inline constexpr int kExitCantCreate = 73;   // EX_CANTCREAT: unusable state directory

// SIGHUP, SIGINT and SIGTERM wait, blocked, from the first line of main until the daemon's
// handlers exist: one sent during start-up (a large snapshot restores for seconds) is then a
// reload or a clean stop, not the end of the process by the default action. Every thread created
// meanwhile inherits the mask and never takes them. The other commands release them at once.
void hold_signals() noexcept;
void release_signals() noexcept;

class Daemon {
public:
    // config_path: the file SIGHUP re-reads (empty when running on the embedded defaults), with
    // the command line's `overrides` applied again.
    Daemon(config::Config cfg, std::string config_path, std::vector<Override> overrides);
    ~Daemon();
    Daemon(const Daemon&) = delete;
    Daemon& operator=(const Daemon&) = delete;

    // Starts, serves until SIGINT or SIGTERM, then stops: no more input, the shards drain their
    // queues, the final snapshot (state.snapshot_on_shutdown), the metrics endpoint closes. Returns
    // the exit status: 0, or kExitUnavailable / kExitCantCreate when start-up fails. Call once.
    int run();

private:
    // Everything up to serving; 0 or the exit status of the failure.
    int start();
    void restore_snapshot();
    void skip_written_records(const snapshot::SnapshotFile& file);
    void set_aside_refused_snapshot();
    void remove_old_refused_snapshots();
    static constexpr std::size_t kKeptRefusedSnapshots = 3;
    void start_relays(std::size_t producers);
    int open_listeners();
    int serve_metrics();
    void wait_signal();
    void schedule_summary();
    void notify_manager(std::string_view state);  // READY=1, WATCHDOG=1, STOPPING=1 (sd_notify(3))
    void pet_watchdog();
    void shutdown();
    std::vector<snapshot::ShardImage> capture_shards();

    config::Config cfg_;
    const std::string config_path_;
    const std::vector<Override> overrides_;
    const std::string snapshot_path_;
    const SystemClock clock_;
    const SteadyClock steady_;

    // Declared in start-up order: destroyed the other way round, sources after their readers.
    boost::asio::io_context io_{1};  // this thread: signals, timers and every TCP connection
    std::unique_ptr<ingest::IngestControl> control_;
    peer::PeerDirectory peers_;                       // read by the shards and the exporter: outlives both
    std::unique_ptr<records::RecordWriter> records_;  // with records.enabled; outlives the shards
    std::vector<shard::ShardWorker*> workers_;        // owned by pipeline_
    std::unique_ptr<shard::Pipeline> pipeline_;
    std::vector<std::unique_ptr<ingest::ProducerSink>> sinks_;  // one per producer of pipeline_
    std::vector<std::unique_ptr<relay::Relay>> relays_;         // `relay:` destinations
    std::vector<std::unique_ptr<RelayingSink>> relay_sinks_;    // around sinks_ when relays_ is not empty
    std::unique_ptr<ingest::IngestPath> tcp_path_;              // shared by the TCP listeners
    std::vector<std::unique_ptr<ingest::UdpReceiver>> udp_;
    std::vector<std::unique_ptr<ingest::TcpListener>> tcp_;
    SnapshotState snapshot_state_;
    bool restored_ = false;  // the shards hold a snapshot's records (their clocks are seeded)
    // Each shard's record counts at the previous capture: how much of the next image to make
    // ready before the shards pause for it (capture_shards, on one thread at a time).
    std::vector<snapshot::RecordCounts> captured_counts_;
    std::unique_ptr<SnapshotScheduler> snapshots_;
    std::shared_ptr<metrics::Collector> collector_;
    std::unique_ptr<metrics::Exporter> exporter_;
    std::optional<boost::asio::signal_set> signals_;  // taken over once serving
    boost::asio::steady_timer summary_timer_{io_};
    boost::asio::steady_timer watchdog_timer_{io_};
    ServiceNotifier notifier_ = ServiceNotifier::from_environment();
    bool watchdog_failure_logged_ = false;
};

}  // namespace hepd::app
