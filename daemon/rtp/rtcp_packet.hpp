#pragma once
// RTCP (RFC 3550 sections 6.4-6.6, RFC 3611 XR). parse_rtcp() validates a compound packet's
// framing once (version, length chain, padding) so that iterating its packets cannot fail; each
// packet is then decoded on demand by the typed parser for its type, which validates its body.
// Everything is a view into the caller's buffer: nothing is copied or allocated.
#include "core/bytes.hpp"
#include "core/result.hpp"
#include "rtp/ssrc_list.hpp"

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string_view>

namespace hepd::rtp {

enum class RtcpError : std::uint8_t {
    too_short,                // under 4 octets for a packet header (also 1-3 trailing octets)
    bad_version,              // V != 2
    length_overflow,          // length field runs past the buffer
    padding_zero,             // P set but the padding count octet is 0
    padding_overflow,         // padding count larger than the packet body
    wrong_packet_type,        // a typed parser was handed a packet of another type
    ssrc_truncated,           // RR/XR body shorter than the 4-octet sender SSRC
    sender_info_truncated,    // SR body shorter than SSRC + 20 octets of sender info
    report_blocks_truncated,  // RC report blocks do not fit
    sdes_chunk_truncated,     // SC chunks announced, fewer present
    sdes_item_truncated,      // an item's length runs past the packet
    bye_sources_truncated,    // SC SSRCs do not fit
    bye_reason_truncated,     // reason length runs past the packet
    app_truncated,            // APP body shorter than SSRC + name
    xr_block_truncated,       // 1-3 octets left where an XR block header should be
    xr_block_overflow,        // XR block length runs past the packet
    xr_block_bad_length,      // a known XR block with a length its type does not allow
    wrong_block_type,         // an XR block parser was handed a block of another type
};

std::string_view to_string(RtcpError error) noexcept;

enum class RtcpType : std::uint8_t {
    sr = 200,
    rr = 201,
    sdes = 202,
    bye = 203,
    app = 204,
    rtpfb = 205,  // RFC 4585 transport-layer feedback
    psfb = 206,   // RFC 4585 payload-specific feedback
    xr = 207,     // RFC 3611
};

// snake_case name of a known type; "other" for any other value (a closed set for labels).
std::string_view to_string(RtcpType type) noexcept;

// One packet of a compound packet, framing already checked.
struct RtcpPacket {
    RtcpType type{};         // may hold a value outside the enumerators
    std::uint8_t count = 0;  // 5 bits: RC, SC, APP subtype or feedback FMT
    bool padding = false;
    std::uint8_t padding_size = 0;
    ByteSpan bytes;  // the whole packet: header, body and padding
    ByteSpan body;   // after the 4-octet header, padding removed
};

// Frames the single packet at the front of `bytes` (which may hold more after it).
Result<RtcpPacket, RtcpError> parse_rtcp_packet(ByteSpan bytes) noexcept;

class RtcpCompound {
public:
    class Iterator {
    public:
        using iterator_category = std::forward_iterator_tag;
        using value_type = RtcpPacket;
        using difference_type = std::ptrdiff_t;
        using pointer = const RtcpPacket*;
        using reference = RtcpPacket;

        Iterator() = default;
        explicit Iterator(ByteSpan rest) noexcept;
        // By value: a reference into the iterator would dangle in `const auto& p = *c.begin();`.
        RtcpPacket operator*() const noexcept { return current_; }
        const RtcpPacket* operator->() const noexcept { return &current_; }
        Iterator& operator++() noexcept;
        Iterator operator++(int) noexcept {
            Iterator before = *this;
            ++*this;
            return before;
        }
        friend bool operator==(const Iterator& a, const Iterator& b) noexcept {
            return a.rest_.data() == b.rest_.data();
        }

    private:
        ByteSpan rest_;
        RtcpPacket current_;
    };

    RtcpCompound() = default;

    std::size_t size() const noexcept { return count_; }
    // RFC 3550 6.1 wants SR or RR first; reduced-size RTCP (RFC 5506) and some stacks do not.
    bool starts_with_report() const noexcept { return starts_with_report_; }
    ByteSpan bytes() const noexcept { return bytes_; }
    Iterator begin() const noexcept { return Iterator(bytes_); }
    Iterator end() const noexcept { return Iterator(bytes_.subspan(bytes_.size())); }

private:
    friend Result<RtcpCompound, RtcpError> parse_rtcp(ByteSpan bytes) noexcept;
    ByteSpan bytes_;
    std::size_t count_ = 0;
    bool starts_with_report_ = false;
};

// Checks every packet's version, length and padding and that the lengths add up to the buffer
// exactly (RFC 3550 A.2). An empty buffer is too_short.
Result<RtcpCompound, RtcpError> parse_rtcp(ByteSpan bytes) noexcept;

// A list of fixed-size records decoded on access (report blocks, DLRR sub-blocks).
template <class T, std::size_t Stride, T (*Decode)(const std::uint8_t*) noexcept>
class RecordList {
public:
    class Iterator {
    public:
        using iterator_category = std::forward_iterator_tag;
        using value_type = T;
        using difference_type = std::ptrdiff_t;
        using pointer = void;
        using reference = T;

