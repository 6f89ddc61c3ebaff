#pragma once
// Scripted SIP calls with voice media and exactly known answers: the corpus behind the capacity
// benchmark and the ground-truth tests. Every call is INVITE -> 100 -> 180 -> 200 -> ACK ->
// bidirectional PCMA (or Opus, `codec`) at 20 ms -> BYE -> 200 (or fails with 486, or is cancelled), with chosen
// impairments applied to the media, and the generator reports what a correct collector must
// find.
//
// Real estates re-use media addresses, and the generator can too (issue 8):
//  - stream_pairs > 0: calls share K media address pairs round robin. A pair is taken again only
//    once the previous call on it has ended (its last packet) plus reuse_gap_us; call starts move
//    later as needed. media_reuse says what the senders on a re-used pair do: restart (sipp
//    pcap_play: the same SSRC, sequence number and RTP timestamp base on every call) or
//    continue (an SBC: the same SSRC, sequence numbers and timestamps carrying on from where the
//    previous call on the pair stopped, timestamps advancing with wall time).
//  - call_ids > 0: K Call-IDs round robin, a Call-ID taken again only after the previous call with
//    it ended plus reuse_gap_us. Each call has its own From-tag, so a collector that keys dialogs
//    by Call-ID + From-tag (daemon/sip does; a finished dialog lingers dialog_linger = 32 s there)
//    sees a new dialog even while the previous one with the same Call-ID still lingers.
//  - scenarios on chosen completed calls: a re-INVITE moving the caller's media to a new port,
//    early media (183 with SDP from an announcement address, then 200 with the callee's), an SSRC
//    change half way through the caller's stream, and a capture that starts mid-call.
//  - RTCP from the receiver of every stream (SR when it also sends, else RR), optionally with an
//    XR VoIP metrics block, as raw packets and/or as HEP RTCP-JSON the way rtpengine mirrors it.
//
// Stream truth is computed from the packets as they go on the wire, grouped the way a correct
// collector must group them: a new call's SDP binding a pair that still carries a stream ends it
// (rebound); without signalling, a restart of sequence numbers/timestamps ends it (restarted); an
// address idle for stream_idle_timeout_us ends it (idle); what is left at the end is flushed.
#include "core/address.hpp"
#include "core/bytes.hpp"
#include "core/time.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace hepd::gen {

// The calls' voice codec: PCMA (static payload type 8, 8 kHz) or Opus (dynamic payload type 111,
// 48 kHz), which only the SDP's rtpmap names: a collector that loses a call's SDP on the way to
// its streams measures them at the wrong clock.
enum class VoiceCodec : std::uint8_t { pcma, opus };

enum class MediaReuse : std::uint8_t {
    restart,    // sipp pcap_play: every call on a pair starts from the same SSRC/sequence/timestamp
    continue_,  // SBC: same SSRC, sequence and timestamp carry on from the previous call on the pair
};

// Which completed calls a scenario applies to: every Nth (calls N-1, 2N-1, ...) and/or a random
// share (drawn per call from a generator of its own, so enabling a scenario does not change the
// rest of the corpus).
struct Share {
    double percent = 0;
    std::uint32_t every = 0;
};

