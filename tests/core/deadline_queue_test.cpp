#include "core/deadline_queue.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <vector>

using namespace hepd;

namespace {
std::vector<std::uint32_t> pop_all_due(DeadlineQueue& q, std::int64_t now) {
    std::vector<std::uint32_t> out;
    while (const auto item = q.pop_due(now)) out.push_back(item->at);
    return out;
}
}  // namespace

TEST_CASE("deadline queue: due items come up earliest first, ties by index, none early", "[core][deadline]") {
    DeadlineQueue q;
    q.schedule(3, 300);
    q.schedule(1, 100);
    q.schedule(2, 100);
    q.schedule(0, 500);
    CHECK(q.earliest() == 100);
    CHECK_FALSE(q.pop_due(99));
    CHECK(pop_all_due(q, 300) == std::vector<std::uint32_t>{1, 2, 3});
    CHECK(q.earliest() == 500);
    CHECK(pop_all_due(q, 1000) == std::vector<std::uint32_t>{0});
    CHECK(q.size() == 0);
}

TEST_CASE("deadline queue: a later deadline keeps the armed one, an earlier one supersedes it", "[core][deadline]") {
    DeadlineQueue q;
    q.schedule(7, 100);
    q.schedule(7, 400);  // later: the armed 100 stays, a lower bound
    CHECK(q.size() == 1);
    const auto first = q.pop_due(100);
    REQUIRE(first);
    CHECK(first->deadline_us == 100);  // the table finds 400 not due and schedules it again
    q.schedule(7, 400);
    q.schedule(7, 250);  // earlier: armed now, the item at 400 no longer counts
    CHECK(pop_all_due(q, 300) == std::vector<std::uint32_t>{7});
    CHECK(pop_all_due(q, 1000).empty());  // the superseded item went silently
    CHECK(q.size() == 0);
}

TEST_CASE("deadline queue: items that no longer count stay bounded", "[core][deadline]") {
    DeadlineQueue q;
    for (std::uint32_t at = 0; at < 100; ++at) q.schedule(at, 1'000'000);
    // One entry's deadline brought forward again and again: each push supersedes the previous.
    for (std::int64_t d = 999'999; d > 900'000; --d) {
        q.schedule(5, d);
        CHECK(q.size() <= 2 * 100 + 64 + 1);
    }
    const auto due = pop_all_due(q, 1'000'000);
    CHECK(due.size() == 100);
    CHECK(due.front() == 5);
    CHECK(std::set<std::uint32_t>(due.begin(), due.end()).size() == 100);
}

// The way a table uses it, against a plain map: entries come and go (indexes reused), their
// deadlines move either way, and each expiry must settle exactly the live entries that are due.
TEST_CASE("deadline queue: a table's expiry settles exactly what is due", "[core][deadline]") {
    std::mt19937 rng(20261203);
    DeadlineQueue q;
    std::map<std::uint32_t, std::int64_t> live;  // index -> deadline
    std::vector<std::uint32_t> free_indexes;
    std::uint32_t next_index = 0;
    std::int64_t now = 0;
    std::uniform_int_distribution<int> op(0, 99);
    std::uniform_int_distribution<std::int64_t> ahead(1, 5'000);
    for (int step = 0; step < 200'000; ++step) {
        const int o = op(rng);
        if (o < 30 || live.empty()) {  // a new entry, in a freed index if there is one
            std::uint32_t at = next_index;
            if (!free_indexes.empty()) {
                at = free_indexes.back();
                free_indexes.pop_back();
            } else {
                ++next_index;
            }
            live[at] = now + ahead(rng);
            q.schedule(at, live[at]);
        } else if (o < 70) {  // a deadline moves, either way (the table arms only earlier ones)
            auto it = live.begin();
            std::advance(it, static_cast<long>(rng() % live.size()));
            const std::int64_t moved = now + ahead(rng);
            if (moved < it->second) q.schedule(it->first, moved);
            it->second = moved;
        } else if (o < 80) {  // erased on the packet path: its armed item stays behind
            auto it = live.begin();
            std::advance(it, static_cast<long>(rng() % live.size()));
            free_indexes.push_back(it->first);
            live.erase(it);
        } else {  // time passes and the timers run
            now += ahead(rng) / 4;
            std::set<std::uint32_t> expected;
            for (const auto& [at, deadline] : live)
                if (deadline <= now) expected.insert(at);
            std::set<std::uint32_t> settled;
            while (const auto item = q.pop_due(now)) {
                const auto it = live.find(item->at);
                if (it == live.end()) continue;  // gone
                if (it->second > now) {
                    q.schedule(item->at, it->second);  // not due yet: armed again
                    continue;
                }
                CHECK(settled.insert(item->at).second);  // once
                // Settling either retires the entry or moves its deadline on (a linger).
                if (rng() % 2 == 0) {
                    free_indexes.push_back(item->at);
                    live.erase(it);
                } else {
                    it->second = now + ahead(rng);
                    q.schedule(item->at, it->second);
                }
            }
            REQUIRE(settled == expected);
            // At most one armed item per index, and what no longer counts at most as many again.
            CHECK(q.size() <= 4 * std::size_t{next_index} + 65);
        }
    }
}
