#pragma once
// One RTP stream's measurements as plain data (what a snapshot stores and restores), the media
// binding it joins, and the per-packet update.
//
// What is measured, per stream (source endpoint, destination endpoint, SSRC):
//  - packets, payload octets, marker bits, first/last arrival, largest inter-arrival gap;
//  - RFC 3550 A.1 sequence state (sequence.hpp): expected, received, lost (signed and clamped),
//    duplicates, late (out-of-order) packets, loss events, restarts;
//  - RFC 3550 A.8 interarrival jitter, J += (|D| - J) / 16 with D = (R_j - R_i) - (S_j - S_i)
//    computed in RTP timestamp units from the arrival times (microseconds). J is kept scaled to
//    microseconds (J * 1e6 / clock rate) so that it keeps its meaning across payload-type
//    changes and so that estimates under different clock rates compare; in milliseconds it is
//    exactly the RFC value divided by the clock rate.
//
// RFC 4733 telephone-events and comfort noise (RFC 3389) share the voice stream's SSRC and
// sequence space (RFC 4733 section 2.1), so they take part in the sequence/loss accounting like
// every packet, but they never feed the jitter estimate: their timestamps stay at the event's
// start for the whole event, and comfort noise is sent at irregular intervals during silence.
// They are counted separately (event_packets, comfort_noise_packets) and never become the
// stream's voice payload type (so never its codec). Jitter is computed between consecutive
// packets of the voice payload type only; a different voice payload type is a payload-type
// change (counted) and restarts the reference (no D across a codec switch). A stream that
// carries only events (a separate SSRC, as sipp sends them) has no jitter and no MOS.
//
// Events are recognised by shape: a dynamic payload type (96-127) with a 4-octet payload (RFC 4733
// section 2.3), unless the binding's rtpmap names that type otherwise (a 4-octet CN packet, a noise
// level and three reflection coefficients, is comfort noise; of a voice codec, voice); comfort
// noise by its static payload types (13, 19). A dynamic payload type that the binding's rtpmap
// names CN or telephone-event is neither voice (CN/16000 on 105, as WebRTC offers, or events
// several to a packet): the binding is consulted only when a packet's payload type is not the
// stream's voice one or the packet is event-shaped, so rarely. Otherwise the per-packet path does
// not look at the media binding, so the result is the same whether the binding arrives before or
// after the first packets (the binding crosses a queue between shards): dynamic CN packets before a
// late binding count as voice until it comes, and then move (meet_binding), except for jitter
// already taken between them; the estimate under a clock outside the candidates (below) starts from
// a candidate's at a late binding. The clock rate of a dynamic payload type is the one thing that
// needs SDP: until it is known the estimator runs once per candidate clock (kCandidateClockRates)
// and the binding's rtpmap picks the candidate when the stream is read or finished; without a
// binding, the candidate under which the stream is smoothest (smallest maximum jitter) is taken. An
// rtpmap clock that is none of the candidates (SILK 24000, G.722.1 32000, L16 44100: any rate of
// kClockRates) gets an estimate of its own when the stream and its binding meet (bind_clock),
// seeded from the nearest candidate's.
#include "core/address.hpp"
#include "core/compact_text.hpp"
#include "core/media_binding.hpp"
#include "core/out_of_line.hpp"
#include "core/time.hpp"
#include "rtp/rtp_packet.hpp"
#include "rtp/sequence.hpp"
#include "rtp/stream_codec.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

namespace hepd::rtp {

struct StreamKey {
    Endpoint src;
    Endpoint dst;
    std::uint32_t ssrc = 0;

