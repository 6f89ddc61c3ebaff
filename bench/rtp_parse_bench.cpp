// RTP/RTCP parser costs on the per-packet path: one G.711 packet (12-octet header + 160 octets of
// 20 ms A-law), demultiplexing, and the RTCP shapes VoIP endpoints actually send.
#include "rtp/demux.hpp"
#include "rtp/rtcp_json.hpp"
#include "rtp/rtcp_packet.hpp"
#include "rtp/rtp_packet.hpp"

#include <benchmark/benchmark.h>

#include <cstdint>
#include <string_view>
#include <vector>

using namespace hepd;
using namespace hepd::rtp;

namespace {

std::vector<std::uint8_t> g711_packet() {
    std::vector<std::uint8_t> p{0x80, 0x08, 0xe6, 0xfd, 0x00, 0x00, 0x00, 0xf0, 0xde, 0xe0, 0xee, 0x8f};
    p.resize(12 + 160, 0xd5);
    return p;
}

const std::vector<std::uint8_t> sr_sdes{
    // clang-format off
    0x81, 0xc8, 0x00, 0x0c, 0x11, 0x22, 0x33, 0x44, 0x83, 0xaa, 0x7e, 0x80, 0x80, 0x00, 0x00, 0x00,
    0x00, 0x00, 0xa0, 0x00, 0x00, 0x00, 0x00, 0x64, 0x00, 0x00, 0x3e, 0x80, 0x55, 0x66, 0x77, 0x88,
    0x40, 0x00, 0x00, 0x05, 0x00, 0x01, 0x00, 0x10, 0x00, 0x00, 0x00, 0x2a, 0xb7, 0x05, 0x20, 0x00,
    0x00, 0x05, 0x40, 0x00,
    0x81, 0xca, 0x00, 0x04, 0x11, 0x22, 0x33, 0x44, 0x01, 0x09, 'u', 's', 'e', 'r', '@', 'h', 'o', 's', 't', 0x00,
    // clang-format on
};

const std::vector<std::uint8_t> rr_two_blocks{
    // clang-format off
    0x82, 0xc9, 0x00, 0x0d, 0xde, 0xad, 0xbe, 0xef, 0x00, 0x00, 0x00, 0x01, 0x19, 0x00, 0x00, 0x0a,
    0x00, 0x00, 0xf0, 0x00, 0x00, 0x00, 0x00, 0x10, 0xb7, 0x05, 0x20, 0x00, 0x00, 0x05, 0x40, 0x00,
    0x00, 0x00, 0x00, 0x02, 0x00, 0xff, 0xff, 0xff, 0x00, 0x02, 0x00, 0x05, 0x00, 0x00, 0x01, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    // clang-format on
};

const std::vector<std::uint8_t> xr_voip{
    // clang-format off
    0x80, 0xcf, 0x00, 0x0a, 0x11, 0x22, 0x33, 0x44, 0x07, 0x00, 0x00, 0x08, 0x55, 0x66, 0x77, 0x88,
    0x0d, 0x03, 0x80, 0x02, 0x00, 0x64, 0x13, 0x88, 0x00, 0x32, 0x00, 0x78, 0xec, 0xb0, 0x1e, 0x10,
    0x5a, 0x7f, 0x29, 0x27, 0xb5, 0x00, 0x00, 0x28, 0x00, 0x50, 0x00, 0xc8,
    // clang-format on
};

ByteSpan span_of(const std::vector<std::uint8_t>& v) { return {v.data(), v.size()}; }

void BM_parse_rtp_g711(benchmark::State& state) {
    const auto packet = g711_packet();
    ByteSpan bytes = span_of(packet);
    for (auto _ : state) {
        benchmark::DoNotOptimize(bytes);
        const auto r = parse_rtp(bytes);
        std::uint64_t v = r.ok() ? r->sequence + r->timestamp + r->ssrc + r->payload.size() + r->payload_type : 0;
        benchmark::DoNotOptimize(v);
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * packet.size()));
}
BENCHMARK(BM_parse_rtp_g711);

void BM_classify(benchmark::State& state) {
    const auto rtp = g711_packet();
    const std::vector<ByteSpan> inputs{span_of(rtp), span_of(sr_sdes), span_of(xr_voip)};
    std::size_t i = 0;
    for (auto _ : state) {
        ByteSpan bytes = inputs[i];
        benchmark::DoNotOptimize(bytes);
        benchmark::DoNotOptimize(classify(bytes));
        i = i == 2 ? 0 : i + 1;
    }
}
BENCHMARK(BM_classify);

