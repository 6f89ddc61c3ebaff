#include "core/lru_table.hpp"

#include "core/hash.hpp"

#include <catch2/catch.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

using namespace hepd;
struct TextHash {
    std::uint64_t operator()(const std::string& s) const noexcept { return hash_text(s); }
};
struct IntHash {
    std::uint64_t operator()(std::uint64_t k) const noexcept { return mix64(k); }
};
using Table = LruTable<std::string, int, TextHash>;

namespace {
std::uint32_t find(const Table& t, const std::string& k) {
    return t.find(hash_text(k), [&](const std::string& stored) { return stored == k; });
}
std::optional<Table::Entry> put(Table& t, const std::string& k, int v) { return t.insert(k, v).second; }
}  // namespace

TEST_CASE("LRU table finds, touches and evicts the least recently active", "[core][lru]") {
    Table t(3);
    CHECK_FALSE(put(t, "a", 1));
    CHECK_FALSE(put(t, "b", 2));
    CHECK_FALSE(put(t, "c", 3));
    CHECK(t.size() == 3);
    t.touch(find(t, "a"));  // order now b, c, a
    auto evicted = put(t, "d", 4);
    REQUIRE(evicted);
    CHECK(evicted->key == "b");
    CHECK(evicted->value == 2);
    CHECK(find(t, "b") == Table::kNone);
    CHECK(t[find(t, "a")] == 1);
    CHECK(t[find(t, "d")] == 4);
    CHECK(t.size() == 3);

    std::vector<std::string> order;
    t.for_each([&](std::uint32_t, const Table::Entry& e) { order.push_back(e.key); });
    CHECK(order == std::vector<std::string>{"c", "a", "d"});
}

TEST_CASE("LRU table erase_if removes and reports", "[core][lru]") {
    Table t(10);
    for (int i = 0; i < 10; ++i) put(t, std::to_string(i), i);
    int removed_sum = 0;
    const auto n = t.erase_if([](const Table::Entry& e) { return e.value % 2 == 0; },
                              [&](const Table::Entry& e) { removed_sum += e.value; });
    CHECK(n == 5);
    CHECK(removed_sum == 0 + 2 + 4 + 6 + 8);
    CHECK(t.size() == 5);
    CHECK(find(t, "4") == Table::kNone);
    CHECK(find(t, "5") != Table::kNone);
}

TEST_CASE("LRU table agrees with a reference model under random churn", "[core][lru]") {
    constexpr std::size_t kCap = 200;
    Table t(kCap);
    std::map<std::string, int> model;      // key -> value
    std::map<std::string, long> last_use;  // key -> logical time
    long now = 0;
    std::mt19937 rng(7);
    for (int step = 0; step < 50'000; ++step) {
        const std::string k = "k" + std::to_string(rng() % 600);
        ++now;
        const auto at = find(t, k);
        if (at != Table::kNone) {
            REQUIRE(model.count(k) == 1);
            REQUIRE(t[at] == model[k]);
            if (rng() % 4 == 0) {
                t.erase(at);
                model.erase(k);
                last_use.erase(k);
            } else {
                t.touch(at);
                last_use[k] = now;
            }
        } else {
            REQUIRE(model.count(k) == 0);
            auto evicted = put(t, k, step);
            if (model.size() == kCap) {
                REQUIRE(evicted);
                // The victim is the key used longest ago.
                auto oldest = std::min_element(last_use.begin(), last_use.end(),
                                               [](const auto& a, const auto& b) { return a.second < b.second; });
                REQUIRE(evicted->key == oldest->first);
                model.erase(evicted->key);
                last_use.erase(evicted->key);
            } else {
                REQUIRE_FALSE(evicted);
            }
            model[k] = step;
            last_use[k] = now;
        }
        REQUIRE(t.size() == model.size());
    }
    // Memory stays bounded by the cap: entries never exceed it.
    CHECK(t.memory_bytes() < kCap * 4 * sizeof(Table::Entry));
}