    friend bool operator==(const StreamKey&, const StreamKey&) = default;
};

std::uint64_t hash_stream_key(const StreamKey& key) noexcept;
struct StreamKeyHash {
    std::uint64_t operator()(const StreamKey& key) const noexcept { return hash_stream_key(key); }
};

inline constexpr std::uint32_t kNoRtt = 0xFFFF'FFFFU;
inline constexpr std::uint8_t kNoPayloadType = 0xFF;

// What the receiver of a stream reported about it (RTCP SR/RR report blocks and XR VoIP
// metrics, raw or as HEP RTCP-JSON), kept beside -- never mixed into -- what was measured.
struct ReceiverView {
    std::uint32_t jitter = 0;          // last reported interarrival jitter, RTP timestamp units
    std::uint32_t rtt_us = kNoRtt;     // last RTT from LSR/DLSR (RFC 3550 6.4.1)
    std::int32_t cumulative_lost = 0;  // last reported, signed
    std::uint16_t reports = 0;         // SR/RR report blocks about this stream (saturates)
    std::uint16_t xr_reports = 0;      // XR VoIP metrics blocks (saturates)
    std::uint16_t xr_round_trip_ms = 0;
    std::uint8_t fraction_lost = 0;  // last reported, /256
    // XR VoIP metrics (RFC 3611 4.7); 127 = unavailable as on the wire.
    std::uint8_t xr_loss_rate = 0;     // /256
    std::uint8_t xr_discard_rate = 0;  // /256
    std::uint8_t xr_r_factor = 127;
    std::uint8_t xr_mos_lq_x10 = 127;
    std::uint8_t xr_mos_cq_x10 = 127;

    friend bool operator==(const ReceiverView&, const ReceiverView&) = default;
};

struct JitterEstimate {
    float jitter_us = 0.0F;      // current J, scaled to microseconds
    float max_jitter_us = 0.0F;  // largest J so far

    friend bool operator==(const JitterEstimate&, const JitterEstimate&) = default;
};

// A packet that broke the stream's sequence or timing, held until the next packet tells whether
// the sender restarted (it follows the held one) or the held one was a stray (it does not).
// Its arrival is kept as an offset from the stream's last arrival: a packet after more than
// stream_idle_timeout starts a new stream anyway, so 32 bits of microseconds are plenty.
struct HeldPacket {
    std::uint32_t after_last_us = 0;
    std::uint32_t timestamp = 0;
    std::uint16_t sequence = 0;
    std::uint16_t payload_size = 0;
    std::uint8_t payload_type = 0;
    bool marker = false;
    bool valid = false;

    friend bool operator==(const HeldPacket&, const HeldPacket&) = default;
};

// Dynamic payload types that ran as voice, or were events by their size (4 octets), while the
// stream had no binding (live, RTP may come before the SDP that names them: the 200 OK's HEP later
// than the first RTP): the binding may yet call one comfort noise or events (a=rtpmap:105
// CN/16000), or a 4-octet packet's type CN or a voice codec, and its packets then move there
// (meet_binding). Noted at payload-type changes and event-shaped packets only (a run of CN
// begins with a change), never per voice packet. Two types (a voice one and a CN one): a type
// that runs as voice takes a free slot, else one that holds event-shaped packets only (they stay
// events: telephone-event, mostly); event-shaped packets take a free slot only. Any other type
// is not noted: its packets stay as counted (voice, or events by their size) whatever the
// binding names it, and its payload-type changes stay (StreamExtras::untracked_run and _shaped keep
// the last such type for meet_binding to tell). Once a type is noted, every payload-type change
// is (the stream's extras are allocated).
struct UnboundRuns {
    static constexpr std::size_t kTypes = 2;               // unbound_slot and meet_binding pair them
    static constexpr unsigned kBoth = (1U << kTypes) - 1;  // a mask of both types
    std::array<std::uint8_t, kTypes> payload_type{kNoPayloadType, kNoPayloadType};
    std::uint8_t ran = 0;  // bit i: payload_type[i] ran as voice (else it had event-shaped packets only)
    // The voice type before the current run, and the last voice type that is neither noted one:
    // the voice type again when the binding names the current one, or both, no voice.
    std::uint8_t previous = kNoPayloadType;
    std::uint8_t last_other = kNoPayloadType;
    // The payload-type changes the stream would have counted without the runs of payload_type[0],
    // of [1], of both (index: a bit per type, less one): a CN run between two packets of one voice
    // type takes its two changes with it, one across a codec change keeps one.
    std::array<std::uint16_t, kBoth> kept_changes{};
    std::array<std::uint16_t, kTypes> shaped{};  // its packets counted as events by their size (saturates)
    // Voice packets of its runs; while its run is open (it is the voice payload type), less the
    // stream's voice packets before that run.
    std::array<std::uint32_t, kTypes> packets{};

