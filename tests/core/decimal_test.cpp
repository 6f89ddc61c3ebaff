#include "core/decimal.hpp"

#include <catch2/catch.hpp>

#include <cstdint>

using hepd::parse_decimal;

TEST_CASE("decimal: the whole text a number in range, or nothing", "[core][decimal]") {
    CHECK(parse_decimal<std::uint64_t>("30000000") == 30000000U);
    CHECK(parse_decimal<std::uint64_t>("0") == 0U);
    CHECK(parse_decimal<long long>("-17") == -17);
    for (const char* bad : {"", " 1", "1 ", "3s", "-5", "+5", "0x10", "99999999999999999999999"})
        CHECK_FALSE(parse_decimal<std::uint64_t>(bad).has_value());
    CHECK_FALSE(parse_decimal<std::uint8_t>("256").has_value());
}