void BM_parse_rtcp_sr_sdes(benchmark::State& state) {
    ByteSpan bytes = span_of(sr_sdes);
    for (auto _ : state) {
        benchmark::DoNotOptimize(bytes);
        std::uint64_t v = 0;
        const auto compound = parse_rtcp(bytes);
        if (compound) {
            for (const RtcpPacket packet : *compound) {
                if (packet.type == RtcpType::sr) {
                    if (const auto sr = parse_sender_report(packet)) {
                        v += sr->sender_info.ntp_timestamp;
                        for (const ReportBlock block : sr->report_blocks)
                            v += block.last_sr + static_cast<std::uint32_t>(block.cumulative_lost);
                    }
                } else if (packet.type == RtcpType::sdes) {
                    if (const auto sdes = parse_sdes(packet))
                        for (const SdesChunk chunk : *sdes) v += chunk.cname().size();
                }
            }
        }
        benchmark::DoNotOptimize(v);
    }
}
BENCHMARK(BM_parse_rtcp_sr_sdes);

void BM_parse_rtcp_rr_two_blocks(benchmark::State& state) {
    ByteSpan bytes = span_of(rr_two_blocks);
    for (auto _ : state) {
        benchmark::DoNotOptimize(bytes);
        std::uint64_t v = 0;
        if (const auto compound = parse_rtcp(bytes)) {
            if (const auto rr = parse_receiver_report(*compound->begin()))
                for (const ReportBlock block : rr->report_blocks) v += block.jitter + block.fraction_lost;
        }
        benchmark::DoNotOptimize(v);
    }
}
BENCHMARK(BM_parse_rtcp_rr_two_blocks);

void BM_parse_rtcp_xr_voip(benchmark::State& state) {
    ByteSpan bytes = span_of(xr_voip);
    for (auto _ : state) {
        benchmark::DoNotOptimize(bytes);
        std::uint64_t v = 0;
        if (const auto compound = parse_rtcp(bytes)) {
            if (const auto xr = parse_xr(*compound->begin()))
                for (const XrBlock block : *xr)
                    if (const auto m = parse_voip_metrics(block)) v += m->mos_lq_x10 + m->r_factor + m->jb_nominal_ms;
        }
        benchmark::DoNotOptimize(v);
    }
}
BENCHMARK(BM_parse_rtcp_xr_voip);

// RTCP as HEP RTCP-JSON (payload type 5): the receiver report rtpengine sends, as bench/hepd_load
// replays it, and Asterisk's sender report with its numbers as strings.
constexpr std::string_view rtpengine_rr_json =
    R"({ "ssrc":3047531941,"type":201,"report_count":1,"report_blocks":[{"source_ssrc":268435456,)"
    R"("highest_seq_no":65749,"fraction_lost":0,"ia_jitter":0,"packets_lost":0,"lsr":0,"dlsr":0}]})";
constexpr std::string_view asterisk_sr_json =
    R"({"ssrc":-713680174,"type":200,"report_count":1,"sender_information":{"ntp_timestamp_sec":"1790000000",)"
    R"("ntp_timestamp_usec":"250000","rtp_timestamp":160000,"packets":1000,"octets":160000},"report_blocks":[)"
    R"({"source_ssrc":287454020,"fraction_lost":0,"packets_lost":0,"highest_seq_no":65800,"ia_jitter":17,)"
    R"("lsr":"3070566400","dlsr":65536}]})";

void parse_json(benchmark::State& state, std::string_view text) {
    for (auto _ : state) {
        benchmark::DoNotOptimize(text);
        const auto report = parse_rtcp_json(text);
        benchmark::DoNotOptimize(report.ok() ? report.value().blocks[0].ia_jitter : 0U);
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * text.size()));
}
void BM_parse_rtcp_json_rtpengine_rr(benchmark::State& state) { parse_json(state, rtpengine_rr_json); }
BENCHMARK(BM_parse_rtcp_json_rtpengine_rr);
void BM_parse_rtcp_json_asterisk_sr(benchmark::State& state) { parse_json(state, asterisk_sr_json); }
BENCHMARK(BM_parse_rtcp_json_asterisk_sr);

}  // namespace
