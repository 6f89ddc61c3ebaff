#include "rtp/rtcp_packet.hpp"

#include "rtp/ntp.hpp"
#include "test_bytes.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace hepd;
using namespace hepd::rtp;
using namespace hepd::rtp::test;

namespace {

// SR, RC=1: 4 header + 4 SSRC + 20 sender info + 24 report block = 52 octets = 13 words,
// length field 12.
const Bytes sender_report{
    0x81, 0xc8, 0x00, 0x0c,                          // V=2 P=0 RC=1, PT=200, length 12
    0x11, 0x22, 0x33, 0x44,                          // sender SSRC
    0x83, 0xaa, 0x7e, 0x80, 0x80, 0x00, 0x00, 0x00,  // NTP: 1970-01-01T00:00:00.5Z
    0x00, 0x00, 0xa0, 0x00,                          // RTP timestamp 40960
    0x00, 0x00, 0x00, 0x64,                          // 100 packets
    0x00, 0x00, 0x3e, 0x80,                          // 16000 octets
    0x55, 0x66, 0x77, 0x88,                          // block: SSRC
    0x40, 0x00, 0x00, 0x05,                          // fraction 64/256, cumulative 5
    0x00, 0x01, 0x00, 0x10,                          // 1 cycle, seq 16
    0x00, 0x00, 0x00, 0x2a,                          // jitter 42
    0xb7, 0x05, 0x20, 0x00,                          // LSR
    0x00, 0x05, 0x40, 0x00,                          // DLSR 5.25 s
};

// SDES, SC=1: SSRC + CNAME "user@host" (2 + 9) + terminator = 16 octets; 20 in all, length 4.
const Bytes sdes_cname{
    // clang-format off
    0x81, 0xca, 0x00, 0x04, 0x11, 0x22, 0x33, 0x44, 0x01, 0x09,
    'u',  's',  'e',  'r',  '@',  'h',  'o',  's',  't',  0x00,
    // clang-format on
};

// RR, RC=2: 4 + 4 + 48 = 56 octets = 14 words, length 13.
const Bytes receiver_report{
    // clang-format off
    0x82, 0xc9, 0x00, 0x0d, 0xde, 0xad, 0xbe, 0xef,
    // clang-format on
    // block 1: SSRC 1, 25/256, cumulative 10, highest 0xf000, jitter 16, LSR, DLSR
    // clang-format off
    0x00, 0x00, 0x00, 0x01, 0x19, 0x00, 0x00, 0x0a, 0x00, 0x00, 0xf0, 0x00,
    0x00, 0x00, 0x00, 0x10, 0xb7, 0x05, 0x20, 0x00, 0x00, 0x05, 0x40, 0x00,
    // clang-format on
    // block 2: SSRC 2, 0/256, cumulative -1 (duplicates), highest 0x00020005, jitter 256, no SR yet
    // clang-format off
    0x00, 0x00, 0x00, 0x02, 0x00, 0xff, 0xff, 0xff, 0x00, 0x02, 0x00, 0x05,
    0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    // clang-format on
};

// XR with one VoIP metrics block: 4 + 4 + 4 + 32 = 44 octets = 11 words, length 10.
const Bytes xr_voip{
    0x80, 0xcf, 0x00, 0x0a,  // XR, length 10
    0x11, 0x22, 0x33, 0x44,  // reporter SSRC
    0x07, 0x00, 0x00, 0x08,  // BT=7, block length 8
    0x55, 0x66, 0x77, 0x88,  // source SSRC
    0x0d, 0x03, 0x80, 0x02,  // loss 13/256, discard 3/256, burst density 128/256, gap density 2/256
    0x00, 0x64, 0x13, 0x88,  // burst 100 ms, gap 5000 ms
    0x00, 0x32, 0x00, 0x78,  // round trip 50 ms, end system 120 ms
    0xec, 0xb0, 0x1e, 0x10,  // signal -20 dBm0, noise -80 dBm0, RERL 30 dB, Gmin 16
    0x5a, 0x7f, 0x29, 0x27,  // R 90, ext R unavailable, MOS-LQ 4.1, MOS-CQ 3.9
    0xb5, 0x00, 0x00, 0x28,  // RX config 10 11 0101, reserved, JB nominal 40 ms
    0x00, 0x50, 0x00, 0xc8,  // JB max 80 ms, JB abs max 200 ms
};

// XR with RRT, DLRR (two sub-blocks) and an unknown block type 42:
// 4 + 4 + 12 + 28 + 8 = 56 octets = 14 words, length 13.
const Bytes xr_rtt{
    // clang-format off
    0x80, 0xcf, 0x00, 0x0d, 0xaa, 0xbb, 0xcc, 0xdd,
    0x04, 0x00, 0x00, 0x02, 0x83, 0xaa, 0x7e, 0x80, 0x80, 0x00, 0x00, 0x00,  // RRT at Unix 0.5 s
    // clang-format on
    0x05, 0x00, 0x00, 0x06,                                                  // DLRR, 6 words
    0x00, 0x00, 0x00, 0x01, 0x7e, 0x80, 0x80, 0x00, 0x00, 0x01, 0x00, 0x00,  // SSRC 1, LRR, 1 s
    0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // SSRC 2, none
    0x2a, 0x99, 0x00, 0x01, 0xde, 0xad, 0xbe, 0xef,                          // BT=42
};

RtcpPacket only_packet(const Bytes& bytes) {
    const auto compound = parse_rtcp(span_of(bytes));
    REQUIRE(compound.ok());
    REQUIRE(compound->size() == 1);
    return *compound->begin();
}

// A copy of `packet` cut to `body` octets of body, with the length field rewritten to match.
Bytes with_body_length(const Bytes& packet, std::size_t body) {
    Bytes out{packet[0], packet[1], 0x00, static_cast<std::uint8_t>(body / 4)};
    out.insert(out.end(), packet.begin() + 4, packet.begin() + 4 + static_cast<std::ptrdiff_t>(body));
    return out;
}

std::vector<XrBlock> blocks_of(const XrPacket& xr) { return {xr.begin(), xr.end()}; }

}  // namespace

