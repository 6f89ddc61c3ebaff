#pragma once
// A small VoIP estate with known answers, everything the exporter reads made real: generated
// calls through a two-shard pipeline, two HEP intakes (one per "receive thread") fed real HEP
// messages, TCP listener statistics, kernel drops and snapshot figures.
#include "export/collector.hpp"
#include "gen/call_generator.hpp"
#include "ingest/listeners.hpp"
#include "intake/hep_intake.hpp"
#include "relay/relay.hpp"
#include "shard/pipeline.hpp"
#include "shard/shard_worker.hpp"

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hepd::test {

// Agents as the ingest names them: capture id 2001 is "kamailio", 2002 "asterisk". SIP the
// generator sends from 10.1.0.0/16 (callers) is kamailio's, from 10.2.0.0/16 (callees) asterisk's.
inline constexpr std::uint32_t kKamailioCaptureId = 2001;
inline constexpr std::uint32_t kAsteriskCaptureId = 2002;
inline constexpr std::uint16_t kKamailio = 1;
inline constexpr std::uint16_t kAsterisk = 2;

// OPTIONS pings (outside any dialog) sent after the calls: kamailio asks, asterisk answers 200
// after kOptionsDelayUs.
inline constexpr std::uint32_t kOptionsPings = 3;
inline constexpr std::int64_t kOptionsDelayUs = 12'000;

inline constexpr std::uint64_t kKernelDrops = 7;

// What was fed to the intakes, counted while feeding.
struct IntakeFeed {
    std::uint64_t udp_v3_packets = 0, udp_v3_bytes = 0;
    std::uint64_t tcp_v2_packets = 0, tcp_v2_bytes = 0;
    std::uint64_t tcp_v1_packets = 0, tcp_v1_bytes = 0;
    std::uint64_t udp_not_hep = 0;       // garbage: version unknown, decode error not_hep
    std::uint64_t udp_truncated = 0;     // "HEP3" + 1 byte: decode error truncated
    std::uint64_t udp_rate_limited = 0;  // counted through count_drop(rate_limit)
    std::uint64_t queue_full = 0;        // counted through count_queue_full()
    std::uint64_t sip_kamailio = 0;      // accepted SIP with capture id 2001 (v3)
    std::uint64_t sip_other = 0;         // accepted SIP from nobody named (v1 and v2)
    std::uint64_t rtcp_json_asterisk = 0;
    std::uint64_t log_other = 0;
    std::uint64_t fixup_zero = 0;                          // v3 with seconds == 0
    std::uint64_t fixup_missing = 0;                       // v1: no time at all
    std::array<std::uint64_t, 3> clock_offset_exceeded{};  // by agent index (live UDP intake)
};

struct Estate {
    // Runs the corpus through `shards` shards to the end (pipeline finished, threads joined).
    Estate(const gen::CorpusOptions& corpus, std::size_t shards);
    ~Estate();
    Estate(const Estate&) = delete;
    Estate& operator=(const Estate&) = delete;

    gen::Truth truth;
    IntakeFeed feed;
    std::vector<shard::ShardWorker*> workers;  // owned by the pipeline
    std::unique_ptr<shard::Pipeline> pipeline;
    std::vector<std::unique_ptr<intake::HepIntake>> intakes;
    ingest::TcpStats tcp;
    metrics::SnapshotFigures snapshot{0.25, 2, 1'700'000'123.5, 0.0625};
    // A relay destination that is never started: the messages that fitted its queue wait there,
    // the rest count as queue_full.
    std::unique_ptr<relay::Relay> relay;
    std::uint64_t relay_queued = 0, relay_queue_full = 0;
    std::shared_ptr<metrics::Collector> collector;
    std::uint64_t options_datagrams = 0;  // SIP datagrams of the OPTIONS pings (both directions)
};

// The collector every test uses: agents named by the intake's map, all sources registered.
std::vector<std::string> estate_agent_names();

}  // namespace hepd::test
