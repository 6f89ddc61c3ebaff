#pragma once
// Capture times as senders really write them: NTP epoch, byte-swapped, zero, microseconds past
// 1e6. normalise_timestamp() fixes what it can and falls back to the receive time otherwise; the
// fix-up kind is counted (hepd_hep_timestamp_fixups_total{kind}).
#include "core/time.hpp"
#include "hep/message.hpp"

#include <cstdint>
#include <string_view>

namespace hepd::hep {

enum class TimestampFixup : std::uint8_t {
    none,             // taken as sent
    missing,          // no time in the message (HEPv1, v3 without chunk 0x09): receive time
    zero,             // seconds == 0 (sofia-sip): receive time
    ntp_epoch,        // seconds since 1900 (FreeSWITCH on Windows): 2208988800 subtracted
    byte_swapped,     // seconds (and microseconds) in the wrong byte order (rtpengine 13.4)
    micros_overflow,  // microseconds >= 1e6 carried into the seconds
    out_of_range,     // nothing plausible: receive time
};

inline constexpr std::size_t timestamp_fixup_count = 7;

// The fix-ups that replace the capture time by the receive time: what comes out is on the
// receive clock, not the sender's (the live sender clocks leave such times alone).
constexpr bool is_receive_time(TimestampFixup f) noexcept {
    return f == TimestampFixup::missing || f == TimestampFixup::zero || f == TimestampFixup::out_of_range;
}

std::string_view to_string(TimestampFixup f) noexcept;

struct NormalisedTime {
    Timestamp time;
    TimestampFixup fixup = TimestampFixup::none;
};

// Seconds between the NTP (1900) and Unix (1970) epochs.
inline constexpr std::int64_t ntp_unix_offset = 2'208'988'800;
// The plausible window around the receive time: [now - 10 years, now + 24 hours].
inline constexpr std::int64_t max_past_us = 10LL * 31'557'600 * 1'000'000;  // 10 Julian years
inline constexpr std::int64_t max_future_us = 86'400LL * 1'000'000;

// Only one kind is reported: a seconds fix (ntp_epoch, byte_swapped) wins over micros_overflow.
NormalisedTime normalise_timestamp(std::uint32_t seconds, std::uint32_t micros, Timestamp now) noexcept;
NormalisedTime normalise_timestamp(const Message& message, Timestamp now) noexcept;

}  // namespace hepd::hep