TEST_CASE("LRU table entries stay in place as a large table grows to its cap", "[core][lru]") {
    // Entries big enough that the room for the cap is a mapping of its own (reserved_memory.hpp).
    using Big = LruTable<std::uint64_t, std::array<std::uint64_t, 32>, IntHash>;
    constexpr std::size_t kCap = 20'000;
    static_assert(kCap * sizeof(Big::Entry) >= kReservedMappingBytes);
    Big t(kCap);
    const IntHash key_hash;
    const std::uint32_t first = t.insert(0, {}).first;
    const Big::Entry* const first_entry = &t.entry(first);
    // Accounted by the pages its entries have touched, not by the room reserved: a young table
    // reports little.
    CHECK(t.memory_bytes() < 64 * sizeof(Big::Entry) + (std::size_t{1} << 16));
    for (std::uint64_t k = 1; k < kCap; ++k) {
        std::array<std::uint64_t, 32> v{};
        v.fill(k);
        t.insert(k, v);
    }
    CHECK(&t.entry(first) == first_entry);
    for (std::uint64_t k = 0; k < kCap; ++k) {
        const std::uint32_t at = t.find(key_hash(k), [&](std::uint64_t stored) { return stored == k; });
        REQUIRE(at != Big::kNone);
        CHECK(t[at][31] == k);
    }
    CHECK(t.memory_bytes() >= kCap * sizeof(Big::Entry));
    CHECK(t.memory_bytes() <= kCap * sizeof(Big::Entry) + (std::size_t{1} << 20));  // the index: 32,768 slots
}

TEST_CASE("what a mapping's entries have touched: what they use and a step filled ahead", "[core][lru]") {
    constexpr std::size_t kMiB = std::size_t{1} << 20;
    constexpr std::size_t kKiB = 1024;
    CHECK(touched_bytes(100, 64 * kKiB) == 64 * kKiB);  // on the heap: all of it
    CHECK(touched_bytes(0, 64 * kMiB) == 0);
    CHECK(touched_bytes(1, 64 * kMiB) >= 1);
    CHECK(touched_bytes(1, 64 * kMiB) <= 68 * kKiB);  // one base page and the 64 KiB filled ahead
    CHECK(touched_bytes(10 * kMiB, 64 * kMiB) == 10 * kMiB + 256 * kKiB);
    CHECK(touched_bytes(64 * kMiB - kKiB, 64 * kMiB) == 64 * kMiB);  // never more than the room
}

namespace {
// Pages of [at, at + bytes) that are in memory.
std::size_t resident_pages(const void* at, std::size_t bytes) {
    const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    std::vector<unsigned char> in((bytes + page - 1) / page);
    REQUIRE(mincore(const_cast<void*>(at), bytes, in.data()) == 0);
    std::size_t n = 0;
    for (const unsigned char c : in) n += c & 1U;
    return n;
}
}  // namespace

namespace {
// Whether the mapping holding `at` is advised for huge pages (VmFlags "hg" in /proc/self/smaps);
// nullopt where smaps does not say (no THP, or an emulator's own view).
std::optional<bool> huge_advised(const void* at) {
    std::ifstream f("/proc/self/smaps");
    const auto a = reinterpret_cast<std::uintptr_t>(at);
    bool inside = false;
    for (std::string line; std::getline(f, line);) {
        unsigned long from = 0;
        unsigned long to = 0;
        if (std::sscanf(line.c_str(), "%lx-%lx ", &from, &to) == 2 && line.find(':') > line.find(' ')) {
            inside = from <= a && a < to;
        } else if (inside && line.rfind("VmFlags:", 0) == 0) {
            return line.find(" hg") != std::string::npos;
        }
    }
    return std::nullopt;
}
}  // namespace

