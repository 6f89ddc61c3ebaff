#include "shard/shard_worker.hpp"

namespace hepd::shard {

ShardWorker::ShardWorker(const ShardConfig& config, rtp::StreamSink* finished_streams)
    : duplicates_(config.duplicates),
      dialogs_(config.dialogs, this),
      streams_(config.streams),
      flush_at_end_(config.flush_at_end) {
    streams_.set_sink(finished_streams);
    dialogs_.set_peers(config.peers);
}

void ShardWorker::process(const Datagram& d, BindingSink& out) {
    // Before the tables: a copy from a second agent is no retransmission, hop or RTP duplicate.
    if (duplicates_.is_duplicate(d)) return;
    stats_.datagrams[static_cast<std::size_t>(d.kind)].add();
    const PacketMeta meta{d.time, d.src, d.dst, d.agent};
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
    out_ = &out;
    dialogs_.expire(now);
    out_ = nullptr;
    streams_.expire(now);
}

void ShardWorker::finish(Timestamp end) {
    if (!flush_at_end_) return;
    dialogs_.expire(end);
    streams_.finish_all(end);
}

}  // namespace hepd::shard
