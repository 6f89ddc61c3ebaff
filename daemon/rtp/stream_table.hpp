#pragma once
// One shard's RTP streams: per-packet measurement (stream_record.hpp), media bindings from SDP,
// receiver views from RTCP, capped tables, expiry on packet time, and the statistics.
//
// Routing this table relies on (daemon/shard): RTP by media_key(destination); RTCP, RTCP-XR and
// RTCP-JSON by media_key(source), i.e. the reporter's media address; bindings by
// media_key(binding.media). So a report block about SSRC S sent by reporter R describes the
// stream in this table whose media_key(dst) == media_key(R) and whose SSRC is S.
//
// A stream belongs to one call. SDP binds (media address, peer address) pairs to a Call-ID
// (core/media_binding.hpp); a stream from S to D joins the binding (D, S), else D's binding with
// no known peer (an offer not answered yet), else D's newest binding of any peer (a NAT'd
// sender). A media address shared by many calls (a UAS or media server port) so never decides
// alone. RTCP that an SDP sends elsewhere than next to its RTP (a=rtcp, RFC 3605; an odd RTP
// port) has a binding of its own at that address (MediaBinding::rtcp), paired with the other
// end's RTCP address: no stream joins it, and reports sent from there, whose stream lives where
// its RTP goes (maybe another shard), become reported streams of its call, like RTCP-JSON. A binding of another call
// for a pair that carries running streams ends them (reason `rebound`): the next packet starts a stream of the new
// call. Offline, bindings arrive in input order (daemon/shard), so "after the new SDP" is decided exactly by packet
// order. Without signalling, a confirmed sequence restart or timestamp discontinuity (stream_record.hpp: classify) ends
// the stream (`restarted`), and so does a packet after more than stream_idle_timeout of silence (`idle`): no phantom
// loss or jitter across calls.
//
// Tables (each capped; eviction of the least recently active entry is counted):
//  - streams        keyed by (src, dst, SSRC), cap max_streams;
//  - bindings       keyed by (media_key(media), media_key(peer)): Call-ID and codecs, with the
//                   number of streams that joined; cap max_streams + max_pending_media. One
//                   that no stream uses is "pending" and is dropped after
//                   pending_media_timeout;
//  - media entries  one per media_key(dst) with streams or bindings: its streams (for bindings
//                   and RTCP, which names the destination and the SSRC but not the source) and
//                   its newest binding;
//  - reported       receiver views from RTCP-JSON about streams not measured here (and from RTCP
//                   sent from an address of a call's RTCP alone, above), keyed by
//                   (Call-ID, SSRC), cap max_reported_streams, finished after
//                   stream_idle_timeout without a report (reported_stream.hpp). Each is linked
//                   to the binding of the reporter's address that named its dialog (a list per
//                   binding entry), so that the end of that binding's dialog finishes it.
//
// A dialog's bindings go when the dialog ends (unbind(), sent by the shard that owns the
// dialog to the one that owns the media address, like the bindings): those no stream uses at
// once, those in use when their last stream leaves. Until then late packets still join the call.
// The reported streams linked to a released binding finish at once (`call_ended`; `idle` if
// their last report was stream_idle_timeout before the dialog left), in use or not. An offer's
// binding that its answer replaces hands them to the answer's; a binding dropped for any other
// reason (evicted, expired, taken by another call) only unlinks them: they finish by idle as
// before. Reports that arrive after the unbind (late) make a new reported stream of the same
// key, linked to no binding, which finishes by idle (the stream is then counted twice); so do
// reported streams restored from a snapshot (links are not snapshotted).
//
// Not thread-safe: one table per shard. The statistics are readable from another thread.
#include "core/address.hpp"
#include "core/bytes.hpp"
#include "core/log.hpp"
#include "core/lru_table.hpp"
#include "core/media_binding.hpp"
#include "core/packed_endpoint.hpp"
#include "core/packet_meta.hpp"
#include "core/time.hpp"
#include "rtp/reported_stream.hpp"
#include "rtp/rtcp_json.hpp"
#include "rtp/rtp_packet.hpp"
#include "rtp/stream_record.hpp"
#include "rtp/stream_stats.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hepd::rtp {

