#pragma once
// NTP timestamp arithmetic used by RTCP (RFC 3550 sections 4 and 6.4.1): the 64-bit format of
// SR sender info and XR RRT blocks, the "compact" middle 32 bits (16.16 fixed point seconds) of
// LSR/DLSR/LRR/DLRR, and the round-trip time a report block yields.
#include <cstdint>
#include <optional>

namespace hepd::rtp {

// Seconds from 1900-01-01 (NTP era 0) to 1970-01-01.
inline constexpr std::int64_t ntp_unix_offset_seconds = 2'208'988'800;

// The middle 32 bits of a 64-bit NTP timestamp: what a receiver echoes as LSR.
constexpr std::uint32_t ntp_middle32(std::uint64_t ntp) noexcept { return static_cast<std::uint32_t>(ntp >> 16); }

// Cumulative packets lost is a 24-bit two's complement field: duplicates can make it negative.
constexpr std::int32_t sign_extend_24(std::uint32_t value) noexcept {
    const auto low = static_cast<std::int32_t>(value & 0x00FF'FFFFu);
    return (low & 0x0080'0000) != 0 ? low - 0x0100'0000 : low;
}

// Unix time in microseconds to 64-bit NTP. The seconds wrap modulo 2^32 like the wire format
// (era 1 starts in 2036), which the compact 32-bit form used for RTT does not mind.
constexpr std::uint64_t ntp_from_unix_micros(std::int64_t unix_us) noexcept {
    std::int64_t seconds = unix_us / 1'000'000;
    std::int64_t micros = unix_us % 1'000'000;
    if (micros < 0) {  // floor division for times before 1970
        micros += 1'000'000;
        seconds -= 1;
    }
    const auto ntp_seconds = static_cast<std::uint64_t>(seconds + ntp_unix_offset_seconds) & 0xFFFF'FFFFu;
    const std::uint64_t fraction = (static_cast<std::uint64_t>(micros) << 32) / 1'000'000;
    return (ntp_seconds << 32) | fraction;
}

// 64-bit NTP (era 0) to Unix microseconds, fraction rounded to the nearest microsecond.
constexpr std::int64_t unix_micros_from_ntp(std::uint64_t ntp) noexcept {
    const auto seconds = static_cast<std::int64_t>(ntp >> 32) - ntp_unix_offset_seconds;
    const std::uint64_t fraction = ntp & 0xFFFF'FFFFu;
    const auto micros = static_cast<std::int64_t>((fraction * 1'000'000 + 0x8000'0000u) >> 32);
    return seconds * 1'000'000 + micros;
}

// A compact (16.16) duration such as DLSR in microseconds, rounded to the nearest.
constexpr std::int64_t compact_ntp_to_micros(std::uint32_t compact) noexcept {
    return static_cast<std::int64_t>((std::uint64_t{compact} * 1'000'000 + 0x8000) >> 16);
}

// Round-trip time per RFC 3550 6.4.1: arrival (compact NTP of the moment the report arrived)
// minus LSR minus DLSR, modulo 2^32. Empty when LSR is 0 (the reporter has not yet seen an SR)
// or when the result is negative (clocks or the report are wrong). The same formula gives the
// RTT of an XR DLRR sub-block (RFC 3611 4.5) with LRR and DLRR in place of LSR and DLSR.
constexpr std::optional<std::int64_t> round_trip_micros(std::uint32_t arrival_compact, std::uint32_t lsr,
                                                        std::uint32_t dlsr) noexcept {
    if (lsr == 0) return std::nullopt;
    const std::uint32_t rtt = arrival_compact - lsr - dlsr;
    if ((rtt & 0x8000'0000u) != 0) return std::nullopt;
    return compact_ntp_to_micros(rtt);
}

}  // namespace hepd::rtp
