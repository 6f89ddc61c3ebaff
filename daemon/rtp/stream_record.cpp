#include "rtp/stream_record.hpp"

#include "core/hash.hpp"
#include "rtp/emodel.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace hepd::rtp {

namespace {

std::uint64_t word_at(const std::uint8_t* p) noexcept {
    std::uint64_t w = 0;
    std::memcpy(&w, p, sizeof w);
    return w;
}

// Adds one |D| (timestamp units, converted to microseconds) to an RFC 3550 A.8 estimate.
void add_transit_difference(JitterEstimate& e, double arrival_delta_us, double timestamp_delta,
                            double clock_rate) noexcept {
    const double ticks_per_us = clock_rate * 1e-6;
    const double d = arrival_delta_us * ticks_per_us - timestamp_delta;  // timestamp units
    const double abs_d_us = std::fabs(d) / ticks_per_us;
    double j = e.jitter_us;
    j += (abs_d_us - j) / 16.0;
    e.jitter_us = static_cast<float>(j);
    e.max_jitter_us = std::max(e.max_jitter_us, e.jitter_us);
}

// 64 x 64 -> 128-bit multiply with the halves folded together. One multiply per pair of words,
// the pairs independent of each other, so a key hashes in a few cycles (x86-64 and aarch64 both
// have the widening multiply).
std::uint64_t fold_multiply(std::uint64_t a, std::uint64_t b) noexcept {
    const WideProduct p = multiply_wide(a, b);
    return p.low ^ p.high;
}

}  // namespace

// The table's own hash (never used for dispatch, so host byte order is fine). Every input word
// is combined with its own constant (hex digits of pi) before the multiplies, and the result is
// mixed once more, so equal words in different positions do not cancel.
std::uint64_t hash_stream_key(const StreamKey& key) noexcept {
    const auto& s = key.src.address.bytes();
    const auto& d = key.dst.address.bytes();
    const std::uint64_t ports = std::uint64_t{key.src.port} | (std::uint64_t{key.dst.port} << 16) |
                                (std::uint64_t{static_cast<std::uint8_t>(key.src.address.family())} << 32) |
                                (std::uint64_t{static_cast<std::uint8_t>(key.dst.address.family())} << 40);
    const std::uint64_t h =
        fold_multiply(word_at(s.data()) ^ 0x243f6a8885a308d3ULL, word_at(s.data() + 8) ^ 0x13198a2e03707344ULL) ^
        fold_multiply(word_at(d.data()) ^ 0xa4093822299f31d0ULL, word_at(d.data() + 8) ^ 0x082efa98ec4e6c89ULL) ^
        fold_multiply(ports ^ 0x452821e638d01377ULL, key.ssrc ^ 0xbe5466cf34e90c6cULL);
    return mix64(h);
}

