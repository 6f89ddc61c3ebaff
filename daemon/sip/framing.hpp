#pragma once
// Message delimitation for SIP over stream transports (RFC 3261 section 18.3): the header section
// ends at the first empty line and Content-Length, mandatory on streams, gives the body size.
// Pure and allocation-free; the caller keeps the bytes and calls again when more arrive.
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace hepd::sip {

enum class FramingError : std::uint8_t {
    missing_content_length,
    bad_content_length,  // not a number, or two Content-Length headers that disagree
    bad_header_line,     // a header line a message parser would reject: the stream is lost
    message_too_large,   // headers or headers + body exceed the configured maximum
};
std::string_view to_string(FramingError error) noexcept;

enum class FrameStatus : std::uint8_t { need_more, complete, error };

struct Frame {
    FrameStatus status = FrameStatus::need_more;
    // Leading CR/LF bytes (keep-alive pings and pongs, RFC 5626) before the message; the caller
    // may drop them whatever the status. When the buffer holds only such bytes, skip == size.
    std::size_t skip = 0;
    std::size_t length = 0;                                     // complete: the message is buffer.substr(skip, length)
    FramingError error = FramingError::missing_content_length;  // meaningful when status == error
};

inline constexpr std::size_t kDefaultMaxMessageSize = 65535;

Frame message_length(std::string_view buffer, std::size_t max_message_size = kDefaultMaxMessageSize) noexcept;

}  // namespace hepd::sip
