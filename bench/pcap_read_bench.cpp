// Offline input throughput in frames per second over the generated corpus (bench/gen defaults:
// 5,000 calls, 535,000 packets, classic pcap on Ethernet), from a warm page cache:
//   record_walk   - FileReader::next only (what each shard would pay to walk the file itself)
//   walk_decode   - + decode_frame_into (L2-L4)
//   capture       - the full CaptureSource: decode, classify, datagrams to a sink
//   capture_split - N walkers over clones of one mapping, each keeping every Nth frame: the
//                   per-walker cost of the "every shard walks the file" mode (run one at a time)
#include "gen/call_generator.hpp"
#include "gen/pcap_writer.hpp"
#include "pcap/capture_source.hpp"
#include "pcap/reader.hpp"

#include <benchmark/benchmark.h>

#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>

using namespace hepd;
using namespace hepd::pcap;

namespace {

const std::string& corpus_path() {
    static const std::string path = [] {
        const auto p = (std::filesystem::temp_directory_path() / "hepd_pcap_read_bench.pcap").string();
        gen::PcapWriter out(p);
        gen::generate(gen::CorpusOptions{}, [&](Timestamp t, const Endpoint& s, const Endpoint& d, ByteSpan payload) {
            out.udp(t, s, d, payload);
        });
        return p;
    }();
    return path;
}

FileReader& corpus() {
    static FileReader reader = [] {
        auto r = FileReader::open(corpus_path());
        if (!r) throw std::runtime_error("cannot open the benchmark corpus");
        return std::move(r.value());
    }();
    return reader;
}

void record_walk(benchmark::State& state) {
    std::uint64_t frames = 0;
    for (auto _ : state) {
        FileReader r = corpus().clone();
        Frame f;
        std::size_t bytes = 0;
        while (r.next(f)) {
            bytes += f.data.size();
            ++frames;
        }
        benchmark::DoNotOptimize(bytes);
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(frames));
}

void walk_decode(benchmark::State& state) {
    std::uint64_t frames = 0;
    for (auto _ : state) {
        FileReader r = corpus().clone();
        Frame f;
        L4Packet p;
        std::size_t ok = 0;
        while (r.next(f)) {
            ok += decode_frame_into(f, p) == DecodeError::none ? p.payload.size() : 0;
            ++frames;
        }
        benchmark::DoNotOptimize(ok);
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(frames));
}

void capture(benchmark::State& state) {
    std::uint64_t frames = 0;
    std::uint64_t datagrams = 0;
    for (auto _ : state) {
        FileReader r = corpus().clone();
        CaptureSource source;
        std::size_t sum = 0;
        source.read(r, [&](const shard::Datagram& d) { sum += d.payload.size(); });
        const CaptureStats s = source.stats();
        frames += s.frames;
        datagrams += s.datagrams;
        benchmark::DoNotOptimize(sum);
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(frames));
    state.counters["datagrams_per_frame"] = static_cast<double>(datagrams) / static_cast<double>(frames);
}

// One of N walkers: walks every record, decodes and delivers only its share (frame index mod N).
void capture_split(benchmark::State& state) {
    const auto n = static_cast<std::uint64_t>(state.range(0));
    std::uint64_t walked = 0;
    for (auto _ : state) {
        FileReader r = corpus().clone();
        CaptureSource source;
        Frame f;
        std::uint64_t index = 0;
        std::size_t sum = 0;
        auto sink = [&](const shard::Datagram& d) { sum += d.payload.size(); };
        while (r.next(f)) {
            if (index++ % n == 0) source.process(f, sink);
        }
        walked += index;
        benchmark::DoNotOptimize(sum);
    }
    // Frames of the whole file per second for one walker: the file rate N walkers could sustain.
    state.SetItemsProcessed(static_cast<std::int64_t>(walked));
}

}  // namespace

BENCHMARK(record_walk)->Unit(benchmark::kMillisecond);
BENCHMARK(walk_decode)->Unit(benchmark::kMillisecond);
BENCHMARK(capture)->Unit(benchmark::kMillisecond);
BENCHMARK(capture_split)->Arg(2)->Arg(4)->Unit(benchmark::kMillisecond);
