#include "ingest/token_bucket.hpp"

#include <catch2/catch.hpp>

using namespace hepd;
using hepd::ingest::TokenBucket;

TEST_CASE("token bucket: burst first, then exactly the rate", "[ingest][rate]") {
    ManualClock clock(Timestamp{1'000'000});
    TokenBucket bucket(100, 10, clock.now());
    int taken = 0;
    for (int i = 0; i < 50; ++i) taken += bucket.try_take(clock.now()) ? 1 : 0;
    CHECK(taken == 10);  // the burst, no time has passed

    // Ten seconds at 1 ms steps: 1000 tokens earned, offered 10 per ms.
    taken = 0;
    for (int ms = 0; ms < 10'000; ++ms) {
        clock.advance_us(1000);
        for (int i = 0; i < 10; ++i) taken += bucket.try_take(clock.now()) ? 1 : 0;
    }
    CHECK(taken == 1000);
}

TEST_CASE("token bucket: fractional refills accumulate", "[ingest][rate]") {
    ManualClock clock(Timestamp{0});
    TokenBucket bucket(3, 1, clock.now());
    CHECK(bucket.try_take(clock.now()));
    CHECK_FALSE(bucket.try_take(clock.now()));
    // 3/s with 1 µs steps: 3 millionths of a token per step, which integer tokens would round
    // away. The bucket is full again 333,333.3 µs after each take, so takes land at 333,334,
    // 666,668 and 1,000,002 µs.
    int taken = 0;
    for (int us = 0; us < 1'000'002; ++us) {
        clock.advance_us(1);
        taken += bucket.try_take(clock.now()) ? 1 : 0;
    }
    CHECK(taken == 3);
}

TEST_CASE("token bucket: idle time refills only up to the burst", "[ingest][rate]") {
    ManualClock clock(Timestamp{0});
    TokenBucket bucket(1000, 0, clock.now());  // burst 0 = one second of rate
    for (int i = 0; i < 1000; ++i) REQUIRE(bucket.try_take(clock.now()));
    CHECK_FALSE(bucket.try_take(clock.now()));
    clock.advance_us(3'600'000'000LL);  // an hour idle
    int taken = 0;
    while (bucket.try_take(clock.now())) ++taken;
    CHECK(taken == 1000);
}

TEST_CASE("token bucket: rate 0 is unlimited, a clock step back earns nothing", "[ingest][rate]") {
    ManualClock clock(Timestamp{5'000'000});
    TokenBucket unlimited(0, 0, clock.now());
    CHECK(unlimited.unlimited());
    for (int i = 0; i < 100'000; ++i) REQUIRE(unlimited.try_take(clock.now()));

    TokenBucket bucket(10, 1, clock.now());
    CHECK(bucket.try_take(clock.now()));
    clock.set(Timestamp{1'000'000});
    CHECK_FALSE(bucket.try_take(clock.now()));

    // Reconfiguration keeps earned tokens up to the new burst.
    bucket.reset(1000, 5, clock.now());
    clock.advance_us(1'000'000);
    int taken = 0;
    while (bucket.try_take(clock.now())) ++taken;
    CHECK(taken == 5);
}
