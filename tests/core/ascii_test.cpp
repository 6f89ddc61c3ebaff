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
    // Every pair of bytes: equal exactly when they are equal or the two cases of one letter.
    const auto letter = [](int c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); };
    for (int a = 0; a < 256; ++a) {
        for (int b = 0; b < 256; ++b) {
            const char x[] = {static_cast<char>(a), 'q'};
            const char y[] = {static_cast<char>(b), 'Q'};
            const bool expected = a == b || (letter(a) && letter(b) && (a ^ b) == 0x20);
            if (iequals_ascii({x, 2}, {y, 2}) != expected) FAIL("bytes " << a << " and " << b);
        }
    }
    CHECK(iequals_ascii("telephone-event", "TELEPHONE-EVENT"));
    CHECK(iequals_ascii("", ""));
    CHECK_FALSE(iequals_ascii("via", "vi"));
}

TEST_CASE("is_ascii_space is SP, HT, CR and LF only", "[core][ascii]") {
    for (int c = 0; c < 256; ++c) {
        const char ch = static_cast<char>(c);
        INFO(c);
        CHECK(is_ascii_space(ch) == (c == ' ' || c == '\t' || c == '\r' || c == '\n'));
    }
}

TEST_CASE("iequals_lower at every length and mismatch position", "[core][ascii]") {
    const std::string lower_all = "abcdefghijklmnopqrstuvwxyz-0123";
    for (std::size_t n = 0; n <= 24; ++n) {
        INFO("length " << n);
        const std::string lower = lower_all.substr(0, n);
        std::string upper = lower;
        for (char& c : upper)
            if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
        CHECK(iequals_lower(lower, lower));
        CHECK(iequals_lower(upper, lower));
        for (std::size_t i = 0; i < n; ++i) {
            INFO("position " << i);
            std::string wrong = upper;
            wrong[i] = wrong[i] == 'Z' ? 'Y' : 'Z';
            CHECK_FALSE(iequals_lower(wrong, lower));
            // Bytes that differ from a letter by 0x20 but are not its other case.
            std::string punct = lower;
            punct[i] = static_cast<char>(lower[i] ^ 0x20);
            if (!(lower[i] >= 'a' && lower[i] <= 'z')) CHECK_FALSE(iequals_lower(punct, lower));
        }
        if (n > 0) CHECK_FALSE(iequals_lower(lower.substr(1), lower));
    }
    CHECK_FALSE(iequals_lower("@", "`"));
    CHECK_FALSE(iequals_lower("[", "{"));
    CHECK_FALSE(iequals_lower("\r", "-"));
    CHECK_FALSE(iequals_lower("\xc1", "\xe1"));
    CHECK(iequals_lower("SIP/2.0", "sip/2.0"));
}
