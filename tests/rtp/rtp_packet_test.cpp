#include "rtp/rtp_packet.hpp"

#include "test_bytes.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace hepd;
using namespace hepd::rtp;
using namespace hepd::rtp::test;

namespace {

// V=2 P=0 X=0 CC=0 | M=0 PT=8 | seq 0x1234 | ts 0x00005678 | SSRC 0x9abcdef0 | "abcd"
const Bytes minimal{0x80, 0x08, 0x12, 0x34, 0x00, 0x00, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 'a', 'b', 'c', 'd'};

// V=2 P=1 X=1 CC=1 | M=1 PT=96 | seq 0xffff | ts 0xfffffffe | SSRC 0x01020304 | CSRC 0x0a0b0c0d
// | extension 0xBEDE, 2 words: [id 1 len 1: 0xaa] [id 2 len 3: 01 02 03] [pad] [pad]
// | payload "xyz" | padding 00 00 00 04
const Bytes full{
    0xb1, 0xe0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe, 0x01, 0x02, 0x03, 0x04,  // fixed header
    0x0a, 0x0b, 0x0c, 0x0d,                                                  // CSRC
    0xbe, 0xde, 0x00, 0x02,                                                  // extension header
    0x10, 0xaa, 0x22, 0x01, 0x02, 0x03, 0x00, 0x00,                          // elements
    'x',  'y',  'z',                                                         // payload
    0x00, 0x00, 0x00, 0x04,                                                  // padding
};

std::string text(ByteSpan bytes) { return std::string(as_text(bytes)); }

}  // namespace

TEST_CASE("minimal 12-octet header is decoded field by field", "[rtp][parse]") {
    const auto r = parse_rtp(span_of(minimal));
    REQUIRE(r.ok());
    CHECK_FALSE(r->padding);
    CHECK_FALSE(r->extension);
    CHECK_FALSE(r->marker);
    CHECK(r->payload_type == 8);
    CHECK(r->sequence == 0x1234);
    CHECK(r->timestamp == 0x5678);
    CHECK(r->ssrc == 0x9abcdef0u);
    CHECK(r->csrcs.empty());
    CHECK(r->csrcs.size() == 0);
    CHECK(r->extension_profile == 0);
    CHECK(r->extension_data.empty());
    CHECK(r->padding_size == 0);
    CHECK(r->header_size == 12);
    CHECK(text(r->payload) == "abcd");
    CHECK(r->payload.data() == minimal.data() + 12);  // a view, not a copy
}

TEST_CASE("header-only packet has an empty payload", "[rtp][parse]") {
    const auto r = parse_rtp(span_of(prefix(minimal, 12)));
    REQUIRE(r.ok());
    CHECK(r->payload.empty());
    CHECK(r->header_size == 12);
}

TEST_CASE("marker bit and payload type share the second octet", "[rtp][parse]") {
    Bytes packet = minimal;
    packet[1] = 0xe5;  // 1110 0101: M=1, PT=0x65=101
    auto r = parse_rtp(span_of(packet));
    REQUIRE(r.ok());
    CHECK(r->marker);
    CHECK(r->payload_type == 101);

    packet[1] = 0x7f;  // M=0, PT=127
    r = parse_rtp(span_of(packet));
    REQUIRE(r.ok());
    CHECK_FALSE(r->marker);
    CHECK(r->payload_type == 127);

    packet[1] = 0x80;  // M=1, PT=0
    r = parse_rtp(span_of(packet));
    REQUIRE(r.ok());
    CHECK(r->marker);
    CHECK(r->payload_type == 0);
}

