#pragma once
// Helpers for writing SIP test messages readably: raw string literals with '\n' line ends,
// converted to the CRLF the wire uses; and the real messages kept in tests/sip/data.
#include <catch2/catch.hpp>

#include <deque>
#include <fstream>
#include <iterator>
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

// A message of tests/sip/data (captured from Kamailio and sipp), kept alive like keep().
inline std::string_view read_data(const std::string& name) {
    const std::string path = std::string(HEPD_SOURCE_DIR) + "/tests/sip/data/" + name;
    std::ifstream in(path, std::ios::binary);
    INFO(path);
    REQUIRE(in.good());
    return keep(std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()));
}

}  // namespace hepd::sip::test
