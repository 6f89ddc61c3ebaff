#pragma once
// The Prometheus view of hepd. Shards and receive threads keep their own single-writer counters
// and histograms; this Collectable sums them at scrape time into the catalogue of METRICS.md.
// Nothing is recomputed from the tables: every figure is a live counter, gauge or histogram.
//
// Thread-safety: register every source (add_*, set_*) before the exporter starts serving;
// afterwards Collect() only reads, from the HTTP server's threads, possibly two at a time. The
// sources must outlive the exporter (destroy or stop() the Exporter first).
#include "core/packet_meta.hpp"
#include "ingest/source_limiter.hpp"
#include "records/drop_reason.hpp"

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace hepd::shard {
class Pipeline;
class ShardWorker;
struct DuplicateStats;
}  // namespace hepd::shard

namespace hepd::intake {
class AgentMap;
struct IntakeStats;
}  // namespace hepd::intake

namespace hepd::ingest {
struct TcpStats;
}  // namespace hepd::ingest

namespace hepd::relay {
class Relay;
}  // namespace hepd::relay

namespace hepd::peer {
class PeerDirectory;
}  // namespace hepd::peer

namespace hepd::sip {
struct DialogStats;
}  // namespace hepd::sip

namespace hepd::rtp {
struct StreamStats;
}  // namespace hepd::rtp

namespace hepd::metrics {

struct BuildInfo {
    std::string version;
    std::string commit;
};
// The version and commit baked into this binary (core/version.hpp).
BuildInfo this_build();

// What the snapshot writer reports; read through a callback at scrape time, so the callback must
// be safe to call from another thread (atomics, or a copy under a mutex).
struct SnapshotFigures {
    double last_duration_seconds = 0;      // of the last attempt, successful or not
    std::uint64_t failures = 0;            // since start-up
    double last_success_unix_seconds = 0;  // 0: no snapshot written yet
    double last_shard_pause_seconds = 0;   // the shards took no packets while they copied their tables
};

// What the call-record writer reports (daemon/records); read through a callback at scrape time,
// so it must be safe to call from another thread. All zero while records are off.
struct RecordFigures {
    std::uint64_t written = 0;
    std::uint64_t bytes = 0;
    std::uint64_t rotations = 0;
    std::uint64_t write_errors = 0;
    std::uint64_t reopens = 0;
    std::uint64_t truncated_lines = 0;
    std::array<std::uint64_t, records::kDropReasonCount> dropped{};  // by records::DropReason
    std::uint64_t unbound_streams = 0;
    std::int64_t held = 0;
    std::int64_t waiting = 0;
};

// "other" then every name of the map, by agent index: CollectorOptions::agent_names.
std::vector<std::string> agent_names(const intake::AgentMap& agents);

struct CollectorOptions {
    // Value of the `agent` label by agent index (Datagram::agent): index 0 is "other", then the
    // configured agents in order. Indices without a name count as "other".
    std::vector<std::string> agent_names{"other"};
    BuildInfo build = this_build();
    // Values of the caller_peer and callee_peer labels by peer id; not owned, may be null (then
    // every dialog and stream is "other").
    const peer::PeerDirectory* peers = nullptr;
};

class Collector final : public prometheus::Collectable {
public:
    // Throws std::invalid_argument when the agent names are unusable: empty list, index 0 not
    // "other", an empty or repeated name, or more names than core's kMaxAgents.
    explicit Collector(CollectorOptions options = {});

    // Each shard once, in shard order (the `shard` label is the registration index).
    void add_shard(const shard::ShardWorker& worker);
    // One per receive thread (HepIntake::stats()).
    void add_intake(const intake::IntakeStats& stats);
    // One per receive thread (IngestPath::source_stats(): the per-sender rate-limit buckets).
    void add_source_limiter(const ingest::SourceLimiterStats& stats);
    // One per TCP listener (TcpListener::stats()).
    void add_tcp(const ingest::TcpStats& stats);
    // Queue depths and queue drops; absent in the offline mode.
    void set_pipeline(const shard::Pipeline& pipeline);
    // Datagrams the kernel dropped on the UDP sockets (SO_MEMINFO), summed over sockets.
    void set_kernel_drops(std::function<std::uint64_t()> read);
    void set_snapshot(std::function<SnapshotFigures()> read);
    // One per `relay:` destination, in configuration order (the `destination` label is its name).
    void add_relay(const relay::Relay& relay);
    void set_records(std::function<RecordFigures()> read);

    std::vector<prometheus::MetricFamily> Collect() const override;

    // The `agent` label by agent index, as now.
    std::span<const std::string> agent_names() const noexcept {
        return {agent_names_.data(), agent_count_.load(std::memory_order_acquire)};
    }
    // A reload's names (agent_names() of the new map, which keeps every index it had): the names
    // at indices not named yet are added. From one thread at a time; scrapes may run meanwhile.
    void publish_agent_names(const std::vector<std::string>& names);

private:
    class Writer;
    void collect_intake(Writer& out, const intake::IntakeStats& in) const;
    void collect_shards(Writer& out) const;
    void collect_sip(Writer& out, const sip::DialogStats& d) const;
    void collect_rfc6076(Writer& out, const sip::DialogStats& d) const;
    void collect_rtp(Writer& out, const rtp::StreamStats& s) const;
    std::string_view peer_name(std::uint8_t id) const noexcept;
    void collect_evictions(Writer& out, const sip::DialogStats& d, const rtp::StreamStats& s,
                           const intake::IntakeStats& in, const shard::DuplicateStats& dup) const;
    static void collect_duplicates(Writer& out, const shard::DuplicateStats& dup);
    void collect_snapshot(Writer& out) const;
    void collect_relay(Writer& out) const;
    void collect_records(Writer& out) const;
    static void collect_process(Writer& out);
    std::size_t agent_label(std::size_t agent) const noexcept {
        return agent < agent_count_.load(std::memory_order_acquire) ? agent : 0;
    }

    CollectorOptions options_;
    // Written before agent_count_ is raised, never after (scrapes read them without a lock).
    std::array<std::string, kMaxAgents> agent_names_;
    std::atomic<std::size_t> agent_count_{0};
    std::vector<const shard::ShardWorker*> shards_;
    std::vector<const intake::IntakeStats*> intakes_;
    std::vector<const ingest::SourceLimiterStats*> source_limiters_;
    std::vector<const ingest::TcpStats*> tcp_;
    const shard::Pipeline* pipeline_ = nullptr;
    std::function<std::uint64_t()> kernel_drops_;
    std::function<SnapshotFigures()> snapshot_;
    std::vector<const relay::Relay*> relays_;
    std::function<RecordFigures()> records_;
};

}  // namespace hepd::metrics
