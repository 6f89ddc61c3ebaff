#pragma once
// The end-of-run report of `hepd pcap`: one JSON document (schema in README.md, "Offline pcap
// mode") built from the merged statistics and the per-shard collectors; the text report is
// rendered from that same document, so the two never disagree.
#include "pcap/capture_source.hpp"
#include "report/collector.hpp"
#include "rtp/stream_stats.hpp"
#include "shard/duplicate_filter.hpp"
#include "sip/dialog_stats.hpp"

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace hepd::report {

struct RunInfo {
    std::vector<std::string> files;
    std::size_t shards = 1;
    double wall_seconds = 0;
    double cpu_seconds = 0;
    std::uint64_t peak_rss_bytes = 0;  // includes the mapped capture file
    std::uint64_t rss_anon_bytes = 0;  // heap and tables only
    // CPU seconds of the main thread (with one shard it read the capture and did the shard's
    // work; with several, each shard thread reads the capture itself and the main thread waits)
    // and of each shard thread (none with one shard).
    double reader_cpu_seconds = 0;
    std::vector<double> shard_cpu_seconds;
    // The most SDP bindings one shard held back at once for its peers (several shards only).
    std::size_t bindings_waiting_peak = 0;
    // What the shards' tables held at the end of the input, summed over shards, by table
    // (shard::kTableNames): hepd_table_memory_bytes's figures.
    std::array<std::int64_t, 4> table_bytes{};
    std::string error;  // a file that ended early: what and where
};

struct RunInputs {
    const pcap::CaptureStats* capture = nullptr;
    const sip::DialogStats* dialogs = nullptr;  // merged over shards
    const rtp::StreamStats* streams = nullptr;  // merged over shards
    std::vector<const ShardCollector*> collectors;
    std::size_t keep = 20;  // rows in the worst/failed lists

    // Merged over shards; null: none dropped.
    const shard::DuplicateStats* duplicates = nullptr;
};

nlohmann::json build_report(const RunInfo& info, const RunInputs& inputs);
std::string render_text(const nlohmann::json& report);
std::string render_summary(const nlohmann::json& report);  // one line
// The report as JSON text, with a newline. Call-IDs and tags are the packets' bytes: any that
// are not UTF-8 come out with U+FFFD in their place.
std::string render_json(const nlohmann::json& report);

}  // namespace hepd::report
