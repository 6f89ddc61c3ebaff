#include "hep/timestamp.hpp"

namespace hepd::hep {

std::string_view to_string(TimestampFixup f) noexcept {
    switch (f) {
    case TimestampFixup::none: return "none";
    case TimestampFixup::missing: return "missing";
    case TimestampFixup::zero: return "zero";
    case TimestampFixup::ntp_epoch: return "ntp_epoch";
    case TimestampFixup::byte_swapped: return "byte_swapped";
    case TimestampFixup::micros_overflow: return "micros_overflow";
    case TimestampFixup::out_of_range: return "out_of_range";
    }
    return "unknown";
}

namespace {

constexpr std::uint32_t one_second_us = 1'000'000;

constexpr std::uint32_t byte_swap(std::uint32_t v) noexcept {
    return (v >> 24) | ((v >> 8) & 0x0000ff00u) | ((v << 8) & 0x00ff0000u) | (v << 24);
}

struct Window {
    std::int64_t low_s;  // inclusive, whole seconds
    std::int64_t high_s;
    bool contains(std::int64_t seconds) const noexcept { return seconds >= low_s && seconds <= high_s; }
};

}  // namespace

NormalisedTime normalise_timestamp(std::uint32_t seconds, std::uint32_t micros, Timestamp now) noexcept {
    if (seconds == 0) return {now, TimestampFixup::zero};
    // What nearly every sender sends: a sound time inside the window, taken without the two
    // divisions below (each packet pays for them otherwise). The general path gives the same.
    if (micros < one_second_us) {
        const Timestamp sound = Timestamp::from_parts(seconds, micros);
        if (sound.us >= now.us - max_past_us && sound.us <= now.us + max_future_us)
            return {sound, TimestampFixup::none};
    }

    // Compare whole seconds: the fraction is fixed separately and may itself be broken.
    const Window window{(now.us - max_past_us) / one_second_us, (now.us + max_future_us) / one_second_us};

    std::int64_t s = seconds;
    std::uint32_t us = micros;
    TimestampFixup fixup = TimestampFixup::none;
    if (!window.contains(s)) {
        if (s >= ntp_unix_offset && window.contains(s - ntp_unix_offset)) {
            s -= ntp_unix_offset;
            fixup = TimestampFixup::ntp_epoch;
        } else if (window.contains(byte_swap(seconds))) {
            s = byte_swap(seconds);
            // A sender that swapped the seconds swapped the microseconds too; keep them if
            // swapping them back makes no sense.
            if (byte_swap(micros) < one_second_us) us = byte_swap(micros);
            fixup = TimestampFixup::byte_swapped;
        } else {
            return {now, TimestampFixup::out_of_range};
        }
    }
    if (us >= one_second_us) {
        // Microseconds counted past the second without a carry: carrying keeps the order of
        // messages from one sender.
        s += us / one_second_us;
        us %= one_second_us;
        if (fixup == TimestampFixup::none) fixup = TimestampFixup::micros_overflow;
    }
    // The choice above looked at whole seconds only; the window itself is exact.
    const Timestamp fixed = Timestamp::from_parts(s, us);
    if (fixed.us < now.us - max_past_us || fixed.us > now.us + max_future_us)
        return {now, TimestampFixup::out_of_range};
    return {fixed, fixup};
}

NormalisedTime normalise_timestamp(const Message& message, Timestamp now) noexcept {
    if (!message.has_time()) return {now, TimestampFixup::missing};
    return normalise_timestamp(message.seconds, message.micros, now);
}

}  // namespace hepd::hep
