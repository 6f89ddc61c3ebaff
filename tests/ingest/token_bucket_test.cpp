#include "ingest/token_bucket.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <thread>
#include <vector>

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

TEST_CASE("token bucket: turning a limit on starts with a full burst", "[ingest][rate]") {
    ManualClock clock(Timestamp{0});
    TokenBucket bucket;  // default: unlimited
    CHECK(bucket.unlimited());
    bucket.reset(100, 7, clock.now());
    CHECK(bucket.rate() == 100);
    CHECK(bucket.burst() == 7);
    int taken = 0;
    while (bucket.try_take(clock.now())) ++taken;
    CHECK(taken == 7);

    // 50 ms at 100/s earned 5 tokens before the reset; the new burst of 3 caps them.
    clock.advance_us(50'000);
    bucket.reset(100, 3, clock.now());
    taken = 0;
    while (bucket.try_take(clock.now())) ++taken;
    CHECK(taken == 3);
}

using hepd::ingest::SharedTokenBucket;

TEST_CASE("shared token bucket: same arithmetic as the single-thread bucket", "[ingest][rate]") {
    ManualClock clock(Timestamp{1'000'000});
    SharedTokenBucket bucket(100, 10, clock.now());
    CHECK(bucket.take(50, clock.now()) == 10);  // the burst
    CHECK(bucket.take(1, clock.now()) == 0);
    std::uint64_t taken = 0;
    for (int ms = 0; ms < 10'000; ++ms) {
        clock.advance_us(1000);
        taken += bucket.take(10, clock.now());
    }
    CHECK(taken == 1000);
    CHECK(bucket.take(0, clock.now()) == 0);

    // Idle for an hour: back to the burst, not more.
    clock.advance_us(3'600'000'000LL);
    CHECK(bucket.take(1000, clock.now()) == 10);
}

TEST_CASE("shared token bucket: unlimited grants everything; reset keeps earned tokens", "[ingest][rate]") {
    ManualClock clock(Timestamp{0});
    SharedTokenBucket bucket(0, 0, clock.now());
    CHECK(bucket.unlimited());
    CHECK(bucket.take(123'456, clock.now()) == 123'456);

    bucket.reset(10, 4, clock.now());  // unlimited -> limited: full
    CHECK_FALSE(bucket.unlimited());
    CHECK(bucket.take(100, clock.now()) == 4);
    clock.advance_us(200'000);         // 2 tokens earned at 10/s
    bucket.reset(10, 1, clock.now());  // the new burst caps what was earned
    CHECK(bucket.take(100, clock.now()) == 1);
    // A clock read behind the last refill (another thread's older reading) earns nothing.
    CHECK(bucket.take(100, Timestamp{clock.now().us - 50'000}) == 0);
}

TEST_CASE("shared token bucket: concurrent takers never get more than was earned", "[ingest][rate]") {
    constexpr int kThreads = 4;
    SECTION("frozen clock: exactly the burst, whatever the interleaving") {
        SharedTokenBucket bucket(1, 10'000, Timestamp{0});
        std::atomic<std::uint64_t> total{0};
        std::vector<std::thread> threads;
        for (int t = 0; t < kThreads; ++t)
            threads.emplace_back([&] {
                std::uint64_t mine = 0;
                for (int i = 0; i < 100'000; ++i) mine += bucket.take(7, Timestamp{0});
                total += mine;
            });
        for (auto& th : threads) th.join();
        CHECK(total.load() == 10'000);
    }
    SECTION("each thread reads its own clock: at most burst + rate x elapsed") {
        // 1000/s for 1 s of clock: at most 1000 (burst) + 1000 earned, and the burst at least.
        SharedTokenBucket bucket(1000, 1000, Timestamp{0});
        std::atomic<std::uint64_t> total{0};
        std::vector<std::thread> threads;
        for (int t = 0; t < kThreads; ++t)
            threads.emplace_back([&] {
                std::uint64_t mine = 0;
                for (std::int64_t us = 0; us <= 1'000'000; us += 100) mine += bucket.take(100, Timestamp{us});
                total += mine;
            });
        for (auto& th : threads) th.join();
        CHECK(total.load() <= 2000);
        CHECK(total.load() >= 1000);
    }
}
