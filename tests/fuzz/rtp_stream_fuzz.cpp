// Drives a small stream table with a script of operations read from the input (RTP as bytes and
// as fields, raw RTCP, RTCP-JSON, bindings, expiry) and checks after every step that the gauges
// agree with the tables, and at the end that every started stream finished exactly once.
#include "core/media_binding.hpp"
#include "core/packet_meta.hpp"
#include "rtp/rtp_packet.hpp"
#include "rtp/stream_table.hpp"

#include <spdlog/spdlog.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace {

void require(bool condition) {
    if (!condition) __builtin_trap();
}

struct Input {
    const std::uint8_t* p;
    std::size_t left;
    bool take(std::uint8_t& out) {
        if (left == 0) return false;
        out = *p++;
        --left;
        return true;
    }
    bool take_span(hepd::ByteSpan& out) {
        std::uint8_t n = 0;
        if (!take(n)) return false;
        const std::size_t size = n < left ? n : left;
        out = hepd::ByteSpan(p, size);
        p += size;
        left -= size;
        return true;
    }
};

hepd::Endpoint endpoint(std::uint8_t i) {
    static const std::array<std::uint32_t, 2> hosts{0x0a000001U, 0x0a000002U};
    return hepd::Endpoint{hepd::IpAddress::v4(hosts[(i >> 1) & 1]), static_cast<std::uint16_t>(1000 + (i & 3))};
}

void check(const hepd::rtp::StreamTable& t) {
    const auto& s = t.stats();
    require(s.streams_active.value() == static_cast<std::int64_t>(t.size()));
    require(s.pending_bindings.value() == static_cast<std::int64_t>(t.pending_size()));
    require(s.reported_streams_active.value() == static_cast<std::int64_t>(t.reported_size()));
    require(t.media_size() <= t.size() + t.bindings_size());
    require(t.size() <= t.config().max_streams);
    require(t.pending_size() <= t.config().max_pending_media);
    require(t.reported_size() <= t.config().max_reported_streams);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace hepd;
    using namespace hepd::rtp;
    static const std::array<std::string_view, 3> call_ids{"a@x", "b@x", ""};
    static const bool quiet = [] {  // degraded-mode log lines would drown the fuzzer's output
        spdlog::set_level(spdlog::level::off);
        return true;
    }();
    (void)quiet;

    StreamTableConfig config;
    config.max_streams = 4;
    config.max_pending_media = 2;
    config.max_reported_streams = 2;
    config.stream_idle_timeout_us = 1'000'000;
    config.pending_media_timeout_us = 5'000'000;
    StreamTable table(config);

    Input in{data, size};
    std::int64_t now = 1'700'000'000'000'000;
    for (std::uint8_t op = 0; in.take(op);) {
        std::uint8_t a = 0;
        std::uint8_t b = 0;
        if (!in.take(a) || !in.take(b)) break;
        now += (op >> 3) * 997;
        const PacketMeta meta{Timestamp{now}, endpoint(a), endpoint(b), 0};
        ByteSpan bytes;
        switch (op % 6) {
        case 0:
            if (!in.take_span(bytes)) break;
            table.on_rtp(meta, bytes);
            break;
        case 1:
            if (!in.take_span(bytes)) break;
            table.on_rtcp(meta, bytes);
            break;
        case 2:
            if (!in.take_span(bytes)) break;
            table.on_rtcp_json(meta, call_ids[a % 3], bytes);
            break;
        case 3: {
            MediaBinding binding;
            binding.media = endpoint(a);
            binding.time = Timestamp{now - (b & 0x0f) * 1000};
            binding.call_id = call_ids[b % 3];
            binding.codec_count = static_cast<std::uint8_t>(b % 3);
            for (std::size_t i = 0; i < binding.codec_count; ++i) {
                binding.codecs[i].payload_type = static_cast<std::uint8_t>(96 + a % 3 + i);
                binding.codecs[i].clock_rate = (b & 0x80) != 0 ? 48000 : 44100;
                binding.codecs[i].set_name(i == 0 ? "opus" : "telephone-event");
            }
            table.bind(binding);
            break;
        }
        case 4: table.expire(Timestamp{now}); break;
        default: {
            std::uint8_t seq_hi = 0;
            std::uint8_t ts = 0;
            if (!in.take(seq_hi) || !in.take(ts)) break;
            static const std::array<std::uint8_t, 64> payload{};
            RtpPacket p;
            p.payload_type = static_cast<std::uint8_t>(a & 0x7f);
            p.sequence = static_cast<std::uint16_t>((seq_hi << 8) | b);
            p.timestamp = static_cast<std::uint32_t>(ts) * 160U;
            p.ssrc = a & 3U;
            p.marker = (op & 0x40) != 0;
            p.payload = ByteSpan(payload.data(), (b & 1) != 0 ? 4 : 40);
            table.on_rtp(meta, p);
            break;
        }
        }
        check(table);
    }
    table.finish_all(Timestamp{now});
    check(table);
    const auto& s = table.stats();
    require(s.streams_active.value() == 0);
    require(s.streams_started.value() == s.streams_finished_total());
    require(s.mos.count() <= s.streams_finished_total());
    return 0;
}