namespace {

// Adds one |D| worked out in microseconds already (timestamps converted with a precomputed
// microseconds per unit).
void add_difference_us(JitterEstimate& e, double d_us) noexcept {
    double j = e.jitter_us;
    j += (std::fabs(d_us) - j) / 16.0;
    e.jitter_us = static_cast<float>(j);
    e.max_jitter_us = std::max(e.max_jitter_us, e.jitter_us);
}

bool is_voice_codec(Codec codec) noexcept { return codec != Codec::telephone_event && codec != Codec::comfort_noise; }

// After a packet that moved `last` but is no voice reference itself (an event, comfort noise):
// the reference stays where it was, its offset from `last` grows.
void keep_voice_reference(Stream& s, std::int64_t voice_arrival) noexcept {
    if ((s.flags & Stream::kHasVoiceReference) != 0) s.set_voice_reference(voice_arrival);
}

// The slot of dynamic type `pt` in UnboundRuns, else a free one (claimed), else for a run (`run`)
// one that holds event-shaped packets only (claimed: they stay events, untracked), else none (-1,
// untracked). A type claims a slot before it has run, so the changes kept without it are all so far.
int unbound_slot(const Stream& s, StreamExtras& extras, std::uint8_t pt, bool run) noexcept {
    UnboundRuns& runs = extras.unbound;
    int free = -1;
    int shaped_only = -1;
    for (std::size_t i = 0; i < UnboundRuns::kTypes; ++i) {
        if (runs.payload_type[i] == pt) return static_cast<int>(i);
        if (free < 0 && runs.payload_type[i] == kNoPayloadType) free = static_cast<int>(i);
        if (shaped_only < 0 && run && (runs.ran >> i & 1U) == 0) shaped_only = static_cast<int>(i);
    }
    if (free < 0) free = shaped_only;
    if (free < 0) {
        (run ? extras.untracked_run : extras.untracked_shaped) = pt;
        return -1;
    }
    const auto at = static_cast<std::size_t>(free);
    if (runs.payload_type[at] != kNoPayloadType) extras.untracked_shaped = runs.payload_type[at];
    static_assert(UnboundRuns::kTypes == 2);
    const std::size_t other = 1 - at;
    const bool first = runs.payload_type[other] == kNoPayloadType;
    if (first) runs.last_other = s.voice_payload_type;  // not noted: the changes are noted from here on
    runs.payload_type[at] = pt;
    runs.shaped[at] = 0;
    runs.packets[at] = 0;
    runs.kept_changes[at] = s.payload_type_changes;
    runs.kept_changes[UnboundRuns::kBoth - 1] = first ? s.payload_type_changes : runs.kept_changes[other];
    return free;
}

// A voice packet of payload type `pt` changes the voice payload type of a stream that has no
// binding (it is counted already): the run of the type it leaves closes, one of a dynamic type
// opens, and the change counts for each set of noted types whose runs it does not enter
// (UnboundRuns).
[[gnu::noinline]] void note_unbound_change(Stream& s, std::uint8_t pt, bool dynamic) {
    if (!dynamic && !s.extras.allocated()) return;  // nothing noted yet
    const std::uint8_t from = s.voice_payload_type;
    const std::uint32_t voice_before = s.voice_packets() - 1;
    StreamExtras& extras = s.extras.mut();  // a dynamic type runs the candidate clocks in extras anyway
    UnboundRuns& runs = extras.unbound;
    if (dynamic) unbound_slot(s, extras, pt, true);
    // Without the types of `mask`, the voice type this one follows.
    const auto kept_before = [&](unsigned mask) {
        if (!runs.noted(from, mask)) return from;
        return mask == UnboundRuns::kBoth ? runs.last_other : runs.previous;
    };
    for (unsigned mask = 1; mask <= UnboundRuns::kBoth; ++mask) {
        const std::uint8_t before = kept_before(mask);
        if (!runs.noted(pt, mask) && before != kNoPayloadType && before != pt) ++runs.kept_changes[mask - 1];
    }
    for (std::size_t i = 0; i < UnboundRuns::kTypes; ++i) {
        if (from != kNoPayloadType && runs.payload_type[i] == from) runs.packets[i] += voice_before;
        if (runs.payload_type[i] != pt) continue;
        runs.packets[i] -= voice_before;
        runs.ran = static_cast<std::uint8_t>(runs.ran | 1U << i);
    }
    runs.previous = from;
    if (!runs.noted(pt, UnboundRuns::kBoth)) runs.last_other = pt;
}

// An event-shaped packet of payload type `pt` (counted as an event already) of a stream that has
// no binding: the binding may yet name its type comfort noise or voice.
[[gnu::noinline]] void note_unbound_shaped(Stream& s, std::uint8_t pt) {
    StreamExtras& extras = s.extras.mut();
    const int at = unbound_slot(s, extras, pt, false);
    if (at < 0) return;
    std::uint16_t& shaped = extras.unbound.shaped[static_cast<std::size_t>(at)];
    if (shaped != std::numeric_limits<std::uint16_t>::max()) ++shaped;
}

}  // namespace

