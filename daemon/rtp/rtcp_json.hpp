#pragma once
// HEP payload type 5: an RTCP report rendered as JSON by the media server that sent or received
// it. A bounded, allocation-free scanner for what the two real senders emit:
//
// rtpengine (daemon/rtcp.c, homer_* handlers), keys in this order, numbers printed with %u:
//   { "sender_information":{"ntp_timestamp_sec":N,"ntp_timestamp_usec":N,"octets":N,
//     "rtp_timestamp":N, "packets":N},            <- SR only; "usec" is the raw NTP fraction
//     "ssrc":N,"type":200|201,"report_count":N,
//     "report_blocks":[{"source_ssrc":N,"highest_seq_no":N,"fraction_lost":N,"ia_jitter":N,
//                       "packets_lost":N,"lsr":N,"dlsr":N},...],
//     "sdes_report_count":N,"sdes_information": [ {...} ] }
//   A compound packet with several SR/RR repeats the keys; report blocks accumulate and the first
//   "ssrc" (the compound's first reporter) wins.
// Asterisk (main/rtp_engine.c rtcp_report_to_json, sent by res_hep_rtcp), compact jansson output:
//   {"ssrc":N,"type":200,"report_count":N,
//    "sender_information":{"ntp_timestamp_sec":"S","ntp_timestamp_usec":"U","rtp_timestamp":N,
//                          "packets":N,"octets":N} | null,
//    "report_blocks":[{"source_ssrc":N,"fraction_lost":N,"packets_lost":N,"highest_seq_no":N,
//                      "ia_jitter":N,"lsr":"N","dlsr":N}]}
//   The NTP times and "lsr" are strings of digits; SSRCs are packed as C int, so values of 2^31
//   and above arrive negative.
//
// Both print "packets_lost" as the raw unsigned 24-bit field: values 2^23..2^24-1 are negative
// counts (duplicates) and are sign-extended. Negative 32-bit values of other fields are taken
// modulo 2^32. Unknown keys and values of any type are skipped. Values are the wire's: jitter
// in RTP timestamp units, LSR/DLSR in NTP compact (16.16) format.
#include "core/result.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace hepd::rtp {

enum class RtcpJsonError : std::uint8_t {
    empty,       // nothing but whitespace
    too_long,    // over kMaxRtcpJsonSize octets
    not_object,  // the top-level value is not an object
    syntax,      // malformed JSON (also trailing garbage)
    truncated,   // the input ends inside a value
    too_deep,    // nesting deeper than kMaxRtcpJsonDepth
    bad_number,  // a known field holds no integer, or one out of its range
    not_rtcp,    // an object with neither "ssrc" nor "report_blocks"
};
inline constexpr std::size_t kRtcpJsonErrorCount = 8;

std::string_view to_string(RtcpJsonError error) noexcept;

inline constexpr std::size_t kMaxRtcpJsonSize = 65535;  // a HEP message cannot carry more
inline constexpr int kMaxRtcpJsonDepth = 16;
inline constexpr std::size_t kMaxRtcpJsonBlocks = 31;  // RC is 5 bits

struct RtcpJsonBlock {
    std::uint32_t source_ssrc = 0;
    std::uint8_t fraction_lost = 0;    // /256
    std::int32_t packets_lost = 0;     // cumulative, signed 24-bit
    std::uint32_t highest_seq_no = 0;  // extended highest sequence number
    std::uint32_t ia_jitter = 0;       // RTP timestamp units
    std::uint32_t lsr = 0;
    std::uint32_t dlsr = 0;

    friend bool operator==(const RtcpJsonBlock&, const RtcpJsonBlock&) = default;
};

struct RtcpJsonSenderInfo {
    std::uint32_t ntp_timestamp_sec = 0;
    std::uint32_t ntp_timestamp_usec = 0;  // Asterisk: microseconds; rtpengine: NTP fraction
    std::uint32_t rtp_timestamp = 0;
    std::uint32_t packets = 0;
    std::uint32_t octets = 0;

    friend bool operator==(const RtcpJsonSenderInfo&, const RtcpJsonSenderInfo&) = default;
};

// The report but its block array, split out so that parse_rtcp_json_into can reset a reused
// report without rewriting 31 stale blocks on every packet.
struct RtcpJsonReportFields {
    bool has_ssrc = false;
    bool has_type = false;
    bool has_report_count = false;
    bool has_sender_info = false;
    std::uint32_t ssrc = 0;  // the reporter
    std::uint8_t type = 0;   // RTCP packet type: 200 SR, 201 RR
    std::uint8_t report_count = 0;
    RtcpJsonSenderInfo sender_info;
    std::uint8_t block_count = 0;
    std::uint16_t blocks_dropped = 0;  // beyond kMaxRtcpJsonBlocks, or without "source_ssrc"

    friend bool operator==(const RtcpJsonReportFields&, const RtcpJsonReportFields&) = default;
};

struct RtcpJsonReport : RtcpJsonReportFields {
    // Only [0, block_count) is meaningful; after parse_rtcp_json_into, later slots may hold a
    // previous report's blocks.
    std::array<RtcpJsonBlock, kMaxRtcpJsonBlocks> blocks{};
};

// Pure: no allocation, no exceptions, never reads outside `text`. Trailing whitespace and NUL
// octets (C senders sometimes count the terminator) are accepted.
Result<RtcpJsonReport, RtcpJsonError> parse_rtcp_json(std::string_view text) noexcept;
// The same into a caller-owned report, reused across packets on the hot path; nullopt on
// success. On an error `out` holds whatever had been read.
std::optional<RtcpJsonError> parse_rtcp_json_into(std::string_view text, RtcpJsonReport& out) noexcept;

}  // namespace hepd::rtp