        Iterator() = default;
        explicit Iterator(const std::uint8_t* at) noexcept : at_(at) {}
        T operator*() const noexcept { return Decode(at_); }
        Iterator& operator++() noexcept {
            at_ += Stride;
            return *this;
        }
        Iterator operator++(int) noexcept {
            Iterator before = *this;
            at_ += Stride;
            return before;
        }
        friend bool operator==(Iterator a, Iterator b) noexcept { return a.at_ == b.at_; }

    private:
        const std::uint8_t* at_ = nullptr;
    };

    RecordList() = default;
    // `bytes` must hold a whole number of records; the parsers guarantee it.
    explicit RecordList(ByteSpan bytes) noexcept : bytes_(bytes) {}

    std::size_t size() const noexcept { return bytes_.size() / Stride; }
    bool empty() const noexcept { return size() == 0; }
    // Precondition: index < size().
    T operator[](std::size_t index) const noexcept { return Decode(bytes_.data() + Stride * index); }
    Iterator begin() const noexcept { return Iterator(bytes_.data()); }
    Iterator end() const noexcept { return Iterator(bytes_.data() + Stride * size()); }
    ByteSpan bytes() const noexcept { return bytes_; }

private:
    ByteSpan bytes_;
};

// ---- SR / RR (RFC 3550 6.4) ----------------------------------------------------------------

struct ReportBlock {
    std::uint32_t ssrc = 0;                 // source this block reports on
    std::uint8_t fraction_lost = 0;         // since the previous report, fixed point /256
    std::int32_t cumulative_lost = 0;       // signed 24-bit, sign-extended
    std::uint32_t highest_sequence = 0;     // extended highest sequence number received
    std::uint32_t jitter = 0;               // interarrival jitter, RTP timestamp units
    std::uint32_t last_sr = 0;              // LSR: middle 32 bits of the last SR's NTP time
    std::uint32_t delay_since_last_sr = 0;  // DLSR, 1/65536 s

    friend bool operator==(const ReportBlock&, const ReportBlock&) = default;
};

ReportBlock decode_report_block(const std::uint8_t* record) noexcept;  // 24 octets
using ReportBlockList = RecordList<ReportBlock, 24, decode_report_block>;

struct SenderInfo {
    std::uint64_t ntp_timestamp = 0;
    std::uint32_t rtp_timestamp = 0;
    std::uint32_t packet_count = 0;
    std::uint32_t octet_count = 0;

    friend bool operator==(const SenderInfo&, const SenderInfo&) = default;
};

struct SenderReport {
    std::uint32_t ssrc = 0;
    SenderInfo sender_info;
    ReportBlockList report_blocks;  // RC entries
    ByteSpan profile_extension;     // whatever follows the report blocks
};

struct ReceiverReport {
    std::uint32_t ssrc = 0;
    ReportBlockList report_blocks;
    ByteSpan profile_extension;
};

Result<SenderReport, RtcpError> parse_sender_report(const RtcpPacket& packet) noexcept;
Result<ReceiverReport, RtcpError> parse_receiver_report(const RtcpPacket& packet) noexcept;

// ---- SDES (RFC 3550 6.5) -------------------------------------------------------------------

enum class SdesItemType : std::uint8_t {
    end = 0,
    cname = 1,
    name = 2,
    email = 3,
    phone = 4,
    loc = 5,
    tool = 6,
    note = 7,
    priv = 8,
};

struct SdesItem {
    SdesItemType type{};     // may hold a value outside the enumerators
    std::string_view value;  // raw octets (UTF-8 by the RFC; PRIV keeps its prefix length+text)
};

struct SdesChunk {
    class Iterator {
    public:
        using iterator_category = std::forward_iterator_tag;
        using value_type = SdesItem;
        using difference_type = std::ptrdiff_t;
        using pointer = void;
        using reference = SdesItem;

        Iterator() = default;
        explicit Iterator(const std::uint8_t* at) noexcept : at_(at) {}
        SdesItem operator*() const noexcept {
            return {static_cast<SdesItemType>(at_[0]),
                    std::string_view(reinterpret_cast<const char*>(at_ + 2), at_[1])};
        }
        Iterator& operator++() noexcept {
            at_ += 2 + std::size_t{at_[1]};
            return *this;
        }
        Iterator operator++(int) noexcept {
            Iterator before = *this;
            ++*this;
            return before;
        }
        friend bool operator==(Iterator a, Iterator b) noexcept { return a.at_ == b.at_; }

