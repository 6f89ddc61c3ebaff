#include "sip/framing.hpp"

#include "sip/header_cursor.hpp"
#include "sip/message.hpp"
#include "sip/text.hpp"

#include <cstring>
#include <optional>

namespace hepd::sip {

using namespace detail;

std::string_view to_string(FramingError error) noexcept {
    switch (error) {
    case FramingError::missing_content_length: return "missing_content_length";
    case FramingError::bad_content_length: return "bad_content_length";
    case FramingError::bad_header_line: return "bad_header_line";
    case FramingError::message_too_large: return "message_too_large";
    }
    return "unknown";
}

namespace {

Frame frame_error(std::size_t skip, FramingError error) noexcept {
    Frame frame;
    frame.status = FrameStatus::error;
    frame.skip = skip;
    frame.error = error;
    return frame;
}

Frame frame_need_more(std::size_t skip) noexcept {
    Frame frame;
    frame.skip = skip;
    return frame;
}

}  // namespace

Frame message_length(std::string_view buffer, std::size_t max_message_size) noexcept {
    std::size_t skip = 0;
    while (skip < buffer.size() && (buffer[skip] == '\r' || buffer[skip] == '\n')) ++skip;
    const std::string_view text = buffer.substr(skip);
    if (text.empty()) return frame_need_more(skip);

    // Only whole lines are examined, and only up to the size limit, so a peer that never sends
    // the empty line costs at most max_message_size bytes of scanning per call.
    const std::string_view window = text.substr(0, max_message_size);
    const void* lf_ptr = std::memchr(window.data(), '\n', window.size());
    if (lf_ptr == nullptr) {
        return text.size() > max_message_size ? frame_error(skip, FramingError::message_too_large)
                                              : frame_need_more(skip);
    }
    const auto start_end = static_cast<std::size_t>(static_cast<const char*>(lf_ptr) - window.data());

    HeaderCursor cursor(window, start_end + 1);
    HeaderLine line;
    std::optional<std::uint64_t> content_length;
    for (;;) {
        const LineStatus status = cursor.next(line);
        if (status == LineStatus::field) {
            if (line.id != HeaderId::content_length) continue;
            const auto value = parse_uint<std::uint32_t>(line.value);
            if (!value || (content_length && *content_length != *value))
                return frame_error(skip, FramingError::bad_content_length);
            content_length = *value;
            continue;
        }
        if (status == LineStatus::end_of_headers) {
            // A lone CR at the very end is an empty line still missing its LF.
            if (cursor.position() == window.size() && window.back() == '\r')
                return text.size() > max_message_size ? frame_error(skip, FramingError::message_too_large)
                                                      : frame_need_more(skip);
            break;
        }
        if (status == LineStatus::no_colon || status == LineStatus::bad_name)
            return frame_error(skip, FramingError::bad_header_line);
        // end_of_input or truncated: the header section is not complete within the window.
        return text.size() > max_message_size ? frame_error(skip, FramingError::message_too_large)
                                              : frame_need_more(skip);
    }
    if (!content_length) return frame_error(skip, FramingError::missing_content_length);
    const std::size_t total = cursor.position() + *content_length;
    if (total > max_message_size) return frame_error(skip, FramingError::message_too_large);
    if (text.size() < total) return frame_need_more(skip);
    Frame frame;
    frame.status = FrameStatus::complete;
    frame.skip = skip;
    frame.length = total;
    return frame;
}

}  // namespace hepd::sip
