#pragma once
// Cuts a HEPv3 TCP (or TLS) byte stream into messages. Stateless: the caller passes the bytes it
// has buffered and consumes `size` bytes per frame. A bad header means the stream is lost (the
// connection is closed and counted): there is no resynchronisation on a byte stream.
#include "core/bytes.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace hepd::hep {

enum class FramerError : std::uint8_t {
    not_hep,           // the bytes are not "HEP3"/"EEP3"
    length_too_small,  // total length < 6
    length_too_large,  // total length > the configured maximum
};

inline constexpr std::size_t framer_error_count = 3;

std::string_view to_string(FramerError e) noexcept;

struct FrameStatus {
    enum class Kind : std::uint8_t { need_more, frame, error };
    Kind kind = Kind::need_more;
    // need_more: how many bytes in total must be buffered before asking again (always more than
    // were passed, never more than the maximum frame size). frame: the message size.
    std::size_t size = 0;
    FramerError error = FramerError::not_hep;  // meaningful for Kind::error only

    bool need_more() const noexcept { return kind == Kind::need_more; }
    bool is_frame() const noexcept { return kind == Kind::frame; }
    bool is_error() const noexcept { return kind == Kind::error; }
};

class StreamFramer {
public:
    static constexpr std::size_t header_size = 6;
    static constexpr std::size_t absolute_max = 65535;

    // max_frame is clamped to [6, 65535] (the u16 length cannot say more).
    explicit StreamFramer(std::size_t max_frame = absolute_max) noexcept;

    // Looks at the first message in `buffered`. A wrong magic is reported as soon as the first
    // wrong byte is there, without waiting for 6 bytes.
    FrameStatus next(ByteSpan buffered) const noexcept;

    std::size_t max_frame() const noexcept { return max_frame_; }

private:
    std::size_t max_frame_;
};

}  // namespace hepd::hep
