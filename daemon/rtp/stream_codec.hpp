#pragma once
// What a stream carries: codecs known to the quality model, the RFC 3551 static payload types,
// encoding names from SDP rtpmap lines, and the closed set of codec labels metrics may use.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace hepd::rtp {

// Codecs the E-model has parameters for, plus the non-voice payloads a stream can carry.
enum class Codec : std::uint8_t {
    unknown,  // dynamic payload type with no rtpmap seen (yet)
    pcmu,
    pcma,
    g722,
    g729,
    g723,
    gsm,
    ilbc,
    opus,
    telephone_event,  // RFC 4733
    comfort_noise,    // RFC 3389
    other,            // named or static, but not one of the above (L16, H.264, ...)
};

std::string_view to_string(Codec codec) noexcept;

// Metric label for a codec: a small closed set, never the raw rtpmap name.
enum class CodecLabel : std::uint8_t { pcmu, pcma, g722, g729, opus, telephone_event, other };
inline constexpr std::size_t kCodecLabelCount = 7;

std::string_view to_string(CodecLabel label) noexcept;
CodecLabel label_of(Codec codec) noexcept;

// Encoding name of an a=rtpmap line ("PCMA", "G729", "opus", "telephone-event"), compared
// case-insensitively as RFC 4855 requires. Unrecognised names are Codec::other.
Codec codec_from_name(std::string_view encoding_name) noexcept;

struct StaticPayload {
    Codec codec = Codec::unknown;
    std::uint32_t clock_rate = 0;  // 0: not a static assignment (dynamic or unassigned)
};

// RFC 3551 tables 4 and 5. G.722 (PT 9) is 8000 here on purpose: RFC 3551 section 4.5.2 keeps
// its RTP clock at 8000 Hz although it samples at 16000 Hz.
StaticPayload static_payload(std::uint8_t payload_type) noexcept;

// Clock rates a stream's jitter is estimated under while a dynamic payload type's rtpmap is not
// known: narrowband (and RFC 4733 events), wideband, Opus (always 48000, RFC 7587) and video.
inline constexpr std::array<std::uint32_t, 4> kCandidateClockRates{8000, 16000, 48000, 90000};

// Index of `rate` in kCandidateClockRates, or -1.
int candidate_clock_index(std::uint32_t rate) noexcept;

// RTP clock rates as one octet (what a binding stores per payload type): the rates of RFC 3551
// and of the common dynamic codecs. Code 0 is "not given"; others are kUnlistedClock.
inline constexpr std::array<std::uint32_t, 12> kClockRates{0,     8000,  11025, 12000, 16000, 22050,
                                                           24000, 32000, 44100, 48000, 90000, 96000};
inline constexpr std::uint8_t kUnlistedClock = 0xFF;
std::uint8_t clock_code(std::uint32_t rate) noexcept;
std::uint32_t clock_rate_of(std::uint8_t code) noexcept;  // 0 for kUnlistedClock

}  // namespace hepd::rtp
