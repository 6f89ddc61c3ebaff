#include "relay/message_ring.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <deque>
#include <random>
#include <thread>
#include <vector>

using hepd::ByteSpan;
using hepd::relay::MessageRing;

namespace {

std::vector<std::uint8_t> message(std::uint32_t seq, std::size_t size) {
    std::vector<std::uint8_t> m(size);
    for (std::size_t i = 0; i < size; ++i) m[i] = static_cast<std::uint8_t>((seq * 31 + i) & 0xff);
    return m;
}

}  // namespace

TEST_CASE("message ring: messages come out whole and in order across many wraps", "[relay][ring]") {
    MessageRing ring(1000);  // not a multiple of anything in particular: rounded to 1000
    std::mt19937 rng(7);
    std::uniform_int_distribution<std::size_t> size_of(0, ring.max_message_bytes());
    std::deque<std::vector<std::uint8_t>> expected;
    std::uint32_t seq = 0;
    std::size_t refused = 0;
    for (int step = 0; step < 20000; ++step) {
        if (rng() % 2 == 0) {
            auto m = message(seq++, size_of(rng));
            if (ring.try_push(m)) {
                expected.push_back(std::move(m));
            } else {
                ++refused;
                REQUIRE(!expected.empty());  // an empty ring takes any message up to the maximum
            }
        } else if (ring.has_message()) {
            REQUIRE(!expected.empty());
            const ByteSpan got = ring.front();
            CHECK(std::vector<std::uint8_t>(got.begin(), got.end()) == expected.front());
            ring.pop();
            expected.pop_front();
        } else {
            CHECK(expected.empty());
        }
    }
    CHECK(refused > 0);  // the ring did fill up on the way
    while (ring.has_message()) {
        const ByteSpan got = ring.front();
        CHECK(std::vector<std::uint8_t>(got.begin(), got.end()) == expected.front());
        ring.pop();
        expected.pop_front();
    }
    CHECK(expected.empty());
    CHECK(ring.used_bytes() == 0);
}

TEST_CASE("message ring: full and oversized messages are refused, empty ones kept", "[relay][ring]") {
    MessageRing ring(64);
    CHECK(ring.max_message_bytes() == 28);
    CHECK_FALSE(ring.try_push(message(1, 29)));
    CHECK(ring.try_push(message(2, 28)));  // 32 bytes with its header
    CHECK(ring.try_push(message(3, 0)));   // 4
    CHECK(ring.try_push(message(4, 20)));  // 24: 60 of 64 used
    CHECK_FALSE(ring.try_push(message(5, 1)));
    CHECK(ring.used_bytes() == 60);
    REQUIRE(ring.has_message());
    CHECK(ring.front().size() == 28);
    ring.pop();
    REQUIRE(ring.has_message());
    CHECK(ring.front().empty());
    ring.pop();
    // 4 bytes left before the end: a 5-byte message (8 + 4) wraps to the front.
    CHECK(ring.try_push(message(6, 5)));
    REQUIRE(ring.has_message());
    CHECK(ring.front().size() == 20);
    ring.pop();
    REQUIRE(ring.has_message());
    const ByteSpan wrapped = ring.front();
    CHECK(std::vector<std::uint8_t>(wrapped.begin(), wrapped.end()) == message(6, 5));
    ring.pop();
    CHECK_FALSE(ring.has_message());
}

TEST_CASE("message ring: one producer thread and one consumer thread", "[relay][ring]") {
    MessageRing ring(4096);
    constexpr std::uint32_t kMessages = 200000;
    std::thread producer([&] {
        for (std::uint32_t seq = 0; seq < kMessages; ++seq) {
            const auto m = message(seq, 1 + seq % 300);
            while (!ring.try_push(m)) std::this_thread::yield();
        }
    });
    std::uint32_t seq = 0;
    std::size_t bad = 0;
    while (seq < kMessages) {
        if (!ring.has_message()) {
            std::this_thread::yield();
            continue;
        }
        const ByteSpan got = ring.front();
        if (std::vector<std::uint8_t>(got.begin(), got.end()) != message(seq, 1 + seq % 300)) ++bad;
        ring.pop();
        ++seq;
    }
    producer.join();
    CHECK(bad == 0);
    CHECK_FALSE(ring.has_message());
}
