#pragma once
// One shard's RTP streams: per-packet measurement (stream_record.hpp), media bindings from SDP,
// receiver views from RTCP, capped tables, expiry on packet time, and the statistics.
//
// Routing this table relies on (daemon/shard): RTP by media_key(destination); raw RTCP by
// media_key(source), i.e. the reporter's media address; HEP RTCP-JSON by its correlation id
// (the Call-ID); bindings by media_key(binding.media). So a report block about SSRC S sent by
// reporter R describes the stream in this table whose media_key(dst) == media_key(R) and whose
// SSRC is S.
//
// Tables (each capped; eviction of the least recently active entry is counted):
//  - streams        keyed by (src, dst, SSRC), cap max_streams;
//  - media entries  one per media_key(dst) with live streams: the binding (Call-ID, codecs) if
//                   any, and the list of its streams (for late bindings and for RTCP, which
//                   names the destination and the SSRC but not the source); never more than
//                   the streams, so it needs no cap of its own;
//  - pending media  bindings with no live stream: waiting for the first packet, or kept after
//                   the last stream ended for streams to come (a new SSRC after a re-INVITE);
//                   cap max_pending_media, dropped after pending_media_timeout;
//  - reported       receiver views from RTCP-JSON keyed by (Call-ID, SSRC),
//                   cap max_reported_streams, dropped after stream_idle_timeout.
//
// Not thread-safe: one table per shard. The statistics are readable from another thread.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/address.hpp"
#include "core/bytes.hpp"
#include "core/log.hpp"
#include "core/lru_table.hpp"
#include "core/media_binding.hpp"
#include "core/packet_meta.hpp"
#include "core/time.hpp"
#include "rtp/rtp_packet.hpp"
#include "rtp/stream_record.hpp"
#include "rtp/stream_stats.hpp"

namespace hepd::rtp {

// Limits and timers; the daemon fills it from config (TablesConfig, TimersConfig), whose
// defaults these are.
struct StreamTableConfig {
    std::uint32_t max_streams = 200'000;
    std::uint32_t max_pending_media = 200'000;
    std::uint32_t max_reported_streams = 200'000;
    std::int64_t stream_idle_timeout_us = 30'000'000;                 // timers.stream_idle_timeout
    std::int64_t pending_media_timeout_us = 4LL * 3600 * 1'000'000;   // timers.max_call_duration
    QualityOptions quality;
};

struct ReportedKey {
    std::string call_id;
    std::uint32_t ssrc = 0;  // the stream the reports describe (report block source SSRC)

    friend bool operator==(const ReportedKey&, const ReportedKey&) = default;
};

// A receiver's view of a stream as an RTCP-JSON sender (rtpengine, Asterisk) reported it.
struct ReportedStream {
    std::uint32_t reporter_ssrc = 0;
    Timestamp first;
    Timestamp last;
    ReceiverView view;

    friend bool operator==(const ReportedStream&, const ReportedStream&) = default;
};

struct FinishedStream {
    const StreamKey& key;
    const Stream& stream;
    const Binding* binding;  // null when the stream never joined a dialog
    const StreamSummary& summary;
    FinishReason reason;
};

// Receives every stream once, when it finishes (offline report, logs). Called from inside the
// table (expiry, flush, eviction while a packet is being handled): it must not modify the table.
class StreamSink {
public:
    virtual ~StreamSink() = default;
    virtual void on_stream_finished(const FinishedStream& finished) = 0;
    virtual void on_reported_stream_finished(const ReportedKey& /*key*/, const ReportedStream& /*stream*/,
                                             FinishReason /*reason*/) {}
};

class StreamTable {
public:
    static constexpr std::uint32_t kNone = LruTable<StreamKey, int>::kNone;
    // Streams examined per RTCP lookup on one media address (bounds the work a flood of SSRCs
    // to one address can cause).
    static constexpr std::size_t kMaxStreamsPerLookup = 64;

    explicit StreamTable(const StreamTableConfig& config = {});
    StreamTable(const StreamTable&) = delete;
    StreamTable& operator=(const StreamTable&) = delete;

    // Not owned; may be null. Called from expire()/finish_all()/evictions, never per packet.
    void set_sink(StreamSink* sink) noexcept { sink_ = sink; }

    // Per packet. No allocation except when a stream (or reported stream) is created.
    void on_rtp(const PacketMeta& meta, ByteSpan payload);
    void on_rtp(const PacketMeta& meta, const RtpPacket& packet);
    void on_rtcp(const PacketMeta& meta, ByteSpan payload);
    void on_rtcp_json(const PacketMeta& meta, std::string_view call_id, ByteSpan payload);

    // Attaches Call-ID and codecs to every current and future stream sent to
    // media_key(binding.media). A later SDP (by binding.time) replaces an earlier one.
    void bind(const MediaBinding& binding);

    // Finishes streams idle for stream_idle_timeout and drops stale pending bindings and
    // reported streams, all by packet time.
    void expire(Timestamp now);
    // Finishes every stream and reported stream (end of an offline run, shutdown). Pending
    // bindings stay: they are not measurements.
    void finish_all(Timestamp now);