TEST_CASE("CSRC list is a view of CC identifiers", "[rtp][parse]") {
    // clang-format off
    const Bytes packet{0x82, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02, 0x11, 0x11, 0x11, 0x11,
                       0x22, 0x22, 0x22, 0x22, 0x33, 0x33, 0x33, 0x34, 0x01, 0x02};
    // clang-format on
    const auto r = parse_rtp(span_of(packet));
    REQUIRE(r.ok());
    CHECK(r->sequence == 1);
    CHECK(r->timestamp == 2);
    CHECK(r->ssrc == 0x11111111u);
    REQUIRE(r->csrcs.size() == 2);
    CHECK(r->csrcs[0] == 0x22222222u);
    CHECK(r->csrcs[1] == 0x33333334u);
    const std::vector<std::uint32_t> listed(r->csrcs.begin(), r->csrcs.end());
    CHECK(listed == std::vector<std::uint32_t>{0x22222222u, 0x33333334u});
    CHECK(r->header_size == 20);
    CHECK(bytes_of(r->payload) == Bytes{0x01, 0x02});
}

TEST_CASE("fifteen CSRCs, the most CC can say", "[rtp][parse]") {
    Bytes packet{0x8f, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    for (std::uint8_t i = 1; i <= 15; ++i) append(packet, Bytes{0, 0, 0, i});
    const auto r = parse_rtp(span_of(packet));
    REQUIRE(r.ok());
    REQUIRE(r->csrcs.size() == 15);
    CHECK(r->csrcs[0] == 1);
    CHECK(r->csrcs[14] == 15);
    CHECK(r->header_size == 72);
    CHECK(r->payload.empty());
}

TEST_CASE("every header feature at once", "[rtp][parse]") {
    const auto r = parse_rtp(span_of(full));
    REQUIRE(r.ok());
    CHECK(r->padding);
    CHECK(r->extension);
    CHECK(r->marker);
    CHECK(r->payload_type == 96);
    CHECK(r->sequence == 0xffff);
    CHECK(r->timestamp == 0xfffffffeu);
    CHECK(r->ssrc == 0x01020304u);
    REQUIRE(r->csrcs.size() == 1);
    CHECK(r->csrcs[0] == 0x0a0b0c0du);
    CHECK(r->extension_profile == 0xbede);
    CHECK(bytes_of(r->extension_data) == Bytes{0x10, 0xaa, 0x22, 0x01, 0x02, 0x03, 0x00, 0x00});
    CHECK(r->header_size == 28);
    CHECK(r->padding_size == 4);
    CHECK(text(r->payload) == "xyz");
}

TEST_CASE("extension with zero length words is valid", "[rtp][parse]") {
    const Bytes packet{0x90, 0x00, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0x12, 0x34, 0x00, 0x00, 'p'};
    const auto r = parse_rtp(span_of(packet));
    REQUIRE(r.ok());
    CHECK(r->extension);
    CHECK(r->extension_profile == 0x1234);
    CHECK(r->extension_data.empty());
    CHECK(r->header_size == 16);
    CHECK(text(r->payload) == "p");
}

TEST_CASE("padding is removed from the payload", "[rtp][parse][padding]") {
    SECTION("three octets of padding after two of payload") {
        Bytes packet = prefix(minimal, 12);
        packet[0] = 0xa0;
        append(packet, Bytes{'h', 'i', 0x00, 0x00, 0x03});
        const auto r = parse_rtp(span_of(packet));
        REQUIRE(r.ok());
        CHECK(r->padding);
        CHECK(r->padding_size == 3);
        CHECK(text(r->payload) == "hi");
    }
    SECTION("padding may fill everything after the header") {
        Bytes packet = prefix(minimal, 12);
        packet[0] = 0xa0;
        append(packet, Bytes{0x00, 0x00, 0x00, 0x04});
        const auto r = parse_rtp(span_of(packet));
        REQUIRE(r.ok());
        CHECK(r->padding_size == 4);
        CHECK(r->payload.empty());
    }
    SECTION("a single padding octet") {
        Bytes packet = prefix(minimal, 12);
        packet[0] = 0xa0;
        append(packet, Bytes{'q', 0x01});
        const auto r = parse_rtp(span_of(packet));
        REQUIRE(r.ok());
        CHECK(r->padding_size == 1);
        CHECK(text(r->payload) == "q");
    }
}

TEST_CASE("padding count that lies is an error", "[rtp][parse][padding][hostile]") {
    SECTION("count of zero") {
        Bytes packet = prefix(minimal, 12);
        packet[0] = 0xa0;
        append(packet, Bytes{'h', 'i', 0x00});
        const auto r = parse_rtp(span_of(packet));
        REQUIRE_FALSE(r.ok());
        CHECK(r.error() == RtpError::padding_zero);
    }
    SECTION("one more than what follows the header") {
        Bytes packet = prefix(minimal, 12);
        packet[0] = 0xa0;
        append(packet, Bytes{'h', 'i', 0x00, 0x05});
        const auto r = parse_rtp(span_of(packet));
        REQUIRE_FALSE(r.ok());
        CHECK(r.error() == RtpError::padding_overflow);
    }
    SECTION("count reaching into the extension") {
        Bytes packet = full;
        packet.back() = 8;  // 3 payload + 4 padding octets follow the 28-octet header
        const auto r = parse_rtp(span_of(packet));
        REQUIRE_FALSE(r.ok());
        CHECK(r.error() == RtpError::padding_overflow);
    }
    SECTION("header-only packet with P set: the count octet is the last SSRC octet") {
        Bytes packet = prefix(minimal, 12);
        packet[0] = 0xa0;  // last octet 0xf0 = 240, nothing follows the header
        auto r = parse_rtp(span_of(packet));
        REQUIRE_FALSE(r.ok());
        CHECK(r.error() == RtpError::padding_overflow);
        packet[11] = 0;
        r = parse_rtp(span_of(packet));
        REQUIRE_FALSE(r.ok());
        CHECK(r.error() == RtpError::padding_zero);
    }
    SECTION("maximum count 255 with 254 octets after the header") {
        Bytes packet = prefix(minimal, 12);
        packet[0] = 0xa0;
        packet.resize(12 + 254, 0);
        packet.back() = 255;
        auto r = parse_rtp(span_of(packet));
        REQUIRE_FALSE(r.ok());
        CHECK(r.error() == RtpError::padding_overflow);
        packet.push_back(255);  // now 255 octets follow: all padding
        r = parse_rtp(span_of(packet));
        REQUIRE(r.ok());
        CHECK(r->padding_size == 255);
        CHECK(r->payload.empty());
    }
}

TEST_CASE("version other than 2 is rejected", "[rtp][parse][hostile]") {
    for (const std::uint8_t first : {std::uint8_t{0x00}, std::uint8_t{0x40}, std::uint8_t{0xc0}, std::uint8_t{0xff}}) {
        Bytes packet = minimal;
        packet[0] = first;
        const auto r = parse_rtp(span_of(packet));
        REQUIRE_FALSE(r.ok());
        CHECK(r.error() == RtpError::bad_version);
    }
}

TEST_CASE("extension length that lies is an error", "[rtp][parse][hostile]") {
    SECTION("one word more than present") {
        Bytes packet = full;
        packet[0] = 0x91;   // no padding, so the whole tail could be extension
        packet[19] = 0x05;  // 5 words = 20 octets, only 15 follow the extension header
        const auto r = parse_rtp(span_of(packet));
        REQUIRE_FALSE(r.ok());
        CHECK(r.error() == RtpError::extension_length_overflow);
    }
    SECTION("maximum length 0xffff") {
        Bytes packet = full;
        packet[18] = 0xff;
        packet[19] = 0xff;
        const auto r = parse_rtp(span_of(packet));
        REQUIRE_FALSE(r.ok());
        CHECK(r.error() == RtpError::extension_length_overflow);
    }
    SECTION("exactly as long as the rest of the packet") {
        Bytes packet = full;
        packet[0] = 0x91;
        packet[19] = 0x04;  // 16 octets, but 8 + 3 + 4 = 15 follow the extension header
        auto r = parse_rtp(span_of(packet));
        REQUIRE_FALSE(r.ok());
        CHECK(r.error() == RtpError::extension_length_overflow);
        packet.push_back(0);  // now exactly 16 octets follow the extension header
        r = parse_rtp(span_of(packet));
        REQUIRE(r.ok());
        CHECK(r->extension_data.size() == 16);
        CHECK(r->payload.empty());
        CHECK(r->header_size == packet.size());
    }
}

TEST_CASE("truncation at every length reports the first missing part", "[rtp][parse][hostile]") {
    // `full` without padding: 12 fixed + 4 CSRC + 4 extension header + 8 extension + 7 payload.
    Bytes packet = full;
    packet[0] = 0x91;
    for (std::size_t length = 0; length <= packet.size(); ++length) {
        CAPTURE(length);
        const Bytes cut = prefix(packet, length);
        const auto r = parse_rtp(span_of(cut));
        if (length < 12) {
            REQUIRE_FALSE(r.ok());
            CHECK(r.error() == RtpError::too_short);
        } else if (length < 16) {
            REQUIRE_FALSE(r.ok());
            CHECK(r.error() == RtpError::csrc_truncated);
        } else if (length < 20) {
            REQUIRE_FALSE(r.ok());
            CHECK(r.error() == RtpError::extension_truncated);
        } else if (length < 28) {
            REQUIRE_FALSE(r.ok());
            CHECK(r.error() == RtpError::extension_length_overflow);
        } else {
            REQUIRE(r.ok());
            CHECK(r->header_size == 28);
            CHECK(r->payload.size() == length - 28);
        }
    }
}

TEST_CASE("truncated padded packets never read outside the buffer", "[rtp][parse][hostile]") {
    for (std::size_t length = 0; length <= full.size(); ++length) {
        CAPTURE(length);
        const Bytes cut = prefix(full, length);
        const auto r = parse_rtp(span_of(cut));
        if (length < 28) {
            CHECK_FALSE(r.ok());
            continue;
        }
        // The last octet of each prefix is read as the padding count.
        const std::uint8_t count = cut.back();
        if (count == 0) {
            REQUIRE_FALSE(r.ok());
            CHECK(r.error() == RtpError::padding_zero);
        } else if (count > length - 28) {
            REQUIRE_FALSE(r.ok());
            CHECK(r.error() == RtpError::padding_overflow);
        } else {
            REQUIRE(r.ok());
            CHECK(r->payload.size() == length - 28 - count);
        }
    }
}

TEST_CASE("CC larger than the packet", "[rtp][parse][hostile][catalogue]") {
    Bytes packet = minimal;  // 4 octets after the fixed header
    packet[0] = 0x81;        // one CSRC: fits exactly
    auto r = parse_rtp(span_of(packet));
    REQUIRE(r.ok());
    CHECK(r->csrcs.size() == 1);
    CHECK(r->csrcs[0] == 0x61626364u);  // "abcd"
    CHECK(r->payload.empty());
    packet[0] = 0x82;
    r = parse_rtp(span_of(packet));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error() == RtpError::csrc_truncated);
    packet[0] = 0x8f;
    r = parse_rtp(span_of(packet));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error() == RtpError::csrc_truncated);
}

