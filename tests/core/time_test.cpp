#include "core/time.hpp"

#include "core/log.hpp"

#include <catch2/catch.hpp>

using namespace hepd;

TEST_CASE("timestamps format as ISO-8601 UTC with microseconds", "[core][time]") {
    CHECK(format_iso8601(Timestamp{0}) == "1970-01-01T00:00:00.000000Z");
    CHECK(format_iso8601(Timestamp::from_parts(1700000000, 42)) == "2023-11-14T22:13:20.000042Z");
    CHECK(format_iso8601(Timestamp{-1}) == "1969-12-31T23:59:59.999999Z");
    CHECK(Timestamp::from_parts(3, 500000).as_seconds() == Approx(3.5));
}

TEST_CASE("manual clock is driven by hand", "[core][time]") {
    ManualClock clock(Timestamp{1000});
    CHECK(clock.now().us == 1000);
    clock.advance_us(500);
    CHECK(clock.now().us == 1500);
    clock.set(Timestamp{7});
    CHECK(clock.now().us == 7);
}

TEST_CASE("log throttle allows one line per interval and counts the rest", "[core][log]") {
    LogThrottle throttle(1'000'000);
    auto first = throttle.allow(Timestamp{0});
    REQUIRE(first);
    CHECK(*first == 0);
    CHECK_FALSE(throttle.allow(Timestamp{10}));
    CHECK_FALSE(throttle.allow(Timestamp{999'999}));
    auto next = throttle.allow(Timestamp{1'000'000});
    REQUIRE(next);
    CHECK(*next == 2);
    CHECK(is_valid_log_level("warn"));
    CHECK_FALSE(is_valid_log_level("verbose"));
}
