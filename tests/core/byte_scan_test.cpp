#include "core/byte_scan.hpp"

#include <catch2/catch.hpp>

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace {

std::optional<std::size_t> reference_first(const std::array<char, 16>& block, char value) {
    for (std::size_t i = 0; i < block.size(); ++i)
        if (block[i] == value) return i;
    return std::nullopt;
}

template <typename Matches>
void check_matches(const Matches& m, const std::array<char, 16>& block, char value) {
    const auto expected = reference_first(block, value);
    REQUIRE(m.any() == expected.has_value());
    if (expected) CHECK(m.first() == *expected);
}

void check_both(const std::array<char, 16>& block, char value) {
    check_matches(hepd::match_bytes(block.data(), value), block, value);
    check_matches(hepd::match_bytes_by_words(block.data(), value), block, value);
}

}  // namespace

TEST_CASE("match_bytes finds the first byte equal to a value among sixteen, on every path", "[core][byte_scan]") {
    // Fillers around the value: letters, the value's neighbours (borrows of the word arithmetic),
    // bytes with the high bit set and zeros.
    for (const char value : {'\n', ':', '\0', '\x7f', '\x80', '\xff', 'a'}) {
        for (const char filler : {'x', static_cast<char>(value + 1), static_cast<char>(value - 1), '\x81', '\0'}) {
            if (filler == value) continue;
            std::array<char, 16> block{};
            block.fill(filler);
            check_both(block, value);  // no match
            for (std::size_t first = 0; first < 16; ++first) {
                block.fill(filler);
                block[first] = value;
                check_both(block, value);
                // A second match after the first, and a byte one below the value right after the
                // first (where a borrow would reach), leave the first where it is.
                for (std::size_t later = first + 1; later < 16; ++later) {
                    block.fill(filler);
                    block[first] = value;
                    block[later] = value;
                    check_both(block, value);
                    block[later] = static_cast<char>(value - 1);
                    check_both(block, value);
                }
            }
        }
    }
}

TEST_CASE("find_byte agrees with string_view::find at every size, start and position", "[core][byte_scan]") {
    // Fillers next to the target that a word's borrow arithmetic could mistake for it: its
    // successor, its high-bit twin, zero and 0xff.
    for (const char filler : {'x', '\x0b', '\x8a', '\0', '\xff'})
        for (std::size_t size = 0; size <= 40; ++size) {
            for (std::size_t at = 0; at <= size; ++at) {  // at == size: no match
                std::string text(size, filler);
                if (at < size) text[at] = '\n';
                if (at + 3 < size) text[at + 3] = '\n';  // a second one after the first
                const std::string_view view(text);
                for (std::size_t from = 0; from <= size; ++from) {
                    INFO("filler " << int(filler) << " size " << size << " match at " << at << " from " << from);
                    CHECK(hepd::find_byte(view, from, '\n') == view.find('\n', from));
                }
            }
        }
}
