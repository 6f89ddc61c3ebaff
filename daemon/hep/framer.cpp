#include "hep/framer.hpp"

#include <algorithm>

namespace hepd::hep {

std::string_view to_string(FramerError e) noexcept {
    switch (e) {
    case FramerError::not_hep: return "not_hep";
    case FramerError::length_too_small: return "length_too_small";
    case FramerError::length_too_large: return "length_too_large";
    }
    return "unknown";
}

StreamFramer::StreamFramer(std::size_t max_frame) noexcept
    : max_frame_(std::clamp(max_frame, header_size, absolute_max)) {}

FrameStatus StreamFramer::next(ByteSpan buffered) const noexcept {
    using Kind = FrameStatus::Kind;
    static constexpr std::uint8_t tail[3] = {'E', 'P', '3'};
    const std::size_t have = buffered.size();
    if (have >= 1 && buffered[0] != 'H' && buffered[0] != 'E') return {Kind::error, 0, FramerError::not_hep};
    for (std::size_t i = 1; i < 4 && i < have; ++i)
        if (buffered[i] != tail[i - 1]) return {Kind::error, 0, FramerError::not_hep};
    if (have < header_size) return {Kind::need_more, header_size, FramerError::not_hep};

    const std::size_t length = load_be16(buffered.data() + 4);
    if (length < header_size) return {Kind::error, 0, FramerError::length_too_small};
    if (length > max_frame_) return {Kind::error, 0, FramerError::length_too_large};
    if (have < length) return {Kind::need_more, length, FramerError::not_hep};
    return {Kind::frame, length, FramerError::not_hep};
}

}  // namespace hepd::hep