SeqVerdict observe_packet(Stream& s, const RtpPacket& p, Timestamp arrival, Timing timing, const Binding* binding) {
    const std::int64_t t = arrival.us;
    const std::int64_t voice_arrival = s.last_voice_arrival_us();  // before `last` moves
    if (s.packets == 0) {
        s.first = arrival;
        s.last = arrival;
    } else if (t >= s.last.us) {
        const std::int64_t gap = t - s.last.us;
        constexpr std::int64_t max_gap = std::numeric_limits<std::uint32_t>::max();
        if (gap > s.max_gap_us) s.max_gap_us = static_cast<std::uint32_t>(std::min(gap, max_gap));
        s.last = arrival;
    }
    ++s.packets;
    s.bytes += p.payload.size();
    if (p.marker) ++s.markers;

    const SeqVerdict verdict = s.sequence.update(p.sequence);
    if (verdict == SeqVerdict::duplicate) {
        ++s.duplicates;
    } else if (verdict == SeqVerdict::late) {
        ++s.out_of_order;
    }
    if (verdict == SeqVerdict::jump || timing == Timing::stray) {
        keep_voice_reference(s, voice_arrival);
        return verdict;
    }

    if (is_event_shaped(p)) [[unlikely]] {
        // An event by its size only where no rtpmap names the type: RFC 3389 comfort noise and
        // voice may be 4 octets too.
        const Codec named = binding != nullptr ? binding->codec_of(p.payload_type) : Codec::unknown;
        if (named == Codec::comfort_noise) {
            ++s.comfort_noise_packets;
            keep_voice_reference(s, voice_arrival);
            return verdict;
        }
        if (named == Codec::unknown || named == Codec::telephone_event) {
            if (binding == nullptr) note_unbound_shaped(s, p.payload_type);
            ++s.event_packets;
            keep_voice_reference(s, voice_arrival);
            return verdict;
        }
    }
    const StaticPayload assigned = static_payload(p.payload_type);
    // Another payload type than the voice one (rare: a change, comfort noise, events): what the
    // SDP names a dynamic one.
    Codec named = Codec::unknown;
    if (p.payload_type != s.voice_payload_type && assigned.clock_rate == 0 && binding != nullptr)
        named = binding->codec_of(p.payload_type);
    if (named == Codec::telephone_event) {
        ++s.event_packets;
        keep_voice_reference(s, voice_arrival);
        return verdict;
    }
    if (assigned.codec == Codec::comfort_noise || named == Codec::comfort_noise) {
        ++s.comfort_noise_packets;
        keep_voice_reference(s, voice_arrival);
        return verdict;
    }

    // Rare (a stream's first packet, a codec change, dynamic CN before its binding): without the
    // hint the note below costs the common path a register move a packet (callgrind).
    if (p.payload_type != s.voice_payload_type) [[unlikely]] {
        // Without a binding a dynamic type may yet be named comfort noise: noted at the change.
        if (binding == nullptr) note_unbound_change(s, p.payload_type, assigned.clock_rate == 0);
        if (s.voice_payload_type != kNoPayloadType) ++s.payload_type_changes;
        s.voice_payload_type = p.payload_type;
        s.flags = static_cast<std::uint8_t>(s.flags & ~Stream::kHasVoiceReference);
    }
    if (assigned.clock_rate == 0 && (s.flags & Stream::kCandidateClocks) == 0) {
        s.flags |= Stream::kCandidateClocks;
        StreamExtras& extras = s.extras.mut();
        extras.candidates.fill(s.jitter);
        extras.dynamic_payload_type = p.payload_type;
        if (binding != nullptr) bind_clock(s, *binding);
    }
    if ((s.flags & Stream::kHasVoiceReference) != 0) {
        const auto arrival_delta = static_cast<double>(t - voice_arrival);
        const auto timestamp_delta =
            static_cast<double>(static_cast<std::int32_t>(p.timestamp - s.last_voice_timestamp));
        const std::uint32_t rate = assigned.clock_rate != 0 ? assigned.clock_rate : kCandidateClockRates[0];
        add_transit_difference(s.jitter, arrival_delta, timestamp_delta, rate);
        if ((s.flags & Stream::kCandidateClocks) != 0) {
            auto& candidates = s.extras.mut().candidates;
            for (std::size_t i = 0; i < candidates.size(); ++i) {
                const std::uint32_t candidate_rate =
                    assigned.clock_rate != 0 ? assigned.clock_rate : kCandidateClockRates[i + 1];
                add_transit_difference(candidates[i], arrival_delta, timestamp_delta, candidate_rate);
            }
            if (StreamExtras& extras = s.extras.mut(); extras.bound_clock != 0) {
                if (assigned.clock_rate != 0) {
                    add_transit_difference(extras.bound, arrival_delta, timestamp_delta, assigned.clock_rate);
                } else {
                    add_difference_us(extras.bound, arrival_delta - timestamp_delta * extras.bound_us_per_tick);
                }
            }
        }
    }
    s.set_voice_reference(t);
    s.last_voice_timestamp = p.timestamp;
    return verdict;
}

