// Per-packet cost of the stream table: an RTP datagram parsed and accounted to its stream with
// many streams alive (round robin, so every packet touches a different stream, as on a busy
// shard), the same without the parse, with a dynamic payload type (four candidate clocks), and
// the cost of a new stream at the cap (evicting one). Counters report memory per stream.
#include "core/bytes.hpp"
#include "core/packet_meta.hpp"
#include "rtp/rtp_packet.hpp"
#include "rtp/stream_table.hpp"

#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

using namespace hepd;
using namespace hepd::rtp;

namespace {

constexpr std::int64_t kStartUs = 1'700'000'000'000'000;

struct Flow {
    PacketMeta meta;
    std::vector<std::uint8_t> bytes;  // 12-octet header + 160 octets (20 ms of G.711)
    std::uint16_t seq = 0;
    std::uint32_t timestamp = 0;
};

std::vector<Flow> make_flows(std::size_t n, std::uint8_t pt) {
    std::vector<Flow> flows(n);
    for (std::size_t i = 0; i < n; ++i) {
        Flow& f = flows[i];
        const auto host = static_cast<std::uint32_t>(0x0a000000U + i);
        f.meta.src = Endpoint{IpAddress::v4(host), static_cast<std::uint16_t>(20000 + 2 * (i % 1000))};
        f.meta.dst = Endpoint{IpAddress::v4(0xc0a80001U), static_cast<std::uint16_t>(30000 + 2 * i)};
        f.meta.time = Timestamp{kStartUs};
        f.bytes.assign(12 + 160, 0xd5);
        f.bytes[0] = 0x80;
        f.bytes[1] = pt;
        store_be32(&f.bytes[8], static_cast<std::uint32_t>(0x1000 + i));
        f.seq = static_cast<std::uint16_t>(i * 7);
    }
    return flows;
}

StreamTableConfig config_for(std::size_t streams) {
    StreamTableConfig c;
    c.max_streams = static_cast<std::uint32_t>(streams);
    c.max_pending_media = static_cast<std::uint32_t>(streams);
    return c;
}

// Advances a flow by one 20 ms packet, with a little deterministic jitter.
void next_packet(Flow& f, std::uint32_t step) {
    ++f.seq;
    f.timestamp += step;
    f.meta.time.us += 20'000 + ((f.seq * 2654435761U) >> 28);
    store_be16(&f.bytes[2], f.seq);
    store_be32(&f.bytes[4], f.timestamp);
}

void report_memory(benchmark::State& state, const StreamTable& table) {
    state.counters["bytes_per_stream"] =
        benchmark::Counter(static_cast<double>(table.memory_bytes()) / static_cast<double>(table.size()));
    state.counters["sizeof_stream_entry"] = benchmark::Counter(static_cast<double>(StreamTable::entry_sizes().stream));
}

void BM_parse_and_account(benchmark::State& state) {
    const auto n = static_cast<std::size_t>(state.range(0));
    auto flows = make_flows(n, 8);
    StreamTable table(config_for(n));
    for (Flow& f : flows) {  // warm up: every stream exists and is validated
        for (int k = 0; k < 3; ++k) {
            next_packet(f, 160);
            table.on_rtp(f.meta, ByteSpan(f.bytes.data(), f.bytes.size()));
        }
    }
    std::size_t i = 0;
    for (auto _ : state) {
        Flow& f = flows[i];
        next_packet(f, 160);
        table.on_rtp(f.meta, ByteSpan(f.bytes.data(), f.bytes.size()));
        if (++i == n) i = 0;
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
    report_memory(state, table);
    if (table.size() != n) state.SkipWithError("streams were evicted");
}
BENCHMARK(BM_parse_and_account)->Arg(1)->Arg(1000)->Arg(100'000);

void BM_account_parsed(benchmark::State& state) {
    const auto n = static_cast<std::size_t>(state.range(0));
    auto flows = make_flows(n, 8);
    std::vector<RtpPacket> packets(n);
    StreamTable table(config_for(n));
    for (std::size_t k = 0; k < n; ++k) {
        packets[k] = *parse_rtp(ByteSpan(flows[k].bytes.data(), flows[k].bytes.size()));
        table.on_rtp(flows[k].meta, packets[k]);
    }
    std::size_t i = 0;
    for (auto _ : state) {
        Flow& f = flows[i];
        RtpPacket& p = packets[i];
        ++p.sequence;
        p.timestamp += 160;
        f.meta.time.us += 20'000;
        table.on_rtp(f.meta, p);
        if (++i == n) i = 0;
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}
BENCHMARK(BM_account_parsed)->Arg(1000);

void BM_parse_and_account_dynamic_pt(benchmark::State& state) {
    const auto n = static_cast<std::size_t>(state.range(0));
    auto flows = make_flows(n, 111);  // Opus with no binding: four clock candidates
    StreamTable table(config_for(n));
    std::size_t i = 0;
    for (auto _ : state) {
        Flow& f = flows[i];
        next_packet(f, 960);
        table.on_rtp(f.meta, ByteSpan(f.bytes.data(), f.bytes.size()));
        if (++i == n) i = 0;
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}
BENCHMARK(BM_parse_and_account_dynamic_pt)->Arg(1000);

void BM_new_stream_at_cap(benchmark::State& state) {
    StreamTable table(config_for(1000));
    auto flows = make_flows(1, 8);
    Flow& f = flows[0];
    std::uint32_t ssrc = 0;
    for (auto _ : state) {
        store_be32(&f.bytes[8], ++ssrc);  // a new stream every packet; the oldest is evicted
        next_packet(f, 160);
        table.on_rtp(f.meta, ByteSpan(f.bytes.data(), f.bytes.size()));
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
    state.counters["evictions"] = benchmark::Counter(
        static_cast<double>(table.stats().evictions[static_cast<std::size_t>(StreamTableKind::streams)].value()));
}
BENCHMARK(BM_new_stream_at_cap);

}  // namespace
