#include "shard/shard_worker.hpp"

#include <algorithm>
#include <optional>

namespace hepd::shard {

ShardWorker::ShardWorker(const ShardConfig& config, rtp::StreamSink* finished_streams)
    : duplicates_(config.duplicates),
      dialogs_(config.dialogs, this),
      streams_(config.streams),
      flush_at_end_(config.flush_at_end) {
    streams_.set_sink(finished_streams);
    dialogs_.set_peers(config.peers);
}

namespace {

// The first lines of a payload; the hardware prefetcher follows the rest.
void prefetch_payload(const Datagram& d) noexcept {
    constexpr std::size_t kLines = 4;
    const std::size_t bytes = std::min(d.payload.size(), kLines * 64);
    for (std::size_t at = 0; at < bytes; at += 64) __builtin_prefetch(d.payload.data() + at);
}

}  // namespace

void ShardWorker::process(const Datagram& d, BindingSink& out) {
    // Before the tables: a copy from a second agent is no retransmission, hop or RTP duplicate.
    if (duplicates_.is_duplicate(d)) return;
    take(d, out);
}

// Two datagrams ahead the payload is prefetched; one ahead its duplicate key is computed and the
// filter's buckets prefetched: the cache misses of the next packets overlap the work on this one
// (payloads were written by another thread, the filter's table is larger than a core's cache).
void ShardWorker::process_batch(std::span<const Datagram> ds, BindingSink& out) {
    const std::size_t n = ds.size();
    for (std::size_t i = 0; i < n && i < 2; ++i) prefetch_payload(ds[i]);
    std::optional<DuplicateKey> next = n > 0 ? duplicates_.prepare(ds[0]) : std::nullopt;
    for (std::size_t i = 0; i < n; ++i) {
        const std::optional<DuplicateKey> key = next;
        if (i + 2 < n) prefetch_payload(ds[i + 2]);
        next = i + 1 < n ? duplicates_.prepare(ds[i + 1]) : std::nullopt;
        process_ahead(ds[i], key, out);
    }
}

void ShardWorker::process_ahead(const Datagram& d, const Lookahead& ahead, BindingSink& out) {
    if (ahead && duplicates_.is_duplicate(*ahead, capture_source(d), d.time)) return;
    take(d, out);
}

void ShardWorker::take(const Datagram& d, BindingSink& out) {
    stats_.datagrams[static_cast<std::size_t>(d.kind)].add();
    const PacketMeta& meta = d;
    switch (d.kind) {
    case PayloadClass::sip:
        out_ = &out;
        dialogs_.process(as_text(d.payload), meta);
        out_ = nullptr;
        break;
    case PayloadClass::rtp: streams_.on_rtp(meta, d.payload); break;
    case PayloadClass::rtcp: streams_.on_rtcp(meta, d.payload); break;
    case PayloadClass::rtcp_json: streams_.on_rtcp_json(meta, d.correlation_id, d.payload); break;
    case PayloadClass::qos:
    case PayloadClass::log:
    case PayloadClass::other: break;  // counted above; nothing to reconstruct (yet)
    }
}

void ShardWorker::on_media_binding(const MediaBinding& binding) noexcept {
    if (binding.dialog_ended) {
        // At the end of a run (finish) there is nobody to tell: the stream tables end too.
        if (out_ == nullptr) return;
        stats_.unbinds_sent.add();
    } else {
        stats_.bindings_sent.add();
    }
    if (out_ != nullptr) out_->send(binding);
}

void ShardWorker::bind(const MediaBinding& binding) {
    if (binding.dialog_ended) {
        stats_.unbinds_received.add();
        streams_.unbind(binding.media, binding.peer, binding.call_id, binding.dialog, binding.time);
        return;
    }
    stats_.bindings_received.add();
    streams_.bind(binding);
}

void ShardWorker::advance(Timestamp now, BindingSink& out) {
    advance_sip(now, out);
    advance_media(now, out);
}

void ShardWorker::advance_media(Timestamp now, BindingSink& /*out*/) {
    streams_.expire(now);
    publish_memory(now);
}

// At most once per second of packet time (this runs before every datagram), and again whenever
// the time goes back (captures read one after another).
void ShardWorker::publish_memory(Timestamp now) noexcept {
    constexpr std::int64_t kSecondUs = 1'000'000;
    if (now.us < memory_due_us_ && now.us >= memory_due_us_ - kSecondUs) return;
    memory_due_us_ = now.us + kSecondUs;
    publish_memory_now();
}

void ShardWorker::publish_memory_now() noexcept {
    const std::size_t transactions = dialogs_.transactions().memory_bytes();
    stats_.dialog_table_bytes.set(static_cast<std::int64_t>(dialogs_.memory_bytes() - transactions));
    stats_.transaction_table_bytes.set(static_cast<std::int64_t>(transactions));
    stats_.stream_table_bytes.set(static_cast<std::int64_t>(streams_.memory_bytes()));
    stats_.duplicate_filter_bytes.set(static_cast<std::int64_t>(duplicates_.memory_bytes()));
    const auto records = [](std::size_t n) { return static_cast<std::int64_t>(n); };
    stats_.dialog_records.set(records(dialogs_.size()));
    stats_.transaction_records.set(records(dialogs_.transactions().size()));
    stats_.stream_records.set(records(streams_.size()));
    stats_.binding_records.set(records(streams_.bindings_size()));
    stats_.reported_stream_records.set(records(streams_.reported_size()));
}

void ShardWorker::advance_sip(Timestamp now, BindingSink& out) {
    out_ = &out;
    dialogs_.expire(now);
    out_ = nullptr;
}

void ShardWorker::finish(Timestamp end) {
    // What the tables held at the end of the input, before the flush below lets everything go
    // (what an offline run reports).
    publish_memory_now();
    if (!flush_at_end_) return;
    dialogs_.expire(end);
    streams_.finish_all(end);
}

}  // namespace hepd::shard
