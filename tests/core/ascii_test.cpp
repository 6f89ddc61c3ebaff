#include "core/ascii.hpp"

#include <catch2/catch.hpp>

using namespace hepd;

TEST_CASE("to_lower_ascii maps exactly A-Z", "[core][ascii]") {
    for (int c = 0; c < 256; ++c) {
        const char ch = static_cast<char>(c);
        const char expected = (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : ch;
        CHECK(to_lower_ascii(ch) == expected);
    }
}

TEST_CASE("iequals_ascii folds ASCII letters on both sides and nothing else", "[core][ascii]") {
    CHECK(iequals_ascii("Content-LENGTH", "content-length"));
    CHECK(iequals_ascii("telephone-event", "TELEPHONE-EVENT"));
    CHECK(iequals_ascii("", ""));
    CHECK_FALSE(iequals_ascii("via", "vie"));
    CHECK_FALSE(iequals_ascii("via", "vi"));
    // Neighbours of the letters in ASCII, and bytes above it, are not letters.
    CHECK_FALSE(iequals_ascii("@", "`"));
    CHECK_FALSE(iequals_ascii("[", "{"));
    CHECK_FALSE(iequals_ascii("\xc1", "\xe1"));
}

TEST_CASE("is_ascii_space is SP, HT, CR and LF only", "[core][ascii]") {
    for (int c = 0; c < 256; ++c) {
        const char ch = static_cast<char>(c);
        INFO(c);
        CHECK(is_ascii_space(ch) == (c == ' ' || c == '\t' || c == '\r' || c == '\n'));
    }
}