void bind_clock(Stream& s, const Binding& binding) {
    if ((s.flags & Stream::kCandidateClocks) == 0) return;
    const int at = binding.find(s.dynamic_payload_type());
    // A clock of kClockRates only (1 kHz to 96 kHz): a rate the table has no code for is not
    // trusted with the stream's figures.
    const std::uint32_t rate = at >= 0 ? binding.clock_rate(static_cast<std::size_t>(at)) : 0;
    if (rate == 0 || candidate_clock_index(rate) >= 0 || rate == s.extras.get().bound_clock) return;
    StreamExtras& extras = s.extras.mut();
    std::size_t nearest = 0;
    const auto distance = [rate](std::uint32_t c) { return std::fabs(std::log(static_cast<double>(c) / rate)); };
    for (std::size_t i = 1; i < kCandidateClockRates.size(); ++i)
        if (distance(kCandidateClockRates[i]) < distance(kCandidateClockRates[nearest])) nearest = i;
    extras.bound = s.estimate(nearest);
    extras.bound_clock = rate;
    extras.bound_us_per_tick = static_cast<float>(1e6 / rate);
}

bool meet_binding(Stream& s, const Binding& binding) {
    bool untracked = false;
    if (s.extras.allocated() && s.extras.get().unbound.payload_type[0] != kNoPayloadType) {
        StreamExtras& extras = s.extras.mut();
        const UnboundRuns runs = extras.unbound;
        extras.unbound = UnboundRuns{};
        // Types no slot was left for: counted still as voice (a run) or events (by their size).
        const Codec run =
            extras.untracked_run == kNoPayloadType ? Codec::unknown : binding.codec_of(extras.untracked_run);
        const Codec shaped =
            extras.untracked_shaped == kNoPayloadType ? Codec::unknown : binding.codec_of(extras.untracked_shaped);
        untracked = !is_voice_codec(run) || (shaped != Codec::unknown && shaped != Codec::telephone_event);
        extras.untracked_run = kNoPayloadType;
        extras.untracked_shaped = kNoPayloadType;
        const std::uint32_t voice = s.voice_packets();
        std::array<bool, UnboundRuns::kTypes> moved{};
        for (std::size_t i = 0; i < UnboundRuns::kTypes; ++i) {
            const std::uint8_t pt = runs.payload_type[i];
            const Codec named = pt == kNoPayloadType ? Codec::unknown : binding.codec_of(pt);
            // Events by their size that the binding names otherwise (Codec::other is a voice codec).
            if (named == Codec::comfort_noise || (is_voice_codec(named) && named != Codec::unknown)) {
                s.event_packets -= runs.shaped[i];
                if (named == Codec::comfort_noise) s.comfort_noise_packets += runs.shaped[i];
            }
            if (is_voice_codec(named)) continue;
            const std::uint32_t packets = runs.packets[i] + (pt == s.voice_payload_type ? voice : 0);
            (named == Codec::comfort_noise ? s.comfort_noise_packets : s.event_packets) += packets;
            moved[i] = true;
        }
        const unsigned mask = (moved[0] ? 1U : 0U) | (moved[1] ? 2U : 0U);
        if (mask != 0) s.payload_type_changes = runs.kept_changes[mask - 1];
        // The voice type before the runs that were none: the reference was one of their packets.
        if (runs.noted(s.voice_payload_type, mask)) {
            s.voice_payload_type = mask == UnboundRuns::kBoth ? runs.last_other : runs.previous;
            s.flags = static_cast<std::uint8_t>(s.flags & ~Stream::kHasVoiceReference);
        }
        // The candidate clocks ran for one of them (the stream began with it): they are the
        // voice type's if that is dynamic, else the static type's estimate is the one under that
        // type's clock (its packets fed every candidate at their own clock; its own at the CN's).
        const std::uint8_t dynamic = extras.dynamic_payload_type;
        bool dynamic_moved = false;
        for (std::size_t i = 0; i < UnboundRuns::kTypes; ++i)
            dynamic_moved = dynamic_moved || (moved[i] && runs.payload_type[i] == dynamic);
        if (dynamic_moved && (s.flags & Stream::kCandidateClocks) != 0) {
            const std::uint8_t voice_pt = s.voice_payload_type;
            if (voice_pt != kNoPayloadType && static_payload(voice_pt).clock_rate == 0) {
                extras.dynamic_payload_type = voice_pt;
            } else {
                const int at = binding.find(dynamic);
                const int candidate =
                    at >= 0 ? candidate_clock_index(binding.clock_rate(static_cast<std::size_t>(at))) : -1;
                if (candidate > 0) s.jitter = s.estimate(static_cast<std::size_t>(candidate));
                extras.dynamic_payload_type = kNoPayloadType;
                extras.bound_clock = 0;
                s.flags = static_cast<std::uint8_t>(s.flags & ~Stream::kCandidateClocks);
            }
        }
    }
    bind_clock(s, binding);
    return untracked;
}

