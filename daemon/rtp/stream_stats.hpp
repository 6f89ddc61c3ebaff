#pragma once
// Statistics of one shard's stream table, in the core single-writer types: updated when the
// event happens (a packet, a report, a finished stream), read and merged by the exporter and the
// offline report. Labels come from closed sets only (finish reason, codec label, report source,
// table, error reason); nothing here is per Call-ID, address or SSRC.
#include "core/stats.hpp"
#include "peer/peer_groups.hpp"
#include "rtp/rtcp_json.hpp"
#include "rtp/rtcp_packet.hpp"
#include "rtp/rtp_packet.hpp"
#include "rtp/stream_codec.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace hepd::rtp {

enum class FinishReason : std::uint8_t {
    idle,        // no packet for stream_idle_timeout (packet time)
    evicted,     // the table was at its cap: least recently active stream made room
    flushed,     // finish_all(): end of an offline run or shutdown
    rebound,     // a newer SDP (another call, or moved media) bound the stream's address pair
    restarted,   // the sender restarted its sequence or timestamps (RFC 3550 A.1, confirmed)
    call_ended,  // reported streams only: their call's dialog ended (its unbind reached the reporter's shard)
};
inline constexpr std::size_t kFinishReasonCount = static_cast<std::size_t>(FinishReason::call_ended) + 1;
std::string_view to_string(FinishReason reason) noexcept;

// Where a finished stream's figures come from (`source` label of the per-stream families):
// measured from captured RTP, or as its receiver reported it over RTCP-JSON (no RTP captured).
enum class StreamSource : std::uint8_t { measured, rtcp };
inline constexpr std::size_t kStreamSourceCount = 2;
std::string_view to_string(StreamSource source) noexcept;

enum class ReportSource : std::uint8_t { rtcp, rtcp_json, xr };
inline constexpr std::size_t kReportSourceCount = 3;
std::string_view to_string(ReportSource source) noexcept;

// Tables with a cap (`table` label of hepd_table_evictions_total, reason "cap").
enum class StreamTableKind : std::uint8_t { streams, pending_media, reported_streams };
inline constexpr std::size_t kStreamTableKindCount = 3;
std::string_view to_string(StreamTableKind table) noexcept;

// Error enums owned by the parsers: counted by their underlying value, named by their to_string.
inline constexpr std::size_t kRtpErrorCount = static_cast<std::size_t>(RtpError::extension_element_truncated) + 1;
inline constexpr std::size_t kRtcpErrorCount = static_cast<std::size_t>(RtcpError::wrong_block_type) + 1;

// Per finished stream, in seconds: the stream's largest RFC 3550 jitter estimate.
inline constexpr std::array<double, 10> kJitterBucketsSeconds{0.001, 0.002, 0.005, 0.01, 0.02,
                                                              0.03,  0.05,  0.1,   0.2,  0.5};
inline constexpr std::array<double, 11> kMosBuckets{1.5, 2.0, 2.5, 3.0, 3.5, 3.8, 4.0, 4.2, 4.3, 4.4, 4.5};
// RTCP fraction lost as a ratio; the 0 bucket holds the loss-free reports.
inline constexpr std::array<double, 9> kFractionLostBuckets{0.0, 0.01, 0.02, 0.03, 0.05, 0.1, 0.2, 0.5, 1.0};
inline constexpr std::array<double, 11> kRttBucketsSeconds{0.01, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 1.0, 2.0, 5.0};

// Finished streams' figures labelled caller_peer and callee_peer (METRICS.md, "Peer groups"), by
// source: the groups of the dialog whose SDP bound the stream (or, for a stream known from
// RTCP-JSON, the reporter's binding); streams bound to no dialog count as other/other.
struct PeerStreamFigures {
    struct Figures {
        Counter lost_packets;
        Histogram<kJitterBucketsSeconds.size()> jitter_seconds{kJitterBucketsSeconds};
        Histogram<kMosBuckets.size()> mos{kMosBuckets};
    };
    std::array<Figures, kStreamSourceCount> by_source{};