    private:
        const std::uint8_t* at_ = nullptr;
    };

    std::uint32_t ssrc = 0;  // SSRC or CSRC the items describe
    ByteSpan items;          // type/length/value items, terminator and alignment excluded

    Iterator begin() const noexcept { return Iterator(items.data()); }
    Iterator end() const noexcept { return Iterator(items.data() + items.size()); }
    // First item of that type, if any.
    std::optional<std::string_view> find(SdesItemType type) const noexcept;
    std::string_view cname() const noexcept { return find(SdesItemType::cname).value_or(std::string_view{}); }
};

class SdesPacket {
public:
    class Iterator {
    public:
        using iterator_category = std::forward_iterator_tag;
        using value_type = SdesChunk;
        using difference_type = std::ptrdiff_t;
        using pointer = const SdesChunk*;
        using reference = SdesChunk;

        Iterator() = default;
        Iterator(ByteSpan body, std::size_t remaining) noexcept;
        SdesChunk operator*() const noexcept { return current_; }  // by value, as above
        const SdesChunk* operator->() const noexcept { return &current_; }
        Iterator& operator++() noexcept;
        Iterator operator++(int) noexcept {
            Iterator before = *this;
            ++*this;
            return before;
        }
        friend bool operator==(const Iterator& a, const Iterator& b) noexcept { return a.remaining_ == b.remaining_; }

    private:
        ByteSpan body_;
        std::size_t pos_ = 0;
        std::size_t remaining_ = 0;  // chunks not yet consumed, current one included
        SdesChunk current_;
    };

    SdesPacket() = default;
    SdesPacket(ByteSpan body, std::size_t count) noexcept : body_(body), count_(count) {}

    std::size_t size() const noexcept { return count_; }
    Iterator begin() const noexcept { return Iterator(body_, count_); }
    Iterator end() const noexcept { return Iterator(body_, 0); }

private:
    ByteSpan body_;
    std::size_t count_ = 0;
};

// Validates all SC chunks. A chunk whose item list runs exactly to the end of the packet without
// the null terminator is accepted (seen from real stacks); anything that overruns is not.
Result<SdesPacket, RtcpError> parse_sdes(const RtcpPacket& packet) noexcept;

// ---- BYE and APP (RFC 3550 6.6, 6.7) -------------------------------------------------------

struct ByePacket {
    SsrcList sources;  // SC entries
    bool has_reason = false;
    std::string_view reason;  // empty when absent
};

Result<ByePacket, RtcpError> parse_bye(const RtcpPacket& packet) noexcept;

struct AppPacket {
    std::uint8_t subtype = 0;
    std::uint32_t ssrc = 0;
    std::string_view name;  // 4 octets, ASCII by the RFC
    ByteSpan data;
};

Result<AppPacket, RtcpError> parse_app(const RtcpPacket& packet) noexcept;

// ---- XR (RFC 3611) -------------------------------------------------------------------------

enum class XrBlockType : std::uint8_t {
    loss_rle = 1,
    duplicate_rle = 2,
    packet_receipt_times = 3,
    receiver_reference_time = 4,
    dlrr = 5,
    statistics_summary = 6,
    voip_metrics = 7,
};

struct XrBlock {
    XrBlockType type{};  // may hold a value outside the enumerators
    std::uint8_t type_specific = 0;
    ByteSpan body;  // block length * 4 octets after the 4-octet block header
};

class XrPacket {
public:
    class Iterator {
    public:
        using iterator_category = std::forward_iterator_tag;
        using value_type = XrBlock;
        using difference_type = std::ptrdiff_t;
        using pointer = void;
        using reference = XrBlock;

        Iterator() = default;
        explicit Iterator(const std::uint8_t* at) noexcept : at_(at) {}
        XrBlock operator*() const noexcept {
            return {static_cast<XrBlockType>(at_[0]), at_[1], ByteSpan(at_ + 4, body_size())};
        }
        Iterator& operator++() noexcept {
            at_ += 4 + body_size();
            return *this;
        }
        Iterator operator++(int) noexcept {
            Iterator before = *this;
            ++*this;
            return before;
        }
        friend bool operator==(Iterator a, Iterator b) noexcept { return a.at_ == b.at_; }

    private:
        std::size_t body_size() const noexcept { return 4 * std::size_t{load_be16(at_ + 2)}; }
        const std::uint8_t* at_ = nullptr;
    };

    XrPacket() = default;
    XrPacket(std::uint32_t ssrc, ByteSpan blocks, std::size_t count) noexcept
        : ssrc_(ssrc), blocks_(blocks), count_(count) {}