// Limits and timers; the daemon fills it from config (TablesConfig, TimersConfig), whose
// defaults these are.
struct StreamTableConfig {
    std::uint32_t max_streams = 200'000;
    std::uint32_t max_pending_media = 200'000;
    std::uint32_t max_reported_streams = 200'000;
    std::int64_t stream_idle_timeout_us = 30'000'000;                // timers.stream_idle_timeout
    std::int64_t pending_media_timeout_us = 4LL * 3600 * 1'000'000;  // timers.max_call_duration
    QualityOptions quality;
};

struct FinishedStream {
    const StreamKey& key;
    const Stream& stream;
    const Binding* binding;  // null when the stream never joined a dialog
    const StreamSummary& summary;
    FinishReason reason;
};

// A reported stream as it finishes, with the figures the statistics took from it
// (summarize_reported with the table's quality options).
struct FinishedReported {
    const ReportedKey& key;
    const ReportedStream& stream;
    const ReportedSummary& summary;
    FinishReason reason;
};

// Receives every stream once, when it finishes (offline report, call records, logs). Called from
// inside the table (expiry, flush, eviction while a packet is being handled): it must not modify
// the table.
class StreamSink {
public:
    virtual ~StreamSink() = default;
    virtual void on_stream_finished(const FinishedStream& finished) = 0;
    virtual void on_reported_stream_finished(const FinishedReported& /*finished*/) {}
};

class StreamTable {
public:
    static constexpr std::uint32_t kNone = LruTable<StreamKey, int, StreamKeyHash>::kNone;
    // Streams examined per RTCP lookup on one media address (bounds the work a flood of SSRCs
    // to one address can cause).
    static constexpr std::size_t kMaxStreamsPerLookup = 64;
    // Streams examined when a binding arrives (one SIP message, not one packet): enough for
    // every concurrent call to one media server port.
    static constexpr std::size_t kMaxStreamsPerBind = 4096;
    // An unbound stream still sending when an answer pairs its addresses (its last packet at most
    // this long before the SDP) is that call's, its first packets captured before the answer.
    // One that has gone quiet, or one sent to an address that a new offer names (media flows to
    // an offerer only once it has offered), is what is left of a call whose signalling was
    // never seen (a capture that began mid-call): it ends (`rebound`), and the new call's
    // packets start anew.
    static constexpr std::int64_t kLateBindingWindowUs = 250'000;

    explicit StreamTable(const StreamTableConfig& config = {});
    StreamTable(const StreamTable&) = delete;
    StreamTable& operator=(const StreamTable&) = delete;

    // Not owned; may be null. Called from expire()/finish_all()/evictions, never per packet.
    void set_sink(StreamSink* sink) noexcept { sink_ = sink; }

    // Per packet. No allocation except when a stream (or reported stream) is created and when
    // a stream first needs its extras (stream_record.hpp: a dynamic payload type, a break).
    void on_rtp(const PacketMeta& meta, ByteSpan payload);
    void on_rtp(const PacketMeta& meta, const RtpPacket& packet);
    void on_rtcp(const PacketMeta& meta, ByteSpan payload);
    void on_rtcp_json(const PacketMeta& meta, std::string_view call_id, ByteSpan payload);

    // Binds (media, peer) to the binding's call: running streams of that pair (and unbound ones
    // that started about then) join it, streams of another call on the pair end (`rebound`),
    // and future streams join it. Applied in arrival order, which offline is input order.
    void bind(const MediaBinding& binding);
    // The dialog (call_id, dialog) has ended: its bindings of media_key(media) go -- now if no
    // stream uses them, else when the last one leaves. Counted. The pair (media, peer) and the
    // address's binding without a peer are found directly; other peers of that dialog (an older
    // SDP) among the address's kMaxStreamsPerLookup newest bindings. Port 0: no peer known.
    // Their reported streams finish: `call_ended`, or `idle` for those whose last report was
    // stream_idle_timeout or more before `when` (the dialog left its table then; 0: unknown),
    // so that the reason does not depend on when expire() last ran.
    void unbind(const Endpoint& media, const Endpoint& peer, std::string_view call_id, std::uint32_t dialog,
                Timestamp when = {});