namespace {

bool is_voice(const RtpPacket& p) noexcept {
    return !is_event_shaped(p) && static_payload(p.payload_type).codec != Codec::comfort_noise;
}

// Whether arrival times and RTP timestamps of two packets of payload type `pt` moved apart by
// more than kMaxTimestampJumpSeconds, under each clock the payload type may have.
[[gnu::always_inline]] inline bool times_apart(std::uint8_t pt, std::int64_t arrival_delta_us,
                                               std::uint32_t timestamp_delta) noexcept {
    const double arrival_delta = static_cast<double>(arrival_delta_us) / 1e6;
    const auto ticks = static_cast<double>(static_cast<std::int32_t>(timestamp_delta));
    const std::uint32_t assigned = static_payload(pt).clock_rate;
    if (assigned != 0) return std::fabs(arrival_delta - ticks / assigned) > kMaxTimestampJumpSeconds;
    for (const std::uint32_t rate : kCandidateClockRates)
        if (std::fabs(arrival_delta - ticks / rate) <= kMaxTimestampJumpSeconds) return false;
    return true;
}

// Most media a packet carries (RFC 3551 caps a frame at 200 ms of audio; video frames are less).
constexpr double kMaxPacketSeconds = 0.2;

// Whether the timestamp moved on by what the sequence numbers say could have been sent since
// (forward, at most kMaxPacketSeconds a number, under some clock the payload type may have).
bool steps_with_sequence(std::uint8_t pt, std::uint32_t timestamp_delta, std::uint16_t sequence_delta) noexcept {
    const auto ticks = static_cast<std::int32_t>(timestamp_delta);
    if (ticks <= 0 || sequence_delta == 0 || sequence_delta >= kMaxDropout) return false;
    const double most = sequence_delta * kMaxPacketSeconds;
    const std::uint32_t assigned = static_payload(pt).clock_rate;
    if (assigned != 0) return ticks <= most * assigned;
    return std::any_of(kCandidateClockRates.begin(), kCandidateClockRates.end(),
                       [&](std::uint32_t rate) { return ticks <= most * rate; });
}

// Whether this voice packet's timestamp broke from the previous voice packet's: it disagrees
// with the arrival times, and with the sequence numbers too. A timestamp that steps on with the
// numbers is the same sender's, however late it came: a network stall that delivers a second of
// packets in a burst is delay (jitter), not a new source.
bool timestamp_breaks(const Stream& s, const RtpPacket& p, Timestamp arrival) noexcept {
    if ((s.flags & Stream::kHasVoiceReference) == 0 || p.payload_type != s.voice_payload_type || !is_voice(p))
        return false;
    const std::uint32_t timestamp_delta = p.timestamp - s.last_voice_timestamp;
    if (!times_apart(p.payload_type, arrival.us - s.last_voice_arrival_us(), timestamp_delta)) return false;
    return !steps_with_sequence(p.payload_type, timestamp_delta,
                                static_cast<std::uint16_t>(p.sequence - s.sequence.max_seq));
}

// Zeros standing in for the payload of a held packet when it is measured after all: only its
// length counts.
constexpr std::size_t kMaxHeldPayload = 65535;
const std::uint8_t kZeroPayload[kMaxHeldPayload] = {};

}  // namespace