struct CorpusOptions {
    std::uint32_t calls = 5000;
    std::uint32_t call_ids = 0;            // distinct Call-IDs, re-used round robin (0 = one per call)
    std::uint32_t stream_pairs = 0;        // distinct media address pairs (0 = one per call)
    double media_seconds = 1.0;            // per direction, one packet every 20 ms
    double loss_percent = 0;               // media packets dropped
    double duplicate_percent = 0;          // media packets sent twice
    double reorder_percent = 0;            // media packets swapped with the next one
    double jitter_ms = 0;                  // uniform extra delay in [0, jitter_ms) per media packet
    double failed_percent = 0;             // calls rejected with 486 (Reason Q.850 cause 17)
    double cancelled_percent = 0;          // calls cancelled while ringing
    std::int64_t call_interval_us = 2000;  // between call starts (at least; re-use may delay them)
    std::uint64_t seed = 1;
    Timestamp start = Timestamp::from_parts(1'700'000'000, 0);

    // Re-use of pairs and Call-IDs: the next user starts this long after the previous call ended.
    std::int64_t reuse_gap_us = 100'000;
    MediaReuse media_reuse = MediaReuse::restart;
    VoiceCodec codec = VoiceCodec::pcma;
    bool sip = true;  // false: media (and RTCP) only, as a media-only capture sees it

    Share reinvite;     // mid-call re-INVITE/200/ACK moving the caller's media to a new port
    Share early_media;  // 183 + SDP (announcement address X1, RTP X1 -> caller), then 200 + SDP
    Share ssrc_change;  // the caller switches SSRC half way (new random sequence/timestamp base)
    // Drop every packet before start + capture_from_us (0: capture from the beginning). Calls
    // whose INVITE is dropped are invisible: no dialog, and their streams have no Call-ID.
    std::int64_t capture_from_us = 0;

    bool rtcp = false;                          // raw RTCP SR/RR (+ SDES) from each stream's receiver, port + 1
    bool rtcp_xr = false;                       // with rtcp: an XR VoIP metrics block in each compound
    bool rtcp_json = false;                     // the same reports as HEP type 5 RTCP-JSON, correlation id = Call-ID
    std::int64_t rtcp_interval_us = 1'000'000;  // 5 s is standard; the calls are short

    // The collector's stream idle timeout (timers.stream_idle_timeout): the truth's expected
    // finish reasons depend on it.
    std::int64_t stream_idle_timeout_us = 30'000'000;
};

enum class CallOutcome : std::uint8_t { completed, failed, cancelled };

struct CallTruth {
    std::string call_id;
    std::string from_tag;
    std::uint32_t index = 0;  // generator's call number
    CallOutcome outcome = CallOutcome::completed;
    std::uint16_t final_code = 200;
    std::int64_t pdd_us = 0;       // INVITE -> 180 (or 183)
    std::int64_t setup_us = 0;     // INVITE -> 200 (completed calls)
    std::int64_t duration_us = 0;  // 200 -> BYE (completed calls)
    std::uint16_t reinvites = 0;   // re-INVITE transactions
    bool early_media = false;      // 183 with SDP and early RTP before the answer
};

// How a stream must end, where the shape of the traffic decides it. `unknown` where it does not:
// streams a call itself abandoned (media moved by a re-INVITE, early media replaced by the answer,
// the old SSRC after an SSRC change): the issue names no reason for those.
enum class ExpectedFinish : std::uint8_t {
    unknown,
    rebound,    // another call's SDP bound its (destination, peer) pair while it was running
    restarted,  // without signalling, the sender restarted sequence numbers/timestamps
    idle,       // nothing for stream_idle_timeout_us (and no rebinding before that)
    flushed,    // still running at the end of the capture
};
std::string_view to_string(ExpectedFinish finish) noexcept;

inline constexpr std::uint32_t kNoRtt = 0xFFFF'FFFFU;

// The last RTCP receiver report about a stream (what a collector keeps as its receiver view).
struct ReceiverTruth {
    std::uint32_t reports = 0;         // report blocks about the stream: raw SR/RR + RTCP-JSON
    std::uint32_t xr_reports = 0;      // XR VoIP metrics blocks
    std::uint8_t fraction_lost = 0;    // last report, /256 (RFC 3550 A.3, since the previous one)
    std::int32_t cumulative_lost = 0;  // last report
    std::uint32_t highest_seq = 0;     // last report, extended
    std::uint32_t jitter = 0;          // last report, RTP timestamp units
    std::uint32_t rtt_us = kNoRtt;     // from the last report with an LSR (RFC 3550 6.4.1)
    std::uint8_t xr_loss_rate = 0;     // last XR block
    std::uint8_t xr_discard_rate = 0;
    std::uint8_t xr_r_factor = 127;
    std::uint8_t xr_mos_lq_x10 = 127;
    std::uint8_t xr_mos_cq_x10 = 127;
    std::uint16_t xr_round_trip_ms = 0;
};

struct StreamTruth {
    std::string call_id;           // empty when the collector cannot know it (no SDP seen)
    std::uint32_t call_index = 0;  // generator's call number (the first one when calls > 1)
    std::uint32_t calls = 1;       // calls whose media it carries (> 1: SBC continue, no SIP)
    Endpoint src;
    Endpoint dst;
    std::uint32_t ssrc = 0;
    Timestamp first;  // first and last packet on the wire (arrival)
    Timestamp last;
    std::uint64_t sent = 0;      // packets the sender produced between first and last
    std::uint64_t received = 0;  // packets on the wire (after loss, with duplicates)
    std::uint64_t lost = 0;      // observable loss: missing packets between first and last
    std::uint64_t duplicates = 0;
    double jitter_ms = 0;  // RFC 3550 A.8 over the arrival order
    ExpectedFinish finish = ExpectedFinish::unknown;
    bool has_receiver = false;  // RTCP reports about it were captured
    ReceiverTruth receiver;
};

struct Truth {
    std::vector<CallTruth> calls;  // the dialogs a collector must find (visible calls only)
    std::vector<StreamTruth> streams;
    std::uint64_t hidden_calls = 0;  // calls whose INVITE was not captured (or no SIP at all)
    std::uint64_t sip_packets = 0;
    std::uint64_t rtp_packets = 0;
    std::uint64_t rtcp_packets = 0;       // raw RTCP compounds
    std::uint64_t rtcp_json_packets = 0;  // RTCP-JSON reports
    Timestamp first{};
    Timestamp last{};
};

enum class PacketKind : std::uint8_t { sip, rtp, rtcp, rtcp_json };

// What a packet is beyond its UDP addresses. RTCP-JSON is not a UDP payload of its own: it
// travels in HEP (type 5) with the Call-ID as correlation id; src/dst are then the addresses of
// the RTCP packet it renders (the reporter's RTCP port -> the peer's), as rtpengine sends them.
struct PacketInfo {
    PacketKind kind = PacketKind::sip;
    std::string_view correlation_id;  // RTCP-JSON: the Call-ID; empty otherwise
};

using PacketSink = std::function<void(Timestamp, const Endpoint& src, const Endpoint& dst, ByteSpan payload)>;
using TaggedPacketSink =
    std::function<void(Timestamp, const Endpoint& src, const Endpoint& dst, ByteSpan payload, const PacketInfo& info)>;

// Emits every packet in capture-time order and returns the ground truth.
Truth generate(const CorpusOptions& options, const TaggedPacketSink& sink);
// Plain UDP payloads only (SIP, RTP, raw RTCP): throws std::invalid_argument with rtcp_json,
// which needs the packet kind and correlation id.
Truth generate(const CorpusOptions& options, const PacketSink& sink);

}  // namespace hepd::gen
