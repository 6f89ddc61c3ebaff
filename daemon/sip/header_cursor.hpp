#pragma once
// Walks the header section of a SIP message one field at a time, joining folded continuation
// lines (RFC 3261 section 7.3.1) and accepting bare LF line ends. Shared by the message parser,
// find_header() and the stream framer so that all three agree on where a field and the header
// section end.
#include "core/byte_scan.hpp"
#include "sip/message.hpp"
#include "sip/text.hpp"

#include <cstddef>
#include <cstring>
#include <string_view>

namespace hepd::sip::detail {

struct HeaderLine {
    std::string_view name;
    HeaderId id = HeaderId::other;  // header_id(name)
    std::string_view value;         // trimmed, folds kept
    std::size_t start = 0;          // offset of the field's first byte in the cursor's text
    bool folded = false;
};

enum class LineStatus : unsigned char {
    field,           // `line` holds the next field
    end_of_headers,  // the empty line; position() is the first body byte
    end_of_input,    // the text ended right after a complete line, with no empty line
    truncated,       // the text ends inside a line
    no_colon,
    bad_name,
};

class HeaderCursor {
public:
    HeaderCursor(std::string_view text, std::size_t pos) noexcept : text_(text), pos_(pos) {}

    std::size_t position() const noexcept { return pos_; }

    // Inlined: the message parser calls it for every line, and the call cost a tenth of it.
    [[gnu::always_inline]] LineStatus next(HeaderLine& line) noexcept {
        const std::size_t size = text_.size();
        if (pos_ >= size) return LineStatus::end_of_input;
        const std::size_t start = pos_;
        std::size_t colon = npos;  // the line's first ':', if any before its LF
        const std::size_t lf = find_lf_and_colon(start, colon);
        if (lf == npos) {
            // A lone CR is the empty line cut before its LF: the header section is complete.
            if (size - start == 1 && text_[start] == '\r') {
                pos_ = size;
                return LineStatus::end_of_headers;
            }
            return LineStatus::truncated;
        }
        const std::size_t end = content_end(start, lf);
        if (end == start) {
            pos_ = lf + 1;
            return LineStatus::end_of_headers;
        }
        // The name is a token up to optional blanks and the colon (RFC 3261 HCOLON). A name that
        // header_id() knows is a token (it matched letters and '-' only), so only the others are
        // checked byte by byte.
        if (colon >= end) return is_space(text_[start]) ? LineStatus::bad_name : LineStatus::no_colon;
        std::size_t name_end = colon;
        while (name_end > start && is_space(text_[name_end - 1])) --name_end;
        const std::string_view name = text_.substr(start, name_end - start);
        const HeaderId id = header_id(name);
        if (id == HeaderId::other && !is_token(name)) return LineStatus::bad_name;

        std::size_t value_end = end;
        std::size_t next = lf + 1;
        bool folded = false;
        while (next < size && is_space(text_[next])) {
            const std::size_t lf2 = find_lf(next);
            if (lf2 == npos) return LineStatus::truncated;
            value_end = content_end(next, lf2);
            next = lf2 + 1;
            folded = true;
        }
        pos_ = next;
        line.name = name;
        line.id = id;
        line.value = trim_lws(text_.substr(colon + 1, value_end - (colon + 1)));
        line.start = start;
        line.folded = folded;
        return LineStatus::field;
    }

private:
    static constexpr std::size_t npos = std::string_view::npos;

    // The first LF at or after `from`, and in `colon` the first ':' before it (npos if none):
    // find_byte()'s walk, looking for both in each step.
    [[gnu::always_inline]] std::size_t find_lf_and_colon(std::size_t from, std::size_t& colon) const noexcept {
        const char* const data = text_.data();
        const std::size_t size = text_.size();
        std::size_t i = from;
        for (; i + 16 <= size; i += 16) {
            const ByteMatches lf = match_bytes(data + i, '\n');
            if (colon == npos) {
                if (const ByteMatches c = match_bytes(data + i, ':'); c.any()) colon = i + c.first();
            }
            if (lf.any()) {
                const std::size_t at = i + lf.first();
                if (colon > at) colon = npos;
                return at;
            }
        }
        const std::size_t at = find_lf(i);
        if (colon == npos) {
            const std::size_t stop = at == npos ? size : at;
            while (i < stop && data[i] != ':') ++i;
            if (i < stop) colon = i;
        }
        return at;
    }
    std::size_t find_lf(std::size_t from) const noexcept { return find_byte(text_, from, '\n'); }
    // End of a line's content: before the LF and before one CR preceding it.
    std::size_t content_end(std::size_t start, std::size_t lf) const noexcept {
        return (lf > start && text_[lf - 1] == '\r') ? lf - 1 : lf;
    }

    std::string_view text_;
    std::size_t pos_;
};

}  // namespace hepd::sip::detail