    // Finishes streams idle for stream_idle_timeout and drops stale pending bindings and
    // reported streams, all by packet time.
    void expire(Timestamp now);
    // Finishes every stream and reported stream (end of an offline run, shutdown). Bindings
    // stay: they are not measurements.
    void finish_all(Timestamp now);

    const StreamStats& stats() const noexcept { return stats_; }
    const StreamTableConfig& config() const noexcept { return config_; }
    std::size_t size() const noexcept { return streams_.size(); }
    std::size_t pending_size() const noexcept { return pending_count_; }
    std::size_t bindings_size() const noexcept { return bindings_.size(); }
    std::size_t media_size() const noexcept { return media_.size(); }
    std::size_t reported_size() const noexcept { return reported_.size(); }

    const Stream* find(const StreamKey& key) const noexcept;
    const Binding* binding_of(const StreamKey& key) const noexcept;  // null when unbound
    // The binding of (media, peer); a default (port 0) peer asks for the one with no peer.
    const Binding* find_binding(const Endpoint& media, const Endpoint& peer = {}) const noexcept;
    // The newest binding of media_key(media) that no stream uses, or null.
    const Binding* pending_binding(const Endpoint& media) const noexcept;
    const ReportedStream* find_reported(std::string_view call_id, std::uint32_t ssrc) const noexcept;  // any reporter's
    StreamSummary summary(const StreamKey& key) const noexcept;

    // Snapshot support: visit live records (least recently active first) and put back fully
    // formed ones. Restore bindings before streams so that streams join them.
    template <class F>  // f(const StreamKey&, const Stream&, const Binding* binding_or_null)
    void for_each(F&& f) const {
        streams_.for_each([&](std::uint32_t at, const typename StreamLru::Entry& e) {
            f(key_at(at), e.value.stream, bound(e.value));
        });
    }
    // f(const Endpoint& media_key, const Endpoint& peer, const Binding&, bool waiting_for_streams,
    //   bool released); peer as in insert_binding.
    template <class F>
    void for_each_binding(F&& f) const {
        bindings_.for_each([&](std::uint32_t b, const typename BindingLru::Entry& e) {
            f(media_address(e.key.media), peer_of(b), e.value.binding, e.value.streams == 0, e.value.released);
        });
    }
    template <class F>  // f(const ReportedKey&, const ReportedStream&)
    void for_each_reported(F&& f) const {
        reported_.for_each([&](std::uint32_t, const typename ReportedLru::Entry& e) { f(e.key, e.value.stream); });
    }
    bool insert(const StreamKey& key, const Stream& stream);  // false if the key is live
    // Binds (media, peer): media_key() of the other end, port 0 when unknown. `released`: its
    // dialog has ended, it goes with its last stream. Bindings of one address go in the order they
    // were applied (by time): the last is its newest.
    void insert_binding(const Endpoint& media, const Endpoint& peer, Binding binding, bool released = false);
    // After a restore: released bindings that no stream joined (their streams were not restored)
    // go now, as they would have when their last stream left.
    void drop_released_unused();
    bool insert_reported(const ReportedKey& key, const ReportedStream& stream);

    // Bytes held by the tables, by the strings they own and by streams' extras (heap: the
    // requested sizes). O(1): it is published once a second (hepd_table_memory_bytes).
    std::size_t memory_bytes() const noexcept;
    // The strings' part of it: the Call-IDs of bindings and reported streams (CompactText heap
    // blocks), kept up to date as they come and go. A block the records of one call share is
    // counted once for each: an upper bound.
    std::size_t key_heap_bytes() const noexcept { return key_heap_bytes_; }