TEST_CASE("a growing table mapping is filled a step ahead and advised for huge pages region by region", "[core][lru]") {
    constexpr std::size_t kMiB = std::size_t{1} << 20;
    constexpr std::size_t kKiB = 1024;
    const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    constexpr std::size_t kRoom = 64 * kMiB;
    auto* base = static_cast<char*>(map_reserved(kRoom, HugePages::when_filled));
    REQUIRE(base != nullptr);
    // What the system does: MADV_POPULATE_WRITE came with Linux 5.14 (an older kernel refuses it)
    // and qemu's user mode accepts it and does nothing; either way the pages fault in as before.
    char* const probe = base + kRoom - page;
    const bool supported = madvise(probe, page, MADV_POPULATE_WRITE) == 0 && resident_pages(probe, page) == 1;
    // With transparent huge pages for every mapping, a first touch may bring 2 MiB: no page is
    // then "not yet filled".
    const bool huge_everywhere = [] {
        std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
        std::string mode;
        std::getline(f, mode);
        return mode.find("[always]") != std::string::npos;
    }();
    // Whether this system shows the advice: a mapping of its own, advised whole.
    const bool advice_visible = [&] {
        void* m = map_reserved(8 * kMiB, HugePages::at_once);
        const bool seen = m != nullptr && huge_advised(static_cast<char*>(m) + 6 * kMiB) == true;
        if (m != nullptr) unmap_reserved(m, 8 * kMiB);
        return seen;
    }();
    const auto region = [&](std::size_t at) {  // the 2 MiB-aligned region that holds base + at
        return reinterpret_cast<char*>(reinterpret_cast<std::uintptr_t>(base + at) / (2 * kMiB) * (2 * kMiB));
    };

    PopulateAhead ahead;
    base[0] = 1;
    ahead.cover(base, 1, kRoom);
    if (supported) {
        CHECK(resident_pages(base, 64 * kKiB) == 64 * kKiB / page);                      // the first step: 64 KiB
        if (!huge_everywhere) CHECK(resident_pages(base + 128 * kKiB, 64 * kKiB) == 0);  // and no more
        // A step as large as what is in use, up to 256 KiB.
        std::memset(base, 1, 100 * kKiB);
        ahead.cover(base, 100 * kKiB, kRoom);
        CHECK(resident_pages(base, 200 * kKiB) == 200 * kKiB / page);
        if (!huge_everywhere) CHECK(resident_pages(base + 256 * kKiB, 64 * kKiB) == 0);
    }
    if (advice_visible) CHECK(huge_advised(base) == false);  // nothing filled yet

    // Far into the room: a step ahead there too, and no further. The regions filled are advised,
    // the one being filled and those beyond are not.
    std::memset(base, 1, 9 * kMiB);
    ahead.cover(base, 9 * kMiB, kRoom);
    if (supported) CHECK(resident_pages(base + 9 * kMiB, 256 * kKiB) == 256 * kKiB / page);
    if (!huge_everywhere) CHECK(resident_pages(base + 12 * kMiB, 4 * kMiB) == 0);
    if (advice_visible) {
        CHECK(huge_advised(region(4 * kMiB)) == true);
        CHECK(huge_advised(region(9 * kMiB)) == false);
        CHECK(huge_advised(region(20 * kMiB)) == false);
        ahead.cover(base, 12 * kMiB, kRoom);
        CHECK(huge_advised(region(9 * kMiB)) == true);
        CHECK(huge_advised(region(20 * kMiB)) == false);
    }
    unmap_reserved(base, kRoom);
}

TEST_CASE("a table that tracks no recency keeps no links, refuses at its cap and finds what it holds", "[core][lru]") {
    using Plain = LruTable<std::uint64_t, std::uint32_t, IntHash, false>;
    using Ordered = LruTable<std::uint64_t, std::uint32_t, IntHash>;
    static_assert(sizeof(Plain::Entry) + 8 == sizeof(Ordered::Entry));
    const IntHash key_hash;
    const auto find = [&](const Plain& t, std::uint64_t k) {
        return t.find(key_hash(k), [&](std::uint64_t stored) { return stored == k; });
    };
    Plain t(100);
    for (std::uint64_t k = 0; k < 100; ++k) REQUIRE(t.insert(k, static_cast<std::uint32_t>(k)).first != Plain::kNone);
    CHECK(t.full());
    const auto refused = t.insert(100, 100);  // no least recent entry to give way
    CHECK(refused.first == Plain::kNone);
    CHECK_FALSE(refused.second);
    CHECK(find(t, 100) == Plain::kNone);
    CHECK(t.size() == 100);
    for (std::uint64_t k = 0; k < 100; k += 2) t.erase(find(t, k));
    CHECK(t.size() == 50);
    for (std::uint64_t k = 100; k < 150; ++k) REQUIRE(t.insert(k, static_cast<std::uint32_t>(k)).first != Plain::kNone);
    for (std::uint64_t k = 0; k < 150; ++k) {
        const bool held = k >= 100 || k % 2 == 1;
        const std::uint32_t at = find(t, k);
        REQUIRE((at != Plain::kNone) == held);
        if (held) CHECK(t[at] == k);
    }
}

