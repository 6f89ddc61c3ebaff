#pragma once
// What HEP intake counts: plain single-writer statistics (one set per receive thread or capture
// file), read by the exporter and the run report without locks and summed at read time.
#include "core/packet_meta.hpp"
#include "core/payload_class.hpp"
#include "core/stats.hpp"
#include "hep/error.hpp"
#include "hep/timestamp.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace hepd::intake {

// Single writer (the receive thread); summed over threads at scrape time.
struct SenderClockStats {
    // By agent index: measurements (first or after a step) beyond the limit, i.e. senders whose
    // times are being shifted (hepd_hep_clock_offset_exceeded_total{agent}).
    std::array<StatCounter, kMaxAgents> offset_exceeded{};
    // By agent index: re-measurements after a corrected time fell outside the limit
    // (hepd_hep_clock_steps_total{agent}).
    std::array<StatCounter, kMaxAgents> steps{};
    // Senders evicted at the table's cap (hepd_table_evictions_total{table="hep_senders"}).
    StatCounter evictions;

    void merge(const SenderClockStats& other) noexcept;
};

enum class Carrier : std::uint8_t { udp, tcp };
inline constexpr std::size_t kCarrierCount = 2;
std::string_view to_string(Carrier c) noexcept;

// hepd_hep_dropped_packets_total{reason}. decode_error is split further by hep::DecodeError in
// IntakeStats::decode_errors.
enum class DropReason : std::uint8_t { rate_limit, auth, not_allowed, queue_full, decode_error };
inline constexpr std::size_t kDropReasonCount = 5;
std::string_view to_string(DropReason r) noexcept;

inline constexpr std::size_t kHepVersionCount = 3;  // index = version - 1

struct IntakeStats {
    // Every packet offered, refused or not: [carrier][version 1..3 -> 0..2].
    std::array<std::array<StatCounter, kHepVersionCount>, kCarrierCount> packets{};
    std::array<std::array<StatCounter, kHepVersionCount>, kCarrierCount> bytes{};
    std::array<StatCounter, kCarrierCount> undecodable_packets{};  // not HEP of any version
    std::array<StatCounter, hep::decode_error_count> decode_errors{};
    std::array<StatCounter, hep::timestamp_fixup_count> timestamp_fixups{};
    // Decoded, admitted and handed to the shards, by payload class and agent index
    // (hepd_hep_packets_total{payload_type, agent}). A shard queue may still drop them later:
    // those are counted again in dropped[queue_full].
    std::array<std::array<StatCounter, kMaxAgents>, kPayloadClassCount> by_type{};
    std::array<StatCounter, kDropReasonCount> dropped{};
    // Senders' clocks against the receive clock (live only).
    SenderClockStats clocks;

    void merge(const IntakeStats& other) noexcept;
    std::uint64_t received() const noexcept;
    // Handed to the shards and not dropped by a full queue, so that
    // received() == accepted() + dropped_total() whenever the thread is between packets.
    std::uint64_t accepted() const noexcept;
    std::uint64_t dropped_total() const noexcept;
    std::uint64_t drops(DropReason r) const noexcept { return dropped[static_cast<std::size_t>(r)].value(); }
    std::uint64_t by_class(PayloadClass c) const noexcept;
};

}  // namespace hepd::intake
