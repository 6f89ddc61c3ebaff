#include "rtp/stream_table.hpp"

#include "core/hash.hpp"
#include "rtp/ntp.hpp"
#include "rtp/rtcp_json.hpp"
#include "rtp/rtcp_packet.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <limits>
#include <utility>
#include <vector>

namespace hepd::rtp {

std::string_view to_string(FinishReason reason) noexcept {
    switch (reason) {
    case FinishReason::idle: return "idle";
    case FinishReason::evicted: return "evicted";
    case FinishReason::flushed: return "flushed";
    case FinishReason::rebound: return "rebound";
    case FinishReason::restarted: return "restarted";
    case FinishReason::call_ended: return "call_ended";
    }
    return "unknown";
}

std::string_view to_string(StreamSource source) noexcept {
    switch (source) {
    case StreamSource::measured: return "measured";
    case StreamSource::rtcp: return "rtcp";
    }
    return "unknown";
}

std::string_view to_string(ReportSource source) noexcept {
    switch (source) {
    case ReportSource::rtcp: return "rtcp";
    case ReportSource::rtcp_json: return "rtcp_json";
    case ReportSource::xr: return "xr";
    }
    return "unknown";
}

std::string_view to_string(StreamTableKind table) noexcept {
    switch (table) {
    case StreamTableKind::streams: return "streams";
    case StreamTableKind::pending_media: return "pending_media";
    case StreamTableKind::reported_streams: return "reported_streams";
    }
    return "unknown";
}

namespace {

template <std::size_t N, class E>
void count_error(std::array<Counter, N>& counters, E error) noexcept {
    const auto i = static_cast<std::size_t>(error);
    if (i < N) counters[i].add();
}

template <std::size_t N, class E>
Counter& counter_at(std::array<Counter, N>& counters, E index) noexcept {
    return counters[static_cast<std::size_t>(index)];
}

std::uint64_t hash_reported(std::string_view call_id, std::uint32_t ssrc) noexcept {
    return mix64(hash_text(call_id) ^ (std::uint64_t{ssrc} << 1));
}

std::uint64_t hash_binding(std::uint32_t media, const Endpoint& peer) noexcept {
    return mix64(std::uint64_t{media} ^ (hash_endpoint(peer) << 1));
}

std::uint32_t compact_arrival(Timestamp time) noexcept { return ntp_middle32(ntp_from_unix_micros(time.us)); }

std::uint32_t clamp_rtt(std::int64_t rtt_us) noexcept {
    constexpr std::int64_t largest = kNoRtt - 1;
    return static_cast<std::uint32_t>(std::clamp<std::int64_t>(rtt_us, 0, largest));
}

}  // namespace

StreamTable::StreamTable(const StreamTableConfig& config)
    : config_(config),
      streams_(config.max_streams),
      media_(std::size_t{config.max_streams} + config.max_pending_media),
      bindings_(std::size_t{config.max_streams} + config.max_pending_media),
      reported_(config.max_reported_streams) {}

// ---- RTP -----------------------------------------------------------------------------------

void StreamTable::on_rtp(const PacketMeta& meta, ByteSpan payload) {
    RtpPacket packet;
    if (const auto error = parse_rtp_into(payload, packet)) {
        count_error(stats_.rtp_errors, *error);
        note_parse_error(meta.time, "RTP", to_string(*error));
        return;
    }
    on_rtp(meta, packet);
}

std::uint32_t StreamTable::find_stream(const StreamKey& key, std::uint64_t hash) const noexcept {
    const auto src = EndpointPool::in_place(key.src);
    const auto dst = EndpointPool::in_place(key.dst);
    if (src && dst)
        return streams_.find(hash,
                             [&](const StoredKey& k) { return k.ssrc == key.ssrc && k.src == *src && k.dst == *dst; });
    return streams_.find(hash, [&](const StoredKey& k) {
        return k.ssrc == key.ssrc && endpoints_.matches(k.src, key.src) && endpoints_.matches(k.dst, key.dst);
    });
}

StreamKey StreamTable::key_at(std::uint32_t at) const noexcept {
    const StoredKey& k = streams_.entry(at).key;
    return StreamKey{endpoints_.unpack(k.src), endpoints_.unpack(k.dst), k.ssrc};
}

void StreamTable::on_rtp(const PacketMeta& meta, const RtpPacket& packet) {
    const StreamKey key{meta.src, meta.dst, packet.ssrc};
    const std::uint64_t hash = hash_stream_key(key);
    stats_.rtp_packets.add();
    stats_.rtp_bytes.add(packet.payload.size());
    if (is_event_shaped(packet)) stats_.event_packets.add();

    std::uint32_t at = find_stream(key, hash);
    // Decided on the packet itself, not when expire() runs, so the split is the same whatever
    // the batching of the packet clock.
    if (at != kNone && meta.time.us - streams_[at].stream.last.us > config_.stream_idle_timeout_us) {
        end_stream(at, FinishReason::idle);
        at = kNone;
    }
    if (at == kNone) {
        measure(create_stream(key, hash, true, meta.time), packet, meta.time);
        return;
    }
    streams_.touch(at);
    Stream& stream = streams_[at].stream;
    switch (classify(stream, packet, meta.time)) {
    case Continuity::continues: measure(at, packet, meta.time); return;
    case Continuity::breaks: hold(at, packet, meta.time); return;
    case Continuity::stray: {
        const TakenPacket held = take_held(stream);
        measure(at, held.packet, held.arrival, Timing::stray);
        // This packet may itself be the first of a restart: judge it afresh, by its sequence
        // number (the stray's timestamp is no reference).
        if (classify(streams_[at].stream, packet, meta.time, false) == Continuity::breaks) {
            hold(at, packet, meta.time);
        } else {
            measure(at, packet, meta.time);
        }
        return;
    }
    case Continuity::restarted: {
        const TakenPacket held = take_held(stream);
        end_stream(at, FinishReason::restarted);
        at = create_stream(key, hash, true, held.arrival);
        measure(at, held.packet, held.arrival);
        measure(at, packet, meta.time);
        return;
    }
    }
}

void StreamTable::measure(std::uint32_t at, const RtpPacket& packet, Timestamp arrival, Timing timing) {
    Stream& stream = streams_[at].stream;
    const bool had_extras = stream.extras.allocated();
    const SeqVerdict verdict = observe_packet(stream, packet, arrival, timing, bound(streams_[at]));
    count_extras(had_extras, stream);
    if (verdict == SeqVerdict::duplicate) {
        stats_.duplicate_packets.add();
    } else if (verdict == SeqVerdict::late) {
        stats_.out_of_order_packets.add();
    }
}

std::uint32_t StreamTable::create_stream(const StreamKey& key, std::uint64_t hash, bool count_start, Timestamp now) {
    if (streams_.full()) {
        // Made room here rather than by insert() so that the victim is accounted for (and
        // unlinked from its media entry) while its index still names it.
        end_stream(streams_.oldest(), FinishReason::evicted);
        counter_at(stats_.evictions, StreamTableKind::streams).add();
        log_throttled(logs_.stream_evictions, now, spdlog::level::warn, [&](auto level, std::uint64_t more) {
            spdlog::log(level,
                        "rtp: stream table full ({1} streams): evicted the least recently active stream "
                        "({0} more since the last message)",
                        more, config_.max_streams);
        });
    }
    const StoredKey stored{endpoints_.pack(key.src), endpoints_.pack(key.dst), key.ssrc,
                           static_cast<std::uint32_t>(hash >> 32)};
    const std::uint32_t at = streams_.insert(stored, StreamSlot{}, hash).first;
    link_media(at, key.dst);
    if (streams_[at].media != kNone) join(at, binding_for(key, streams_[at].media), now);
    stats_.streams_active.add(1);
    if (count_start) stats_.streams_started.add();
    return at;
}

void StreamTable::hold(std::uint32_t at, const RtpPacket& packet, Timestamp arrival) {
    Stream& stream = streams_[at].stream;
    const bool had_extras = stream.extras.allocated();
    hold_packet(stream, packet, arrival);
    count_extras(had_extras, stream);
}

void StreamTable::count_extras(bool had, const Stream& stream) noexcept {
    if (!had && stream.extras.allocated()) ++extras_count_;
}

ReceiverView& StreamTable::receiver_view(std::uint32_t at) {
    Stream& stream = streams_[at].stream;
    if (!stream.receiver.allocated()) ++views_count_;
    return stream.receiver.mut();
}

void StreamTable::end_stream(std::uint32_t at, FinishReason reason) {
    // A packet held for the next one to judge counts as the stray it turned out to be.
    if (streams_[at].stream.held().valid) {
        const TakenPacket held = take_held(streams_[at].stream);
        measure(at, held.packet, held.arrival, Timing::stray);
    }
    finish_stream(at, reason);
    if (streams_[at].stream.extras.allocated()) --extras_count_;
    if (streams_[at].stream.receiver.allocated()) --views_count_;
    endpoints_.release(streams_.entry(at).key.src);
    endpoints_.release(streams_.entry(at).key.dst);
    streams_.erase(at);
}

void StreamTable::finish_stream(std::uint32_t index, FinishReason reason) {
    const auto& entry = streams_.entry(index);
    const StreamKey key = key_at(index);
    const Stream& stream = entry.value.stream;
    const Binding* binding = bound(entry.value);
    const StreamSummary summary = summarize(stream, binding, config_.quality);

    counter_at(stats_.streams_finished, reason).add();
    stats_.streams_active.add(-1);
    stats_.lost_packets.add(summary.lost_clamped);
    counter_at(stats_.finished_streams_by_codec, label_of(summary.codec)).add();
    if (!stream.sequence.validated) stats_.unvalidated_streams.add();
    if (summary.clock_unmatched) {
        stats_.clock_rate_unmatched.add();
        log_throttled(logs_.bindings, stream.last, spdlog::level::debug, [&](auto level, std::uint64_t more) {
            spdlog::log(level,
                        "rtp: the rtpmap clock of payload type {1} is none of the candidate clocks; jitter "
                        "taken under the smoothest candidate ({0} more binding events since the last message)",
                        more, stream.dynamic_payload_type());
        });
    }
    auto& by_peers = (binding != nullptr ? stats_.by_peers.at(binding->caller_peer, binding->callee_peer)
                                         : stats_.by_peers.at(peer::kOtherPeer, peer::kOtherPeer))
                         .of(StreamSource::measured);
    by_peers.lost_packets.add(summary.lost_clamped);
    if (summary.has_quality) {
        stats_.jitter_seconds.observe(summary.max_jitter_ms / 1000.0);
        stats_.mos.observe(summary.mos);
        by_peers.jitter_seconds.observe(summary.max_jitter_ms / 1000.0);
        by_peers.mos.observe(summary.mos);
        stats_.loss_ratio.observe(summary.loss_percent / 100.0);
    }
    if (const std::uint32_t rtt = stream.receiver.get().rtt_us; rtt != kNoRtt) stats_.rtt_seconds.observe(rtt / 1e6);
    if (sink_ != nullptr) sink_->on_stream_finished(FinishedStream{key, stream, binding, summary, reason});
    join(index, kNone, stream.last);
    unlink_media(index);
}

// ---- media entries and bindings ------------------------------------------------------------

const Binding* StreamTable::bound(const StreamSlot& slot) const noexcept {
    return slot.binding == kNone ? nullptr : &bindings_.entry(slot.binding).value.binding;
}

std::uint32_t StreamTable::find_media(const Endpoint& media) const noexcept {
    const std::uint64_t hash = hash_endpoint(media);
    if (const auto packed = EndpointPool::in_place(media))
        return media_.find(hash, [&](const MediaKey& k) { return k.address == *packed; });
    return media_.find(hash, [&](const MediaKey& k) { return endpoints_.matches(k.address, media); });
}

std::uint32_t StreamTable::media_entry(const Endpoint& media) {
    const std::uint32_t m = find_media(media);
    if (m != kNone) return m;
    // Every entry has a stream or a binding, and the table is as large as both caps together,
    // so it is never full here.
    if (media_.full()) return kNone;
    const std::uint64_t hash = hash_endpoint(media);
    return media_.insert(MediaKey{endpoints_.pack(media), static_cast<std::uint32_t>(hash >> 32)}, MediaEntry{}, hash)
        .first;
}

void StreamTable::release_media(std::uint32_t m) {
    const MediaEntry& e = media_.entry(m).value;
    if (e.head != kNone || e.binding_head != kNone) return;
    endpoints_.release(media_.entry(m).key.address);
    media_.erase(m);
}

void StreamTable::link_media(std::uint32_t index, const Endpoint& dst) {
    const std::uint32_t m = media_entry(media_key(dst));
    if (m == kNone) return;
    MediaEntry& e = media_[m];
    StreamSlot& slot = streams_[index];
    slot.media = m;
    slot.prev = kNone;
    slot.next = e.head;
    if (e.head != kNone) streams_[e.head].prev = index;
    e.head = index;
}

void StreamTable::unlink_media(std::uint32_t index) {
    StreamSlot& slot = streams_[index];
    if (slot.media == kNone) return;
    const std::uint32_t m = slot.media;
    MediaEntry& e = media_[m];
    if (slot.prev != kNone) {
        streams_[slot.prev].next = slot.next;
    } else {
        e.head = slot.next;
    }
    if (slot.next != kNone) streams_[slot.next].prev = slot.prev;
    slot.media = slot.prev = slot.next = kNone;
    release_media(m);
}

std::uint32_t StreamTable::find_binding_index(const Endpoint& media, const Endpoint& peer) const noexcept {
    const std::uint32_t m = find_media(media);  // every binding's address has an entry
    return m == kNone ? kNone : find_binding_at(m, peer);
}

std::uint32_t StreamTable::find_binding_at(std::uint32_t media, const Endpoint& peer) const noexcept {
    const std::uint64_t hash = hash_binding(media, peer);
    if (const auto packed = EndpointPool::in_place(peer))
        return bindings_.find(hash, [&](const BindingKey& k) { return k.media == media && k.peer == *packed; });
    return bindings_.find(hash,
                          [&](const BindingKey& k) { return k.media == media && endpoints_.matches(k.peer, peer); });
}

// A released binding (its dialog ended, or left the address) stays only for the streams it
// has: a stream that begins after it is another call's, or no call's.
// A sender no SDP named (NAT) falls back to the address's newest binding only while no other
// call's binding is live there: a shared address (a media server's port) never decides alone.
std::uint32_t StreamTable::binding_for(const StreamKey& key, std::uint32_t media) {
    const auto live = [&](std::uint32_t b) {
        return b != kNone && !bindings_.entry(b).value.released && !bindings_.entry(b).value.binding.rtcp;
    };
    if (const std::uint32_t b = find_binding_at(media, media_key(key.src)); live(b)) return b;
    if (const std::uint32_t b = find_binding_at(media, Endpoint{}); live(b)) return b;
    const std::uint32_t latest = media_.entry(media).value.latest;
    std::uint32_t found = live(latest) ? latest : kNone;
    std::size_t walked = 0;
    for (std::uint32_t b = media_.entry(media).value.binding_head; b != kNone; b = bindings_.entry(b).value.next) {
        if (!live(b)) continue;
        if (found == kNone) found = b;
        if (++walked > kMaxStreamsPerLookup ||
            !bindings_.entry(b).value.binding.same_call(bindings_.entry(found).value.binding)) {
            stats_.ambiguous_bindings.add();
            return kNone;
        }
    }
    return found;
}

// Moves a stream from its binding to another (kNone: to none), keeping the counts that tell a
// pending binding from one in use.
void StreamTable::join(std::uint32_t stream, std::uint32_t binding, Timestamp when) {
    StreamSlot& slot = streams_[stream];
    if (slot.binding == binding) return;
    if (slot.binding != kNone) {
        BindingEntry& old = bindings_[slot.binding];
        if (--old.streams == 0) {
            old.binding.time = std::max(when, old.binding.time);
            bindings_.touch(slot.binding);
            ++pending_count_;
            stats_.pending_bindings.add(1);
            if (old.released) {  // its dialog has ended: nothing else is to join it
                stats_.bindings_released.add();
                drop_binding(slot.binding);
            }
        }
    }
    slot.binding = binding;
    if (binding == kNone) return;
    if (meet_binding(slot.stream, bindings_.entry(binding).value.binding)) stats_.untracked_late_types.add();
    if (bindings_[binding].streams++ == 0) {
        --pending_count_;
        stats_.pending_bindings.add(-1);
    }
}

// Erases a binding; streams that joined it keep measuring, unbound.
void StreamTable::drop_binding(std::uint32_t b) {
    unlink_reported_of(b);  // they finish by idle, as reported streams of no known binding
    const std::uint32_t m = bindings_.entry(b).key.media;
    BindingEntry& entry = bindings_[b];
    entry.released = false;  // its streams leave below: no second drop
    if (entry.prev != kNone) {
        bindings_[entry.prev].next = entry.next;
    } else {
        media_[m].binding_head = entry.next;
    }
    if (entry.next != kNone) bindings_[entry.next].prev = entry.prev;
    for (std::uint32_t i = media_.entry(m).value.head; i != kNone && entry.streams > 0;
         i = streams_.entry(i).value.next)
        if (streams_.entry(i).value.binding == b) join(i, kNone, Timestamp{});
    if (media_[m].latest == b) media_[m].latest = kNone;
    if (bindings_.entry(b).value.streams == 0) {
        --pending_count_;
        stats_.pending_bindings.add(-1);
    }
    key_heap_bytes_ -= bindings_.entry(b).value.binding.call_id.heap_bytes();
    endpoints_.release(bindings_.entry(b).key.peer);
    bindings_.erase(b);
    release_media(m);
}

// The same call's newest binding of this address (the offer), else of the other end's: its
// Call-ID block, so that a call's bindings hold one, and the offer's codecs for an answer that
// names the offerer's address without them.
// The newest binding of `binding`'s call at media entry `m`: its latest, else one a short walk
// finds (an address several calls' offers share, a dialer's or sipp's one port, has the
// others' in between).
std::uint32_t StreamTable::binding_of_call(std::uint32_t m, const Binding& binding) const noexcept {
    const std::uint32_t latest = media_.entry(m).value.latest;
    if (latest != kNone && bindings_.entry(latest).value.binding.same_call(binding)) return latest;
    std::size_t walked = 0;
    for (std::uint32_t b = media_.entry(m).value.binding_head; b != kNone && walked < kMaxStreamsPerLookup;
         b = bindings_.entry(b).value.next, ++walked)
        if (bindings_.entry(b).value.binding.same_call(binding)) return b;
    return kNone;
}

void StreamTable::inherit_from_call(std::uint32_t m, const Endpoint& peer, Binding& binding) const noexcept {
    if (const std::uint32_t same = binding_of_call(m, binding); same != kNone) {
        binding.call_id = bindings_.entry(same).value.binding.call_id;
        if (binding.codec_count == 0) binding.copy_codecs(bindings_.entry(same).value.binding);
    } else if (const std::uint32_t other_end = peer.port != 0 ? find_media(peer) : kNone; other_end != kNone) {
        if (const std::uint32_t other = binding_of_call(other_end, binding); other != kNone)
            binding.call_id = bindings_.entry(other).value.binding.call_id;
    }
}

// Inserts or replaces the binding of (media, peer); returns its index or kNone.
std::uint32_t StreamTable::store_binding(const Endpoint& media, const Endpoint& peer, Binding binding) {
    std::uint32_t b = find_binding_index(media, peer);
    if (b != kNone) {
        BindingEntry& e = bindings_[b];
        if (e.binding.same_call(binding)) {
            binding.call_id = e.binding.call_id;  // one block for the call
            // The answer names the offerer's address again, without the offer's codecs.
            if (binding.codec_count == 0) binding.copy_codecs(e.binding);
        } else {
            // Another call's pair (addresses re-used call after call): its reports are not this
            // call's to finish, and its codecs are not this call's.
            unlink_reported_of(b);
            inherit_from_call(bindings_.entry(b).key.media, peer, binding);
        }
        // The old text leaves the count, the new one joins it.
        key_heap_bytes_ -= e.binding.call_id.heap_bytes();
        // A binding no stream uses keeps its last activity if that is later than the new SDP.
        if (e.streams == 0) binding.time = std::max(binding.time, e.binding.time);
        e.binding = std::move(binding);
        key_heap_bytes_ += e.binding.call_id.heap_bytes();
        e.released = false;  // a Call-ID and From-tag used again: a call again
        bindings_.touch(b);
        return b;
    }
    if (pending_count_ >= config_.max_pending_media || bindings_.full()) {
        // The least recently used binding no stream uses (bounded search), else the oldest.
        std::uint32_t victim = bindings_.oldest();
        for (int looked = 0; looked < 16 && bindings_.entry(victim).value.streams > 0; ++looked) {
            bindings_.touch(victim);
            victim = bindings_.oldest();
        }
        drop_binding(victim);
        counter_at(stats_.evictions, StreamTableKind::pending_media).add();
        log_throttled(logs_.pending_evictions, binding.time, spdlog::level::warn, [&](auto level, std::uint64_t more) {
            spdlog::log(level,
                        "rtp: media binding table full ({1} bindings): dropped the least recently used "
                        "({0} more since the last message)",
                        more, bindings_.capacity());
        });
    }
    const std::uint32_t m = media_entry(media);
    if (m == kNone) return kNone;
    inherit_from_call(m, peer, binding);
    const std::uint64_t hash = hash_binding(m, peer);
    b = bindings_
            .insert(BindingKey{m, endpoints_.pack(peer), static_cast<std::uint32_t>(hash >> 32)},
                    BindingEntry{std::move(binding), 0}, hash)
            .first;
    key_heap_bytes_ += bindings_.entry(b).value.binding.call_id.heap_bytes();
    MediaEntry& entry = media_[m];
    bindings_[b].next = entry.binding_head;
    if (entry.binding_head != kNone) bindings_[entry.binding_head].prev = b;
    entry.binding_head = b;
    ++pending_count_;
    stats_.pending_bindings.add(1);
    return b;
}

void StreamTable::bind(const MediaBinding& binding) {
    const Endpoint media = media_key(binding.media);
    if (binding.rtcp) {
        bind_rtcp(media, binding_peer(binding), make_binding(binding));
        return;
    }
    Binding b = make_binding(binding);
    if (binding.codecs_of_peer) take_offer(media, b);
    apply_binding(media, binding_peer(binding), std::move(b));
}

// `binding` holds the other end's answer: the formats are this address's own binding's of the
// call (the offer), with the answer's choice; without one, the answer's stand for them.
void StreamTable::take_offer(const Endpoint& media, Binding& binding) const noexcept {
    const std::uint32_t m = find_media(media);
    const std::uint32_t offer = m == kNone ? kNone : binding_of_call(m, binding);
    if (offer != kNone && bindings_.entry(offer).value.binding.codec_count != 0)
        binding.choose_from_answer(bindings_.entry(offer).value.binding);
}

// An address where a call's RTCP alone goes: no stream there joins it or ends (nor becomes the
// address's newest binding, which a NAT'd sender falls back to).
void StreamTable::bind_rtcp(const Endpoint& media, const Endpoint& peer, Binding binding) {
    const std::uint32_t b = store_binding(media, peer, std::move(binding));
    if (b != kNone && peer.port != 0) answer_offer(find_media(media), b);
}

// Its dialog has ended: gone now if no stream uses it, else when the last one leaves (join()).
// Its reported streams are that call's receiver views: they finish now, whatever still uses it
// (those already idle at `when` as expire() would have finished them).
void StreamTable::release_binding(std::uint32_t b, Timestamp when) {
    while (bindings_.entry(b).value.reported_head != kNone) {
        const std::uint32_t r = bindings_.entry(b).value.reported_head;
        const bool idle = reported_.entry(r).value.stream.last.us + config_.stream_idle_timeout_us <= when.us;
        end_reported(r, idle ? FinishReason::idle : FinishReason::call_ended);
    }
    BindingEntry& e = bindings_[b];
    if (e.streams != 0) {
        e.released = true;
        return;
    }
    stats_.bindings_released.add();
    drop_binding(b);
}

void StreamTable::unbind(const Endpoint& media, const Endpoint& peer, std::string_view call_id, std::uint32_t dialog,
                         Timestamp when) {
    const Endpoint key = media_key(media);
    const auto of_dialog = [&](std::uint32_t b) {
        const Binding& binding = bindings_.entry(b).value.binding;
        return binding.dialog == dialog && binding.call_id == call_id;
    };
    // A shared address (a media server port) has one binding per call: the exact pairs first,
    // so the walk below can stay short.
    if (peer.port != 0)
        if (const std::uint32_t b = find_binding_index(key, media_key(peer)); b != kNone && of_dialog(b))
            release_binding(b, when);
    if (const std::uint32_t b = find_binding_index(key, Endpoint{}); b != kNone && of_dialog(b))
        release_binding(b, when);
    const std::uint32_t m = find_media(key);
    if (m == kNone) return;
    // Dropping the last binding of an address without streams releases the media entry: the
    // walk must not read it afterwards.
    std::uint32_t b = media_.entry(m).value.binding_head;
    for (std::size_t walked = 0; b != kNone && walked < kMaxStreamsPerLookup; ++walked) {
        const std::uint32_t next = bindings_.entry(b).value.next;
        if (of_dialog(b) && !bindings_.entry(b).value.released) release_binding(b, when);
        b = next;
    }
}

void StreamTable::insert_binding(const Endpoint& media, const Endpoint& peer, Binding binding, bool released) {
    const Endpoint key = media_key(media);
    const std::uint32_t b = store_binding(key, peer.port != 0 ? media_key(peer) : Endpoint{}, std::move(binding));
    if (b == kNone) return;
    bindings_[b].released = released;
    // A restore inserts them oldest first, as they were applied: the last one is the newest, the
    // one a sender no SDP named falls back to (binding_for).
    const std::uint32_t m = find_media(key);
    if (m != kNone && !bindings_.entry(b).value.binding.rtcp) media_[m].latest = b;
}

void StreamTable::drop_released_unused() {
    std::vector<std::uint32_t> unused;
    bindings_.for_each([&](std::uint32_t b, const BindingLru::Entry& e) {
        if (e.value.released && e.value.streams == 0) unused.push_back(b);
    });
    for (const std::uint32_t b : unused) {
        stats_.bindings_released.add();
        drop_binding(b);
    }
}

void StreamTable::apply_binding(const Endpoint& media, const Endpoint& peer, Binding binding) {
    const bool known_peer = peer.port != 0;
    const Timestamp time = binding.time;
    // Another call's binding of this pair being replaced, or streams of another call ended: a
    // re-used pair or address.
    bool rebound = false;
    if (const std::uint32_t old = find_binding_index(media, peer);
        old != kNone && !bindings_.entry(old).value.binding.same_call(binding)) {
        rebound = true;
        // Its streams are the previous call's: they end before the entry changes hands.
        const std::uint32_t m = find_media(media);
        for (std::uint32_t i = m == kNone ? kNone : media_.entry(m).value.head; i != kNone;) {
            const std::uint32_t next = streams_.entry(i).value.next;
            if (streams_.entry(i).value.binding == old) end_stream(i, FinishReason::rebound);
            i = next;
        }
    }
    const std::uint32_t b = store_binding(media, peer, std::move(binding));
    if (b == kNone) return;
    // The call, as stored (entries never move, and nothing below erases this one).
    const Binding& identity = bindings_.entry(b).value.binding;
    const std::uint32_t m = find_media(media);
    media_[m].latest = b;

    // Streams already sent to this address: join, end, or leave alone.
    std::size_t walked = 0;
    for (std::uint32_t i = media_.entry(m).value.head; i != kNone && walked < kMaxStreamsPerBind; ++walked) {
        const std::uint32_t next = streams_.entry(i).value.next;
        const StreamSlot& slot = streams_.entry(i).value;
        const Endpoint src = media_key(key_at(i).src);
        if (slot.binding == b || (known_peer && src != peer)) {
            i = next;
            continue;
        }
        if (slot.binding == kNone) {
            // Media may overtake their signalling on the way through the shards (live, a batch
            // age apart): an answer joins the pair's stream that is still running, an offer the
            // address's stream that began after it was sent, not one that was there before it
            // (a capture that starts mid-call: the previous call's stream on a re-used address).
            if (known_peer ? slot.stream.last.us >= time.us - kLateBindingWindowUs : slot.stream.first.us >= time.us) {
                stats_.late_bindings.add();
                log_throttled(logs_.bindings, time, spdlog::level::debug, [&](auto level, std::uint64_t more) {
                    spdlog::log(level,
                                "rtp: media binding for {1} arrived after its stream's first packets "
                                "({0} more binding events since the last message)",
                                more, media.to_string());
                });
                join(i, b, time);
            } else {
                end_stream(i, FinishReason::rebound);
                rebound = true;
            }
            i = next;
            continue;
        }
        const auto& had_entry = bindings_.entry(slot.binding);
        const Binding& had = had_entry.value.binding;
        const bool exact = had_entry.key.peer.port != 0 && endpoints_.matches(had_entry.key.peer, src);
        if (had.same_call(identity)) {
            if (known_peer || !exact) join(i, b, time);  // the answer names the pair
        } else if (known_peer || !exact) {
            end_stream(i, FinishReason::rebound);  // the pair (or the unpaired address) is re-used
            rebound = true;
        }
        i = next;
    }
    if (rebound) stats_.rebindings.add();
    if (known_peer) answer_offer(m, b);
}

// The offer's binding of address `m` is answered by `b`'s peer: its streams moved to `b`
// (apply_binding), its reported streams move now; nothing else will join it unless a stream
// comes from elsewhere.
void StreamTable::answer_offer(std::uint32_t m, std::uint32_t b) {
    const std::uint32_t offer = find_binding_at(m, Endpoint{});
    if (offer == kNone || offer == b || bindings_.entry(offer).value.streams != 0 ||
        !bindings_.entry(offer).value.binding.same_call(bindings_.entry(b).value.binding))
        return;
    while (bindings_.entry(offer).value.reported_head != kNone)
        link_reported(bindings_.entry(offer).value.reported_head, b);
    drop_binding(offer);
}

// ---- RTCP ----------------------------------------------------------------------------------

std::uint32_t StreamTable::find_reported_stream(const Endpoint& reporter, std::uint32_t ssrc,
                                                const Endpoint& peer) const noexcept {
    // The stream the report goes back to (symmetric RTP/RTCP) first, directly: a shared address
    // (a media server's port) may hold more streams than a walk looks at.
    if (peer.port != 0) {
        const StreamKey exact{peer, reporter, ssrc};
        if (const std::uint32_t i = find_stream(exact, hash_stream_key(exact)); i != kNone) return i;
    }
    const std::uint32_t m = find_media(reporter);
    if (m == kNone) return kNone;
    // Else the one stream of that SSRC the address has (its sender's RTP port not next to its
    // RTCP port). Several sources may send the same SSRC to one address (sipp replays one for
    // every call): then the report is nobody's rather than another call's.
    std::uint32_t only = kNone;
    std::size_t candidates = 0;
    std::size_t walked = 0;
    for (std::uint32_t i = media_.entry(m).value.head; i != kNone; i = streams_.entry(i).value.next) {
        if (++walked > kMaxStreamsPerLookup) return kNone;
        if (streams_.entry(i).key.ssrc != ssrc) continue;
        if (media_key(key_at(i).src) == peer) return i;
        only = i;
        ++candidates;
    }
    return candidates == 1 ? only : kNone;
}

// The binding of an address where a call's RTCP alone goes (MediaBinding::rtcp) that a report
// from `reporter` to `peer` belongs to: the pair's, else the offer's.
std::uint32_t StreamTable::rtcp_binding(const Endpoint& reporter, const Endpoint& peer) const noexcept {
    const std::uint32_t m = find_media(reporter);
    if (m == kNone) return kNone;
    for (const std::uint32_t b : {find_binding_at(m, peer), find_binding_at(m, Endpoint{})})
        if (b != kNone && bindings_.entry(b).value.binding.rtcp && !bindings_.entry(b).value.released) return b;
    return kNone;
}

// A report block kept as a reported stream of `call_id` (RTCP-JSON, or RTCP from an address of
// the call's RTCP alone): its figures beside the view, which the caller fills.
ReceiverView& StreamTable::report_to_call(const PacketMeta& meta, std::string_view call_id, const Endpoint& reporter,
                                          std::uint32_t reporter_ssrc, std::uint32_t ssrc, std::uint8_t fraction_lost,
                                          std::uint32_t jitter) {
    const std::uint32_t r = reported_stream(call_id, ssrc, reporter, meta.time);
    ReportedStream& reported = reported_[r].stream;
    reported.reporter_ssrc = reporter_ssrc;
    reported.last = std::max(reported.last, meta.time);
    // The codec first: this report's jitter is in the clock of the codec in use now.
    if (reported.dialog == 0 || reported.codec == Codec::unknown) {
        note_reporter_binding(r, call_id, media_key(meta.dst));
    } else if (const std::uint32_t b = reported_.entry(r).value.binding; b != kNone) {
        take_binding_codec(reported, b);
    }
    reported.max_jitter = std::max(reported.max_jitter, jitter);
    // Summed only while the count is exact, so that their ratio stays a mean.
    if (reported.view.reports < std::numeric_limits<std::uint16_t>::max()) reported.fraction_lost_sum += fraction_lost;
    return reported.view;
}

void StreamTable::apply_report_block(const PacketMeta& meta, const Endpoint& reporter, std::uint32_t reporter_ssrc,
                                     std::uint32_t ssrc, std::uint8_t fraction_lost, std::int32_t cumulative_lost,
                                     std::uint32_t jitter, std::uint32_t lsr, std::uint32_t dlsr,
                                     std::uint32_t arrival) {
    stats_.rtcp_fraction_lost.observe(fraction_lost / 256.0);
    const auto rtt = round_trip_micros(arrival, lsr, dlsr);
    if (rtt) stats_.rtcp_rtt_seconds.observe(static_cast<double>(*rtt) / 1e6);
    const std::uint32_t i = find_reported_stream(reporter, ssrc, media_key(meta.dst));
    ReceiverView* view = i != kNone ? &receiver_view(i) : nullptr;
    // Sent from where the call's RTCP alone goes (a=rtcp): its streams live where their RTP
    // goes, maybe on another shard, so the report is the call's, as RTCP-JSON would be. Offline,
    // one shard or several give the same.
    if (view == nullptr)
        if (const std::uint32_t b = rtcp_binding(reporter, media_key(meta.dst)); b != kNone)
            view = &report_to_call(meta, bindings_.entry(b).value.binding.call_id.view(), reporter, reporter_ssrc, ssrc,
                                   fraction_lost, jitter);
    if (view == nullptr) {
        stats_.rtcp_unmatched_blocks.add();
        log_throttled(logs_.unmatched_reports, meta.time, spdlog::level::debug, [&](auto level, std::uint64_t more) {
            spdlog::log(level,
                        "rtp: RTCP from {1} about SSRC {2:#010x}, a stream not seen here "
                        "({0} more since the last message)",
                        more, meta.src.to_string(), ssrc);
        });
        return;
    }
    if (view->reports < std::numeric_limits<std::uint16_t>::max()) ++view->reports;
    view->fraction_lost = fraction_lost;
    view->cumulative_lost = cumulative_lost;
    view->jitter = jitter;
    if (rtt) view->rtt_us = clamp_rtt(*rtt);
}

void StreamTable::on_rtcp(const PacketMeta& meta, ByteSpan payload) {
    const auto compound = parse_rtcp(payload);
    if (!compound) {
        count_error(stats_.rtcp_errors, compound.error());
        note_parse_error(meta.time, "RTCP", to_string(compound.error()));
        return;
    }
    const Endpoint reporter = media_key(meta.src);
    const std::uint32_t arrival = compact_arrival(meta.time);
    const auto apply_blocks = [&](std::uint32_t reporter_ssrc, const ReportBlockList& blocks) {
        counter_at(stats_.rtcp_reports, ReportSource::rtcp).add();
        for (const ReportBlock b : blocks)
            apply_report_block(meta, reporter, reporter_ssrc, b.ssrc, b.fraction_lost, b.cumulative_lost, b.jitter,
                               b.last_sr, b.delay_since_last_sr, arrival);
    };
    for (const RtcpPacket packet : *compound) {
        switch (packet.type) {
        case RtcpType::sr: {
            const auto sr = parse_sender_report(packet);
            if (sr) {
                apply_blocks(sr->ssrc, sr->report_blocks);
            } else {
                count_error(stats_.rtcp_errors, sr.error());
                note_parse_error(meta.time, "RTCP", to_string(sr.error()));
            }
            break;
        }
        case RtcpType::rr: {
            const auto rr = parse_receiver_report(packet);
            if (rr) {
                apply_blocks(rr->ssrc, rr->report_blocks);
            } else {
                count_error(stats_.rtcp_errors, rr.error());
                note_parse_error(meta.time, "RTCP", to_string(rr.error()));
            }
            break;
        }
        case RtcpType::xr: {
            const auto xr = parse_xr(packet);
            if (!xr) {
                count_error(stats_.rtcp_errors, xr.error());
                note_parse_error(meta.time, "RTCP", to_string(xr.error()));
                break;
            }
            for (const XrBlock block : *xr) {
                if (block.type != XrBlockType::voip_metrics) continue;
                const auto vm = parse_voip_metrics(block);
                if (!vm) {
                    count_error(stats_.rtcp_errors, vm.error());
                    note_parse_error(meta.time, "RTCP", to_string(vm.error()));
                    continue;
                }
                counter_at(stats_.rtcp_reports, ReportSource::xr).add();
                const std::uint32_t i = find_reported_stream(reporter, vm->ssrc, media_key(meta.dst));
                if (i == kNone) {
                    stats_.rtcp_unmatched_blocks.add();
                    continue;
                }
                ReceiverView& view = receiver_view(i);
                if (view.xr_reports < std::numeric_limits<std::uint16_t>::max()) ++view.xr_reports;
                view.xr_loss_rate = vm->loss_rate;
                view.xr_discard_rate = vm->discard_rate;
                view.xr_r_factor = vm->r_factor;
                view.xr_mos_lq_x10 = vm->mos_lq_x10;
                view.xr_mos_cq_x10 = vm->mos_cq_x10;
                view.xr_round_trip_ms = vm->round_trip_delay_ms;
            }
            break;
        }
        default: break;
        }
    }
}

[[gnu::always_inline]] inline std::uint32_t StreamTable::find_reported_at(std::string_view call_id, std::uint32_t ssrc,
                                                                          const Endpoint& reporter,
                                                                          std::uint64_t hash) const noexcept {
    return reported_.find_entry(hash, [&](const ReportedLru::Entry& e) {
        return e.key.ssrc == ssrc && e.value.stream.reporter == reporter && e.key.call_id == call_id;
    });
}

std::uint32_t StreamTable::reported_stream(std::string_view call_id, std::uint32_t ssrc, const Endpoint& reporter,
                                           Timestamp now) {
    const std::uint64_t hash = hash_reported(call_id, ssrc);
    std::uint32_t i = find_reported_at(call_id, ssrc, reporter, hash);
    if (i == kNone) {
        if (reported_.full()) {
            end_reported(reported_.oldest(), FinishReason::evicted);
            counter_at(stats_.evictions, StreamTableKind::reported_streams).add();
            log_throttled(logs_.reported_evictions, now, spdlog::level::warn, [&](auto level, std::uint64_t more) {
                spdlog::log(level,
                            "rtp: reported stream table full ({1} entries): evicted the least recently "
                            "reported ({0} more since the last message)",
                            more, config_.max_reported_streams);
            });
        }
        ReportedSlot fresh;
        fresh.stream.reporter = reporter;
        fresh.stream.first = now;
        StoredReportedKey key;
        key.call_id = CompactText(call_id);
        key.ssrc = ssrc;
        key.home = static_cast<std::uint32_t>(hash >> 32);
        i = reported_.insert(std::move(key), fresh, hash).first;
        key_heap_bytes_ += reported_.entry(i).key.call_id.heap_bytes();
        stats_.reported_streams_active.add(1);
    } else {
        reported_.touch(i);
    }
    return i;
}

// The reporter's own address is in the call's SDP (it receives the stream it reports on): its
// binding of the same Call-ID names the dialog and the codec that the jitter is measured in, and
// its release (the dialog's end) finishes the reported stream. One already released (a late
// report) links nothing: the stream finishes by idle.
void StreamTable::note_reporter_binding(std::uint32_t at, std::string_view call_id, const Endpoint& peer) {
    ReportedStream& reported = reported_[at].stream;
    // Its pair with the address the reports go to, else its offer, else its newest: direct
    // lookups, as this runs per report until found (a shared address has a binding per call).
    const std::uint32_t m = find_media(reported.reporter);
    if (m == kNone) return;
    const std::uint32_t candidates[] = {find_binding_at(m, peer), find_binding_at(m, Endpoint{}),
                                        media_.entry(m).value.latest};
    for (const std::uint32_t b : candidates) {
        if (b == kNone) continue;
        const Binding& binding = bindings_.entry(b).value.binding;
        if (binding.call_id != call_id) continue;
        reported_.entry(at).key.call_id = binding.call_id;  // the same text: one block for the call
        if (!bindings_.entry(b).value.released) link_reported(at, b);
        reported.dialog = binding.dialog;
        reported.caller_peer = binding.caller_peer;
        reported.callee_peer = binding.callee_peer;
        take_binding_codec(reported, b);
        if (reported.codec != Codec::unknown) return;
    }
}

// The answer's choice, not the offer's first format (until the answer is known, an offer of
// several codecs leaves it open: tried again at the next report). Asked at every report of a
// linked stream, so that a re-INVITE's answer that changes the codec changes it.
void StreamTable::take_binding_codec(ReportedStream& reported, std::uint32_t b) const noexcept {
    const Binding& binding = bindings_.entry(b).value.binding;
    if (const int f = binding.voice_format(bindings_.entry(b).key.peer.port != 0); f >= 0) {
        const auto i = static_cast<std::size_t>(f);
        if (binding.codec(i) != reported.codec || binding.clock_rate(i) != reported.clock_rate)
            take_codec(reported, binding.codec(i), binding.clock_rate(i));
    }
}

void StreamTable::end_reported(std::uint32_t at, FinishReason reason) {
    finish_reported(at, reason);
    unlink_reported(at);
    key_heap_bytes_ -= reported_.entry(at).key.call_id.heap_bytes();
    reported_.erase(at);
}

void StreamTable::finish_reported(std::uint32_t i, FinishReason reason) {
    stats_.reported_streams_active.add(-1);
    const ReportedStream& reported = reported_.entry(i).value.stream;
    const ReportedSummary summary = summarize_reported(reported, config_.quality);
    ReportedStreamStats& s = stats_.reported;
    auto& by_peers = stats_.by_peers.at(reported.caller_peer, reported.callee_peer).of(StreamSource::rtcp);
    counter_at(s.finished, reason).add();
    counter_at(s.by_codec, label_of(summary.codec)).add();
    s.lost_packets.add(summary.lost_clamped);
    by_peers.lost_packets.add(summary.lost_clamped);
    if (summary.has_quality) {
        s.jitter_seconds.observe(summary.max_jitter_ms / 1000.0);
        s.mos.observe(summary.mos);
        by_peers.jitter_seconds.observe(summary.max_jitter_ms / 1000.0);
        by_peers.mos.observe(summary.mos);
        s.loss_ratio.observe(summary.loss_percent / 100.0);
    }
    if (summary.has_rtt) s.rtt_seconds.observe(summary.rtt_ms / 1000.0);
    if (sink_ != nullptr) sink_->on_reported_stream_finished({reported_.entry(i).key, reported, summary, reason});
}

void StreamTable::link_reported(std::uint32_t at, std::uint32_t binding) {
    if (reported_.entry(at).value.binding == binding) return;
    unlink_reported(at);
    ReportedSlot& slot = reported_[at];
    BindingEntry& entry = bindings_[binding];
    slot.binding = binding;
    slot.next = entry.reported_head;
    if (entry.reported_head != kNone) reported_[entry.reported_head].prev = at;
    entry.reported_head = at;
}

void StreamTable::unlink_reported(std::uint32_t at) {
    ReportedSlot& slot = reported_[at];
    if (slot.binding == kNone) return;
    if (slot.prev != kNone) {
        reported_[slot.prev].next = slot.next;
    } else {
        bindings_[slot.binding].reported_head = slot.next;
    }
    if (slot.next != kNone) reported_[slot.next].prev = slot.prev;
    slot.binding = slot.prev = slot.next = kNone;
}

void StreamTable::unlink_reported_of(std::uint32_t binding) {
    while (bindings_.entry(binding).value.reported_head != kNone)
        unlink_reported(bindings_.entry(binding).value.reported_head);
}

void StreamTable::on_rtcp_json(const PacketMeta& meta, std::string_view call_id, ByteSpan payload) {
    if (const auto error = parse_rtcp_json_into(as_text(payload), rtcp_json_)) {
        count_error(stats_.rtcp_json_errors, *error);
        note_parse_error(meta.time, "RTCP-JSON", to_string(*error));
        return;
    }
    const RtcpJsonReport& report = rtcp_json_;
    counter_at(stats_.rtcp_reports, ReportSource::rtcp_json).add();
    const Endpoint reporter = media_key(meta.src);
    const std::uint32_t arrival = compact_arrival(meta.time);
    bool kept_all = true;
    for (std::size_t b = 0; b < report.block_count; ++b) {
        const RtcpJsonBlock& block = report.blocks[b];
        stats_.rtcp_fraction_lost.observe(block.fraction_lost / 256.0);
        const auto rtt = round_trip_micros(arrival, block.lsr, block.dlsr);
        if (rtt) stats_.rtcp_rtt_seconds.observe(static_cast<double>(*rtt) / 1e6);
        // A stream measured here (RTP captured too) takes the view beside what was measured;
        // otherwise the view is a record of its own, under the call it belongs to.
        ReceiverView* view = nullptr;
        if (const std::uint32_t i = find_reported_stream(reporter, block.source_ssrc, media_key(meta.dst));
            i != kNone) {
            view = &receiver_view(i);
        } else if (!call_id.empty() && call_id.size() <= CompactText::kMaxSize) {
            view = &report_to_call(meta, call_id, reporter, report.ssrc, block.source_ssrc, block.fraction_lost,
                                   block.ia_jitter);
        } else {
            kept_all = false;
            continue;
        }
        if (view->reports < std::numeric_limits<std::uint16_t>::max()) ++view->reports;
        view->fraction_lost = block.fraction_lost;
        view->cumulative_lost = block.packets_lost;
        view->jitter = block.ia_jitter;
        if (rtt) view->rtt_us = clamp_rtt(*rtt);
    }
    if (!kept_all) {
        stats_.rtcp_json_without_call_id.add();
        log_throttled(logs_.no_call_id, meta.time, spdlog::level::warn, [&](auto level, std::uint64_t more) {
            spdlog::log(level,
                        "rtp: RTCP-JSON from {1} without a usable correlation id (Call-ID: none, or "
                        "longer than 255 octets), not kept ({0} more since the last message)",
                        more, meta.src.to_string());
        });
    }
}

// ---- expiry --------------------------------------------------------------------------------

void StreamTable::expire(Timestamp now) {
    const std::int64_t idle = config_.stream_idle_timeout_us;
    while (streams_.size() > 0) {
        const std::uint32_t i = streams_.oldest();
        if (streams_.entry(i).value.stream.last.us + idle > now.us) break;
        end_stream(i, FinishReason::idle);
    }
    // Bindings in use are moved out of the way (a few per call, so the work stays bounded);
    // each is touched again when its last stream leaves.
    std::size_t moved = 0;
    while (bindings_.size() > 0) {
        const std::uint32_t i = bindings_.oldest();
        const BindingEntry& e = bindings_.entry(i).value;
        if (e.streams > 0) {
            if (++moved > 8) break;
            bindings_.touch(i);
            continue;
        }
        if (e.binding.time.us + config_.pending_media_timeout_us > now.us) break;
        drop_binding(i);
        stats_.pending_bindings_expired.add();
    }
    while (reported_.size() > 0) {
        const std::uint32_t i = reported_.oldest();
        if (reported_.entry(i).value.stream.last.us + idle > now.us) break;
        end_reported(i, FinishReason::idle);
    }
}

void StreamTable::finish_all(Timestamp /*now*/) {
    while (streams_.size() > 0) end_stream(streams_.oldest(), FinishReason::flushed);
    while (reported_.size() > 0) end_reported(reported_.oldest(), FinishReason::flushed);
}

// ---- lookups and snapshot support ----------------------------------------------------------

const Stream* StreamTable::find(const StreamKey& key) const noexcept {
    const std::uint32_t i = find_stream(key, hash_stream_key(key));
    return i == kNone ? nullptr : &streams_.entry(i).value.stream;
}

const Binding* StreamTable::binding_of(const StreamKey& key) const noexcept {
    const std::uint32_t i = find_stream(key, hash_stream_key(key));
    return i == kNone ? nullptr : bound(streams_.entry(i).value);
}

const Binding* StreamTable::find_binding(const Endpoint& media, const Endpoint& peer) const noexcept {
    const std::uint32_t b = find_binding_index(media_key(media), peer.port != 0 ? media_key(peer) : Endpoint{});
    return b == kNone ? nullptr : &bindings_.entry(b).value.binding;
}

const Binding* StreamTable::pending_binding(const Endpoint& media) const noexcept {
    const std::uint32_t m = find_media(media_key(media));
    if (m == kNone) return nullptr;
    const std::uint32_t b = media_.entry(m).value.latest;
    if (b == kNone || bindings_.entry(b).value.streams != 0) return nullptr;
    return &bindings_.entry(b).value.binding;
}

const ReportedStream* StreamTable::find_reported(std::string_view call_id, std::uint32_t ssrc) const noexcept {
    const std::uint32_t i = reported_.find(
        hash_reported(call_id, ssrc), [&](const ReportedKey& k) { return k.ssrc == ssrc && k.call_id == call_id; });
    return i == kNone ? nullptr : &reported_.entry(i).value.stream;
}

StreamSummary StreamTable::summary(const StreamKey& key) const noexcept {
    const std::uint32_t i = find_stream(key, hash_stream_key(key));
    if (i == kNone) return {};
    return summarize(streams_.entry(i).value.stream, bound(streams_.entry(i).value), config_.quality);
}

bool StreamTable::insert(const StreamKey& key, const Stream& stream) {
    const std::uint64_t hash = hash_stream_key(key);
    if (find_stream(key, hash) != kNone) return false;
    const std::uint32_t i = create_stream(key, hash, false, stream.last);
    streams_[i].stream = stream;
    if (const Binding* binding = bound(streams_[i])) bind_clock(streams_[i].stream, *binding);
    count_extras(false, stream);
    if (stream.receiver.allocated()) ++views_count_;
    return true;
}

bool StreamTable::insert_reported(const ReportedKey& key, const ReportedStream& stream) {
    if (find_reported_at(key.call_id, key.ssrc, stream.reporter, hash_reported(key.call_id, key.ssrc)) != kNone)
        return false;
    reported_[reported_stream(key.call_id, key.ssrc, stream.reporter, stream.first)].stream = stream;
    return true;
}

void StreamTable::note_parse_error(Timestamp now, std::string_view what, std::string_view reason) {
    log_throttled(logs_.parse_errors, now, spdlog::level::debug, [&](auto level, std::uint64_t more) {
        spdlog::log(level, "rtp: {1} not parsed: {2} ({0} more parse errors since the last message)", more, what,
                    reason);
    });
}

StreamTable::EntrySizes StreamTable::entry_sizes() noexcept {
    return {sizeof(StreamLru::Entry), sizeof(MediaLru::Entry), sizeof(BindingLru::Entry), sizeof(ReportedLru::Entry)};
}

std::size_t StreamTable::memory_bytes() const noexcept {
    return streams_.memory_bytes() + endpoints_.memory_bytes() + media_.memory_bytes() + bindings_.memory_bytes() +
           reported_.memory_bytes() + key_heap_bytes_ + extras_count_ * sizeof(StreamExtras) +
           views_count_ * sizeof(ReceiverView);
}

}  // namespace hepd::rtp