    Figures& of(StreamSource s) noexcept { return by_source[static_cast<std::size_t>(s)]; }
    void merge(const PeerStreamFigures& o) noexcept {
        for (std::size_t i = 0; i < kStreamSourceCount; ++i) {
            by_source[i].lost_packets.add(o.by_source[i].lost_packets.value());
            by_source[i].jitter_seconds.merge(o.by_source[i].jitter_seconds);
            by_source[i].mos.merge(o.by_source[i].mos);
        }
    }
};

// Per finished stream, as a ratio: its loss over the whole stream.
inline constexpr std::array<double, 9> kStreamLossBuckets = kFractionLostBuckets;

// Streams known only from RTCP-JSON reports, counted when they finish (source="rtcp"): the same
// per-stream figures as a measured stream's, from what the receiver reported
// (reported_stream.hpp).
struct ReportedStreamStats {
    std::array<Counter, kFinishReasonCount> finished{};  // by reason
    std::array<Counter, kCodecLabelCount> by_codec{};
    Counter lost_packets;  // last cumulative number lost of each, never negative
    Histogram<kJitterBucketsSeconds.size()> jitter_seconds{kJitterBucketsSeconds};
    Histogram<kMosBuckets.size()> mos{kMosBuckets};
    Histogram<kStreamLossBuckets.size()> loss_ratio{kStreamLossBuckets};
    Histogram<kRttBucketsSeconds.size()> rtt_seconds{kRttBucketsSeconds};

    std::uint64_t finished_total() const noexcept {
        std::uint64_t n = 0;
        for (const Counter& c : finished) n += c.value();
        return n;
    }
    void merge(const ReportedStreamStats& o) noexcept {
        for (std::size_t i = 0; i < finished.size(); ++i) finished[i].add(o.finished[i].value());
        for (std::size_t i = 0; i < by_codec.size(); ++i) by_codec[i].add(o.by_codec[i].value());
        lost_packets.add(o.lost_packets.value());
        jitter_seconds.merge(o.jitter_seconds);
        mos.merge(o.mos);
        loss_ratio.merge(o.loss_ratio);
        rtt_seconds.merge(o.rtt_seconds);
    }
};

// The fields without a prefix are the measured streams' (source="measured"); `reported` holds
// the RTCP-JSON-only streams' (source="rtcp").
struct StreamStats {
    Gauge streams_active;
    Gauge pending_bindings;         // media bindings no stream uses (yet, or any more)
    Gauge reported_streams_active;  // receiver views from RTCP-JSON
    Counter streams_started;
    std::array<Counter, kFinishReasonCount> streams_finished{};  // by reason
    std::array<Counter, kCodecLabelCount> finished_streams_by_codec{};

    Counter rtp_packets;
    Counter rtp_bytes;     // payload octets
    Counter lost_packets;  // per finished stream: max(expected - received, 0)
    Counter duplicate_packets;
    Counter out_of_order_packets;
    Counter event_packets;  // RFC 4733 telephone-events
    Histogram<kJitterBucketsSeconds.size()> jitter_seconds{kJitterBucketsSeconds};
    Histogram<kMosBuckets.size()> mos{kMosBuckets};
    Histogram<kStreamLossBuckets.size()> loss_ratio{kStreamLossBuckets};   // streams with voice packets
    Histogram<kRttBucketsSeconds.size()> rtt_seconds{kRttBucketsSeconds};  // streams whose receiver reported an RTT
    ReportedStreamStats reported;

    std::array<Counter, kReportSourceCount> rtcp_reports{};
    Histogram<kFractionLostBuckets.size()> rtcp_fraction_lost{kFractionLostBuckets};
    Histogram<kRttBucketsSeconds.size()> rtcp_rtt_seconds{kRttBucketsSeconds};