Continuity classify(const Stream& s, const RtpPacket& p, Timestamp arrival, bool judge_timestamps) noexcept {
    if (const HeldPacket& held = s.held(); held.valid) {
        // The next packet confirms a restart when it follows the held one in sequence and, a
        // voice packet of its payload type, in timestamp too: one that follows the old stream's
        // timestamps makes the held packet a stray.
        const std::int64_t held_arrival = s.last.us + held.after_last_us;
        const bool follows = p.sequence == static_cast<std::uint16_t>(held.sequence + 1U) &&
                             arrival.us >= held_arrival &&
                             !(p.payload_type == held.payload_type && is_voice(p) &&
                               times_apart(p.payload_type, arrival.us - held_arrival, p.timestamp - held.timestamp));
        return follows ? Continuity::restarted : Continuity::stray;
    }
    if (!s.sequence.validated) return Continuity::continues;  // A.1 probation judges the start
    const auto udelta = static_cast<std::uint16_t>(p.sequence - s.sequence.max_seq);
    const bool jump = udelta >= kMaxDropout && udelta <= kSeqMod - kMaxMisorder;
    return jump || (judge_timestamps && timestamp_breaks(s, p, arrival)) ? Continuity::breaks : Continuity::continues;
}

void hold_packet(Stream& s, const RtpPacket& p, Timestamp arrival) {
    constexpr std::int64_t most = std::numeric_limits<std::uint32_t>::max();
    s.extras.mut().held =
        HeldPacket{static_cast<std::uint32_t>(std::clamp<std::int64_t>(arrival.us - s.last.us, 0, most)),
                   p.timestamp,
                   p.sequence,
                   static_cast<std::uint16_t>(std::min<std::size_t>(p.payload.size(), kMaxHeldPayload)),
                   p.payload_type,
                   p.marker,
                   true};
}

