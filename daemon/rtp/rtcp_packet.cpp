#include "rtp/rtcp_packet.hpp"

#include "rtp/ntp.hpp"

#include <algorithm>

namespace hepd::rtp {

std::string_view to_string(RtcpError error) noexcept {
    switch (error) {
    case RtcpError::too_short: return "too_short";
    case RtcpError::bad_version: return "bad_version";
    case RtcpError::length_overflow: return "length_overflow";
    case RtcpError::padding_zero: return "padding_zero";
    case RtcpError::padding_overflow: return "padding_overflow";
    case RtcpError::wrong_packet_type: return "wrong_packet_type";
    case RtcpError::ssrc_truncated: return "ssrc_truncated";
    case RtcpError::sender_info_truncated: return "sender_info_truncated";
    case RtcpError::report_blocks_truncated: return "report_blocks_truncated";
    case RtcpError::sdes_chunk_truncated: return "sdes_chunk_truncated";
    case RtcpError::sdes_item_truncated: return "sdes_item_truncated";
    case RtcpError::bye_sources_truncated: return "bye_sources_truncated";
    case RtcpError::bye_reason_truncated: return "bye_reason_truncated";
    case RtcpError::app_truncated: return "app_truncated";
    case RtcpError::xr_block_truncated: return "xr_block_truncated";
    case RtcpError::xr_block_overflow: return "xr_block_overflow";
    case RtcpError::xr_block_bad_length: return "xr_block_bad_length";
    case RtcpError::wrong_block_type: return "wrong_block_type";
    }
    return "unknown";
}

std::string_view to_string(RtcpType type) noexcept {
    switch (type) {
    case RtcpType::sr: return "sr";
    case RtcpType::rr: return "rr";
    case RtcpType::sdes: return "sdes";
    case RtcpType::bye: return "bye";
    case RtcpType::app: return "app";
    case RtcpType::rtpfb: return "rtpfb";
    case RtcpType::psfb: return "psfb";
    case RtcpType::xr: return "xr";
    }
    return "other";
}

namespace {

constexpr std::size_t header_size = 4;

// Framing of the packet at the front of `bytes` without any check: only for buffers that
// parse_rtcp() has already validated.
RtcpPacket frame_unchecked(ByteSpan bytes) noexcept {
    const std::uint8_t* p = bytes.data();
    RtcpPacket packet;
    packet.type = static_cast<RtcpType>(p[1]);
    packet.count = static_cast<std::uint8_t>(p[0] & 0x1F);
    packet.padding = (p[0] & 0x20) != 0;
    const std::size_t length = 4 * (std::size_t{load_be16(p + 2)} + 1);
    packet.padding_size = packet.padding ? p[length - 1] : 0;
    packet.bytes = bytes.first(length);
    packet.body = bytes.subspan(header_size, length - header_size - packet.padding_size);
    return packet;
}

// Checks the framing of the packet at the front of `bytes`: after it, frame_unchecked() is safe.
// Returns the error, if any. (Not through Result: its accessors may throw, and parse_rtcp() may not.)
std::optional<RtcpError> check_framing(ByteSpan bytes) noexcept {
    if (bytes.size() < header_size) return RtcpError::too_short;
    const std::uint8_t* p = bytes.data();
    if ((p[0] >> 6) != 2) return RtcpError::bad_version;
    // The length field counts 32-bit words minus one, so it always covers the header itself.
    const std::size_t length = 4 * (std::size_t{load_be16(p + 2)} + 1);
    if (length > bytes.size()) return RtcpError::length_overflow;
    if ((p[0] & 0x20) != 0) {
        const std::uint8_t count = p[length - 1];
        if (count == 0) return RtcpError::padding_zero;
        if (count > length - header_size) return RtcpError::padding_overflow;
    }
    return std::nullopt;
}

}  // namespace

Result<RtcpPacket, RtcpError> parse_rtcp_packet(ByteSpan bytes) noexcept {
    if (const auto error = check_framing(bytes)) return fail(*error);
    return frame_unchecked(bytes);
}

Result<RtcpCompound, RtcpError> parse_rtcp(ByteSpan bytes) noexcept {
    RtcpCompound compound;
    compound.bytes_ = bytes;
    std::size_t pos = 0;
    do {
        const ByteSpan rest = bytes.subspan(pos);
        if (const auto error = check_framing(rest)) return fail(*error);
        const RtcpPacket packet = frame_unchecked(rest);
        if (pos == 0) compound.starts_with_report_ = packet.type == RtcpType::sr || packet.type == RtcpType::rr;
        pos += packet.bytes.size();
        ++compound.count_;
    } while (pos < bytes.size());
    return compound;
}

RtcpCompound::Iterator::Iterator(ByteSpan rest) noexcept : rest_(rest) {
    if (!rest_.empty()) current_ = frame_unchecked(rest_);
}

RtcpCompound::Iterator& RtcpCompound::Iterator::operator++() noexcept {
    rest_ = rest_.subspan(current_.bytes.size());
    if (!rest_.empty()) current_ = frame_unchecked(rest_);
    return *this;
}

// ---- SR / RR --------------------------------------------------------------------------------

ReportBlock decode_report_block(const std::uint8_t* record) noexcept {
    ReportBlock block;
    block.ssrc = load_be32(record);
    block.fraction_lost = record[4];
    block.cumulative_lost = sign_extend_24(load_be32(record + 4));
    block.highest_sequence = load_be32(record + 8);
    block.jitter = load_be32(record + 12);
    block.last_sr = load_be32(record + 16);
    block.delay_since_last_sr = load_be32(record + 20);
    return block;
}

Result<SenderReport, RtcpError> parse_sender_report(const RtcpPacket& packet) noexcept {
    constexpr std::size_t fixed = 24;  // SSRC + NTP (8) + RTP ts + packets + octets
    if (packet.type != RtcpType::sr) return fail(RtcpError::wrong_packet_type);
    const ByteSpan body = packet.body;
    if (body.size() < fixed) return fail(RtcpError::sender_info_truncated);
    const std::size_t blocks = 24 * std::size_t{packet.count};
    if (blocks > body.size() - fixed) return fail(RtcpError::report_blocks_truncated);
    const std::uint8_t* p = body.data();
    SenderReport report;
    report.ssrc = load_be32(p);
    report.sender_info.ntp_timestamp = load_be64(p + 4);
    report.sender_info.rtp_timestamp = load_be32(p + 12);
    report.sender_info.packet_count = load_be32(p + 16);
    report.sender_info.octet_count = load_be32(p + 20);
    report.report_blocks = ReportBlockList(body.subspan(fixed, blocks));
    report.profile_extension = body.subspan(fixed + blocks);
    return report;
}

Result<ReceiverReport, RtcpError> parse_receiver_report(const RtcpPacket& packet) noexcept {
    if (packet.type != RtcpType::rr) return fail(RtcpError::wrong_packet_type);
    const ByteSpan body = packet.body;
    if (body.size() < 4) return fail(RtcpError::ssrc_truncated);
    const std::size_t blocks = 24 * std::size_t{packet.count};
    if (blocks > body.size() - 4) return fail(RtcpError::report_blocks_truncated);
    ReceiverReport report;
    report.ssrc = load_be32(body.data());
    report.report_blocks = ReportBlockList(body.subspan(4, blocks));
    report.profile_extension = body.subspan(4 + blocks);
    return report;
}

// ---- SDES -----------------------------------------------------------------------------------

namespace {

// Reads the chunk at body[pos] and moves pos past it, terminator and alignment included.
// Chunks start on 32-bit boundaries; the body starts on one, so alignment is relative to it.
// Returns the error, if any.
std::optional<RtcpError> read_chunk(ByteSpan body, std::size_t& pos, SdesChunk& out) noexcept {
    const std::size_t size = body.size();
    if (size - pos < 4) return RtcpError::sdes_chunk_truncated;
    out.ssrc = load_be32(body.data() + pos);
    pos += 4;
    const std::size_t items = pos;
    while (pos < size) {
        if (body[pos] == 0) {  // end of the item list: skip the null octets up to the boundary
            out.items = body.subspan(items, pos - items);
            pos = std::min((pos + 4) & ~std::size_t{3}, size);
            return std::nullopt;
        }
        if (size - pos < 2 || body[pos + 1] > size - pos - 2) return RtcpError::sdes_item_truncated;
        pos += 2 + std::size_t{body[pos + 1]};
    }
    out.items = body.subspan(items, pos - items);
    return std::nullopt;
}

}  // namespace

std::optional<std::string_view> SdesChunk::find(SdesItemType type) const noexcept {
    for (const SdesItem item : *this)
        if (item.type == type) return item.value;
    return std::nullopt;
}

SdesPacket::Iterator::Iterator(ByteSpan body, std::size_t remaining) noexcept : body_(body), remaining_(remaining) {
    if (remaining_ > 0) (void)read_chunk(body_, pos_, current_);
}

SdesPacket::Iterator& SdesPacket::Iterator::operator++() noexcept {
    if (--remaining_ > 0) (void)read_chunk(body_, pos_, current_);
    return *this;
}

Result<SdesPacket, RtcpError> parse_sdes(const RtcpPacket& packet) noexcept {
    if (packet.type != RtcpType::sdes) return fail(RtcpError::wrong_packet_type);
    std::size_t pos = 0;
    SdesChunk chunk;
    for (std::size_t i = 0; i < packet.count; ++i)
        if (const auto error = read_chunk(packet.body, pos, chunk)) return fail(*error);
    return SdesPacket(packet.body, packet.count);
}

// ---- BYE / APP ------------------------------------------------------------------------------

Result<ByePacket, RtcpError> parse_bye(const RtcpPacket& packet) noexcept {
    if (packet.type != RtcpType::bye) return fail(RtcpError::wrong_packet_type);
    const ByteSpan body = packet.body;
    const std::size_t sources = 4 * std::size_t{packet.count};
    if (sources > body.size()) return fail(RtcpError::bye_sources_truncated);
    ByePacket bye;
    bye.sources = SsrcList(body.first(sources));
    if (body.size() > sources) {
        const std::size_t length = body[sources];
        if (length > body.size() - sources - 1) return fail(RtcpError::bye_reason_truncated);
        bye.has_reason = true;
        bye.reason = as_text(body.subspan(sources + 1, length));
    }
    return bye;
}

Result<AppPacket, RtcpError> parse_app(const RtcpPacket& packet) noexcept {
    if (packet.type != RtcpType::app) return fail(RtcpError::wrong_packet_type);
    const ByteSpan body = packet.body;
    if (body.size() < 8) return fail(RtcpError::app_truncated);
    AppPacket app;
    app.subtype = packet.count;
    app.ssrc = load_be32(body.data());
    app.name = as_text(body.subspan(4, 4));
    app.data = body.subspan(8);
    return app;
}

// ---- XR -------------------------------------------------------------------------------------

Result<XrPacket, RtcpError> parse_xr(const RtcpPacket& packet) noexcept {
    if (packet.type != RtcpType::xr) return fail(RtcpError::wrong_packet_type);
    const ByteSpan body = packet.body;
    if (body.size() < 4) return fail(RtcpError::ssrc_truncated);
    std::size_t pos = 4;
    std::size_t count = 0;
    while (pos < body.size()) {
        if (body.size() - pos < 4) return fail(RtcpError::xr_block_truncated);
        const std::size_t length = 4 * std::size_t{load_be16(body.data() + pos + 2)};
        if (length > body.size() - pos - 4) return fail(RtcpError::xr_block_overflow);
        pos += 4 + length;
        ++count;
    }
    return XrPacket(load_be32(body.data()), body.subspan(4), count);
}

Result<ReceiverReferenceTime, RtcpError> parse_receiver_reference_time(const XrBlock& block) noexcept {
    if (block.type != XrBlockType::receiver_reference_time) return fail(RtcpError::wrong_block_type);
    if (block.body.size() != 8) return fail(RtcpError::xr_block_bad_length);
    return ReceiverReferenceTime{load_be64(block.body.data())};
}

DlrrItem decode_dlrr_item(const std::uint8_t* record) noexcept {
    return {load_be32(record), load_be32(record + 4), load_be32(record + 8)};
}

Result<DlrrList, RtcpError> parse_dlrr(const XrBlock& block) noexcept {
    if (block.type != XrBlockType::dlrr) return fail(RtcpError::wrong_block_type);
    if (block.body.size() % 12 != 0) return fail(RtcpError::xr_block_bad_length);
    return DlrrList(block.body);
}

Result<VoipMetrics, RtcpError> parse_voip_metrics(const XrBlock& block) noexcept {
    if (block.type != XrBlockType::voip_metrics) return fail(RtcpError::wrong_block_type);
    if (block.body.size() != 32) return fail(RtcpError::xr_block_bad_length);  // block length 8
    const std::uint8_t* p = block.body.data();
    VoipMetrics m;
    m.ssrc = load_be32(p);
    m.loss_rate = p[4];
    m.discard_rate = p[5];
    m.burst_density = p[6];
    m.gap_density = p[7];
    m.burst_duration_ms = load_be16(p + 8);
    m.gap_duration_ms = load_be16(p + 10);
    m.round_trip_delay_ms = load_be16(p + 12);
    m.end_system_delay_ms = load_be16(p + 14);
    m.signal_level_db = static_cast<std::int8_t>(p[16]);
    m.noise_level_db = static_cast<std::int8_t>(p[17]);
    m.rerl_db = p[18];
    m.gmin = p[19];
    m.r_factor = p[20];
    m.ext_r_factor = p[21];
    m.mos_lq_x10 = p[22];
    m.mos_cq_x10 = p[23];
    m.rx_config = p[24];
    // p[25] is reserved
    m.jb_nominal_ms = load_be16(p + 26);
    m.jb_maximum_ms = load_be16(p + 28);
    m.jb_abs_max_ms = load_be16(p + 30);
    return m;
}

}  // namespace hepd::rtp