TEST_CASE("RtpError names are snake_case and distinct", "[rtp][errors]") {
    CHECK(to_string(RtpError::too_short) == "too_short");
    CHECK(to_string(RtpError::bad_version) == "bad_version");
    CHECK(to_string(RtpError::csrc_truncated) == "csrc_truncated");
    CHECK(to_string(RtpError::extension_truncated) == "extension_truncated");
    CHECK(to_string(RtpError::extension_length_overflow) == "extension_length_overflow");
    CHECK(to_string(RtpError::padding_zero) == "padding_zero");
    CHECK(to_string(RtpError::padding_overflow) == "padding_overflow");
    CHECK(to_string(RtpError::extension_element_truncated) == "extension_element_truncated");
}

// ---- RFC 8285 elements ----------------------------------------------------------------------

namespace {

struct Element {
    int id;
    Bytes data;
    friend bool operator==(const Element&, const Element&) = default;
};

std::vector<Element> elements(ExtensionElementReader reader, bool expect_failure = false) {
    std::vector<Element> out;
    for (ExtensionElement e; reader.next(e);) out.push_back({e.id, bytes_of(e.data)});
    CHECK(reader.failed() == expect_failure);
    ExtensionElement after;
    CHECK_FALSE(reader.next(after));  // stays at the end
    return out;
}

}  // namespace

