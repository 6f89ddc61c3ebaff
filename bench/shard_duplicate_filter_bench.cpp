// Per-packet cost of the shards' duplicate filter: the fingerprint of a datagram (RTP-sized and
// SIP-sized payloads), and the whole check with as many packets inside the window as a busy
// shard holds, for packets sent by one agent (every lookup a miss, then an insert) and for
// packets mirrored by a second agent (every other lookup a hit).
#include "core/bytes.hpp"
#include "shard/duplicate_filter.hpp"

#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

using namespace hepd;
using namespace hepd::shard;

namespace {

constexpr std::int64_t kStartUs = 1'700'000'000'000'000;
constexpr std::int64_t kWindowUs = 50'000;

struct Packets {
    std::vector<std::vector<std::uint8_t>> bytes;
    std::vector<Datagram> datagrams;
};

// `n` RTP-like packets of `size` octets on 1000 address pairs, `per_window` of them per window.
Packets make_packets(std::size_t n, std::size_t size, std::size_t per_window) {
    Packets p;
    p.bytes.resize(n);
    p.datagrams.resize(n);
    const std::int64_t step = kWindowUs / static_cast<std::int64_t>(per_window);
    for (std::size_t i = 0; i < n; ++i) {
        auto& b = p.bytes[i];
        b.assign(size, 0xd5);
        b[0] = 0x80;
        b[1] = 8;
        store_be16(&b[2], static_cast<std::uint16_t>(i));
        store_be32(&b[4], static_cast<std::uint32_t>(i * 160));
        store_be32(&b[8], static_cast<std::uint32_t>(0x1000 + i % 1000));
        Datagram& d = p.datagrams[i];
        d.time = Timestamp{kStartUs + static_cast<std::int64_t>(i) * step};
        d.src = Endpoint{IpAddress::v4(static_cast<std::uint32_t>(0x0a000000U + i % 1000)), 20000};
        d.dst = Endpoint{IpAddress::v4(0xc0a80001U), static_cast<std::uint16_t>(30000 + 2 * (i % 1000))};
        d.kind = PayloadClass::rtp;
        d.capture_id = 1;
        d.payload = ByteSpan(b.data(), b.size());
    }
    return p;
}

void BM_duplicate_key(benchmark::State& state) {
    const Packets p = make_packets(1024, static_cast<std::size_t>(state.range(0)), 1000);
    std::size_t i = 0;
    for (auto _ : state) {
        benchmark::DoNotOptimize(duplicate_key(p.datagrams[i]));
        i = (i + 1) & 1023;
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_duplicate_key)->Arg(172)->Arg(1000);

// One agent: every packet new. range(0): packets inside one window (the table is the default
// 16384 entries, "twice the packets of a window" at 8192).
void BM_filter_one_agent(benchmark::State& state) {
    const std::size_t n = 1 << 18;
    const Packets p = make_packets(n, 172, static_cast<std::size_t>(state.range(0)));
    DuplicateFilter filter{DuplicateFilterConfig{}};
    std::size_t i = 0;
    std::int64_t lap = 0;  // moves time on at each wrap, so that every packet is new again
    for (auto _ : state) {
        Datagram d = p.datagrams[i];
        d.time.us += lap;
        benchmark::DoNotOptimize(filter.is_duplicate(d));
        if (++i == n) {
            i = 0;
            lap += 3'600'000'000;
        }
    }
    state.SetItemsProcessed(state.iterations());
    state.counters["evictions_per_packet"] =
        static_cast<double>(filter.stats().evictions.value()) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_filter_one_agent)->Arg(1000)->Arg(4000)->Arg(8000);

// Two agents: each packet, then the second agent's copy 300 us later (dropped).
void BM_filter_two_agents(benchmark::State& state) {
    const std::size_t n = 1 << 18;
    const Packets p = make_packets(n, 172, static_cast<std::size_t>(state.range(0)));
    DuplicateFilter filter{DuplicateFilterConfig{}};
    std::size_t i = 0;
    std::int64_t lap = 0;
    bool copy = false;
    for (auto _ : state) {
        Datagram d = p.datagrams[i];
        d.time.us += lap;
        if (copy) {
            d.capture_id = 2;
            d.time.us += 300;
        }
        benchmark::DoNotOptimize(filter.is_duplicate(d));
        copy = !copy;
        if (!copy && ++i == n) {
            i = 0;
            lap += 3'600'000'000;
        }
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_filter_two_agents)->Arg(1000)->Arg(4000);

}  // namespace