TakenPacket take_held(Stream& s) noexcept {
    const HeldPacket& held = s.held();
    TakenPacket t;
    t.packet.marker = held.marker;
    t.packet.payload_type = held.payload_type;
    t.packet.sequence = held.sequence;
    t.packet.timestamp = held.timestamp;
    t.packet.payload = ByteSpan(kZeroPayload, held.payload_size);
    t.arrival = Timestamp{s.last.us + held.after_last_us};
    if (s.extras.allocated()) s.extras.mut().held = HeldPacket{};
    return t;
}

Endpoint binding_peer(const MediaBinding& in) noexcept { return in.peer.port != 0 ? media_key(in.peer) : Endpoint{}; }

Binding make_binding(const MediaBinding& in) {
    Binding b;
    if (const CompactText* block = in.call_id_block()) {
        b.call_id = *block;  // the dialog's block: one for the call
    } else {
        b.call_id = in.call_id;
    }
    b.dialog = in.dialog;
    b.caller_peer = in.caller_peer;
    b.callee_peer = in.callee_peer;
    b.time = in.time;
    b.rtcp = in.rtcp;
    // An answer's formats that name the offerer's address keep their list here until the table
    // finds the offer (choose_from_answer); without one they stand for the address's own.
    const std::size_t n = std::min<std::size_t>(in.codec_count, kMaxBindingCodecs);
    b.codec_count = static_cast<std::uint8_t>(n);
    for (std::size_t i = 0; i < n; ++i) {
        const CodecInfo& c = in.codecs[i];
        const StaticPayload assigned = static_payload(c.payload_type);
        const std::string_view name = c.name_view();
        b.payload_types[i] = c.payload_type;
        b.set_codec(i, name.empty() ? assigned.codec : codec_from_name(name),
                    clock_code(c.clock_rate != 0 ? c.clock_rate : assigned.clock_rate));
    }
    return b;
}

int Binding::voice_format(bool answer) const noexcept {
    if (answer_choice < codec_count) return answer_choice;
    int first = -1;
    for (std::size_t i = 0; i < codec_count && i < kMaxBindingCodecs; ++i) {
        if (!is_voice_codec(codec(i))) continue;
        if (first < 0) {
            first = static_cast<int>(i);
            if (answer) return first;
        } else {
            const auto f = static_cast<std::size_t>(first);
            if (codec(i) != codec(f) || clock(i) != clock(f)) return -1;  // the answer picks
        }
    }
    return first;
}

void Binding::choose_from_answer(const Binding& offer) noexcept {
    const Binding answer = *this;
    copy_codecs(offer);
    answer_choice = kNoChoice;
    // The answer's formats in its order; the offer's of the same number (RFC 3264 6.1: the
    // answer SHOULD keep the offer's numbers), else of the same codec and clock.
    for (std::size_t a = 0; a < answer.codec_count && a < kMaxBindingCodecs; ++a) {
        if (!is_voice_codec(answer.codec(a))) continue;
        const Codec wanted = answer.codec(a);
        int at = find(answer.payload_types[a]);
        if (at >= 0 && wanted != Codec::unknown && codec(static_cast<std::size_t>(at)) != wanted) at = -1;
        const bool named = wanted != Codec::unknown && wanted != Codec::other;
        for (std::size_t o = 0; at < 0 && named && o < codec_count && o < kMaxBindingCodecs; ++o)
            if (codec(o) == wanted && clock(o) == answer.clock(a)) at = static_cast<int>(o);
        if (at >= 0) {
            answer_choice = static_cast<std::uint8_t>(at) & 0x0FU;  // below kMaxBindingCodecs
            return;
        }
    }
}

