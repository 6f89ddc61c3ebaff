#pragma once
// Helpers for writing SIP test messages readably: raw string literals with '\n' line ends,
// converted to the CRLF the wire uses.
#include <deque>
#include <string>
#include <string_view>

namespace hepd::sip::test {

inline std::string crlf(std::string_view lf_text) {
    std::string out;
    out.reserve(lf_text.size() + lf_text.size() / 16);
    for (char c : lf_text) {
        if (c == '\n') out += '\r';
        out += c;
    }
    return out;
}

// Parsed messages are views into their input: tests that build the input in a temporary keep it
// here, alive until the test program exits.
inline std::string_view keep(std::string text) {
    static std::deque<std::string> arena;
    arena.push_back(std::move(text));
    return arena.back();
}

}  // namespace hepd::sip::test
