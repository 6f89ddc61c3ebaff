#include "hep/decoder.hpp"
#include "hep/encoder.hpp"
#include "hep_builder.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace hepd;
using namespace hepd::hep;
using hepd::hep::test::Bytes;

namespace {

std::string text_of(ByteSpan b) { return std::string(as_text(b)); }
IpAddress ip(std::string_view text) { return *IpAddress::parse(text); }

const Bytes v1_ipv4 = {
    // clang-format off
    0x01, 0x10, 0x02, 0x11,      // version 1, length 16, family 2, protocol 17
    0x13, 0xc4, 0x13, 0xc5,      // ports 5060 -> 5061 (big-endian)
    192, 0, 2, 1, 198, 51, 100, 7,
    'B', 'Y', 'E', ' ',
    // clang-format on
};

const Bytes v2_ipv4 = {
    // clang-format off
    0x02, 0x10, 0x02, 0x06,      // version 2, length 16, family 2, protocol TCP
    0x13, 0xc4, 0x13, 0xc5,
    192, 0, 2, 1, 198, 51, 100, 7,
    0x00, 0x00, 0x00, 0x65,      // seconds 0x65000000 = 1694498816, little-endian
    0x40, 0xe2, 0x01, 0x00,      // micros 123456 = 0x0001e240, little-endian
    0xd1, 0x07, 0x00, 0x00,      // capture id 2001 = 0x07d1, little-endian; 2 bytes padding
    'A', 'C', 'K',
    // clang-format on
};

const Bytes v1_ipv6 = {
    // clang-format off
    0x01, 0x28, 0x0a, 0x11,      // family 10, length 40
    0x00, 0x50, 0xff, 0xff,      // ports 80 -> 65535
    0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01,
    0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02,
    'X',
    // clang-format on
};

const Bytes v2_ipv6 = {
    // clang-format off
    0x02, 0x28, 0x0a, 0x84,      // family 10, protocol SCTP
    0x13, 0xc4, 0x13, 0xc4,
    0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01,
    0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02,
    0x01, 0x00, 0x00, 0x00,      // seconds 1
    0xff, 0xff, 0xff, 0xff,      // micros 4294967295: raw, normalisation deals with it
    0xff, 0xff, 0xaa, 0xbb,      // capture id 65535; padding ignored
    'O', 'K',
    // clang-format on
};

}  // namespace

TEST_CASE("v1 IPv4", "[hep][decode][legacy]") {
    const auto r = decode(v1_ipv4);
    REQUIRE(r.ok());
    const Message& m = r.value();
    CHECK(m.version == 1);
    CHECK(m.ip_family == 2);
    CHECK(m.ip_protocol == 17);
    CHECK(m.src == Endpoint{ip("192.0.2.1"), 5060});
    CHECK(m.dst == Endpoint{ip("198.51.100.7"), 5061});
    CHECK_FALSE(m.has_time());
    CHECK_FALSE(m.has_capture_id());
    CHECK(m.payload_type == 1);
    CHECK(text_of(m.payload) == "BYE ");
    CHECK(m.payload.data() == v1_ipv4.data() + 16);
}

TEST_CASE("v2 IPv4: the time header is little-endian", "[hep][decode][legacy]") {
    const auto r = decode(v2_ipv4);
    REQUIRE(r.ok());
    const Message& m = r.value();
    CHECK(m.version == 2);
    CHECK(m.ip_protocol == 6);
    CHECK(m.src == Endpoint{ip("192.0.2.1"), 5060});
    CHECK(m.dst == Endpoint{ip("198.51.100.7"), 5061});
    CHECK(m.has_time());
    CHECK(m.seconds == 1694498816u);
    CHECK(m.micros == 123456u);
    CHECK(m.has_capture_id());
    CHECK(m.capture_id == 2001u);
    CHECK(m.payload_type == 1);
    CHECK(text_of(m.payload) == "ACK");
}