    // Bytes of one entry of each table, beside its share of the table's index (4-byte slots
    // at a load of at most 4/5) and any Call-ID heap.
    struct EntrySizes {
        std::size_t stream;
        std::size_t media;
        std::size_t binding;
        std::size_t reported;
    };
    static EntrySizes entry_sizes() noexcept;

private:
    // The tables' keys keep their endpoints packed (an IPv4 address in place, any other in
    // endpoints_) and their home (the high half of their hash), so that a table moves entries
    // without reading the pool. A stream key is 24 bytes, not a StreamKey's 44: a stream entry is
    // 184 bytes, not 208.
    struct StoredKey {
        PackedEndpoint src;
        PackedEndpoint dst;
        std::uint32_t ssrc = 0;
        std::uint32_t home = 0;
    };
    struct MediaKey {
        PackedEndpoint address;
        std::uint32_t home = 0;
    };
    template <class K>
    struct KeptHome {
        static std::size_t home(const K& key) noexcept { return key.home; }
    };
    struct StreamSlot {
        Stream stream;
        std::uint32_t media = kNone;  // media entry of the destination
        std::uint32_t prev = kNone;   // streams of the same media entry
        std::uint32_t next = kNone;
        std::uint32_t binding = kNone;  // the binding it joined, or kNone
    };
    // Released when both lists are empty.
    struct MediaEntry {
        std::uint32_t head = kNone;          // its streams, linked through StreamSlot
        std::uint32_t latest = kNone;        // its newest binding
        std::uint32_t binding_head = kNone;  // its bindings, linked through BindingEntry
    };
    // The media address by its media entry, which lives as long as the address has bindings: 4
    // bytes of every binding, not 20.
    struct BindingKey {
        std::uint32_t media = kNone;
        PackedEndpoint peer;  // port 0: unknown
        std::uint32_t home = 0;
    };
    // A reported stream's key with its home, in the tail padding of the ReportedKey: growing the
    // index and erasing (one per reported stream) move slots without reading a Call-ID's text.
    struct StoredReportedKey : ReportedKey {
        std::uint32_t home = 0;
    };
    static_assert(sizeof(StoredReportedKey) == sizeof(ReportedKey));
    struct BindingEntry {
        // binding.time is its SDP's time, and once its last stream has left, the later of that
        // and the stream's last packet: what a waiting binding expires by.
        Binding binding;
        // Streams that joined it (at most max_streams, below 2^31), and whether its dialog has
        // ended: then it is dropped when its last stream leaves. One word, not two.
        std::uint32_t streams : 31 = 0;
        std::uint32_t released : 1 = 0;
        std::uint32_t prev = kNone;  // bindings of the same media address
        std::uint32_t next = kNone;
        std::uint32_t reported_head = kNone;  // reported streams linked to it (ReportedSlot)
    };
    // With its key and links, a binding table entry is 80 bytes (below).
    static_assert(sizeof(BindingEntry) == 56);
    using StreamLru = LruTable<StoredKey, StreamSlot, KeptHome<StoredKey>>;
    static_assert(sizeof(StreamLru::Entry) == 184);
    // Never evicted nor walked in order (an entry goes with its last stream and binding): no
    // recency links.
    using MediaLru = LruTable<MediaKey, MediaEntry, KeptHome<MediaKey>, false>;
    using BindingLru = LruTable<BindingKey, BindingEntry, KeptHome<BindingKey>>;
    static_assert(sizeof(MediaLru::Entry) == 24 && sizeof(BindingLru::Entry) == 80);
    // A reported stream and its place in the list of its binding's reported streams (not in
    // snapshots: restored reported streams are linked to no binding).
    struct ReportedSlot {
        ReportedStream stream;
        std::uint32_t binding = kNone;  // the binding whose release finishes it, or kNone
        std::uint32_t prev = kNone;     // reported streams of the same binding
        std::uint32_t next = kNone;
    };
    using ReportedLru = LruTable<StoredReportedKey, ReportedSlot, KeptHome<StoredReportedKey>>;

