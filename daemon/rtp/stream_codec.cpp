#include "rtp/stream_codec.hpp"

#include "core/ascii.hpp"

namespace hepd::rtp {

std::string_view to_string(Codec codec) noexcept {
    switch (codec) {
    case Codec::unknown: return "unknown";
    case Codec::pcmu: return "pcmu";
    case Codec::pcma: return "pcma";
    case Codec::g722: return "g722";
    case Codec::g729: return "g729";
    case Codec::g723: return "g723";
    case Codec::gsm: return "gsm";
    case Codec::ilbc: return "ilbc";
    case Codec::opus: return "opus";
    case Codec::telephone_event: return "telephone_event";
    case Codec::comfort_noise: return "comfort_noise";
    case Codec::other: return "other";
    }
    return "unknown";
}

std::string_view to_string(CodecLabel label) noexcept {
    switch (label) {
    case CodecLabel::pcmu: return "pcmu";
    case CodecLabel::pcma: return "pcma";
    case CodecLabel::g722: return "g722";
    case CodecLabel::g729: return "g729";
    case CodecLabel::opus: return "opus";
    case CodecLabel::telephone_event: return "telephone_event";
    case CodecLabel::other: return "other";
    }
    return "other";
}

CodecLabel label_of(Codec codec) noexcept {
    switch (codec) {
    case Codec::pcmu: return CodecLabel::pcmu;
    case Codec::pcma: return CodecLabel::pcma;
    case Codec::g722: return CodecLabel::g722;
    case Codec::g729: return CodecLabel::g729;
    case Codec::opus: return CodecLabel::opus;
    case Codec::telephone_event: return CodecLabel::telephone_event;
    default: return CodecLabel::other;
    }
}

Codec codec_from_name(std::string_view name) noexcept {
    struct Name {
        std::string_view text;
        Codec codec;
    };
    // Aliases seen in the field: Asterisk's G711U/G711A and G729A, Cisco's "G.729".
    static constexpr Name names[] = {
        {"pcmu", Codec::pcmu},        {"g711u", Codec::pcmu},
        {"pcma", Codec::pcma},        {"g711a", Codec::pcma},
        {"g722", Codec::g722},        {"g729", Codec::g729},
        {"g729a", Codec::g729},       {"g.729", Codec::g729},
        {"g729ab", Codec::g729},      {"g723", Codec::g723},
        {"gsm", Codec::gsm},          {"ilbc", Codec::ilbc},
        {"opus", Codec::opus},        {"telephone-event", Codec::telephone_event},
        {"cn", Codec::comfort_noise},
    };
    if (name.empty()) return Codec::unknown;
    // The table is lower case: each entry costs a length compare, the match a word or two.
    for (const Name& n : names)
        if (iequals_lower(name, n.text)) return n.codec;
    return Codec::other;
}

std::uint8_t clock_code(std::uint32_t rate) noexcept {
    for (std::size_t i = 0; i < kClockRates.size(); ++i)
        if (kClockRates[i] == rate) return static_cast<std::uint8_t>(i);
    return kUnlistedClock;
}

std::uint32_t clock_rate_of(std::uint8_t code) noexcept { return code < kClockRates.size() ? kClockRates[code] : 0; }

int candidate_clock_index(std::uint32_t rate) noexcept {
    for (std::size_t i = 0; i < kCandidateClockRates.size(); ++i)
        if (kCandidateClockRates[i] == rate) return static_cast<int>(i);
    return -1;
}

}  // namespace hepd::rtp
