// The pipeline's batch memory: lowest index first, and the pages a burst touched go back to
// the kernel once the deep batches have been idle (issue 13's soak: RSS followed the deepest
// queue ever reached).
#include "shard/batch.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <fstream>
#include <vector>

using namespace hepd;
using namespace hepd::shard;

namespace {

constexpr std::size_t kArenaBytes = 64 * 1024;

// Resident set of this process, from /proc/self/statm (in pages).
std::size_t resident_bytes() {
    std::ifstream statm("/proc/self/statm");
    std::size_t size = 0, resident = 0;
    statm >> size >> resident;
    REQUIRE(statm);
    return resident * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

// Writes every byte of the batch's arena, as a full batch does.
void fill(Batch& b, const std::vector<std::uint8_t>& bytes) {
    Datagram d;
    d.payload = ByteSpan(bytes.data(), bytes.size());
    REQUIRE(b.add(d));
}

}  // namespace

TEST_CASE("batch pool hands out the lowest free batch", "[shard][batch]") {
    const ManualClock clock;
    BatchPool pool(16, 4, 1024, 0, clock);
    std::vector<Batch*> taken;
    for (int i = 0; i < 5; ++i) taken.push_back(pool.acquire());
    pool.put_back(taken[3]);
    pool.put_back(taken[1]);
    CHECK(pool.acquire() == taken[1]);
    CHECK(pool.acquire() == taken[3]);
    Batch* next = pool.acquire();
    CHECK(next != taken[4]);
    CHECK(pool.resident_batches() == 6);
    for (int i = 6; i < 16; ++i) CHECK(pool.acquire() != nullptr);
    CHECK(pool.acquire() == nullptr);  // all in flight
}

TEST_CASE("batch pool gives a burst's pages back once the deep batches are idle", "[shard][batch]") {
    constexpr std::size_t kBurst = 200;  // 12.5 MiB of arena
    ManualClock clock;
    BatchPool pool(256, 4, kArenaBytes, 0, clock);
    const std::vector<std::uint8_t> payload(kArenaBytes, 0xab);

    const std::size_t before = resident_bytes();
    std::vector<Batch*> burst;
    for (std::size_t i = 0; i < kBurst; ++i) {
        burst.push_back(pool.acquire());
        fill(*burst.back(), payload);
    }
    const std::size_t during = resident_bytes();
    CHECK(during - before >= kBurst * kArenaBytes * 9 / 10);
    for (Batch* b : burst) {
        b->clear();
        pool.put_back(b);
    }
    CHECK(pool.resident_batches() == kBurst);

    // Steady traffic afterwards uses batch 0 only; the deep ones stay resident until they
    // have been idle for the whole delay.
    auto cycle = [&] {
        Batch* b = pool.acquire();
        REQUIRE(b == burst[0]);
        fill(*b, payload);
        b->clear();
        pool.put_back(b);
    };
    cycle();
    clock.advance_us(BatchPool::kIdleReleaseUs - 1);
    cycle();
    CHECK(pool.resident_batches() == kBurst);

    // A deep batch used again restarts the delay.
    Batch* deep = nullptr;
    std::vector<Batch*> held;
    for (std::size_t i = 0; i <= BatchPool::kAlwaysResident; ++i) held.push_back(pool.acquire());
    deep = held.back();
    CHECK(deep == burst[BatchPool::kAlwaysResident]);
    for (Batch* b : held) pool.put_back(b);
    clock.advance_us(2);
    cycle();
    clock.advance_us(BatchPool::kIdleReleaseUs - 1);
    cycle();
    CHECK(pool.resident_batches() == kBurst);

    clock.advance_us(1);
    cycle();
    CHECK(pool.resident_batches() == BatchPool::kAlwaysResident);
    const std::size_t after = resident_bytes();
    CHECK(during - after >= (kBurst - BatchPool::kAlwaysResident) * kArenaBytes * 9 / 10);

    // Released batches are usable again: their memory is simply fresh.
    std::vector<Batch*> again;
    for (std::size_t i = 0; i < kBurst; ++i) {
        again.push_back(pool.acquire());
        fill(*again.back(), payload);
        CHECK(again.back()->datagrams()[0].payload[kArenaBytes - 1] == 0xab);
    }
    CHECK(pool.resident_batches() == kBurst);
}