    // Whether `pt` is one of the types of `mask` (a bit per slot).
    bool noted(std::uint8_t pt, unsigned mask) const noexcept {
        for (std::size_t i = 0; i < kTypes; ++i)
            if ((mask >> i & 1U) != 0 && pt != kNoPayloadType && payload_type[i] == pt) return true;
        return false;
    }

    friend bool operator==(const UnboundRuns&, const UnboundRuns&) = default;
};

// The parts of a stream that most streams never use, out of line (40 bytes a stream less): the
// estimates under the other candidate clocks and the payload type that runs them (only a dynamic
// payload type does) and a held packet (only after a break). The receiver's view stays inline:
// most captures carry RTCP.
struct StreamExtras {
    std::array<JitterEstimate, kCandidateClockRates.size() - 1> candidates{};  // clocks 1.. of kCandidateClockRates
    HeldPacket held;                                     // not in snapshots: at most one packet, re-judged
    std::uint8_t dynamic_payload_type = kNoPayloadType;  // first voice payload type of unknown clock
    // UnboundRuns: the last type no slot was left for, of a run and of event-shaped packets (in
    // the hole after dynamic_payload_type).
    std::uint8_t untracked_run = kNoPayloadType;
    std::uint8_t untracked_shaped = kNoPayloadType;
    // Under the binding's rtpmap clock of dynamic_payload_type when that is no candidate
    // (bind_clock): its microseconds per timestamp unit are worked out then, not per packet.
    std::uint32_t bound_clock = 0;  // Hz; 0: none
    float bound_us_per_tick = 0.0F;
    JitterEstimate bound;
    UnboundRuns unbound;  // not in snapshots: only until the binding comes, a batch age

    friend bool operator==(const StreamExtras&, const StreamExtras&) = default;
};

struct Stream {
    enum Flags : std::uint8_t {
        kHasVoiceReference = 1,  // last_voice_* hold the previous voice packet
        kCandidateClocks = 2,    // a dynamic voice payload type seen: all candidate estimates run
    };

    Timestamp first;
    Timestamp last;           // latest arrival
    std::uint64_t bytes = 0;  // RTP payload octets (SR octet count semantics)
    SequenceTracker sequence;
    // The previous voice packet (kHasVoiceReference): its arrival, as an offset back from `last`,
    // and its RTP timestamp.
    std::uint32_t voice_before_last_us = 0;
    std::uint32_t last_voice_timestamp = 0;
    std::uint32_t max_gap_us = 0;  // largest gap between consecutive arrivals
    std::uint32_t packets = 0;
    std::uint32_t event_packets = 0;
    std::uint32_t comfort_noise_packets = 0;
    std::uint32_t markers = 0;
    std::uint32_t duplicates = 0;
    std::uint32_t out_of_order = 0;
    // Under the voice payload type's clock, or under kCandidateClockRates[0] while the clock is
    // unknown (the other candidates' estimates are in extras, estimate(i)).
    JitterEstimate jitter;
    std::uint16_t payload_type_changes = 0;
    std::uint8_t voice_payload_type = kNoPayloadType;  // current voice payload type
    std::uint8_t flags = 0;
    OutOfLine<StreamExtras> extras;
    // What its receiver reported, from the first report about it on: RTCP comes every few
    // seconds, RTP every 20 ms, and many streams have none, so the view is not in the record
    // that every packet reads and every stream pays for (8 bytes here, not 24).
    OutOfLine<ReceiverView> receiver;