TEST_CASE("one-byte extension elements with padding", "[rtp][extension]") {
    const auto r = parse_rtp(span_of(full));
    REQUIRE(r.ok());
    const std::vector<Element> expected{{1, {0xaa}}, {2, {0x01, 0x02, 0x03}}};
    CHECK(elements(ExtensionElementReader(*r)) == expected);
}

TEST_CASE("one-byte form: padding between elements, 16-octet element, ID 15 stops", "[rtp][extension]") {
    Bytes data{0x00, 0x3f};  // pad, then id 3 with L=15: 16 octets
    for (std::uint8_t i = 0; i < 16; ++i) data.push_back(i);
    append(data, Bytes{0x00, 0x00, 0x40, 0x77, 0xf0, 0x51, 0x01});  // pad pad [id4: 77] [id15 stop] ...
    const std::vector<Element> got = elements(ExtensionElementReader(0xbede, span_of(data)));
    REQUIRE(got.size() == 2);
    CHECK(got[0].id == 3);
    CHECK(got[0].data.size() == 16);
    CHECK(got[0].data.front() == 0);
    CHECK(got[0].data.back() == 15);
    CHECK(got[1] == Element{4, {0x77}});
}

TEST_CASE("one-byte element running past the extension fails", "[rtp][extension][hostile]") {
    const Bytes data{0x10, 0xaa, 0x23, 0x01, 0x02};  // id 2 says 4 octets, 2 present
    const std::vector<Element> got = elements(ExtensionElementReader(0xbede, span_of(data)), true);
    CHECK(got == std::vector<Element>{{1, {0xaa}}});
}