TEST_CASE("v1 and v2 IPv6", "[hep][decode][legacy]") {
    const auto a = decode(v1_ipv6);
    REQUIRE(a.ok());
    CHECK(a->version == 1);
    CHECK(a->ip_family == 10);
    CHECK(a->src == Endpoint{ip("2001:db8::1"), 80});
    CHECK(a->dst == Endpoint{ip("2001:db8::2"), 65535});
    CHECK(text_of(a->payload) == "X");

    const auto b = decode(v2_ipv6);
    REQUIRE(b.ok());
    CHECK(b->version == 2);
    CHECK(b->ip_protocol == 132);
    CHECK(b->src == Endpoint{ip("2001:db8::1"), 5060});
    CHECK(b->dst == Endpoint{ip("2001:db8::2"), 5060});
    CHECK(b->seconds == 1u);
    CHECK(b->micros == 0xffffffffu);
    CHECK(b->capture_id == 65535u);
    CHECK(text_of(b->payload) == "OK");
}

TEST_CASE("v1/v2: the length byte is not trusted", "[hep][decode][legacy]") {
    for (const auto* original : {&v1_ipv4, &v2_ipv4, &v1_ipv6, &v2_ipv6}) {
        const auto expected = decode(*original);
        REQUIRE(expected.ok());
        for (const int lie : {0, 1, 8, 0x1c, 0x34, 0x80, 0xff}) {
            CAPTURE(lie);
            Bytes b = *original;
            b[1] = static_cast<std::uint8_t>(lie);
            const auto r = decode(b);
            REQUIRE(r.ok());
            CHECK(r.value() == expected.value());
        }
    }
}

TEST_CASE("v1/v2: errors", "[hep][decode][legacy][error]") {
    SECTION("unknown family") {
        for (const int family : {0, 1, 4, 6, 23, 24, 28, 30, 255}) {
            Bytes b = v2_ipv4;
            b[2] = static_cast<std::uint8_t>(family);
            const auto r = decode(b);
            REQUIRE_FALSE(r.ok());
            CHECK(r.error() == DecodeError::bad_ip_family);
        }
    }
    SECTION("every truncation") {
        struct Case {
            const Bytes* message;
            std::size_t header;
        };
        for (const Case c : {Case{&v1_ipv4, 16}, Case{&v2_ipv4, 28}, Case{&v1_ipv6, 40}, Case{&v2_ipv6, 52}}) {
            for (std::size_t n = 1; n < c.message->size(); ++n) {
                CAPTURE(c.header, n);
                const Bytes cut(c.message->begin(), c.message->begin() + static_cast<std::ptrdiff_t>(n));
                const auto r = decode(cut);
                if (n > c.header) {
                    CHECK(r.ok());
                    continue;
                }
                REQUIRE_FALSE(r.ok());
                // Up to the family byte the header cannot even be sized; at the full header,
                // only the payload is missing.
                CHECK(r.error() == (n == c.header ? DecodeError::missing_payload : DecodeError::truncated));
            }
        }
    }
    SECTION("a v2 IPv6 header that only has room for IPv4 addresses plus time") {
        Bytes b = v2_ipv4;  // 28-byte header + "ACK" = 31 bytes < 52
        b[2] = 10;
        const auto r = decode(b);
        REQUIRE_FALSE(r.ok());
        CHECK(r.error() == DecodeError::truncated);
    }
}

TEST_CASE("legacy encoder writes the hand-built vectors", "[hep][encode][legacy]") {
    for (const auto& [original, version] : {std::pair{&v1_ipv4, 1}, std::pair{&v2_ipv4, 2}, std::pair{&v1_ipv6, 1}}) {
        CAPTURE(version);
        const auto m = decode(*original);
        REQUIRE(m.ok());
        Bytes out;
        REQUIRE(encode_legacy(m.value(), static_cast<std::uint8_t>(version), out));
        CHECK(out == *original);
    }
    // v2 IPv6 writes zero padding and the real header length, not what the vector had.
    const auto m = decode(v2_ipv6);
    REQUIRE(m.ok());
    Bytes out;
    REQUIRE(encode_legacy(m.value(), 2, out));
    Bytes expected = v2_ipv6;
    expected[50] = 0;
    expected[51] = 0;
    CHECK(out == expected);

    Message bad = m.value();
    CHECK_FALSE(encode_legacy(bad, 3, out));
    bad.capture_id = 65536;
    CHECK_FALSE(encode_legacy(bad, 2, out));
    CHECK(encode_legacy(bad, 1, out));  // v1 has no capture id
    bad.dst.address = ip("10.0.0.1");
    CHECK_FALSE(encode_legacy(bad, 1, out));
}