    std::uint32_t voice_packets() const noexcept { return packets - event_packets - comfort_noise_packets; }
    std::int64_t last_voice_arrival_us() const noexcept { return last.us - voice_before_last_us; }
    // Makes a voice packet that arrived at `arrival_us`, at most `last`, the reference of the
    // next one. One that arrived more than 2^32 us (71 minutes) before `last` is not kept: no
    // jitter is computed across such a gap.
    void set_voice_reference(std::int64_t arrival_us) noexcept {
        const auto before_last = static_cast<std::uint64_t>(last.us - arrival_us);  // after `last`: huge
        if (before_last <= std::numeric_limits<std::uint32_t>::max()) {
            voice_before_last_us = static_cast<std::uint32_t>(before_last);
            flags |= kHasVoiceReference;
        } else {
            voice_before_last_us = 0;
            flags = static_cast<std::uint8_t>(flags & ~kHasVoiceReference);
        }
    }
    // First voice payload type of unknown clock (kCandidateClocks), or kNoPayloadType.
    std::uint8_t dynamic_payload_type() const noexcept { return extras.get().dynamic_payload_type; }
    // The estimate under kCandidateClockRates[i].
    const JitterEstimate& estimate(std::size_t i) const noexcept {
        return i == 0 ? jitter : extras.get().candidates[i - 1];
    }
    JitterEstimate& estimate_mut(std::size_t i) { return i == 0 ? jitter : extras.mut().candidates[i - 1]; }
    const HeldPacket& held() const noexcept { return extras.get().held; }