TEST_CASE("two-byte extension elements", "[rtp][extension]") {
    // profile 0x1000 | appbits 0x5; [id 1 len 2: aa bb] [pad] [id 5 len 0] [pad] [id 200 len 1: 09]
    // clang-format off
    const Bytes packet{0x90, 0x00, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0x10, 0x05, 0x00, 0x03,
                       0x01, 0x02, 0xaa, 0xbb, 0x00, 0x05, 0x00, 0x00, 0xc8, 0x01, 0x09, 0x00};
    // clang-format on
    const auto r = parse_rtp(span_of(packet));
    REQUIRE(r.ok());
    CHECK(is_two_byte_extension_profile(r->extension_profile));
    const std::vector<Element> expected{{1, {0xaa, 0xbb}}, {5, {}}, {200, {0x09}}};
    CHECK(elements(ExtensionElementReader(*r)) == expected);
}

TEST_CASE("two-byte element lying about its length fails", "[rtp][extension][hostile]") {
    SECTION("length past the end") {
        const Bytes data{0x01, 0x01, 0xaa, 0x02, 0x04, 0x01, 0x02, 0x03};
        CHECK(elements(ExtensionElementReader(0x1000, span_of(data)), true) == std::vector<Element>{{1, {0xaa}}});
    }
    SECTION("ID octet with no length octet") {
        const Bytes data{0x01, 0x00, 0x00, 0x07};
        CHECK(elements(ExtensionElementReader(0x1000, span_of(data)), true) == std::vector<Element>{{1, {}}});
    }
}

TEST_CASE("profiles other than RFC 8285 yield no elements", "[rtp][extension]") {
    const Bytes data{0x10, 0xaa, 0x00, 0x00};
    CHECK(elements(ExtensionElementReader(0x1234, span_of(data))).empty());
    CHECK(elements(ExtensionElementReader(0x2000, span_of(data))).empty());
    CHECK_FALSE(is_two_byte_extension_profile(0x2000));
    CHECK_FALSE(is_two_byte_extension_profile(0xbede));
    CHECK(is_two_byte_extension_profile(0x100f));
    const auto r = parse_rtp(span_of(minimal));  // no extension at all
    REQUIRE(r.ok());
    CHECK(elements(ExtensionElementReader(*r)).empty());
}