StreamSummary summarize(const Stream& s, const Binding* binding, const QualityOptions& options) noexcept {
    StreamSummary out;
    out.expected = s.sequence.expected();
    out.received = s.sequence.received_total();
    out.lost = out.expected - out.received;
    out.lost_clamped = out.lost > 0 ? static_cast<std::uint64_t>(out.lost) : 0;
    if (out.expected > 0)
        out.loss_percent = 100.0 * static_cast<double>(out.lost_clamped) / static_cast<double>(out.expected);

    const auto bound_index = [binding](std::uint8_t pt) { return binding != nullptr ? binding->find(pt) : -1; };

    int slot = 0;
    if ((s.flags & Stream::kCandidateClocks) != 0) {
        const int at = bound_index(s.dynamic_payload_type());
        const auto bi = static_cast<std::size_t>(at);
        const std::uint32_t bound_rate = at >= 0 ? binding->clock_rate(bi) : 0;
        const int candidate = candidate_clock_index(bound_rate);
        if (candidate >= 0) {
            slot = candidate;
            out.clock_from_binding = true;
        } else if (bound_rate != 0 && s.extras.get().bound_clock == bound_rate) {
            slot = kBoundClockSlot;
            out.clock_from_binding = true;
        } else {
            out.clock_unmatched = bound_rate != 0 || (at >= 0 && binding->clock(bi) == kUnlistedClock);
            for (std::size_t i = 1; i < kCandidateClockRates.size(); ++i)
                if (s.estimate(i).max_jitter_us < s.estimate(static_cast<std::size_t>(slot)).max_jitter_us)
                    slot = static_cast<int>(i);
        }
    }
    out.jitter_slot = slot;
    const JitterEstimate& estimate =
        slot == kBoundClockSlot ? s.extras.get().bound : s.estimate(static_cast<std::size_t>(slot));
    out.jitter_ms = estimate.jitter_us / 1000.0;
    out.max_jitter_ms = estimate.max_jitter_us / 1000.0;

    const std::uint8_t pt = s.voice_payload_type;
    if (pt != kNoPayloadType) {
        const StaticPayload assigned = static_payload(pt);
        const int at = bound_index(pt);
        if (assigned.clock_rate != 0) {
            out.clock_rate = assigned.clock_rate;
        } else if (at >= 0 && binding->clock_rate(static_cast<std::size_t>(at)) != 0) {
            out.clock_rate = binding->clock_rate(static_cast<std::size_t>(at));
        } else if ((s.flags & Stream::kCandidateClocks) != 0) {
            out.clock_rate = kCandidateClockRates[static_cast<std::size_t>(slot)];
        }
        out.codec = at >= 0 ? binding->codec(static_cast<std::size_t>(at)) : Codec::unknown;
        if (out.codec == Codec::unknown) out.codec = assigned.codec;
    } else if (s.event_packets > 0) {
        out.codec = Codec::telephone_event;
    } else if (s.comfort_noise_packets > 0) {
        out.codec = Codec::comfort_noise;
    }

    // A source that never passed RFC 3550 probation (A.1: two packets in sequence) has no loss
    // figure: scoring it would call perfect a flow whose every other packet is missing, or one
    // that only looked like RTP.
    if (s.voice_packets() == 0 || !s.sequence.validated) return out;
    out.has_quality = true;
    const std::uint32_t gaps = s.sequence.gaps;
    if (out.lost_clamped > 0 && gaps > 0) {
        const double mean_burst = static_cast<double>(out.lost_clamped) / gaps;
        out.burst_ratio = std::max(1.0, mean_burst * (1.0 - out.loss_percent / 100.0));
    }
    double network_ms = options.default_network_delay_ms;
    if (const ReceiverView& view = s.receiver.get(); view.rtt_us != kNoRtt) {
        network_ms = view.rtt_us / 2000.0;
    } else if (view.xr_round_trip_ms != 0) {
        network_ms = view.xr_round_trip_ms / 2.0;
    }
    out.one_way_delay_ms = network_ms + options.jitter_buffer_factor * out.max_jitter_ms;
    const EmodelResult e = evaluate(codec_impairment(out.codec, options.g711_plc),
                                    {out.loss_percent, out.burst_ratio, out.one_way_delay_ms});
    out.r_factor = e.r;
    out.mos = e.mos;
    return out;
}

}  // namespace hepd::rtp