    friend bool operator==(const Stream&, const Stream&) = default;
};

// What a packet says of its stream's timing.
enum class Timing : std::uint8_t {
    in_line,  // a member of the stream: jitter (A.8) and the voice reference follow it
    stray,    // judged out of line (a held packet the next one did not confirm): counted, no timing
};

// Updates `stream` with one packet that arrived at `arrival`; returns the sequence verdict.
// Allocates the stream's extras at its first voice packet of a dynamic payload type. A packet
// A.1 ignores (a jump its successor did not confirm) and a stray count as packets and bytes but
// leave jitter and the voice reference alone: one packet with its numbers or timestamp far out
// of line is the sender's slip, not delay variation, and through max jitter it would set the
// stream's MOS for its whole life.
// `binding`, the stream's media binding or null, names what a dynamic payload type other than the
// voice one carries (comfort noise, events) and the clock of the first dynamic one (bind_clock).
struct Binding;
SeqVerdict observe_packet(Stream& stream, const RtpPacket& packet, Timestamp arrival, Timing timing = Timing::in_line,
                          const Binding* binding = nullptr);
// The stream meets its binding (its first dynamic voice packet, or a binding that arrives for a
// running stream, or a restore): when the binding's rtpmap gives the stream's dynamic payload
// type a clock of kClockRates that is no candidate, that clock gets its own estimate from now
// on, seeded from the candidate nearest to it. Nothing otherwise; never per packet.
void bind_clock(Stream& stream, const Binding& binding);
// A running stream joins `binding` (late: its first packets came before the SDP, live):
// packets of a dynamic payload type that ran as voice before it (UnboundRuns) and that the binding
// names comfort noise or telephone-event move to those counts, with the payload-type changes they
// made; the voice payload type and the one whose clock the jitter is taken under are the voice
// ones again, and the payload-type changes those the binding first would have counted (a codec
// change across such a run stays); packets counted as events by their size move to comfort noise
// or voice when the binding names their type so. Then bind_clock. Jitter already taken between
// such packets stays (the estimate is a running filter: no sample leaves it). Returns whether a dynamic type that
// UnboundRuns did not note stays counted otherwise than the binding names it (voice of CN or events, events of CN or
// voice): the last such of each kind.
bool meet_binding(Stream& stream, const Binding& binding);

// A voice packet whose RTP timestamp and arrival time disagree by more than this (under every
// clock the payload type may have) breaks the stream: sipp replaying the same sequence and
// timestamps for the next call on the same addresses, a media server switching sources. Real
// jitter stays far below it; a late packet is a few packet times late.
inline constexpr double kMaxTimestampJumpSeconds = 1.0;

// How one packet relates to a validated stream (RFC 3550 A.1 with the timestamp check above).
enum class Continuity : std::uint8_t {
    continues,  // measure it
    breaks,     // a large sequence jump or a timestamp discontinuity: hold it (hold_packet)
    restarted,  // follows the held packet: the sender restarted; a new stream begins with both
    stray,      // does not follow the held packet: measure the held one, then this one
};
// judge_timestamps false: a sequence jump only (the packet after a stray, whose timestamp was the
// one out of line: it is no reference to judge the next by).
Continuity classify(const Stream& stream, const RtpPacket& packet, Timestamp arrival,
                    bool judge_timestamps = true) noexcept;
void hold_packet(Stream& stream, const RtpPacket& packet, Timestamp arrival);  // allocates the extras
// The held packet as a packet again (its payload octets are zeros of the right length) with its
// arrival, and the stream without it.
struct TakenPacket {
    RtpPacket packet;
    Timestamp arrival;
};
TakenPacket take_held(Stream& stream) noexcept;

// An RFC 4733 event by shape: dynamic payload type and a 4-octet payload (an rtpmap that names the
// type otherwise decides: observe_packet).
inline bool is_event_shaped(const RtpPacket& packet) noexcept {
    return packet.payload_type >= 96 && packet.payload_type <= 127 && packet.payload.size() == 4;
}

// A media binding as a stream table keeps it: Call-ID text and the payload types of the SDP.
// The pair it binds (media address, peer) is the table's key, not repeated here. Members
// ordered to leave no hole, and each format's codec and clock share an octet: 40 bytes.
struct Binding {
    CompactText call_id;
    Timestamp time;                // of the SIP message; for a binding waiting for streams, its last activity
    std::uint32_t dialog = 0;      // which dialog of the Call-ID (MediaBinding::dialog)
    std::uint8_t caller_peer = 0;  // the dialog's peer groups (MediaBinding::caller_peer)
    std::uint8_t callee_peer = 0;
    std::uint8_t codec_count = 0;
    // The format the other end's answer chose among these (choose_from_answer), or kNoChoice.
    // Beside the next flag in one octet: the entry stays 40 bytes.
    std::uint8_t answer_choice : 4 = kNoChoice;
    // Of an address where the call's RTCP alone goes (MediaBinding::rtcp): no stream joins it,
    // reports from there become the call's reported streams.
    bool rtcp : 1 = false;
    std::array<std::uint8_t, kMaxBindingCodecs> payload_types{};
    static constexpr std::uint8_t kNoChoice = 0x0F;
    static_assert(kMaxBindingCodecs < kNoChoice);

    bool same_call(const Binding& o) const noexcept { return dialog == o.dialog && call_id == o.call_id; }
    Codec codec(std::size_t i) const noexcept { return static_cast<Codec>(codec_clocks_[i] & 0x0FU); }
    // clock_code() of the rtpmap rate (kUnlistedClock for a rate it has no code for).
    std::uint8_t clock(std::size_t i) const noexcept {
        const auto code = static_cast<std::uint8_t>(codec_clocks_[i] >> 4);
        return code == kPackedUnlisted ? kUnlistedClock : code;
    }
    std::uint32_t clock_rate(std::size_t i) const noexcept { return clock_rate_of(clock(i)); }
    void set_codec(std::size_t i, Codec codec, std::uint8_t clock) noexcept {
        const auto code = static_cast<unsigned>(clock == kUnlistedClock ? kPackedUnlisted : clock);
        codec_clocks_[i] = static_cast<std::uint8_t>((code << 4) | static_cast<unsigned>(codec));
    }
    // The formats of `from` (codec_count, payload types, codecs and clocks, the answer's choice).
    void copy_codecs(const Binding& from) noexcept {
        codec_count = from.codec_count;
        payload_types = from.payload_types;
        answer_choice = from.answer_choice;
        codec_clocks_ = from.codec_clocks_;
    }