    const StreamStats& stats() const noexcept { return stats_; }
    const StreamTableConfig& config() const noexcept { return config_; }
    std::size_t size() const noexcept { return streams_.size(); }
    std::size_t pending_size() const noexcept { return pending_.size(); }
    std::size_t media_size() const noexcept { return media_.size(); }
    std::size_t reported_size() const noexcept { return reported_.size(); }

    const Stream* find(const StreamKey& key) const noexcept;
    const Binding* binding_of(const StreamKey& key) const noexcept;  // null when unbound
    const Binding* pending_binding(const Endpoint& media) const noexcept;
    const ReportedStream* find_reported(std::string_view call_id, std::uint32_t ssrc) const noexcept;
    StreamSummary summary(const StreamKey& key) const noexcept;

    // Snapshot support: visit live records (least recently active first) and put back fully
    // formed ones. Restore bindings before streams so that streams join them.
    template <class F>  // f(const StreamKey&, const Stream&, const Binding* binding_or_null)
    void for_each(F&& f) const {
        streams_.for_each([&](std::uint32_t, const typename StreamLru::Entry& e) {
            f(e.key, e.value.stream, bound(e.value));
        });
    }
    template <class F>  // f(const Endpoint& media_key, const Binding&, bool waiting_for_streams)
    void for_each_binding(F&& f) const {
        media_.for_each([&](std::uint32_t, const typename MediaLru::Entry& e) {
            if (e.value.bound) f(e.key, e.value.binding, false);
        });
        pending_.for_each([&](std::uint32_t, const typename PendingLru::Entry& e) {
            f(e.key, e.value.binding, true);
        });
    }
    template <class F>  // f(const ReportedKey&, const ReportedStream&)
    void for_each_reported(F&& f) const {
        reported_.for_each([&](std::uint32_t, const typename ReportedLru::Entry& e) { f(e.key, e.value); });
    }
    bool insert(const StreamKey& key, const Stream& stream);   // false if the key is live
    void insert_binding(const Endpoint& media, Binding binding);
    bool insert_reported(const ReportedKey& key, const ReportedStream& stream);

    // Bytes held by the tables and by the strings they own (heap: the requested sizes).
    std::size_t memory_bytes() const noexcept;

    // Bytes of one entry of each table, beside its share of the table's index (16-octet slots
    // at a load of at most 1/2) and any Call-ID heap.
    struct EntrySizes {
        std::size_t stream;
        std::size_t media;
        std::size_t pending;
        std::size_t reported;
    };
    static EntrySizes entry_sizes() noexcept;

private:
    struct StreamSlot {
        Stream stream;
        std::uint32_t media = kNone;  // media entry, or kNone
        std::uint32_t prev = kNone;   // streams of the same media entry
        std::uint32_t next = kNone;
    };
    struct MediaEntry {
        Binding binding;
        bool bound = false;
        std::uint32_t head = kNone;
        std::uint32_t streams = 0;
    };
    struct PendingBinding {
        Binding binding;
        Timestamp idle_since;  // SDP time, or when the last stream of the address finished
    };
    using StreamLru = LruTable<StreamKey, StreamSlot>;
    using MediaLru = LruTable<Endpoint, MediaEntry>;
    using PendingLru = LruTable<Endpoint, PendingBinding>;
    using ReportedLru = LruTable<ReportedKey, ReportedStream>;

    const Binding* bound(const StreamSlot& slot) const noexcept;
    std::uint32_t create_stream(const StreamKey& key, std::uint64_t hash, bool count_start, Timestamp now);
    void finish_stream(std::uint32_t at, FinishReason reason);
    void link_media(std::uint32_t at, const Endpoint& dst);
    void unlink_media(std::uint32_t at, Timestamp when);
    void park_binding(const Endpoint& media, std::uint64_t hash, Binding binding, Timestamp idle_since);
    void note_parse_error(Timestamp now, std::string_view what, std::string_view reason);
    void apply_binding(const Endpoint& media, Binding binding);
    std::uint32_t find_reported_stream(const Endpoint& reporter, std::uint32_t ssrc,
                                       const Endpoint& peer) const noexcept;
    void apply_report_block(const PacketMeta& meta, const Endpoint& reporter, std::uint32_t ssrc,
                            std::uint8_t fraction_lost, std::int32_t cumulative_lost, std::uint32_t jitter,
                            std::uint32_t lsr, std::uint32_t dlsr, std::uint32_t arrival);
    ReportedStream* reported_stream(std::string_view call_id, std::uint32_t ssrc, Timestamp now);
    void finish_reported(std::uint32_t at, FinishReason reason);

    // One rate-limited log line per kind of degraded event (packet time, 10 s apart).
    struct Throttles {
        LogThrottle stream_evictions;
        LogThrottle pending_evictions;
        LogThrottle reported_evictions;
        LogThrottle parse_errors;
        LogThrottle unmatched_reports;
        LogThrottle no_call_id;
        LogThrottle bindings;
    };

    StreamTableConfig config_;
    StreamSink* sink_ = nullptr;
    Throttles logs_;
    StreamStats stats_;
    StreamLru streams_;
    MediaLru media_;
    PendingLru pending_;
    ReportedLru reported_;
};

} // namespace hepd::rtp
