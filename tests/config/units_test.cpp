#include "config/units.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>

using hepd::config::format_duration;
using hepd::config::format_size;
using hepd::config::parse_duration;
using hepd::config::parse_size;
using hepd::config::UnitError;
using std::chrono::microseconds;

namespace {

std::int64_t us_of(std::string_view text) {
    const auto r = parse_duration(text);
    REQUIRE(r.ok());
    return r->count();
}

UnitError duration_error(std::string_view text) {
    const auto r = parse_duration(text);
    REQUIRE_FALSE(r.ok());
    return r.error();
}

std::uint64_t bytes_of(std::string_view text) {
    const auto r = parse_size(text);
    REQUIRE(r.ok());
    return *r;
}

UnitError size_error(std::string_view text) {
    const auto r = parse_size(text);
    REQUIRE_FALSE(r.ok());
    return r.error();
}

}  // namespace

TEST_CASE("durations parse in every unit", "[config][units]") {
    CHECK(us_of("0") == 0);
    CHECK(us_of("0s") == 0);
    CHECK(us_of("0h") == 0);
    CHECK(us_of("1us") == 1);
    CHECK(us_of("750us") == 750);
    CHECK(us_of("500ms") == 500'000);
    CHECK(us_of("1ms") == 1'000);
    CHECK(us_of("32s") == 32'000'000);
    CHECK(us_of("5m") == 300'000'000);
    CHECK(us_of("4h") == 14'400'000'000);
    CHECK(us_of("007s") == 7'000'000);
}

TEST_CASE("durations chain terms and sum them", "[config][units]") {
    CHECK(us_of("1h30m") == 5'400'000'000);
    CHECK(us_of("1m30s") == 90'000'000);
    CHECK(us_of("1s500ms") == 1'500'000);
    CHECK(us_of("30m1h") == 5'400'000'000);  // order does not matter
    CHECK(us_of("1s1s") == 2'000'000);
}

TEST_CASE("malformed durations are refused with the reason", "[config][units]") {
    CHECK(duration_error("") == UnitError::empty);
    CHECK(duration_error("-1s") == UnitError::negative);
    CHECK(duration_error("-0") == UnitError::negative);
    CHECK(duration_error("32") == UnitError::missing_unit);
    CHECK(duration_error("00") == UnitError::missing_unit);
    CHECK(duration_error("1h30") == UnitError::missing_unit);
    CHECK(duration_error("10d") == UnitError::unknown_unit);
    CHECK(duration_error("5M") == UnitError::unknown_unit);
    CHECK(duration_error("5S") == UnitError::unknown_unit);
    CHECK(duration_error("5sec") == UnitError::unknown_unit);
    CHECK(duration_error("5msx") == UnitError::unknown_unit);
    CHECK(duration_error("1.5s") == UnitError::invalid);
    CHECK(duration_error(" 1s") == UnitError::invalid);
    CHECK(duration_error("1s ") == UnitError::invalid);
    CHECK(duration_error("1 s") == UnitError::invalid);
    CHECK(duration_error("s") == UnitError::invalid);
    CHECK(duration_error("ms") == UnitError::invalid);
    CHECK(duration_error("+1s") == UnitError::invalid);
    CHECK(duration_error("1s-1ms") == UnitError::invalid);
}

TEST_CASE("durations beyond int64 microseconds overflow", "[config][units]") {
    // INT64_MAX = 9223372036854775807 us.
    CHECK(us_of("9223372036854775807us") == std::numeric_limits<std::int64_t>::max());
    CHECK(duration_error("9223372036854775808us") == UnitError::overflow);
    // 2562047788 h = 9223372036800000000 us fits; one more hour does not.
    CHECK(us_of("2562047788h") == 9'223'372'036'800'000'000);
    CHECK(duration_error("2562047789h") == UnitError::overflow);
    // The sum overflows although each term fits.
    CHECK(duration_error("2562047788h1h") == UnitError::overflow);
    // More digits than 64 bits hold.
    CHECK(duration_error("99999999999999999999s") == UnitError::overflow);
    CHECK(duration_error("184467440737095516160us") == UnitError::overflow);
}

TEST_CASE("durations print in the largest exact unit", "[config][units]") {
    CHECK(format_duration(microseconds(0)) == "0s");
    CHECK(format_duration(microseconds(1)) == "1us");
    CHECK(format_duration(microseconds(1'001)) == "1001us");
    CHECK(format_duration(microseconds(1'000)) == "1ms");
    CHECK(format_duration(microseconds(1'500'000)) == "1500ms");
    CHECK(format_duration(microseconds(32'000'000)) == "32s");
    CHECK(format_duration(microseconds(90'000'000)) == "90s");
    CHECK(format_duration(microseconds(300'000'000)) == "5m");
    CHECK(format_duration(microseconds(5'400'000'000)) == "90m");
    CHECK(format_duration(microseconds(14'400'000'000)) == "4h");
    CHECK(format_duration(microseconds(1'000'001)) == "1000001us");
}

TEST_CASE("printed durations parse back to the same value", "[config][units]") {
    for (std::int64_t us :
         {std::int64_t{0}, std::int64_t{1}, std::int64_t{999}, std::int64_t{1'000}, std::int64_t{59'000'000},
          std::int64_t{60'000'000}, std::int64_t{3'599'000'000}, std::int64_t{3'600'000'000},
          std::int64_t{86'400'000'001}, std::numeric_limits<std::int64_t>::max()}) {
        INFO(us);
        CHECK(us_of(format_duration(microseconds(us))) == us);
    }
}

TEST_CASE("sizes parse as bytes or binary units", "[config][units]") {
    CHECK(bytes_of("0") == 0);
    CHECK(bytes_of("1500") == 1500);
    CHECK(bytes_of("1KiB") == 1024);
    CHECK(bytes_of("64KiB") == 65'536);
    CHECK(bytes_of("8MiB") == 8'388'608);
    CHECK(bytes_of("1GiB") == 1'073'741'824);
    CHECK(bytes_of("0MiB") == 0);
    CHECK(bytes_of("18446744073709551615") == std::numeric_limits<std::uint64_t>::max());
    // 2^64 - 2^30 = 17179869183 GiB fits, 2^34 GiB = 2^64 does not.
    CHECK(bytes_of("17179869183GiB") == 18'446'744'072'635'809'792u);
}

TEST_CASE("malformed sizes are refused with the reason", "[config][units]") {
    CHECK(size_error("") == UnitError::empty);
    CHECK(size_error("-5") == UnitError::negative);
    CHECK(size_error("-5KiB") == UnitError::negative);
    CHECK(size_error("8MB") == UnitError::unknown_unit);
    CHECK(size_error("8mib") == UnitError::unknown_unit);
    CHECK(size_error("8K") == UnitError::unknown_unit);
    CHECK(size_error("8B") == UnitError::unknown_unit);
    CHECK(size_error("8TiB") == UnitError::unknown_unit);
    CHECK(size_error("8 MiB") == UnitError::invalid);
    CHECK(size_error("1.5MiB") == UnitError::invalid);
    CHECK(size_error("KiB") == UnitError::invalid);
    CHECK(size_error("8KiB8") == UnitError::invalid);
    CHECK(size_error("0x10") == UnitError::invalid);
    CHECK(size_error("18446744073709551616") == UnitError::overflow);
    CHECK(size_error("17179869184GiB") == UnitError::overflow);
}

TEST_CASE("sizes print in the largest exact binary unit", "[config][units]") {
    CHECK(format_size(0) == "0");
    CHECK(format_size(1) == "1");
    CHECK(format_size(1500) == "1500");
    CHECK(format_size(1536) == "1536");
    CHECK(format_size(1024) == "1KiB");
    CHECK(format_size(65'536) == "64KiB");
    CHECK(format_size(65'535) == "65535");
    CHECK(format_size(1'049'600) == "1025KiB");
    CHECK(format_size(3'145'728) == "3MiB");
    CHECK(format_size(2'147'483'648) == "2GiB");
    CHECK(format_size(std::numeric_limits<std::uint64_t>::max()) == "18446744073709551615");
    for (std::uint64_t b :
         {std::uint64_t{0}, std::uint64_t{1023}, std::uint64_t{1} << 40, std::numeric_limits<std::uint64_t>::max()}) {
        INFO(b);
        CHECK(bytes_of(format_size(b)) == b);
    }
}

TEST_CASE("unit errors have snake_case names", "[config][units]") {
    CHECK(to_string(UnitError::empty) == "empty");
    CHECK(to_string(UnitError::invalid) == "invalid");
    CHECK(to_string(UnitError::missing_unit) == "missing_unit");
    CHECK(to_string(UnitError::unknown_unit) == "unknown_unit");
    CHECK(to_string(UnitError::negative) == "negative");
    CHECK(to_string(UnitError::overflow) == "overflow");
}
