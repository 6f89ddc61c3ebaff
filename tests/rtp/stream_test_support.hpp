#pragma once
// Builders for the stream table tests: endpoints, packet metadata, RTP packets (as parsed
// structs and as wire bytes), RTCP reports, and a sink that records finished streams.
#include "core/address.hpp"
#include "core/bytes.hpp"
#include "core/media_binding.hpp"
#include "core/packet_meta.hpp"
#include "core/time.hpp"
#include "rtp/rtp_packet.hpp"
#include "rtp/stream_table.hpp"

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hepd::rtp::stream_test {

using Bytes = std::vector<std::uint8_t>;

inline Endpoint ep(std::string_view text) {
    const auto e = parse_endpoint(text);
    return e ? *e : Endpoint{};
}

inline constexpr std::int64_t kBaseUs = 1'700'000'000'000'000;  // 2023-11-14T22:13:20Z

inline PacketMeta meta_at(std::int64_t offset_us, const Endpoint& src, const Endpoint& dst) {
    return PacketMeta{Timestamp{kBaseUs + offset_us}, src, dst, 0};
}

// Payload octets for RtpPacket views; large enough for any test packet.
inline const std::array<std::uint8_t, 2048>& payload_buffer() {
    static const std::array<std::uint8_t, 2048> buffer{};
    return buffer;
}

inline RtpPacket make_rtp(std::uint8_t pt, std::uint16_t seq, std::uint32_t ts, std::uint32_t ssrc,
                          std::size_t payload_size = 160, bool marker = false) {
    RtpPacket p;
    p.payload_type = pt;
    p.sequence = seq;
    p.timestamp = ts;
    p.ssrc = ssrc;
    p.marker = marker;
    p.header_size = 12;
    p.payload = ByteSpan(payload_buffer().data(), payload_size);
    return p;
}

inline Bytes rtp_bytes(std::uint8_t pt, std::uint16_t seq, std::uint32_t ts, std::uint32_t ssrc,
                       std::size_t payload_size = 160, bool marker = false) {
    Bytes b(12 + payload_size, 0xd5);
    b[0] = 0x80;
    b[1] = static_cast<std::uint8_t>((marker ? 0x80 : 0) | (pt & 0x7f));
    store_be16(&b[2], seq);
    store_be32(&b[4], ts);
    store_be32(&b[8], ssrc);
    return b;
}

inline ByteSpan span_of(const Bytes& b) { return {b.data(), b.size()}; }
inline ByteSpan span_of(std::string_view s) { return as_bytes(s); }

struct Block {
    std::uint32_t ssrc = 0;
    std::uint8_t fraction_lost = 0;
    std::int32_t cumulative_lost = 0;
    std::uint32_t highest = 0;
    std::uint32_t jitter = 0;
    std::uint32_t lsr = 0;
    std::uint32_t dlsr = 0;
};

inline void put_block(Bytes& out, const Block& b) {
    const std::size_t at = out.size();
    out.resize(at + 24);
    store_be32(&out[at], b.ssrc);
    store_be32(&out[at + 4],
               (std::uint32_t{b.fraction_lost} << 24) | (static_cast<std::uint32_t>(b.cumulative_lost) & 0x00ff'ffffU));
    store_be32(&out[at + 8], b.highest);
    store_be32(&out[at + 12], b.jitter);
    store_be32(&out[at + 16], b.lsr);
    store_be32(&out[at + 20], b.dlsr);
}

inline Bytes receiver_report(std::uint32_t reporter, const std::vector<Block>& blocks) {
    Bytes out(8);
    out[0] = static_cast<std::uint8_t>(0x80 | blocks.size());
    out[1] = 201;
    store_be32(&out[4], reporter);
    for (const Block& b : blocks) put_block(out, b);
    store_be16(&out[2], static_cast<std::uint16_t>(out.size() / 4 - 1));
    return out;
}

inline Bytes sender_report(std::uint32_t reporter, std::uint64_t ntp, const std::vector<Block>& blocks) {
    Bytes out(28, 0);
    out[0] = static_cast<std::uint8_t>(0x80 | blocks.size());
    out[1] = 200;
    store_be32(&out[4], reporter);
    store_be32(&out[8], static_cast<std::uint32_t>(ntp >> 32));
    store_be32(&out[12], static_cast<std::uint32_t>(ntp));
    for (const Block& b : blocks) put_block(out, b);
    store_be16(&out[2], static_cast<std::uint16_t>(out.size() / 4 - 1));
    return out;
}

struct VoipBlock {
    std::uint32_t ssrc = 0;
    std::uint8_t loss_rate = 0;
    std::uint8_t discard_rate = 0;
    std::uint16_t round_trip_ms = 0;
    std::uint8_t r_factor = 127;
    std::uint8_t mos_lq_x10 = 127;
    std::uint8_t mos_cq_x10 = 127;
};

inline Bytes xr_voip_metrics(std::uint32_t reporter, const VoipBlock& v) {
    Bytes out(4 + 4 + 4 + 32, 0);
    out[0] = 0x80;
    out[1] = 207;
    store_be16(&out[2], 10);
    store_be32(&out[4], reporter);
    out[8] = 7;
    store_be16(&out[10], 8);
    store_be32(&out[12], v.ssrc);
    out[16] = v.loss_rate;
    out[17] = v.discard_rate;
    store_be16(&out[24], v.round_trip_ms);
    out[28] = 127;  // signal level unavailable
    out[29] = 127;  // noise level unavailable
    out[30] = 127;  // RERL unavailable
    out[31] = 16;   // Gmin
    out[32] = v.r_factor;
    out[33] = 127;  // external R unavailable
    out[34] = v.mos_lq_x10;
    out[35] = v.mos_cq_x10;
    return out;
}

inline MediaBinding media_binding(const Endpoint& media, std::string_view call_id, std::int64_t offset_us,
                                  std::initializer_list<CodecInfo> codecs) {
    MediaBinding b;
    b.media = media;
    b.time = Timestamp{kBaseUs + offset_us};
    b.call_id = call_id;
    for (const CodecInfo& c : codecs) {
        if (b.codec_count >= kMaxBindingCodecs) break;
        b.codecs[b.codec_count++] = c;
    }
    return b;
}

inline CodecInfo codec(std::uint8_t pt, std::string_view name, std::uint32_t rate) {
    CodecInfo c;
    c.payload_type = pt;
    c.clock_rate = rate;
    c.set_name(name);
    return c;
}

// Copies of everything a finished stream hands over.
struct Finished {
    StreamKey key;
    Stream stream;
    bool bound = false;
    std::string call_id;
    StreamSummary summary;
    FinishReason reason = FinishReason::idle;
};

struct RecordingSink : StreamSink {
    std::vector<Finished> finished;
    std::vector<std::pair<ReportedKey, ReportedStream>> reported;
    std::vector<FinishReason> reported_reasons;  // beside `reported`

    void on_stream_finished(const FinishedStream& f) override {
        finished.push_back({f.key, f.stream, f.binding != nullptr,
                            f.binding != nullptr ? std::string(f.binding->call_id.view()) : std::string(), f.summary,
                            f.reason});
    }
    void on_reported_stream_finished(const FinishedReported& f) override {
        reported.emplace_back(f.key, f.stream);
        reported_reasons.push_back(f.reason);
    }
    const Finished* by_ssrc(std::uint32_t ssrc) const {
        for (const Finished& f : finished)
            if (f.key.ssrc == ssrc) return &f;
        return nullptr;
    }
};

}  // namespace hepd::rtp::stream_test