TEST_CASE("LRU table index never grows under steady churn", "[core][lru]") {
    // Entries come and go at a steady count (the bindings of a steady number of calls: each
    // offer's replaced by its answer's). An erase leaves no tombstone, so whatever the count
    // (just under the load that doubles the index, or at the cap of a table whose cap is a power
    // of two), the index keeps its size and is never rebuilt.
    using Ints = LruTable<std::uint64_t, int, IntHash>;
    const IntHash key_hash;
    for (const std::size_t live :
         {std::size_t{255}, std::size_t{511}, std::size_t{1023}, std::size_t{1228}, std::size_t{4096}}) {
        Ints t(4096);
        std::uint64_t next = 0;
        for (; next < live; ++next) t.insert(next, 0);
        const std::uint64_t before = t.index_rebuilds();
        const std::size_t slots = t.index_slots();
        constexpr std::uint64_t kChurn = 100'000;
        for (std::uint64_t i = 0; i < kChurn; ++i, ++next) {
            if (t.size() == live) t.erase(t.oldest());  // at the cap, insert() would evict it just so
            t.insert(next, 0);
        }
        INFO("live entries " << live);
        CHECK(t.size() == live);
        CHECK(t.index_rebuilds() == before);
        CHECK(t.index_slots() == slots);
        for (std::uint64_t k = next - live; k < next; ++k)
            REQUIRE(t.find(key_hash(k), [&](std::uint64_t stored) { return stored == k; }) != Ints::kNone);
    }
}

namespace {
// Four home slots for every key, two of them at the end of a small index: long probe runs that
// wrap around, where an erase has the most to shift back. Every key has the same tag (the hash's
// low byte is 0), so every probe compares keys.
struct CrowdingHash {
    std::uint64_t operator()(std::uint64_t k) const noexcept {
        constexpr std::array<std::uint32_t, 4> kHomes{0xFE, 0xFF, 0x00, 0x7F};
        const std::uint32_t tag = static_cast<std::uint32_t>((k >> 2) << 8) | kHomes[k % 4];
        return std::uint64_t{tag} << 32;
    }
};
}  // namespace

TEST_CASE("LRU table erases without tombstones: crowded, wrapping probe runs stay findable", "[core][lru]") {
    using Crowded = LruTable<std::uint64_t, std::uint64_t, CrowdingHash>;
    const CrowdingHash key_hash;
    Crowded t(50);
    std::map<std::uint64_t, std::uint32_t> held;  // key -> entry index
    const auto find = [&](std::uint64_t k) {
        return t.find(key_hash(k), [&](std::uint64_t stored) { return stored == k; });
    };
    std::mt19937_64 rng(11);
    for (int op = 0; op < 200'000; ++op) {
        const std::uint64_t k = rng() % 120;
        const auto it = held.find(k);
        if (it == held.end()) {
            auto [at, evicted] = t.insert(k, k * 3);
            if (evicted) held.erase(evicted->key);
            held[k] = at;
        } else if (rng() % 2 == 0) {
            t.erase(it->second);
            held.erase(it);
        } else {
            t.touch(it->second);
        }
        if (op % 97 == 0) {
            REQUIRE(t.size() == held.size());
            for (std::uint64_t q = 0; q < 120; ++q) {
                const auto h = held.find(q);
                const std::uint32_t at = find(q);
                REQUIRE((at != Crowded::kNone) == (h != held.end()));
                if (h != held.end()) {
                    REQUIRE(at == h->second);
                    REQUIRE(t[at] == q * 3);
                }
            }
        }
    }
}

namespace {
// A key that keeps its home, as a dialog key does: the table then never hashes a stored key again.
struct HomedKey {
    std::uint64_t k = 0;
    std::uint32_t home = 0;
};
struct CountingHash {
    static inline std::uint64_t calls = 0;
    std::uint64_t operator()(const HomedKey& key) const noexcept {
        ++calls;
        return mix64(key.k);
    }
    static std::size_t home(const HomedKey& key) noexcept { return key.home; }
};
HomedKey homed(std::uint64_t k) { return HomedKey{k, static_cast<std::uint32_t>(mix64(k) >> 32)}; }
}  // namespace

