#pragma once
// A stream known only from its receiver's RTCP-JSON reports (rtpengine, Asterisk): no RTP is
// captured, so what the receiver said is all there is. When it finishes, its final figures feed
// the same per-stream histograms as a measured stream, under source="rtcp".
//
// Figures of a finished reported stream (summarize_reported):
//  - lost: the last cumulative number lost (RFC 3550 6.4.1), as the receiver counted it;
//  - loss: the mean of the reported fractions lost. Each report covers one reporting interval
//    and rtpengine reports at a steady rate, so the mean is the loss over the stream; the
//    packets expected are not reported, so the cumulative count cannot be turned into a ratio;
//  - jitter: the largest interarrival jitter reported, from RTP timestamp units into time at the
//    clock rate of the call's codec (8 kHz when none is known: every narrowband codec, and what
//    rtpengine assumes too). The codec is the format the answer chose among the reporter's
//    address's (RFC 3264: the answer's first that the offer also had, Binding::voice_format), not
//    the offer's first; with only the offer seen, its codec when it offers one, else none yet
//    (each report asks again, so an answer that comes later decides). A re-INVITE that changes
//    it on the same address changes it from the next report on (take_codec), as a measured
//    stream follows its payload type: the stream ends with, and is scored under, the codec it
//    ended with;
//  - RTT: the last round trip from LSR/DLSR;
//  - MOS: the E-model (emodel.hpp) of that loss (random, BurstR 1: bursts are not reported),
//    half the RTT plus the jitter buffer as the delay, and the codec's impairment.
#include "core/address.hpp"
#include "core/compact_text.hpp"
#include "core/time.hpp"
#include "rtp/stream_codec.hpp"
#include "rtp/stream_record.hpp"

#include <cstdint>
#include <string>

namespace hepd::rtp {

// The Call-ID as a CompactText (16 bytes, not 32): the table refuses longer correlation ids.
// A reported stream is one reporter's view: the table tells two by ReportedStream::reporter
// too (the two ends of a call may send with one SSRC, as sipp does).
struct ReportedKey {
    CompactText call_id;
    std::uint32_t ssrc = 0;  // the stream the reports describe (report block source SSRC)

    friend bool operator==(const ReportedKey&, const ReportedKey&) = default;
};

// A receiver's view of a stream as an RTCP-JSON sender reported it, and what the SDP of the
// reporter's own address said about the call (dialog, codec).
struct ReportedStream {
    Endpoint reporter;  // media_key() of the reporter: the shard that owns it keeps this record
    std::uint32_t reporter_ssrc = 0;
    Timestamp first;
    Timestamp last;
    ReceiverView view;
    std::uint32_t max_jitter = 0;         // largest reported jitter, RTP timestamp units
    std::uint32_t fraction_lost_sum = 0;  // sum of the reported fractions lost (/256)
    // From the binding of the reporter's address of the same Call-ID, when there was one.
    std::uint32_t dialog = 0;      // MediaBinding::dialog (hash of the From-tag); 0: unknown
    std::uint32_t clock_rate = 0;  // of the codec; 0: unknown
    Codec codec = Codec::unknown;
    std::uint8_t caller_peer = 0;  // the dialog's peer groups (MediaBinding::caller_peer); 0: other
    std::uint8_t callee_peer = 0;  // not in snapshots: restored reports count as other/other

    friend bool operator==(const ReportedStream&, const ReportedStream&) = default;
};

inline constexpr std::uint32_t kAssumedReportedClockRate = 8000;

struct ReportedSummary {
    std::uint32_t reports = 0;
    std::int64_t lost = 0;           // last cumulative number lost, signed as reported
    std::uint64_t lost_clamped = 0;  // max(lost, 0)
    double fraction_lost = 0.0;      // of the last report, 0..1
    double loss_percent = 0.0;       // mean reported fraction lost, in percent
    std::uint32_t clock_rate = 0;    // used for the jitter (kAssumedReportedClockRate if unknown)
    double jitter_ms = 0.0;          // last reported
    double max_jitter_ms = 0.0;      // largest reported
    bool has_rtt = false;
    double rtt_ms = 0.0;
    Codec codec = Codec::unknown;
    bool has_quality = false;  // at least one report block: r_factor and mos are valid
    double one_way_delay_ms = 0.0;
    double r_factor = 0.0;
    double mos = 0.0;
};

ReportedSummary summarize_reported(const ReportedStream& stream, const QualityOptions& options) noexcept;

// The stream's codec is now `codec` at `clock_rate` (0: unknown). The largest jitter so far,
// reported in the previous codec's timestamp units, moves to the new clock's, so that it keeps
// its value in time; from an unknown clock it is kept as it is (the receiver counted in the
// clock in use all along, which was only not known here).
void take_codec(ReportedStream& stream, Codec codec, std::uint32_t clock_rate) noexcept;

}  // namespace hepd::rtp
