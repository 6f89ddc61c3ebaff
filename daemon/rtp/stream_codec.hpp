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

namespace detail {

// RFC 3551's table, a line per payload type, even where two lines say the same.
constexpr StaticPayload rfc3551_payload(std::uint8_t pt) noexcept {
    switch (pt) {
    case 0: return {Codec::pcmu, 8000};
    case 3: return {Codec::gsm, 8000};
    case 4: return {Codec::g723, 8000};
    case 5: return {Codec::other, 8000};   // DVI4
    case 6: return {Codec::other, 16000};  // DVI4
    case 7: return {Codec::other, 8000};   // LPC
    case 8: return {Codec::pcma, 8000};
    case 9: return {Codec::g722, 8000};
    case 10: return {Codec::other, 44100};  // L16 stereo NOLINT(bugprone-branch-clone)
    case 11: return {Codec::other, 44100};  // L16 mono
    case 12: return {Codec::other, 8000};   // QCELP
    case 13: return {Codec::comfort_noise, 8000};
    case 14: return {Codec::other, 90000};  // MPA
    case 15: return {Codec::other, 8000};   // G728
    case 16: return {Codec::other, 11025};  // DVI4
    case 17: return {Codec::other, 22050};  // DVI4
    case 18: return {Codec::g729, 8000};
    case 19: return {Codec::comfort_noise, 8000};  // reserved; CN in RFC 1890, still sent
    case 25:
    case 26:
    case 28:
    case 31:
    case 32:
    case 33:
    case 34: return {Codec::other, 90000};  // CelB, JPEG, nv, H261, MPV, MP2T, H263
    default: return {};
    }
}

inline constexpr std::array<StaticPayload, 256> kStaticPayloads = [] {
    std::array<StaticPayload, 256> table{};
    for (std::size_t pt = 0; pt < table.size(); ++pt) table[pt] = rfc3551_payload(static_cast<std::uint8_t>(pt));
    return table;
}();

}  // namespace detail

// RFC 3551 tables 4 and 5. G.722 (PT 9) is 8000 here on purpose: RFC 3551 section 4.5.2 keeps
// its RTP clock at 8000 Hz although it samples at 16000 Hz. A table load: every RTP packet asks,
// several times.
inline StaticPayload static_payload(std::uint8_t payload_type) noexcept {
    return detail::kStaticPayloads[payload_type];
}

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