TEST_CASE("LRU table places, erases and regrows a key that keeps its home without hashing it again", "[core][lru]") {
    using Homed = LruTable<HomedKey, int, CountingHash>;
    Homed t(20'000);
    CountingHash::calls = 0;
    for (std::uint64_t k = 0; k < 20'000; ++k) t.insert(homed(k), static_cast<int>(k));
    CHECK(t.index_rebuilds() >= 8);        // the index doubled from 16 slots on
    CHECK(CountingHash::calls == 20'000);  // once a key, at its insert
    for (std::uint64_t k = 0; k < 20'000; k += 2)
        t.erase(t.find(mix64(k), [&](const HomedKey& stored) { return stored.k == k; }));
    CHECK(CountingHash::calls == 20'000);  // erasing moved slots back by the homes kept
    for (std::uint64_t k = 0; k < 20'000; ++k) {
        const std::uint32_t at = t.find(mix64(k), [&](const HomedKey& stored) { return stored.k == k; });
        REQUIRE((at != Homed::kNone) == (k % 2 == 1));
        if (at != Homed::kNone) REQUIRE(t[at] == static_cast<int>(k));
    }
}

TEST_CASE("LRU table index holds a growing table at a load of 2/5 to 4/5", "[core][lru]") {
    // The index is most of a small entry's cost: 4 bytes a slot, so 5 to 10 bytes a live entry.
    using Ints = LruTable<std::uint64_t, int, IntHash>;
    const IntHash key_hash;
    Ints t(300'000);
    for (std::uint64_t k = 0; k < 300'000; ++k) {
        t.insert(k, 0);
        if (t.size() >= 64) {
            REQUIRE(t.size() * 5 < t.index_slots() * 4);
            REQUIRE(t.size() * 5 >= t.index_slots() * 2);  // just after a doubling: 2/5
        }
    }
    // 200,000 live entries (two streams of each of 100,000 calls) fit 262,144 slots: 5.2 bytes each.
    Ints streams(200'000);
    for (std::uint64_t k = 0; k < 200'000; ++k) streams.insert(k, 0);
    CHECK(streams.index_slots() == 262'144);
    for (std::uint64_t k = 0; k < 300'000; k += 997)
        REQUIRE(t.find(key_hash(k), [&](std::uint64_t stored) { return stored == k; }) != Ints::kNone);
}

namespace {
// A value whose class is its first member: 0 is evicted first.
struct Classed {
    std::size_t cls = 0;
    int id = 0;
};
struct ByClass {
    static constexpr std::size_t kCount = 3;
    static constexpr std::size_t of(const Classed& v) noexcept { return v.cls; }
};
using ClassedTable = LruTable<std::uint64_t, Classed, IntHash, true, ByClass>;
std::uint32_t find(const ClassedTable& t, std::uint64_t k) {
    return t.find(mix64(k), [&](std::uint64_t stored) { return stored == k; });
}
std::vector<std::uint64_t> keys_in_order(const ClassedTable& t) {
    std::vector<std::uint64_t> keys;
    t.for_each([&](std::uint32_t, const ClassedTable::Entry& e) { keys.push_back(e.key); });
    return keys;
}
}  // namespace

TEST_CASE("LRU table with recency classes evicts the lowest class first, each least recent first", "[core][lru]") {
    // The classes cost no byte an entry.
    static_assert(sizeof(ClassedTable::Entry) == sizeof(LruTable<std::uint64_t, Classed, IntHash>::Entry));
    ClassedTable t(6);
    // Keys 1..6 with classes 2, 1, 0, 2, 1, 0.
    for (std::uint64_t k = 1; k <= 6; ++k)
        REQUIRE_FALSE(t.insert(k, Classed{(3 - k % 3) % 3, static_cast<int>(k)}).second);
    CHECK(keys_in_order(t) == std::vector<std::uint64_t>{3, 6, 2, 5, 1, 4});
    CHECK(t.oldest() == find(t, 3));
    t.touch(find(t, 3));  // the most recent of class 0 now
    CHECK(keys_in_order(t) == std::vector<std::uint64_t>{6, 3, 2, 5, 1, 4});

    // A value that changed class moves to that class's list when touched.
    t[find(t, 1)].cls = 0;
    CHECK(keys_in_order(t) == std::vector<std::uint64_t>{6, 3, 2, 5, 1, 4});  // untouched: still where it was
    t.touch(find(t, 1));
    CHECK(keys_in_order(t) == std::vector<std::uint64_t>{6, 3, 1, 2, 5, 4});
    t[find(t, 5)].cls = 2;
    t.touch(find(t, 5));
    CHECK(keys_in_order(t) == std::vector<std::uint64_t>{6, 3, 1, 2, 4, 5});

    // New entries of the highest class evict the lower classes first, then their own oldest.
    std::vector<std::uint64_t> evicted;
    for (std::uint64_t k = 7; k <= 12; ++k) {
        auto [at, gone] = t.insert(k, Classed{2, static_cast<int>(k)});
        REQUIRE(gone);
        evicted.push_back(gone->key);
        CHECK(t.size() == 6);
        CHECK(t.contains(at));
    }
    CHECK(evicted == std::vector<std::uint64_t>{6, 3, 1, 2, 4, 5});
    CHECK(keys_in_order(t) == std::vector<std::uint64_t>{7, 8, 9, 10, 11, 12});
    for (std::uint64_t k = 1; k <= 6; ++k) CHECK(find(t, k) == ClassedTable::kNone);
}

TEST_CASE("LRU table with recency classes agrees with a reference model under random churn", "[core][lru]") {
    constexpr std::size_t kCap = 150;
    ClassedTable t(kCap);
    std::map<std::uint64_t, std::pair<std::size_t, long>> model;  // key -> (class, last use)
    long now = 0;
    std::mt19937 rng(11);
    for (int step = 0; step < 60'000; ++step) {
        const std::uint64_t k = rng() % 500;
        ++now;
        const auto at = find(t, k);
        if (at != ClassedTable::kNone) {
            REQUIRE(model.count(k) == 1);
            REQUIRE(t.contains(at));
            const auto roll = rng() % 8;
            if (roll == 0) {
                t.erase(at);
                REQUIRE_FALSE(t.contains(at));
                model.erase(k);
            } else {
                if (roll == 1) t[at].cls = rng() % 3;  // a change of class, then the touch that moves it
                t.touch(at);
                model[k] = {t[at].cls, now};
            }
        } else {
            REQUIRE(model.count(k) == 0);
            const std::size_t cls = rng() % 3;
            auto [in, gone] = t.insert(k, Classed{cls, step});
            if (model.size() == kCap) {
                REQUIRE(gone);
                // The victim: the lowest class, and in it the key used longest ago.
                const auto victim = std::min_element(model.begin(), model.end(),
                                                     [](const auto& a, const auto& b) { return a.second < b.second; });
                REQUIRE(gone->key == victim->first);
                model.erase(victim);
            } else {
                REQUIRE_FALSE(gone);
            }
            model[k] = {cls, now};
        }
        REQUIRE(t.size() == model.size());
    }
    // A walk visits every entry once, by class then recency, as the model orders them.
    std::vector<std::pair<std::pair<std::size_t, long>, std::uint64_t>> expected;
    expected.reserve(model.size());
    for (const auto& [k, v] : model) expected.emplace_back(v, k);
    std::sort(expected.begin(), expected.end());
    std::vector<std::uint64_t> expected_keys;
    expected_keys.reserve(expected.size());
    for (const auto& e : expected) expected_keys.push_back(e.second);
    CHECK(keys_in_order(t) == expected_keys);
    // erase_if walks the lists the same way and leaves them whole.
    const auto n =
        t.erase_if([](const ClassedTable::Entry& e) { return e.value.cls == 1; }, [](const ClassedTable::Entry&) {});
    std::vector<std::uint64_t> kept;
    for (const auto k : expected_keys)
        if (model[k].first != 1) kept.push_back(k);
    CHECK(n == expected_keys.size() - kept.size());
    CHECK(keys_in_order(t) == kept);
}