    // Index of the voice format (neither events nor comfort noise) that RTP to this address
    // carries as far as SDP tells (RFC 3264: the answer's first format that the offer also
    // had), or -1: the answer's choice once known; else, when this list is itself an answer
    // (`answer`), its first voice format; else (an offer not answered yet) the offer's voice
    // format when it offers one codec only, -1 when the answer could still pick among several.
    int voice_format(bool answer) const noexcept;
    // This binding holds the other end's answer (MediaBinding::codecs_of_peer); `offer` is this
    // address's own binding of the call: takes the offer's formats and records which of them the
    // answer chose.
    void choose_from_answer(const Binding& offer) noexcept;

    // Index of the rtpmap entry for `payload_type`, or -1.
    int find(std::uint8_t payload_type) const noexcept {
        for (std::size_t i = 0; i < codec_count && i < kMaxBindingCodecs; ++i)
            if (payload_types[i] == payload_type) return static_cast<int>(i);
        return -1;
    }
    // What the rtpmap entry for `payload_type` names, or Codec::unknown without one.
    Codec codec_of(std::uint8_t payload_type) const noexcept {
        const int at = find(payload_type);
        return at >= 0 ? codec(static_cast<std::size_t>(at)) : Codec::unknown;
    }

    friend bool operator==(const Binding&, const Binding&) = default;

private:
    static constexpr std::uint8_t kPackedUnlisted = 0x0F;
    static_assert(static_cast<unsigned>(Codec::other) < 16 && kClockRates.size() < kPackedUnlisted,
                  "a codec and a clock code fit a nibble each");
    std::array<std::uint8_t, kMaxBindingCodecs> codec_clocks_{};  // codec | clock code << 4
};

Binding make_binding(const MediaBinding& binding);
// The peer of a binding as the table keys it: media_key() of the other end of the media line,
// port 0 when unknown.
Endpoint binding_peer(const MediaBinding& binding) noexcept;

struct QualityOptions {
    bool g711_plc = true;                   // G.113 row for G.711: with PLC (Bpl 25.1) or without
    double default_network_delay_ms = 0.0;  // one-way network delay when no RTT was reported
    double jitter_buffer_factor = 2.0;      // assumed jitter buffer: this times the max jitter
};

// StreamSummary::jitter_slot of the estimate under the binding's own clock (StreamExtras::bound).
inline constexpr int kBoundClockSlot = static_cast<int>(kCandidateClockRates.size());

// Derived figures of a stream, computed on demand (reports, finished streams).
struct StreamSummary {
    std::int64_t expected = 0;
    std::int64_t received = 0;
    std::int64_t lost = 0;            // expected - received, negative with duplicates
    std::uint64_t lost_clamped = 0;   // max(lost, 0)
    double loss_percent = 0.0;        // lost_clamped / expected
    std::uint32_t clock_rate = 0;     // of the voice payload type; 0 when unknown
    int jitter_slot = 0;              // which estimate was used (kBoundClockSlot: extras' bound)
    bool clock_from_binding = false;  // a dynamic clock resolved by the binding's rtpmap
    bool clock_unmatched = false;     // the binding named a clock the stream has no estimate under
    double jitter_ms = 0.0;           // last J
    double max_jitter_ms = 0.0;
    Codec codec = Codec::unknown;
    bool has_quality = false;  // a voice stream: r_factor/mos are valid
    double burst_ratio = 1.0;
    double one_way_delay_ms = 0.0;  // the E-model's Ta
    double r_factor = 0.0;
    double mos = 0.0;
};

StreamSummary summarize(const Stream& stream, const Binding* binding, const QualityOptions& options) noexcept;

}  // namespace hepd::rtp