    // Degraded modes.
    std::array<Counter, kStreamTableKindCount> evictions{};  // reason "cap"
    Counter pending_bindings_expired;                        // waited pending_media_timeout for a stream in vain
    Counter late_bindings;                                   // a binding for streams that already had packets
    Counter untracked_late_types;   // a late binding names a type UnboundRuns did not note unlike it was counted
    Counter rebindings;             // SDP of another call for a bound pair or running streams
    Counter bindings_released;      // dropped because their dialog ended
    Counter ambiguous_bindings;     // a stream from a sender no SDP named, to an address several calls share: unbound
    Counter clock_rate_unmatched;   // finished stream whose rtpmap clock is no candidate
    Counter unvalidated_streams;    // finished stream that never passed A.1 probation
    Counter rtcp_unmatched_blocks;  // report block / XR block about no known stream
    Counter rtcp_json_without_call_id;  // RTCP-JSON without a usable correlation id: dropped
    std::array<Counter, kRtpErrorCount> rtp_errors{};
    std::array<Counter, kRtcpErrorCount> rtcp_errors{};
    std::array<Counter, kRtcpJsonErrorCount> rtcp_json_errors{};

    // Finished streams, loss, jitter and MOS again, by their dialog's peer groups.
    peer::PairTable<PeerStreamFigures> by_peers;

    std::uint64_t streams_finished_total() const noexcept {
        std::uint64_t n = 0;
        for (const Counter& c : streams_finished) n += c.value();
        return n;
    }

    // Adds another shard's statistics (exporter, offline report).
    void merge(const StreamStats& o) noexcept {
        streams_active.add(o.streams_active.value());
        pending_bindings.add(o.pending_bindings.value());
        reported_streams_active.add(o.reported_streams_active.value());
        streams_started.add(o.streams_started.value());
        add_all(streams_finished, o.streams_finished);
        add_all(finished_streams_by_codec, o.finished_streams_by_codec);
        rtp_packets.add(o.rtp_packets.value());
        rtp_bytes.add(o.rtp_bytes.value());
        lost_packets.add(o.lost_packets.value());
        duplicate_packets.add(o.duplicate_packets.value());
        out_of_order_packets.add(o.out_of_order_packets.value());
        event_packets.add(o.event_packets.value());
        jitter_seconds.merge(o.jitter_seconds);
        mos.merge(o.mos);
        loss_ratio.merge(o.loss_ratio);
        rtt_seconds.merge(o.rtt_seconds);
        reported.merge(o.reported);
        add_all(rtcp_reports, o.rtcp_reports);
        rtcp_fraction_lost.merge(o.rtcp_fraction_lost);
        rtcp_rtt_seconds.merge(o.rtcp_rtt_seconds);
        add_all(evictions, o.evictions);
        pending_bindings_expired.add(o.pending_bindings_expired.value());
        late_bindings.add(o.late_bindings.value());
        untracked_late_types.add(o.untracked_late_types.value());
        rebindings.add(o.rebindings.value());
        bindings_released.add(o.bindings_released.value());
        ambiguous_bindings.add(o.ambiguous_bindings.value());
        clock_rate_unmatched.add(o.clock_rate_unmatched.value());
        unvalidated_streams.add(o.unvalidated_streams.value());
        rtcp_unmatched_blocks.add(o.rtcp_unmatched_blocks.value());
        rtcp_json_without_call_id.add(o.rtcp_json_without_call_id.value());
        add_all(rtp_errors, o.rtp_errors);
        add_all(rtcp_errors, o.rtcp_errors);
        add_all(rtcp_json_errors, o.rtcp_json_errors);
        by_peers.merge(o.by_peers);
    }

private:
    template <std::size_t N>
    static void add_all(std::array<Counter, N>& to, const std::array<Counter, N>& from) noexcept {
        for (std::size_t i = 0; i < N; ++i) to[i].add(from[i].value());
    }
};

}  // namespace hepd::rtp