    std::uint32_t ssrc() const noexcept { return ssrc_; }  // the reporter
    std::size_t size() const noexcept { return count_; }   // number of blocks
    Iterator begin() const noexcept { return Iterator(blocks_.data()); }
    Iterator end() const noexcept { return Iterator(blocks_.data() + blocks_.size()); }

private:
    std::uint32_t ssrc_ = 0;
    ByteSpan blocks_;
    std::size_t count_ = 0;
};

// Validates that the blocks tile the packet body exactly; block contents are checked only by
// the block parsers below, so unknown block types are skipped safely.
Result<XrPacket, RtcpError> parse_xr(const RtcpPacket& packet) noexcept;

// BT=4: the receiver's wall clock, echoed back by the sender in DLRR for an RTT.
struct ReceiverReferenceTime {
    std::uint64_t ntp_timestamp = 0;
};

Result<ReceiverReferenceTime, RtcpError> parse_receiver_reference_time(const XrBlock& block) noexcept;

// BT=5 sub-block: RTT = arrival - last_rr - delay_since_last_rr (see round_trip_micros).
struct DlrrItem {
    std::uint32_t ssrc = 0;                 // the receiver that sent the RRT
    std::uint32_t last_rr = 0;              // LRR: middle 32 bits of that RRT's NTP time
    std::uint32_t delay_since_last_rr = 0;  // DLRR, 1/65536 s

    friend bool operator==(const DlrrItem&, const DlrrItem&) = default;
};

DlrrItem decode_dlrr_item(const std::uint8_t* record) noexcept;  // 12 octets
using DlrrList = RecordList<DlrrItem, 12, decode_dlrr_item>;

Result<DlrrList, RtcpError> parse_dlrr(const XrBlock& block) noexcept;

enum class PacketLossConcealment : std::uint8_t { unspecified = 0, disabled = 1, enhanced = 2, standard = 3 };
enum class JitterBufferMode : std::uint8_t { unknown = 0, reserved = 1, non_adaptive = 2, adaptive = 3 };

// BT=7 (RFC 3611 4.7). Fields keep their wire encoding; accessors give the decoded meaning.
struct VoipMetrics {
    static constexpr std::uint8_t unavailable = 127;  // for levels, RERL, R factors and MOS

    std::uint32_t ssrc = 0;          // source the metrics describe
    std::uint8_t loss_rate = 0;      // fraction lost, /256
    std::uint8_t discard_rate = 0;   // fraction discarded by the jitter buffer, /256
    std::uint8_t burst_density = 0;  // /256
    std::uint8_t gap_density = 0;    // /256
    std::uint16_t burst_duration_ms = 0;
    std::uint16_t gap_duration_ms = 0;
    std::uint16_t round_trip_delay_ms = 0;
    std::uint16_t end_system_delay_ms = 0;
    std::int8_t signal_level_db = 0;  // dBm0, two's complement; 127 unavailable
    std::int8_t noise_level_db = 0;   // dBm0, two's complement; 127 unavailable
    std::uint8_t rerl_db = 0;         // residual echo return loss; 127 unavailable
    std::uint8_t gmin = 0;            // gap threshold (16 recommended)
    std::uint8_t r_factor = 0;        // 0..100; 127 unavailable
    std::uint8_t ext_r_factor = 0;    // 0..100; 127 unavailable
    std::uint8_t mos_lq_x10 = 0;      // 10..50; 127 unavailable
    std::uint8_t mos_cq_x10 = 0;      // 10..50; 127 unavailable
    std::uint8_t rx_config = 0;       // PLC:2 JBA:2 JB rate:4
    std::uint16_t jb_nominal_ms = 0;
    std::uint16_t jb_maximum_ms = 0;
    std::uint16_t jb_abs_max_ms = 0;

    double loss_fraction() const noexcept { return loss_rate / 256.0; }
    double discard_fraction() const noexcept { return discard_rate / 256.0; }
    std::optional<double> mos_lq() const noexcept { return mos(mos_lq_x10); }
    std::optional<double> mos_cq() const noexcept { return mos(mos_cq_x10); }
    PacketLossConcealment plc() const noexcept { return static_cast<PacketLossConcealment>(rx_config >> 6); }
    JitterBufferMode jitter_buffer_mode() const noexcept {
        return static_cast<JitterBufferMode>((rx_config >> 4) & 0x3);
    }
    std::uint8_t jitter_buffer_rate() const noexcept { return static_cast<std::uint8_t>(rx_config & 0x0F); }

    friend bool operator==(const VoipMetrics&, const VoipMetrics&) = default;

private:
    static std::optional<double> mos(std::uint8_t x10) noexcept {
        if (x10 == unavailable) return std::nullopt;
        return x10 / 10.0;
    }
};

Result<VoipMetrics, RtcpError> parse_voip_metrics(const XrBlock& block) noexcept;

}  // namespace hepd::rtp