// ---- compound framing -----------------------------------------------------------------------

TEST_CASE("SR + SDES compound: framing and iteration", "[rtcp][compound]") {
    const Bytes bytes = concat(sender_report, sdes_cname);
    const auto compound = parse_rtcp(span_of(bytes));
    REQUIRE(compound.ok());
    CHECK(compound->size() == 2);
    CHECK(compound->starts_with_report());
    CHECK(compound->bytes().size() == 72);

    auto it = compound->begin();
    REQUIRE(it != compound->end());
    CHECK(it->type == RtcpType::sr);
    CHECK(it->count == 1);
    CHECK_FALSE(it->padding);
    CHECK(it->padding_size == 0);
    CHECK(it->bytes.data() == bytes.data());
    CHECK(it->bytes.size() == 52);
    CHECK(it->body.data() == bytes.data() + 4);
    CHECK(it->body.size() == 48);
    ++it;
    REQUIRE(it != compound->end());
    CHECK(it->type == RtcpType::sdes);
    CHECK(it->count == 1);
    CHECK(it->bytes.data() == bytes.data() + 52);
    CHECK(it->bytes.size() == 20);
    CHECK(it->body.size() == 16);
    ++it;
    CHECK(it == compound->end());

    std::vector<RtcpType> types;
    for (const RtcpPacket& packet : *compound) types.push_back(packet.type);
    CHECK(types == std::vector<RtcpType>{RtcpType::sr, RtcpType::sdes});
}

