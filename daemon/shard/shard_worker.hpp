#pragma once
// What one shard runs: the dialog table and the stream table, fed datagrams in packet-time order.
// SDP learnt by the dialog table leaves through the BindingSink (to whichever shard owns the
// media address); bindings for this shard's media come back in through bind().
#include "core/stats.hpp"
#include "rtp/stream_table.hpp"
#include "shard/datagram.hpp"
#include "shard/duplicate_filter.hpp"
#include "shard/pipeline.hpp"
#include "sip/dialog_table.hpp"

#include <array>
#include <cstdint>
#include <string_view>

namespace hepd::shard {

struct ShardConfig {
    sip::DialogConfig dialogs;
    rtp::StreamTableConfig streams;
    DuplicateFilterConfig duplicates;
    // Offline runs finish every stream at the end so the report includes it; the daemon keeps
    // them open at shutdown, to be written to the snapshot and continued after the restart.
    bool flush_at_end = true;
    // Where dialogs get their peer groups; not owned, may be null (every dialog is "other").
    const peer::PeerDirectory* peers = nullptr;
};

struct ShardStats {
    // by PayloadClass; copies dropped by the duplicate filter are counted there instead
    std::array<Counter, kPayloadClassCount> datagrams{};
    Counter bindings_sent;
    Counter bindings_received;
    Counter unbinds_sent;  // ends of a dialog's bindings (MediaBinding::dialog_ended)
    Counter unbinds_received;
    // Bytes the shard's tables hold (structures, and key text beyond the small-string buffer),
    // refreshed once per second of packet time: hepd_table_memory_bytes.
    Gauge dialog_table_bytes;  // dialogs, their SDP media addresses and their timers
    Gauge transaction_table_bytes;
    Gauge stream_table_bytes;  // streams, media addresses, bindings, reported streams
    Gauge duplicate_filter_bytes;
    // Records each table holds, refreshed with the figures above: what the daemon makes its
    // snapshot images ready for, so that even the first snapshot after a start (with no earlier
    // capture to go by) pauses the shard only to copy.
    Gauge dialog_records;
    Gauge transaction_records;
    Gauge stream_records;
    Gauge binding_records;
    Gauge reported_stream_records;
};

// The four figures above by table, named as hepd_table_memory_bytes's `table` label.
inline constexpr std::array<std::string_view, 4> kTableNames{"dialogs", "transactions", "streams", "duplicates"};
inline std::array<std::int64_t, 4> table_memory_bytes(const ShardStats& s) noexcept {
    return {s.dialog_table_bytes.value(), s.transaction_table_bytes.value(), s.stream_table_bytes.value(),
            s.duplicate_filter_bytes.value()};
}

class ShardWorker final : public Worker, private sip::MediaSink {
public:
    explicit ShardWorker(const ShardConfig& config, rtp::StreamSink* finished_streams = nullptr);

    void process(const Datagram& d, BindingSink& out) override;
    void process_batch(std::span<const Datagram> ds, BindingSink& out) override;
    Lookahead look_ahead(const Datagram& d) const noexcept override { return duplicates_.prepare(d); }
    void process_ahead(const Datagram& d, const Lookahead& ahead, BindingSink& out) override;
    void bind(const MediaBinding& binding) override;
    void advance(Timestamp now, BindingSink& out) override;
    void advance_sip(Timestamp now, BindingSink& out) override;
    void advance_media(Timestamp now, BindingSink& out) override;
    std::int64_t next_sip_deadline_us() const noexcept override { return dialogs_.next_deadline_us(); }
    void finish(Timestamp end) override;

    const sip::DialogTable& dialogs() const noexcept { return dialogs_; }
    const rtp::StreamTable& streams() const noexcept { return streams_; }
    sip::DialogTable& dialogs() noexcept { return dialogs_; }
    rtp::StreamTable& streams() noexcept { return streams_; }
    const ShardStats& stats() const noexcept { return stats_; }
    const DuplicateStats& duplicate_stats() const noexcept { return duplicates_.stats(); }

private:
    void take(const Datagram& d, BindingSink& out);  // past the duplicate filter
    void on_media_binding(const MediaBinding& binding) noexcept override;
    void publish_memory(Timestamp now) noexcept;  // when due
    void publish_memory_now() noexcept;

    DuplicateFilter duplicates_;
    sip::DialogTable dialogs_;
    rtp::StreamTable streams_;
    ShardStats stats_;
    bool flush_at_end_;
    BindingSink* out_ = nullptr;              // set for the duration of process() and advance()
    std::int64_t memory_due_us_ = INT64_MIN;  // next refresh of the memory figures
};

// The same figures summed over shards (any range of worker pointers).
template <class Workers>
std::array<std::int64_t, kTableNames.size()> total_table_memory_bytes(const Workers& workers) noexcept {
    std::array<std::int64_t, kTableNames.size()> sum{};
    for (const ShardWorker* w : workers) {
        const auto bytes = table_memory_bytes(w->stats());
        for (std::size_t t = 0; t < sum.size(); ++t) sum[t] += bytes[t];
    }
    return sum;
}

}  // namespace hepd::shard