    const Binding* bound(const StreamSlot& slot) const noexcept;
    std::uint32_t find_stream(const StreamKey& key, std::uint64_t hash) const noexcept;
    StreamKey key_at(std::uint32_t at) const noexcept;  // the key of the stream at `at`
    Endpoint media_address(std::uint32_t m) const noexcept { return endpoints_.unpack(media_.entry(m).key.address); }
    Endpoint peer_of(std::uint32_t b) const noexcept { return endpoints_.unpack(bindings_.entry(b).key.peer); }
    std::uint32_t create_stream(const StreamKey& key, std::uint64_t hash, bool count_start, Timestamp now);
    void measure(std::uint32_t at, const RtpPacket& packet, Timestamp arrival, Timing timing = Timing::in_line);
    void hold(std::uint32_t at, const RtpPacket& packet, Timestamp arrival);
    void count_extras(bool had, const Stream& stream) noexcept;
    ReceiverView& receiver_view(std::uint32_t at);           // made at the first report, and counted
    void end_stream(std::uint32_t at, FinishReason reason);  // finish and erase
    void finish_stream(std::uint32_t at, FinishReason reason);
    std::uint32_t find_media(const Endpoint& media) const noexcept;
    std::uint32_t media_entry(const Endpoint& media);  // found or made
    void release_media(std::uint32_t m);
    void link_media(std::uint32_t at, const Endpoint& dst);
    void unlink_media(std::uint32_t at);
    std::uint32_t find_binding_index(const Endpoint& media, const Endpoint& peer) const noexcept;
    std::uint32_t find_binding_at(std::uint32_t media, const Endpoint& peer) const noexcept;  // by media entry
    std::uint32_t binding_for(const StreamKey& key, std::uint32_t media);
    void join(std::uint32_t stream, std::uint32_t binding, Timestamp when);
    void drop_binding(std::uint32_t b);
    std::uint32_t store_binding(const Endpoint& media, const Endpoint& peer, Binding binding);
    // `binding` shares its call's Call-ID block and takes its offer's codecs if it has none.
    std::uint32_t binding_of_call(std::uint32_t m, const Binding& binding) const noexcept;
    void inherit_from_call(std::uint32_t m, const Endpoint& peer, Binding& binding) const noexcept;
    void take_offer(const Endpoint& media, Binding& binding) const noexcept;
    void note_parse_error(Timestamp now, std::string_view what, std::string_view reason);
    void apply_binding(const Endpoint& media, const Endpoint& peer, Binding binding);
    void bind_rtcp(const Endpoint& media, const Endpoint& peer, Binding binding);
    void answer_offer(std::uint32_t m, std::uint32_t b);
    std::uint32_t find_reported_stream(const Endpoint& reporter, std::uint32_t ssrc,
                                       const Endpoint& peer) const noexcept;
    std::uint32_t rtcp_binding(const Endpoint& reporter, const Endpoint& peer) const noexcept;
    ReceiverView& report_to_call(const PacketMeta& meta, std::string_view call_id, const Endpoint& reporter,
                                 std::uint32_t reporter_ssrc, std::uint32_t ssrc, std::uint8_t fraction_lost,
                                 std::uint32_t jitter);
    void apply_report_block(const PacketMeta& meta, const Endpoint& reporter, std::uint32_t reporter_ssrc,
                            std::uint32_t ssrc, std::uint8_t fraction_lost, std::int32_t cumulative_lost,
                            std::uint32_t jitter, std::uint32_t lsr, std::uint32_t dlsr, std::uint32_t arrival);
    // The reporter's view of `ssrc` under the Call-ID (created when absent): each receiver's own,
    // as the reporter's shard keeps it (two ends of a call may send with one SSRC).
    std::uint32_t reported_stream(std::string_view call_id, std::uint32_t ssrc, const Endpoint& reporter,
                                  Timestamp now);
    std::uint32_t find_reported_at(std::string_view call_id, std::uint32_t ssrc, const Endpoint& reporter,
                                   std::uint64_t hash) const noexcept;
    void end_reported(std::uint32_t at, FinishReason reason);  // finish, unlink and erase
    void finish_reported(std::uint32_t at, FinishReason reason);
    void note_reporter_binding(std::uint32_t at, std::string_view call_id, const Endpoint& peer);
    void take_binding_codec(ReportedStream& reported, std::uint32_t binding) const noexcept;
    void link_reported(std::uint32_t at, std::uint32_t binding);
    void unlink_reported(std::uint32_t at);
    void unlink_reported_of(std::uint32_t binding);
    void release_binding(std::uint32_t b, Timestamp when);

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
    BindingLru bindings_;
    ReportedLru reported_;
    EndpointPool endpoints_;         // the keys' endpoints that are not IPv4
    std::size_t pending_count_ = 0;  // bindings no stream uses
    std::size_t key_heap_bytes_ = 0;
    std::size_t extras_count_ = 0;  // streams whose extras are allocated
    std::size_t views_count_ = 0;   // streams whose receiver view is allocated
    RtcpJsonReport rtcp_json_;      // on_rtcp_json's, reused: a fresh one zeroes 31 blocks a packet
};

}  // namespace hepd::rtp