TEST_CASE("SR + SDES compound: decoded contents", "[rtcp][sr][sdes]") {
    const Bytes bytes = concat(sender_report, sdes_cname);
    const auto compound = parse_rtcp(span_of(bytes));
    REQUIRE(compound.ok());
    auto it = compound->begin();

    const auto sr = parse_sender_report(*it);
    REQUIRE(sr.ok());
    CHECK(sr->ssrc == 0x11223344u);
    CHECK(sr->sender_info == SenderInfo{0x83aa7e8080000000ull, 40960, 100, 16000});
    CHECK(unix_micros_from_ntp(sr->sender_info.ntp_timestamp) == 500'000);
    CHECK(ntp_middle32(sr->sender_info.ntp_timestamp) == 0x7e808000u);
    REQUIRE(sr->report_blocks.size() == 1);
    CHECK(sr->report_blocks[0] == ReportBlock{0x55667788u, 64, 5, 0x00010010u, 42, 0xb7052000u, 0x00054000u});
    CHECK(sr->profile_extension.empty());

    ++it;
    const auto sdes = parse_sdes(*it);
    REQUIRE(sdes.ok());
    REQUIRE(sdes->size() == 1);
    const SdesChunk chunk = *sdes->begin();
    CHECK(chunk.ssrc == 0x11223344u);
    CHECK(chunk.cname() == "user@host");
    CHECK(chunk.items.size() == 11);
}

TEST_CASE("reduced-size RTCP is accepted but flagged", "[rtcp][compound]") {
    SECTION("SDES alone") {
        const auto compound = parse_rtcp(span_of(sdes_cname));
        REQUIRE(compound.ok());
        CHECK(compound->size() == 1);
        CHECK_FALSE(compound->starts_with_report());
    }
    SECTION("XR then RR") {
        const Bytes bytes = concat(xr_voip, receiver_report);
        const auto compound = parse_rtcp(span_of(bytes));
        REQUIRE(compound.ok());
        CHECK(compound->size() == 2);
        CHECK_FALSE(compound->starts_with_report());
    }
    SECTION("RR first is compliant") {
        const Bytes bytes = concat(receiver_report, xr_voip);
        const auto compound = parse_rtcp(span_of(bytes));
        REQUIRE(compound.ok());
        CHECK(compound->starts_with_report());
    }
}

TEST_CASE("unknown packet types pass through the iterator", "[rtcp][compound]") {
    // PSFB (206) FMT=1 PLI: header + sender SSRC + media SSRC = 12 octets, length 2; then PT 195.
    const Bytes pli{0x81, 0xce, 0x00, 0x02, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02};
    const Bytes odd{0x80, 0xc3, 0x00, 0x00};
    const Bytes bytes = concat(concat(receiver_report, pli), odd);
    const auto compound = parse_rtcp(span_of(bytes));
    REQUIRE(compound.ok());
    REQUIRE(compound->size() == 3);
    std::vector<RtcpPacket> packets(compound->begin(), compound->end());
    CHECK(packets[1].type == RtcpType::psfb);
    CHECK(packets[1].count == 1);
    CHECK(bytes_of(packets[1].body) == Bytes{0, 0, 0, 1, 0, 0, 0, 2});
    CHECK(static_cast<int>(packets[2].type) == 195);
    CHECK(packets[2].body.empty());
    CHECK(to_string(packets[2].type) == "other");
    const auto wrong = parse_receiver_report(packets[1]);
    REQUIRE_FALSE(wrong.ok());
    CHECK(wrong.error() == RtcpError::wrong_packet_type);
}

TEST_CASE("padding on an RTCP packet", "[rtcp][compound][padding]") {
    // RR, RC=0, padding 4: header + SSRC + 00 00 00 04 = 12 octets, length 2.
    Bytes padded{0xa0, 0xc9, 0x00, 0x02, 0x01, 0x02, 0x03, 0x04, 0x00, 0x00, 0x00, 0x04};
    SECTION("valid") {
        const RtcpPacket packet = only_packet(padded);
        CHECK(packet.padding);
        CHECK(packet.padding_size == 4);
        CHECK(packet.bytes.size() == 12);
        CHECK(bytes_of(packet.body) == Bytes{0x01, 0x02, 0x03, 0x04});
        const auto rr = parse_receiver_report(packet);
        REQUIRE(rr.ok());
        CHECK(rr->ssrc == 0x01020304u);
        CHECK(rr->report_blocks.empty());
    }
    SECTION("count zero") {
        padded.back() = 0;
        const auto r = parse_rtcp(span_of(padded));
        REQUIRE_FALSE(r.ok());
        CHECK(r.error() == RtcpError::padding_zero);
    }
    SECTION("count larger than the body") {
        padded.back() = 9;
        const auto r = parse_rtcp(span_of(padded));
        REQUIRE_FALSE(r.ok());
        CHECK(r.error() == RtcpError::padding_overflow);
    }
    SECTION("count equal to the body leaves nothing") {
        padded.back() = 8;
        const RtcpPacket packet = only_packet(padded);
        CHECK(packet.body.empty());
        const auto rr = parse_receiver_report(packet);
        REQUIRE_FALSE(rr.ok());
        CHECK(rr.error() == RtcpError::ssrc_truncated);
    }
    SECTION("P set on a header-only packet: the count octet is the length field's low octet") {
        const Bytes bare{0xa0, 0xcb, 0x00, 0x00};
        const auto r = parse_rtcp(span_of(bare));
        REQUIRE_FALSE(r.ok());
        CHECK(r.error() == RtcpError::padding_zero);
    }
}

TEST_CASE("compound framing errors", "[rtcp][compound][hostile]") {
    SECTION("empty") {
        const auto r = parse_rtcp(ByteSpan{});
        REQUIRE_FALSE(r.ok());
        CHECK(r.error() == RtcpError::too_short);
    }
    SECTION("bad version on the first or a later packet") {
        for (const std::uint8_t first : {std::uint8_t{0x01}, std::uint8_t{0x41}, std::uint8_t{0xc1}}) {
            Bytes bytes = concat(sender_report, sdes_cname);
            bytes[0] = first;
            auto r = parse_rtcp(span_of(bytes));
            REQUIRE_FALSE(r.ok());
            CHECK(r.error() == RtcpError::bad_version);
            bytes[0] = 0x81;
            bytes[52] = first;
            r = parse_rtcp(span_of(bytes));
            REQUIRE_FALSE(r.ok());
            CHECK(r.error() == RtcpError::bad_version);
        }
    }
    SECTION("length one word too long") {
        Bytes bytes = sender_report;
        bytes[3] = 0x0d;
        const auto r = parse_rtcp(span_of(bytes));
        REQUIRE_FALSE(r.ok());
        CHECK(r.error() == RtcpError::length_overflow);
    }
    SECTION("length 0xffff") {
        Bytes bytes = concat(sender_report, sdes_cname);
        bytes[54] = 0xff;
        bytes[55] = 0xff;
        const auto r = parse_rtcp(span_of(bytes));
        REQUIRE_FALSE(r.ok());
        CHECK(r.error() == RtcpError::length_overflow);
    }
    SECTION("length one word too short leaves a bogus second packet") {
        Bytes bytes = sdes_cname;
        bytes[3] = 0x03;  // the last word, "ost\0" (6f 73 74 00), is read as a header
        const auto r = parse_rtcp(span_of(bytes));
        REQUIRE_FALSE(r.ok());
        CHECK(r.error() == RtcpError::bad_version);  // 0x6f >> 6 == 1
    }
    SECTION("trailing octets after the last packet") {
        for (std::size_t extra = 1; extra <= 3; ++extra) {
            Bytes bytes = sender_report;
            bytes.resize(bytes.size() + extra, 0x80);
            const auto r = parse_rtcp(span_of(bytes));
            REQUIRE_FALSE(r.ok());
            CHECK(r.error() == RtcpError::too_short);
        }
    }
}

TEST_CASE("compound truncated at every length", "[rtcp][compound][hostile]") {
    const Bytes bytes = concat(sender_report, sdes_cname);
    for (std::size_t length = 0; length <= bytes.size(); ++length) {
        CAPTURE(length);
        const Bytes cut = prefix(bytes, length);
        const auto r = parse_rtcp(span_of(cut));
        if (length == 52 || length == 72) {  // one or two whole packets
            REQUIRE(r.ok());
            CHECK(r->size() == (length == 52 ? 1u : 2u));
        } else if (length < 4 || (length > 52 && length < 56)) {
            REQUIRE_FALSE(r.ok());
            CHECK(r.error() == RtcpError::too_short);
        } else {
            REQUIRE_FALSE(r.ok());
            CHECK(r.error() == RtcpError::length_overflow);
        }
    }
}

TEST_CASE("every hand-built packet truncated at every length fails framing", "[rtcp][compound][hostile]") {
    for (const Bytes* packet : {&sender_report, &sdes_cname, &receiver_report, &xr_voip, &xr_rtt}) {
        REQUIRE(parse_rtcp(span_of(*packet)).ok());
        for (std::size_t length = 0; length < packet->size(); ++length) {
            CAPTURE(packet->size(), length);
            const Bytes cut = prefix(*packet, length);
            const auto r = parse_rtcp(span_of(cut));
            REQUIRE_FALSE(r.ok());
            CHECK(r.error() == (length < 4 ? RtcpError::too_short : RtcpError::length_overflow));
        }
    }
}

TEST_CASE("parse_rtcp_packet frames only the first packet", "[rtcp][compound]") {
    const Bytes bytes = concat(sdes_cname, sender_report);
    const auto r = parse_rtcp_packet(span_of(bytes));
    REQUIRE(r.ok());
    CHECK(r->type == RtcpType::sdes);
    CHECK(r->bytes.size() == 20);
    const auto short_one = parse_rtcp_packet(span_of(prefix(bytes, 3)));
    REQUIRE_FALSE(short_one.ok());
    CHECK(short_one.error() == RtcpError::too_short);
}

// ---- SR / RR --------------------------------------------------------------------------------

TEST_CASE("RR with two report blocks, one with negative cumulative loss", "[rtcp][rr]") {
    const auto rr = parse_receiver_report(only_packet(receiver_report));
    REQUIRE(rr.ok());
    CHECK(rr->ssrc == 0xdeadbeefu);
    REQUIRE(rr->report_blocks.size() == 2);
    CHECK(rr->report_blocks[0] == ReportBlock{1, 25, 10, 0xf000, 16, 0xb7052000u, 0x00054000u});
    CHECK(rr->report_blocks[1] == ReportBlock{2, 0, -1, 0x00020005u, 256, 0, 0});
    std::vector<std::uint32_t> sources;
    for (const ReportBlock block : rr->report_blocks) sources.push_back(block.ssrc);
    CHECK(sources == std::vector<std::uint32_t>{1, 2});
    CHECK(rr->profile_extension.empty());
}

TEST_CASE("cumulative lost is a signed 24-bit field", "[rtcp][rr]") {
    struct Case {
        std::uint8_t b1, b2, b3;
        std::int32_t expected;
    };
    for (const Case c : {Case{0x00, 0x00, 0x00, 0}, Case{0x7f, 0xff, 0xff, 8'388'607},
                         Case{0x80, 0x00, 0x00, -8'388'608}, Case{0xff, 0xff, 0xfe, -2}, Case{0x00, 0x01, 0x00, 256}}) {
        Bytes bytes = receiver_report;
        bytes[8 + 4] = 0xff;  // fraction lost must not leak into the count
        bytes[8 + 5] = c.b1;
        bytes[8 + 6] = c.b2;
        bytes[8 + 7] = c.b3;
        const auto rr = parse_receiver_report(only_packet(bytes));
        REQUIRE(rr.ok());
        CHECK(rr->report_blocks[0].fraction_lost == 255);
        CHECK(rr->report_blocks[0].cumulative_lost == c.expected);
    }
}

TEST_CASE("RR with no blocks and a profile extension", "[rtcp][rr]") {
    const Bytes bytes{0x80, 0xc9, 0x00, 0x02, 0x00, 0x00, 0x00, 0x09, 0xca, 0xfe, 0xba, 0xbe};
    const auto rr = parse_receiver_report(only_packet(bytes));
    REQUIRE(rr.ok());
    CHECK(rr->ssrc == 9);
    CHECK(rr->report_blocks.empty());
    CHECK(bytes_of(rr->profile_extension) == Bytes{0xca, 0xfe, 0xba, 0xbe});
}

TEST_CASE("SR with 31 report blocks, the most RC can say", "[rtcp][sr]") {
    Bytes bytes = prefix(sender_report, 28);
    bytes[0] = 0x9f;  // RC=31
    for (std::uint8_t i = 0; i < 31; ++i)
        append(bytes, Bytes{0, 0, 0, i, i, 0, 0, i, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
    const std::size_t words = bytes.size() / 4 - 1;  // 4 + 24 + 31*24 = 772 octets
    REQUIRE(words == 192);
    bytes[2] = 0;
    bytes[3] = static_cast<std::uint8_t>(words);
    const auto sr = parse_sender_report(only_packet(bytes));
    REQUIRE(sr.ok());
    REQUIRE(sr->report_blocks.size() == 31);
    CHECK(sr->report_blocks[30] == ReportBlock{30, 30, 30, 0, 0, 0, 0});
    std::size_t n = 0;
    for (const ReportBlock block : sr->report_blocks) CHECK(block.ssrc == n++);
    CHECK(n == 31);
}

TEST_CASE("SR and RR bodies truncated at every word", "[rtcp][sr][rr][hostile]") {
    for (std::size_t body = 0; body < 48; body += 4) {
        CAPTURE(body);
        const Bytes bytes = with_body_length(sender_report, body);
        const auto sr = parse_sender_report(only_packet(bytes));
        REQUIRE_FALSE(sr.ok());
        CHECK(sr.error() == (body < 24 ? RtcpError::sender_info_truncated : RtcpError::report_blocks_truncated));
    }
    for (std::size_t body = 0; body < 52; body += 4) {
        CAPTURE(body);
        const Bytes bytes = with_body_length(receiver_report, body);
        const auto rr = parse_receiver_report(only_packet(bytes));
        REQUIRE_FALSE(rr.ok());
        CHECK(rr.error() == (body < 4 ? RtcpError::ssrc_truncated : RtcpError::report_blocks_truncated));
    }
}

TEST_CASE("RC that lies about the number of blocks", "[rtcp][rr][hostile]") {
    Bytes bytes = receiver_report;
    bytes[0] = 0x83;  // 3 blocks announced, 2 present
    auto rr = parse_receiver_report(only_packet(bytes));
    REQUIRE_FALSE(rr.ok());
    CHECK(rr.error() == RtcpError::report_blocks_truncated);
    bytes[0] = 0x81;  // 1 announced: the second block becomes profile extension
    rr = parse_receiver_report(only_packet(bytes));
    REQUIRE(rr.ok());
    CHECK(rr->report_blocks.size() == 1);
    CHECK(rr->profile_extension.size() == 24);
}

TEST_CASE("typed parsers refuse other packet types", "[rtcp][hostile]") {
    const RtcpPacket rr = only_packet(receiver_report);
    const RtcpPacket sdes = only_packet(sdes_cname);
    CHECK(parse_sender_report(rr).error() == RtcpError::wrong_packet_type);
    CHECK(parse_receiver_report(sdes).error() == RtcpError::wrong_packet_type);
    CHECK(parse_sdes(rr).error() == RtcpError::wrong_packet_type);
    CHECK(parse_bye(rr).error() == RtcpError::wrong_packet_type);
    CHECK(parse_app(rr).error() == RtcpError::wrong_packet_type);
    CHECK(parse_xr(rr).error() == RtcpError::wrong_packet_type);
}

// ---- SDES -----------------------------------------------------------------------------------

TEST_CASE("SDES with two chunks and several items", "[rtcp][sdes]") {
    // chunk 1: SSRC, CNAME "a", NAME "Bob", terminator at 12 -> padded to 16
    // chunk 2: SSRC, TOOL "x", terminator at 7 -> padded to 8;  body 24, length 6
    const Bytes bytes{0x82, 0xca, 0x00, 0x06, 0xaa, 0xbb, 0xcc, 0xdd, 0x01, 0x01, 'a',  0x02, 0x03, 'B',
                      'o',  'b',  0x00, 0x00, 0x00, 0x00, 0x01, 0x02, 0x03, 0x04, 0x06, 0x01, 'x',  0x00};
    const auto sdes = parse_sdes(only_packet(bytes));
    REQUIRE(sdes.ok());
    REQUIRE(sdes->size() == 2);
    const std::vector<SdesChunk> chunks(sdes->begin(), sdes->end());
    REQUIRE(chunks.size() == 2);

    CHECK(chunks[0].ssrc == 0xaabbccddu);
    CHECK(chunks[0].cname() == "a");
    const std::vector<SdesItem> items(chunks[0].begin(), chunks[0].end());
    REQUIRE(items.size() == 2);
    CHECK(items[0].type == SdesItemType::cname);
    CHECK(items[0].value == "a");
    CHECK(items[1].type == SdesItemType::name);
    CHECK(items[1].value == "Bob");
    CHECK(chunks[0].find(SdesItemType::name) == std::optional<std::string_view>("Bob"));
    CHECK_FALSE(chunks[0].find(SdesItemType::email).has_value());

    CHECK(chunks[1].ssrc == 0x01020304u);
    CHECK(chunks[1].find(SdesItemType::tool) == std::optional<std::string_view>("x"));
    CHECK_FALSE(chunks[1].find(SdesItemType::cname).has_value());
    CHECK(chunks[1].cname().empty());
}

TEST_CASE("SDES edge cases", "[rtcp][sdes]") {
    SECTION("chunk with no items is four null octets after the SSRC") {
        const Bytes bytes{0x81, 0xca, 0x00, 0x02, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00, 0x00};
        const auto sdes = parse_sdes(only_packet(bytes));
        REQUIRE(sdes.ok());
        REQUIRE(sdes->size() == 1);
        CHECK(sdes->begin()->ssrc == 7);
        CHECK(sdes->begin()->items.empty());
    }
    SECTION("SC=0") {
        const Bytes bytes{0x80, 0xca, 0x00, 0x00};
        const auto sdes = parse_sdes(only_packet(bytes));
        REQUIRE(sdes.ok());
        CHECK(sdes->size() == 0);
        CHECK(sdes->begin() == sdes->end());
    }
    SECTION("missing terminator at the very end of the packet is tolerated") {
        const Bytes bytes{0x81, 0xca, 0x00, 0x02, 0x00, 0x00, 0x00, 0x07, 0x01, 0x02, 'a', 'b'};
        const auto sdes = parse_sdes(only_packet(bytes));
        REQUIRE(sdes.ok());
        CHECK(sdes->begin()->cname() == "ab");
    }
    SECTION("empty CNAME value") {
        const Bytes bytes{0x81, 0xca, 0x00, 0x02, 0x00, 0x00, 0x00, 0x07, 0x01, 0x00, 0x00, 0x00};
        const auto sdes = parse_sdes(only_packet(bytes));
        REQUIRE(sdes.ok());
        REQUIRE(sdes->begin()->find(SdesItemType::cname).has_value());
        CHECK(sdes->begin()->cname().empty());
    }
    SECTION("PRIV item keeps its prefix inside the value") {
        const Bytes bytes{0x81, 0xca, 0x00, 0x03, 0x00, 0x00, 0x00, 0x07, 0x08, 0x04, 0x02, 'p', 'q', 'v', 0x00, 0x00};
        const auto sdes = parse_sdes(only_packet(bytes));
        REQUIRE(sdes.ok());
        CHECK(sdes->begin()->find(SdesItemType::priv) == std::optional<std::string_view>("\x02pqv"));
    }
}

TEST_CASE("SDES that lies", "[rtcp][sdes][hostile]") {
    SECTION("SC says two chunks, one present") {
        Bytes bytes = sdes_cname;
        bytes[0] = 0x82;
        const auto sdes = parse_sdes(only_packet(bytes));
        REQUIRE_FALSE(sdes.ok());
        CHECK(sdes.error() == RtcpError::sdes_chunk_truncated);
    }
    SECTION("item length past the end") {
        const Bytes bytes{0x81, 0xca, 0x00, 0x02, 0x00, 0x00, 0x00, 0x07, 0x01, 0x03, 'a', 'b'};
        const auto sdes = parse_sdes(only_packet(bytes));
        REQUIRE_FALSE(sdes.ok());
        CHECK(sdes.error() == RtcpError::sdes_item_truncated);
    }
    SECTION("item type in the last octet, no length octet") {
        const Bytes bytes{0x81, 0xca, 0x00, 0x02, 0x00, 0x00, 0x00, 0x07, 0x01, 0x01, 'a', 0x02};
        const auto sdes = parse_sdes(only_packet(bytes));
        REQUIRE_FALSE(sdes.ok());
        CHECK(sdes.error() == RtcpError::sdes_item_truncated);
    }
    SECTION("body truncated at every word") {
        for (std::size_t body = 0; body < 16; body += 4) {
            CAPTURE(body);
            const Bytes bytes = with_body_length(sdes_cname, body);
            const auto sdes = parse_sdes(only_packet(bytes));
            if (body == 4) {  // a bare SSRC reads as an unterminated chunk with no items
                REQUIRE(sdes.ok());
                CHECK(sdes->begin()->items.empty());
                continue;
            }
            REQUIRE_FALSE(sdes.ok());
            CHECK(sdes.error() == (body < 4 ? RtcpError::sdes_chunk_truncated : RtcpError::sdes_item_truncated));
        }
    }
}

// ---- BYE / APP ------------------------------------------------------------------------------

TEST_CASE("BYE with two sources and a reason", "[rtcp][bye]") {
    // 2 SSRCs + length 6 + "hangup" + 1 pad = 16 octets; length 4
    const Bytes bytes{0x82, 0xcb, 0x00, 0x04, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66,
                      0x77, 0x88, 0x06, 'h',  'a',  'n',  'g',  'u',  'p',  0x00};
    const auto bye = parse_bye(only_packet(bytes));
    REQUIRE(bye.ok());
    REQUIRE(bye->sources.size() == 2);
    CHECK(bye->sources[0] == 0x11223344u);
    CHECK(bye->sources[1] == 0x55667788u);
    CHECK(bye->has_reason);
    CHECK(bye->reason == "hangup");
}

TEST_CASE("BYE without a reason", "[rtcp][bye]") {
    const Bytes one{0x81, 0xcb, 0x00, 0x01, 0x11, 0x22, 0x33, 0x44};
    auto bye = parse_bye(only_packet(one));
    REQUIRE(bye.ok());
    CHECK(std::vector<std::uint32_t>(bye->sources.begin(), bye->sources.end()) ==
          std::vector<std::uint32_t>{0x11223344u});
    CHECK_FALSE(bye->has_reason);
    CHECK(bye->reason.empty());

    const Bytes none{0x80, 0xcb, 0x00, 0x00};
    bye = parse_bye(only_packet(none));
    REQUIRE(bye.ok());
    CHECK(bye->sources.empty());
    CHECK_FALSE(bye->has_reason);
}

TEST_CASE("BYE that lies", "[rtcp][bye][hostile]") {
    SECTION("SC larger than the body") {
        const Bytes bytes{0x83, 0xcb, 0x00, 0x02, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88};
        const auto bye = parse_bye(only_packet(bytes));
        REQUIRE_FALSE(bye.ok());
        CHECK(bye.error() == RtcpError::bye_sources_truncated);
    }
    SECTION("reason length past the end") {
        const Bytes bytes{0x81, 0xcb, 0x00, 0x02, 0x11, 0x22, 0x33, 0x44, 0x04, 'b', 'y', 'e'};
        const auto bye = parse_bye(only_packet(bytes));
        REQUIRE_FALSE(bye.ok());
        CHECK(bye.error() == RtcpError::bye_reason_truncated);
    }
    SECTION("reason exactly filling the body") {
        const Bytes bytes{0x81, 0xcb, 0x00, 0x02, 0x11, 0x22, 0x33, 0x44, 0x03, 'b', 'y', 'e'};
        const auto bye = parse_bye(only_packet(bytes));
        REQUIRE(bye.ok());
        CHECK(bye->reason == "bye");
    }
}

TEST_CASE("APP packet", "[rtcp][app]") {
    const Bytes bytes{0x85, 0xcc, 0x00, 0x04, 0x11, 0x22, 0x33, 0x44, 'Q',  'O',
                      'S',  '1',  0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08};
    const auto app = parse_app(only_packet(bytes));
    REQUIRE(app.ok());
    CHECK(app->subtype == 5);
    CHECK(app->ssrc == 0x11223344u);
    CHECK(app->name == "QOS1");
    CHECK(bytes_of(app->data) == Bytes{1, 2, 3, 4, 5, 6, 7, 8});

    for (std::size_t body = 0; body < 8; body += 4) {
        const auto cut = parse_app(only_packet(with_body_length(bytes, body)));
        REQUIRE_FALSE(cut.ok());
        CHECK(cut.error() == RtcpError::app_truncated);
    }
    const auto no_data = parse_app(only_packet(with_body_length(bytes, 8)));
    REQUIRE(no_data.ok());
    CHECK(no_data->data.empty());
}

// ---- XR -------------------------------------------------------------------------------------

TEST_CASE("XR VoIP metrics: every field", "[rtcp][xr][voip]") {
    const auto xr = parse_xr(only_packet(xr_voip));
    REQUIRE(xr.ok());
    CHECK(xr->ssrc() == 0x11223344u);
    REQUIRE(xr->size() == 1);
    const XrBlock block = *xr->begin();
    CHECK(block.type == XrBlockType::voip_metrics);
    CHECK(block.type_specific == 0);
    CHECK(block.body.size() == 32);

    const auto m = parse_voip_metrics(block);
    REQUIRE(m.ok());
    CHECK(m->ssrc == 0x55667788u);
    CHECK(m->loss_rate == 13);
    CHECK(m->discard_rate == 3);
    CHECK(m->burst_density == 128);
    CHECK(m->gap_density == 2);
    CHECK(m->burst_duration_ms == 100);
    CHECK(m->gap_duration_ms == 5000);
    CHECK(m->round_trip_delay_ms == 50);
    CHECK(m->end_system_delay_ms == 120);
    CHECK(m->signal_level_db == -20);
    CHECK(m->noise_level_db == -80);
    CHECK(m->rerl_db == 30);
    CHECK(m->gmin == 16);
    CHECK(m->r_factor == 90);
    CHECK(m->ext_r_factor == VoipMetrics::unavailable);
    CHECK(m->mos_lq_x10 == 41);
    CHECK(m->mos_cq_x10 == 39);
    CHECK(m->rx_config == 0xb5);
    CHECK(m->jb_nominal_ms == 40);
    CHECK(m->jb_maximum_ms == 80);
    CHECK(m->jb_abs_max_ms == 200);

    CHECK(m->loss_fraction() == 13.0 / 256.0);
    CHECK(m->discard_fraction() == 3.0 / 256.0);
    REQUIRE(m->mos_lq().has_value());
    CHECK(*m->mos_lq() == Approx(4.1));
    REQUIRE(m->mos_cq().has_value());
    CHECK(*m->mos_cq() == Approx(3.9));
    CHECK(m->plc() == PacketLossConcealment::enhanced);
    CHECK(m->jitter_buffer_mode() == JitterBufferMode::adaptive);
    CHECK(m->jitter_buffer_rate() == 5);
}

TEST_CASE("XR VoIP metrics: unavailable MOS and other RX configs", "[rtcp][xr][voip]") {
    Bytes bytes = xr_voip;
    bytes[8 + 4 + 22] = 127;   // MOS-LQ
    bytes[8 + 4 + 23] = 127;   // MOS-CQ
    bytes[8 + 4 + 24] = 0x60;  // 01 10 0000: PLC disabled, non-adaptive, rate 0
    bytes[8 + 4 + 25] = 0xff;  // reserved octet is ignored
    auto xr = parse_xr(only_packet(bytes));
    REQUIRE(xr.ok());
    auto m = parse_voip_metrics(*xr->begin());
    REQUIRE(m.ok());
    CHECK_FALSE(m->mos_lq().has_value());
    CHECK_FALSE(m->mos_cq().has_value());
    CHECK(m->plc() == PacketLossConcealment::disabled);
    CHECK(m->jitter_buffer_mode() == JitterBufferMode::non_adaptive);
    CHECK(m->jitter_buffer_rate() == 0);
    CHECK(m->jb_nominal_ms == 40);

    bytes[8 + 4 + 24] = 0xff;  // PLC standard, adaptive, rate 15
    xr = parse_xr(only_packet(bytes));
    REQUIRE(xr.ok());
    m = parse_voip_metrics(*xr->begin());
    REQUIRE(m.ok());
    CHECK(m->plc() == PacketLossConcealment::standard);
    CHECK(m->jitter_buffer_mode() == JitterBufferMode::adaptive);
    CHECK(m->jitter_buffer_rate() == 15);

    bytes[8 + 4 + 24] = 0x00;
    xr = parse_xr(only_packet(bytes));
    REQUIRE(xr.ok());
    m = parse_voip_metrics(*xr->begin());
    REQUIRE(m.ok());
    CHECK(m->plc() == PacketLossConcealment::unspecified);
    CHECK(m->jitter_buffer_mode() == JitterBufferMode::unknown);
}

TEST_CASE("XR RRT + DLRR give a round-trip time; unknown blocks are skipped", "[rtcp][xr][rtt]") {
    const auto xr = parse_xr(only_packet(xr_rtt));
    REQUIRE(xr.ok());
    CHECK(xr->ssrc() == 0xaabbccddu);
    REQUIRE(xr->size() == 3);
    const std::vector<XrBlock> blocks = blocks_of(*xr);
    REQUIRE(blocks.size() == 3);

    CHECK(blocks[0].type == XrBlockType::receiver_reference_time);
    const auto rrt = parse_receiver_reference_time(blocks[0]);
    REQUIRE(rrt.ok());
    CHECK(rrt->ntp_timestamp == 0x83aa7e8080000000ull);
    CHECK(ntp_middle32(rrt->ntp_timestamp) == 0x7e808000u);

    CHECK(blocks[1].type == XrBlockType::dlrr);
    const auto dlrr = parse_dlrr(blocks[1]);
    REQUIRE(dlrr.ok());
    REQUIRE(dlrr->size() == 2);
    CHECK((*dlrr)[0] == DlrrItem{1, 0x7e808000u, 0x00010000u});
    CHECK((*dlrr)[1] == DlrrItem{2, 0, 0});

    // The RRT left at Unix 0.5 s, the peer held it 1 s, the DLRR arrives at Unix 1.75 s:
    // A = 0x7e81c000, A - LRR - DLRR = 0x4000 = 0.25 s.
    const std::uint32_t arrival = ntp_middle32(ntp_from_unix_micros(1'750'000));
    CHECK(arrival == 0x7e81c000u);
    CHECK(round_trip_micros(arrival, (*dlrr)[0].last_rr, (*dlrr)[0].delay_since_last_rr) == 250'000);
    CHECK_FALSE(round_trip_micros(arrival, (*dlrr)[1].last_rr, (*dlrr)[1].delay_since_last_rr).has_value());

    CHECK(static_cast<int>(blocks[2].type) == 42);
    CHECK(blocks[2].type_specific == 0x99);
    CHECK(bytes_of(blocks[2].body) == Bytes{0xde, 0xad, 0xbe, 0xef});
    CHECK(parse_voip_metrics(blocks[2]).error() == RtcpError::wrong_block_type);
}

TEST_CASE("XR with no blocks", "[rtcp][xr]") {
    const Bytes bytes{0x80, 0xcf, 0x00, 0x01, 0x00, 0x00, 0x00, 0x05};
    const auto xr = parse_xr(only_packet(bytes));
    REQUIRE(xr.ok());
    CHECK(xr->ssrc() == 5);
    CHECK(xr->size() == 0);
    CHECK(xr->begin() == xr->end());
}

TEST_CASE("XR that lies", "[rtcp][xr][hostile]") {
    SECTION("block length one word past the packet") {
        Bytes bytes = xr_voip;
        bytes[11] = 0x09;
        const auto xr = parse_xr(only_packet(bytes));
        REQUIRE_FALSE(xr.ok());
        CHECK(xr.error() == RtcpError::xr_block_overflow);
    }
    SECTION("block length 0xffff") {
        Bytes bytes = xr_rtt;
        bytes[22] = 0xff;
        bytes[23] = 0xff;
        const auto xr = parse_xr(only_packet(bytes));
        REQUIRE_FALSE(xr.ok());
        CHECK(xr.error() == RtcpError::xr_block_overflow);
    }
    SECTION("partial block header left by padding") {
        // P=1, length 2: SSRC + 07 00 | 00 02, padding 2 leaves a 2-octet block header
        const Bytes bytes{0xa0, 0xcf, 0x00, 0x02, 0x11, 0x22, 0x33, 0x44, 0x07, 0x00, 0x00, 0x02};
        const auto xr = parse_xr(only_packet(bytes));
        REQUIRE_FALSE(xr.ok());
        CHECK(xr.error() == RtcpError::xr_block_truncated);
    }
    SECTION("body without the reporter SSRC") {
        const Bytes bytes{0x80, 0xcf, 0x00, 0x00};
        const auto xr = parse_xr(only_packet(bytes));
        REQUIRE_FALSE(xr.ok());
        CHECK(xr.error() == RtcpError::ssrc_truncated);
    }
    SECTION("VoIP metrics body truncated at every word") {
        for (std::size_t body = 0; body < 40; body += 4) {
            CAPTURE(body);
            const Bytes bytes = with_body_length(xr_voip, body);
            const auto xr = parse_xr(only_packet(bytes));
            if (body == 4) {  // the reporter SSRC alone: an XR with no blocks
                REQUIRE(xr.ok());
                CHECK(xr->size() == 0);
                continue;
            }
            REQUIRE_FALSE(xr.ok());
            CHECK(xr.error() == (body < 4 ? RtcpError::ssrc_truncated : RtcpError::xr_block_overflow));
        }
    }
    SECTION("known blocks with lengths their type does not allow") {
        // VoIP metrics with block length 7, RRT with 1, DLRR with 2 (not a multiple of 3).
        Bytes voip = with_body_length(xr_voip, 36);
        voip[11] = 0x07;
        const auto xr1 = parse_xr(only_packet(voip));
        REQUIRE(xr1.ok());
        CHECK(parse_voip_metrics(*xr1->begin()).error() == RtcpError::xr_block_bad_length);

        const Bytes rrt{0x80, 0xcf, 0x00, 0x03, 0, 0, 0, 1, 0x04, 0x00, 0x00, 0x01, 0x01, 0x02, 0x03, 0x04};
        const auto xr2 = parse_xr(only_packet(rrt));
        REQUIRE(xr2.ok());
        CHECK(parse_receiver_reference_time(*xr2->begin()).error() == RtcpError::xr_block_bad_length);

        const Bytes dlrr{0x80, 0xcf, 0x00, 0x04, 0, 0, 0, 1, 0x05, 0x00, 0x00, 0x02, 0, 0, 0, 1, 0, 0, 0, 2};
        const auto xr3 = parse_xr(only_packet(dlrr));
        REQUIRE(xr3.ok());
        CHECK(parse_dlrr(*xr3->begin()).error() == RtcpError::xr_block_bad_length);
        CHECK(parse_receiver_reference_time(*xr3->begin()).error() == RtcpError::wrong_block_type);
        CHECK(parse_dlrr(*xr2->begin()).error() == RtcpError::wrong_block_type);
    }
    SECTION("empty DLRR is valid") {
        const Bytes dlrr{0x80, 0xcf, 0x00, 0x02, 0, 0, 0, 1, 0x05, 0x00, 0x00, 0x00};
        const auto xr = parse_xr(only_packet(dlrr));
        REQUIRE(xr.ok());
        const auto list = parse_dlrr(*xr->begin());
        REQUIRE(list.ok());
        CHECK(list->empty());
    }
}

// ---- RTT worked example and names -----------------------------------------------------------

TEST_CASE("RTT from a report block, RFC 3550 6.4.1 worked example", "[rtcp][rtt]") {
    // The RFC's figure: LSR 0xb705:2000 (46853.125 s), DLSR 0x0005:4000 (5.25 s), arrival
    // A = 0xb710:8000 (46864.5 s): RTT = 0x0006:2000 = 6.125 s.
    const auto rr = parse_receiver_report(only_packet(receiver_report));
    REQUIRE(rr.ok());
    const ReportBlock block = rr->report_blocks[0];
    CHECK(round_trip_micros(0xb7108000u, block.last_sr, block.delay_since_last_sr) == 6'125'000);
}

TEST_CASE("RtcpError and RtcpType names", "[rtcp][errors]") {
    const std::vector<std::pair<RtcpError, std::string_view>> errors{
        {RtcpError::too_short, "too_short"},
        {RtcpError::bad_version, "bad_version"},
        {RtcpError::length_overflow, "length_overflow"},
        {RtcpError::padding_zero, "padding_zero"},
        {RtcpError::padding_overflow, "padding_overflow"},
        {RtcpError::wrong_packet_type, "wrong_packet_type"},
        {RtcpError::ssrc_truncated, "ssrc_truncated"},
        {RtcpError::sender_info_truncated, "sender_info_truncated"},
        {RtcpError::report_blocks_truncated, "report_blocks_truncated"},
        {RtcpError::sdes_chunk_truncated, "sdes_chunk_truncated"},
        {RtcpError::sdes_item_truncated, "sdes_item_truncated"},
        {RtcpError::bye_sources_truncated, "bye_sources_truncated"},
        {RtcpError::bye_reason_truncated, "bye_reason_truncated"},
        {RtcpError::app_truncated, "app_truncated"},
        {RtcpError::xr_block_truncated, "xr_block_truncated"},
        {RtcpError::xr_block_overflow, "xr_block_overflow"},
        {RtcpError::xr_block_bad_length, "xr_block_bad_length"},
        {RtcpError::wrong_block_type, "wrong_block_type"},
    };
    for (const auto& [error, name] : errors) CHECK(to_string(error) == name);

    CHECK(to_string(RtcpType::sr) == "sr");
    CHECK(to_string(RtcpType::rr) == "rr");
    CHECK(to_string(RtcpType::sdes) == "sdes");
    CHECK(to_string(RtcpType::bye) == "bye");
    CHECK(to_string(RtcpType::app) == "app");
    CHECK(to_string(RtcpType::rtpfb) == "rtpfb");
    CHECK(to_string(RtcpType::psfb) == "psfb");
    CHECK(to_string(RtcpType::xr) == "xr");
    CHECK(to_string(static_cast<RtcpType>(199)) == "other");
}
