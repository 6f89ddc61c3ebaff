// Feeds arbitrary bytes to the RTCP compound parser and every typed parser, walking every
// iterator to its end, and checks that every view stays inside the input.
#include "core/bytes.hpp"
#include "rtp/ntp.hpp"
#include "rtp/rtcp_packet.hpp"

#include <cstddef>
#include <cstdint>

namespace {

void require(bool condition) {
    if (!condition) __builtin_trap();
}

struct Bounds {
    const std::uint8_t* begin;
    const std::uint8_t* end;
    bool contains(hepd::ByteSpan part) const {
        return part.empty() || (part.data() >= begin && part.data() + part.size() <= end);
    }
    bool contains(std::string_view text) const { return contains(hepd::as_bytes(text)); }
};

std::uint64_t walk_xr(const hepd::rtp::XrPacket& xr, const Bounds& in) {
    using namespace hepd::rtp;
    std::uint64_t sum = xr.ssrc();
    std::size_t blocks = 0;
    for (const XrBlock block : xr) {
        ++blocks;
        require(in.contains(block.body));
        if (const auto m = parse_voip_metrics(block)) {
            sum += m->ssrc + m->loss_rate + m->jb_abs_max_ms + static_cast<std::uint8_t>(m->plc());
            sum += static_cast<std::uint64_t>(m->mos_lq().value_or(0.0) + m->mos_cq().value_or(0.0));
        }
        if (const auto rrt = parse_receiver_reference_time(block)) sum += ntp_middle32(rrt->ntp_timestamp);
        if (const auto dlrr = parse_dlrr(block)) {
            for (const DlrrItem item : *dlrr)
                sum += round_trip_micros(item.ssrc, item.last_rr, item.delay_since_last_rr).value_or(0);
        }
    }
    require(blocks == xr.size());
    return sum;
}

std::uint64_t walk(const hepd::rtp::RtcpPacket& packet, const Bounds& in) {
    using namespace hepd::rtp;
    std::uint64_t sum = 0;
    require(in.contains(packet.bytes));
    require(in.contains(packet.body));
    require(packet.body.size() + 4 + packet.padding_size == packet.bytes.size());
    switch (packet.type) {
    case RtcpType::sr:
        if (const auto sr = parse_sender_report(packet)) {
            sum += sr->sender_info.packet_count;
            for (const ReportBlock block : sr->report_blocks) sum += static_cast<std::uint64_t>(block.cumulative_lost);
            require(sr->report_blocks.size() == packet.count);
            require(in.contains(sr->profile_extension));
        }
        break;
    case RtcpType::rr:
        if (const auto rr = parse_receiver_report(packet)) {
            for (const ReportBlock block : rr->report_blocks) sum += block.jitter;
            require(rr->report_blocks.size() == packet.count);
        }
        break;
    case RtcpType::sdes:
        if (const auto sdes = parse_sdes(packet)) {
            std::size_t chunks = 0;
            for (const SdesChunk chunk : *sdes) {
                ++chunks;
                require(in.contains(chunk.items));
                for (const SdesItem item : chunk) {
                    require(in.contains(item.value));
                    sum += item.value.size();
                }
                sum += chunk.cname().size();
            }
            require(chunks == packet.count);
        }
        break;
    case RtcpType::bye:
        if (const auto bye = parse_bye(packet)) {
            for (const std::uint32_t ssrc : bye->sources) sum += ssrc;
            require(in.contains(bye->reason));
        }
        break;
    case RtcpType::app:
        if (const auto app = parse_app(packet)) {
            require(app->name.size() == 4);
            require(in.contains(app->data));
        }
        break;
    case RtcpType::xr:
        if (const auto xr = parse_xr(packet)) sum += walk_xr(*xr, in);
        break;
    default: break;
    }
    return sum;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace hepd::rtp;
    const hepd::ByteSpan bytes(data, size);
    const Bounds in{data, data + size};

    // Typed parsers must hold up on a packet whose framing alone was checked, whatever its type.
    if (const auto first = parse_rtcp_packet(bytes)) {
        RtcpPacket packet = *first;
        for (const RtcpType type :
             {RtcpType::sr, RtcpType::rr, RtcpType::sdes, RtcpType::bye, RtcpType::app, RtcpType::xr}) {
            packet.type = type;
            (void)walk(packet, in);
        }
    }

    const auto compound = parse_rtcp(bytes);
    if (!compound) {
        require(!to_string(compound.error()).empty());
        return 0;
    }
    std::size_t total = 0;
    std::size_t count = 0;
    std::uint64_t sum = 0;
    for (const RtcpPacket packet : *compound) {
        total += packet.bytes.size();
        ++count;
        sum += walk(packet, in);
    }
    require(total == size);
    require(count == compound->size());
    return static_cast<int>(sum & 0);
}
