#include "rtp/stream_table.hpp"

#include <algorithm>
#include <limits>
#include <utility>

#include <spdlog/spdlog.h>

#include "core/hash.hpp"
#include "rtp/ntp.hpp"
#include "rtp/rtcp_json.hpp"
#include "rtp/rtcp_packet.hpp"

namespace hepd::rtp {

std::string_view to_string(FinishReason reason) noexcept {
    switch (reason) {
        case FinishReason::idle: return "idle";
        case FinishReason::evicted: return "evicted";
        case FinishReason::flushed: return "flushed";
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

std::uint32_t compact_arrival(Timestamp time) noexcept { return ntp_middle32(ntp_from_unix_micros(time.us)); }

std::uint32_t clamp_rtt(std::int64_t rtt_us) noexcept {
    constexpr std::int64_t largest = kNoRtt - 1;
    return static_cast<std::uint32_t>(std::clamp<std::int64_t>(rtt_us, 0, largest));
}

// Degraded paths log one line per interval with the number of events it stands for.
template <class... Args>
void log_throttled(LogThrottle& throttle, Timestamp now, spdlog::level::level_enum level,
                   spdlog::format_string_t<std::uint64_t, Args...> format, Args&&... args) {
    if (!spdlog::should_log(level)) return;
    if (const auto suppressed = throttle.allow(now))
        spdlog::log(level, format, static_cast<std::uint64_t>(*suppressed), std::forward<Args>(args)...);
}

} // namespace

StreamTable::StreamTable(const StreamTableConfig& config)
    : config_(config),
      streams_(config.max_streams),
      media_(config.max_streams),
      pending_(config.max_pending_media),
      reported_(config.max_reported_streams) {}

// ---- RTP -----------------------------------------------------------------------------------

void StreamTable::on_rtp(const PacketMeta& meta, ByteSpan payload) {
    const auto packet = parse_rtp(payload);
    if (!packet) {
        count_error(stats_.rtp_errors, packet.error());
        note_parse_error(meta.time, "RTP", to_string(packet.error()));
        return;
    }
    on_rtp(meta, *packet);
}

void StreamTable::on_rtp(const PacketMeta& meta, const RtpPacket& packet) {
    const StreamKey key{meta.src, meta.dst, packet.ssrc};
    const std::uint64_t hash = hash_stream_key(key);
    std::uint32_t at = streams_.find(hash, [&key](const StreamKey& k) { return same_key(k, key); });
    if (at == kNone) {
        at = create_stream(key, hash, true, meta.time);
    } else {
        streams_.touch(at);
    }
    const SeqVerdict verdict = observe_packet(streams_[at].stream, packet, meta.time);
    stats_.rtp_packets.add();
    stats_.rtp_bytes.add(packet.payload.size());
    if (verdict == SeqVerdict::duplicate) {
        stats_.duplicate_packets.add();
    } else if (verdict == SeqVerdict::late) {
        stats_.out_of_order_packets.add();
    }
    if (is_event_shaped(packet)) stats_.event_packets.add();
}

std::uint32_t StreamTable::create_stream(const StreamKey& key, std::uint64_t hash, bool count_start,
                                         Timestamp now) {
    if (streams_.full()) {
        // Made room here rather than by insert() so that the victim is accounted for (and
        // unlinked from its media entry) while its index still names it.
        const std::uint32_t victim = streams_.oldest();
        finish_stream(victim, FinishReason::evicted);
        streams_.erase(victim);
        counter_at(stats_.evictions, StreamTableKind::streams).add();
        log_throttled(logs_.stream_evictions, now, spdlog::level::warn,
                      "rtp: stream table full ({1} streams): evicted the least recently active stream "
                      "({0} more since the last message)",
                      config_.max_streams);
    }
    const std::uint32_t at_index = streams_.insert(hash, key, StreamSlot{}).first;
    link_media(at_index, key.dst);
    stats_.streams_active.add(1);
    if (count_start) stats_.streams_started.add();
    return at_index;
}

void StreamTable::finish_stream(std::uint32_t index, FinishReason reason) {
    const auto& entry = streams_.entry(index);
    const Stream& stream = entry.value.stream;
    const Binding* binding = bound(entry.value);
    const StreamSummary summary = summarize(stream, binding, config_.quality);

    counter_at(stats_.streams_finished, reason).add();
    stats_.streams_active.add(-1);
    stats_.lost_packets.add(summary.lost_clamped);
    counter_at(stats_.finished_streams_by_codec, label_of(summary.codec)).add();
    if (summary.clock_unmatched) {
        stats_.clock_rate_unmatched.add();
        log_throttled(logs_.bindings, stream.last, spdlog::level::debug,
                      "rtp: the rtpmap clock of payload type {1} is none of the candidate clocks; jitter "
                      "taken under the smoothest candidate ({0} more binding events since the last message)",
                      stream.dynamic_payload_type);
    }
    if (summary.has_quality) {
        stats_.jitter_seconds.observe(summary.max_jitter_ms / 1000.0);
        stats_.mos.observe(summary.mos);
    }
    if (sink_ != nullptr) sink_->on_stream_finished(FinishedStream{entry.key, stream, binding, summary, reason});
    unlink_media(index, stream.last);
}

// ---- media entries and bindings ------------------------------------------------------------

const Binding* StreamTable::bound(const StreamSlot& slot) const noexcept {
    if (slot.media == kNone) return nullptr;
    const MediaEntry& m = media_.entry(slot.media).value;
    return m.bound ? &m.binding : nullptr;
}

void StreamTable::link_media(std::uint32_t index, const Endpoint& dst) {
    const Endpoint media = media_key(dst);
    const std::uint64_t hash = hash_endpoint(media);
    const auto same = [&media](const Endpoint& k) { return k == media; };
    std::uint32_t m = media_.find(hash, same);
    if (m == kNone) {
        // Media entries never outnumber streams and share their cap, so this never evicts.
        if (media_.full()) return;
        MediaEntry entry;
        const std::uint32_t p = pending_.find(hash, same);
        if (p != kNone) {
            entry.binding = std::move(pending_[p].binding);
            entry.bound = true;
            pending_.erase(p);
            stats_.pending_bindings.add(-1);
        }
        m = media_.insert(hash, media, std::move(entry)).first;
    }
    MediaEntry& e = media_[m];
    StreamSlot& slot = streams_[index];
    slot.media = m;
    slot.prev = kNone;
    slot.next = e.head;
    if (e.head != kNone) streams_[e.head].prev = index;
    e.head = index;
    ++e.streams;
}

void StreamTable::unlink_media(std::uint32_t index, Timestamp when) {
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
    if (--e.streams > 0) return;
    if (e.bound) {
        // Kept for streams still to come (a new SSRC after a re-INVITE or a hold).
        const Endpoint media = media_.entry(m).key;
        const std::uint64_t hash = media_.entry(m).hash;
        const Timestamp idle_since = std::max(when, e.binding.time);
        Binding binding = std::move(e.binding);
        media_.erase(m);
        park_binding(media, hash, std::move(binding), idle_since);
        return;
    }
    media_.erase(m);
}

void StreamTable::park_binding(const Endpoint& media, std::uint64_t hash, Binding binding, Timestamp idle_since) {
    if (pending_.full()) {
        pending_.erase(pending_.oldest());
        counter_at(stats_.evictions, StreamTableKind::pending_media).add();
        stats_.pending_bindings.add(-1);
        log_throttled(logs_.pending_evictions, idle_since, spdlog::level::warn,
                      "rtp: pending media table full ({1} bindings): dropped the least recently used "
                      "({0} more since the last message)",
                      config_.max_pending_media);
    }
    pending_.insert(hash, media, PendingBinding{std::move(binding), idle_since});
    stats_.pending_bindings.add(1);
}

void StreamTable::bind(const MediaBinding& binding) { apply_binding(media_key(binding.media), make_binding(binding)); }

void StreamTable::insert_binding(const Endpoint& media, Binding binding) {
    apply_binding(media_key(media), std::move(binding));
}

void StreamTable::apply_binding(const Endpoint& media, Binding binding) {
    const std::uint64_t hash = hash_endpoint(media);
    const auto same = [&media](const Endpoint& k) { return k == media; };
    if (const std::uint32_t m = media_.find(hash, same); m != kNone) {
        MediaEntry& e = media_[m];
        if (!e.bound) {
            stats_.late_bindings.add();
            log_throttled(logs_.bindings, binding.time, spdlog::level::debug,
                          "rtp: media binding for {1} arrived after its stream's first packets "
                          "({0} more binding events since the last message)",
                          media.to_string());
        } else if (binding.time < e.binding.time) {
            stats_.stale_bindings.add();
            log_throttled(logs_.bindings, binding.time, spdlog::level::debug,
                          "rtp: media binding for {1} older than the one in place, ignored "
                          "({0} more binding events since the last message)",
                          media.to_string());
            return;
        } else {
            stats_.rebindings.add();
        }
        e.binding = std::move(binding);
        e.bound = true;
        media_.touch(m);
        return;
    }
    if (const std::uint32_t p = pending_.find(hash, same); p != kNone) {
        PendingBinding& waiting = pending_[p];
        if (binding.time < waiting.binding.time) {
            stats_.stale_bindings.add();
            log_throttled(logs_.bindings, binding.time, spdlog::level::debug,
                          "rtp: media binding for {1} older than the one in place, ignored "
                          "({0} more binding events since the last message)",
                          media.to_string());
            return;
        }
        stats_.rebindings.add();
        waiting.idle_since = std::max(waiting.idle_since, binding.time);
        waiting.binding = std::move(binding);
        pending_.touch(p);
        return;
    }
    const Timestamp since = binding.time;
    park_binding(media, hash, std::move(binding), since);
}

// ---- RTCP ----------------------------------------------------------------------------------

std::uint32_t StreamTable::find_reported_stream(const Endpoint& reporter, std::uint32_t ssrc,
                                                const Endpoint& peer) const noexcept {
    const std::uint32_t m = media_.find(hash_endpoint(reporter), [&reporter](const Endpoint& k) { return k == reporter; });
    if (m == kNone) return kNone;
    // Several sources may send the same SSRC to one address (replayed media); the one the
    // report goes back to (symmetric RTP/RTCP) is the better guess, else the newest.
    std::uint32_t first = kNone;
    std::size_t walked = 0;
    for (std::uint32_t i = media_.entry(m).value.head; i != kNone && walked < kMaxStreamsPerLookup;
         i = streams_.entry(i).value.next, ++walked) {
        const StreamKey& key = streams_.entry(i).key;
        if (key.ssrc != ssrc) continue;
        if (media_key(key.src) == peer) return i;
        if (first == kNone) first = i;
    }
    return first;
}

void StreamTable::apply_report_block(const PacketMeta& meta, const Endpoint& reporter, std::uint32_t ssrc,
                                     std::uint8_t fraction_lost, std::int32_t cumulative_lost, std::uint32_t jitter,
                                     std::uint32_t lsr, std::uint32_t dlsr, std::uint32_t arrival) {
    stats_.rtcp_fraction_lost.observe(fraction_lost / 256.0);
    const auto rtt = round_trip_micros(arrival, lsr, dlsr);
    if (rtt) stats_.rtcp_rtt_seconds.observe(static_cast<double>(*rtt) / 1e6);
    const std::uint32_t i = find_reported_stream(reporter, ssrc, media_key(meta.dst));
    if (i == kNone) {
        stats_.rtcp_unmatched_blocks.add();
        log_throttled(logs_.unmatched_reports, meta.time, spdlog::level::debug,
                      "rtp: RTCP from {1} about SSRC {2:#010x}, a stream not seen here "
                      "({0} more since the last message)",
                      meta.src.to_string(), ssrc);
        return;
    }
    ReceiverView& view = streams_[i].stream.receiver;
    if (view.reports < std::numeric_limits<std::uint16_t>::max()) ++view.reports;
    view.fraction_lost = fraction_lost;
    view.cumulative_lost = cumulative_lost;
    view.jitter = jitter;
    if (rtt) view.rtt_us = clamp_rtt(*rtt);
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
    const auto apply_blocks = [&](const ReportBlockList& blocks) {
        counter_at(stats_.rtcp_reports, ReportSource::rtcp).add();
        for (const ReportBlock b : blocks)
            apply_report_block(meta, reporter, b.ssrc, b.fraction_lost, b.cumulative_lost, b.jitter, b.last_sr,
                               b.delay_since_last_sr, arrival);
    };
    for (const RtcpPacket packet : *compound) {
        switch (packet.type) {
            case RtcpType::sr: {
                const auto sr = parse_sender_report(packet);
                if (sr) {
                    apply_blocks(sr->report_blocks);
                } else {
                    count_error(stats_.rtcp_errors, sr.error());
                    note_parse_error(meta.time, "RTCP", to_string(sr.error()));
                }
                break;
            }
            case RtcpType::rr: {
                const auto rr = parse_receiver_report(packet);
                if (rr) {
                    apply_blocks(rr->report_blocks);
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
                    ReceiverView& view = streams_[i].stream.receiver;
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

ReportedStream* StreamTable::reported_stream(std::string_view call_id, std::uint32_t ssrc, Timestamp now) {
    const std::uint64_t hash = hash_reported(call_id, ssrc);
    std::uint32_t i = reported_.find(hash, [&](const ReportedKey& k) { return k.ssrc == ssrc && k.call_id == call_id; });
    if (i == kNone) {
        if (reported_.full()) {
            const std::uint32_t victim = reported_.oldest();
            finish_reported(victim, FinishReason::evicted);
            reported_.erase(victim);
            counter_at(stats_.evictions, StreamTableKind::reported_streams).add();
            log_throttled(logs_.reported_evictions, now, spdlog::level::warn,
                          "rtp: reported stream table full ({1} entries): evicted the least recently "
                          "reported ({0} more since the last message)",
                          config_.max_reported_streams);
        }
        ReportedStream fresh;
        fresh.first = now;
        i = reported_.insert(hash, ReportedKey{std::string(call_id), ssrc}, fresh).first;
        stats_.reported_streams_active.add(1);
    } else {
        reported_.touch(i);
    }
    return &reported_[i];
}

void StreamTable::finish_reported(std::uint32_t i, FinishReason reason) {
    stats_.reported_streams_active.add(-1);
    if (sink_ != nullptr) sink_->on_reported_stream_finished(reported_.entry(i).key, reported_.entry(i).value, reason);
}

void StreamTable::on_rtcp_json(const PacketMeta& meta, std::string_view call_id, ByteSpan payload) {
    const auto report = parse_rtcp_json(as_text(payload));
    if (!report) {
        count_error(stats_.rtcp_json_errors, report.error());
        note_parse_error(meta.time, "RTCP-JSON", to_string(report.error()));
        return;
    }
    counter_at(stats_.rtcp_reports, ReportSource::rtcp_json).add();
    const std::uint32_t arrival = compact_arrival(meta.time);
    for (std::size_t b = 0; b < report->block_count; ++b) {
        const RtcpJsonBlock& block = report->blocks[b];
        stats_.rtcp_fraction_lost.observe(block.fraction_lost / 256.0);
        const auto rtt = round_trip_micros(arrival, block.lsr, block.dlsr);
        if (rtt) stats_.rtcp_rtt_seconds.observe(static_cast<double>(*rtt) / 1e6);
        if (call_id.empty()) continue;
        ReportedStream& reported = *reported_stream(call_id, block.source_ssrc, meta.time);
        reported.reporter_ssrc = report->ssrc;
        reported.last = std::max(reported.last, meta.time);
        ReceiverView& view = reported.view;
        if (view.reports < std::numeric_limits<std::uint16_t>::max()) ++view.reports;
        view.fraction_lost = block.fraction_lost;
        view.cumulative_lost = block.packets_lost;
        view.jitter = block.ia_jitter;
        if (rtt) view.rtt_us = clamp_rtt(*rtt);
    }
    if (call_id.empty()) {
        stats_.rtcp_json_without_call_id.add();
        log_throttled(logs_.no_call_id, meta.time, spdlog::level::warn,
                      "rtp: RTCP-JSON from {1} without a correlation id (Call-ID), not kept "
                      "({0} more since the last message)",
                      meta.src.to_string());
    }
}

// ---- expiry --------------------------------------------------------------------------------

void StreamTable::expire(Timestamp now) {
    const std::int64_t idle = config_.stream_idle_timeout_us;
    while (streams_.size() > 0) {
        const std::uint32_t i = streams_.oldest();
        if (streams_.entry(i).value.stream.last.us + idle > now.us) break;
        finish_stream(i, FinishReason::idle);
        streams_.erase(i);
    }
    while (pending_.size() > 0) {
        const std::uint32_t i = pending_.oldest();
        if (pending_.entry(i).value.idle_since.us + config_.pending_media_timeout_us > now.us) break;
        pending_.erase(i);
        stats_.pending_bindings.add(-1);
        stats_.pending_bindings_expired.add();
    }
    while (reported_.size() > 0) {
        const std::uint32_t i = reported_.oldest();
        if (reported_.entry(i).value.last.us + idle > now.us) break;
        finish_reported(i, FinishReason::idle);
        reported_.erase(i);
    }
}

void StreamTable::finish_all(Timestamp /*now*/) {
    while (streams_.size() > 0) {
        const std::uint32_t i = streams_.oldest();
        finish_stream(i, FinishReason::flushed);
        streams_.erase(i);
    }
    while (reported_.size() > 0) {
        const std::uint32_t i = reported_.oldest();
        finish_reported(i, FinishReason::flushed);
        reported_.erase(i);
    }
}

// ---- lookups and snapshot support ----------------------------------------------------------

const Stream* StreamTable::find(const StreamKey& key) const noexcept {
    const std::uint32_t i = streams_.find(hash_stream_key(key), [&key](const StreamKey& k) { return same_key(k, key); });
    return i == kNone ? nullptr : &streams_.entry(i).value.stream;
}

const Binding* StreamTable::binding_of(const StreamKey& key) const noexcept {
    const std::uint32_t i = streams_.find(hash_stream_key(key), [&key](const StreamKey& k) { return same_key(k, key); });
    return i == kNone ? nullptr : bound(streams_.entry(i).value);
}

const Binding* StreamTable::pending_binding(const Endpoint& media) const noexcept {
    const Endpoint k = media_key(media);
    const std::uint32_t i = pending_.find(hash_endpoint(k), [&k](const Endpoint& e) { return e == k; });
    return i == kNone ? nullptr : &pending_.entry(i).value.binding;
}

const ReportedStream* StreamTable::find_reported(std::string_view call_id, std::uint32_t ssrc) const noexcept {
    const std::uint32_t i = reported_.find(hash_reported(call_id, ssrc), [&](const ReportedKey& k) {
        return k.ssrc == ssrc && k.call_id == call_id;
    });
    return i == kNone ? nullptr : &reported_.entry(i).value;
}

StreamSummary StreamTable::summary(const StreamKey& key) const noexcept {
    const std::uint32_t i = streams_.find(hash_stream_key(key), [&key](const StreamKey& k) { return same_key(k, key); });
    if (i == kNone) return {};
    return summarize(streams_.entry(i).value.stream, bound(streams_.entry(i).value), config_.quality);
}

bool StreamTable::insert(const StreamKey& key, const Stream& stream) {
    const std::uint64_t hash = hash_stream_key(key);
    if (streams_.find(hash, [&key](const StreamKey& k) { return same_key(k, key); }) != kNone) return false;
    const std::uint32_t i = create_stream(key, hash, false, stream.last);
    streams_[i].stream = stream;
    return true;
}

bool StreamTable::insert_reported(const ReportedKey& key, const ReportedStream& stream) {
    if (find_reported(key.call_id, key.ssrc) != nullptr) return false;
    *reported_stream(key.call_id, key.ssrc, stream.first) = stream;
    return true;
}

void StreamTable::note_parse_error(Timestamp now, std::string_view what, std::string_view reason) {
    log_throttled(logs_.parse_errors, now, spdlog::level::debug,
                  "rtp: {1} not parsed: {2} ({0} more parse errors since the last message)", what, reason);
}

StreamTable::EntrySizes StreamTable::entry_sizes() noexcept {
    return {sizeof(StreamLru::Entry), sizeof(MediaLru::Entry), sizeof(PendingLru::Entry), sizeof(ReportedLru::Entry)};
}

std::size_t StreamTable::memory_bytes() const noexcept {
    const auto heap = [](const std::string& s) { return s.capacity() > 15 ? s.capacity() + 1 : 0; };
    std::size_t bytes = streams_.memory_bytes() + media_.memory_bytes() + pending_.memory_bytes() +
                        reported_.memory_bytes();
    media_.for_each([&](std::uint32_t, const MediaLru::Entry& e) { bytes += heap(e.value.binding.call_id); });
    pending_.for_each([&](std::uint32_t, const PendingLru::Entry& e) { bytes += heap(e.value.binding.call_id); });
    reported_.for_each([&](std::uint32_t, const ReportedLru::Entry& e) { bytes += heap(e.key.call_id); });
    return bytes;
}

} // namespace hepd::rtp
