#include "hep/encoder.hpp"

#include "hep/decoder.hpp"
#include "hep_builder.hpp"

#include <catch2/catch.hpp>

using namespace hepd;
using namespace hepd::hep;
using hepd::hep::test::Bytes;

namespace {

IpAddress ip(std::string_view text) { return *IpAddress::parse(text); }
ByteSpan view(std::string_view text) { return as_bytes(text); }

// Every field set; the views point at static strings.
Message full_message(bool v6) {
    static const std::uint8_t mac1[6] = {0x00, 0x11, 0x22, 0x33, 0x44, 0x55};
    static const std::uint8_t mac2[6] = {0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb};
    Message m;
    m.present = (std::uint32_t{1} << 27) - 1;
    m.ip_family = v6 ? family_ipv6 : family_ipv4;
    m.ip_protocol = 22;
    m.src = {ip(v6 ? "2001:db8::10" : "203.0.113.9"), 5061};
    m.dst = {ip(v6 ? "2001:db8::20" : "203.0.113.10"), 5080};
    m.seconds = 1'700'000'000;
    m.micros = 654'321;
    m.payload_type = 1;
    m.capture_id = 0x0a0b0c0d;
    m.keep_alive = 15;
    m.auth_key = view("s3cr3t");
    m.payload = view("REGISTER sip:example.com SIP/2.0\r\n\r\n");
    m.correlation_id = view("abc123@host");
    m.vlan = 100;
    m.node_name = view("sbc-2");
    m.mac_src = ByteSpan(mac1, 6);
    m.mac_dst = ByteSpan(mac2, 6);
    m.ethertype = 0x0800;
    m.tcp_flags = 0x10;
    m.tos = 0x2e;
    m.mos = 420;
    m.r_factor = 90;
    m.jitter = 77;
    m.transaction_type = view("call");
    m.event_type = 3;
    m.extra_correlation = view(R"({"x":1})");
    return m;
}

}  // namespace

TEST_CASE("encode_v3 writes the expected bytes", "[hep][encode]") {
    Message m;
    m.ip_family = family_ipv6;
    m.mark(Field::ip_family);
    m.src.address = ip("::1");
    m.mark(Field::src_address);
    m.payload_type = 5;
    m.mark(Field::payload_type);
    m.capture_id = 0x01020304;
    m.mark(Field::capture_id);
    m.auth_key = view("pw");
    m.mark(Field::auth_key);
    static const std::uint8_t empty_zlib[8] = {0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01};
    m.payload = ByteSpan(empty_zlib, 8);
    m.compressed = true;
    m.mark(Field::payload);

    const Bytes expected = {
        // clang-format off
        'H', 'E', 'P', '3', 0x00, 0x4a,                                  // 74 bytes
        0x00, 0x00, 0x00, 0x01, 0x00, 0x07, 0x0a,                        // family 10
        0x00, 0x00, 0x00, 0x05, 0x00, 0x16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,  // ::1
        0x00, 0x00, 0x00, 0x0b, 0x00, 0x07, 0x05,                        // payload type 5
        0x00, 0x00, 0x00, 0x0c, 0x00, 0x0a, 0x01, 0x02, 0x03, 0x04,      // capture id
        0x00, 0x00, 0x00, 0x0e, 0x00, 0x08, 'p', 'w',                    // auth key
        // clang-format on
        0x00,
        0x00,
        0x00,
        0x10,
        0x00,
        0x0e,
        0x78,
        0x9c,
        0x03,
        0x00,
        0x00,
        0x00,
        0x00,
        0x01,
    };
    Bytes out = {0xaa};  // appends
    REQUIRE(encode_v3(m, out));
    CHECK(out.size() == 1 + expected.size());
    CHECK(Bytes(out.begin() + 1, out.end()) == expected);
}

TEST_CASE("decode(encode(x)) == x with every field", "[hep][encode][roundtrip]") {
    for (const bool v6 : {false, true}) {
        for (const bool compressed : {false, true}) {
            CAPTURE(v6, compressed);
            Message m = full_message(v6);
            m.compressed = compressed;
            Bytes out;
            REQUIRE(encode_v3(m, out));
            const auto back = decode(out);
            REQUIRE(back.ok());
            CHECK(back.value() == m);
            CHECK(back->present == m.present);
        }
    }
}

TEST_CASE("decode(encode(x)) == x for each field alone", "[hep][encode][roundtrip]") {
    const Message full = full_message(false);
    for (unsigned f = 0; f < 27; ++f) {
        CAPTURE(f);
        // Only this field is present and set; every other value stays at its default, so equality
        // after decoding means this one field travelled and nothing else appeared.
        Message expected;
        expected.present = Message::bit(static_cast<Field>(f));
        const Message& m = full;
        switch (static_cast<Field>(f)) {
        case Field::ip_family: expected.ip_family = m.ip_family; break;
        case Field::ip_protocol: expected.ip_protocol = m.ip_protocol; break;
        case Field::src_address: expected.src.address = m.src.address; break;
        case Field::dst_address: expected.dst.address = m.dst.address; break;
        case Field::src_port: expected.src.port = m.src.port; break;
        case Field::dst_port: expected.dst.port = m.dst.port; break;
        case Field::seconds: expected.seconds = m.seconds; break;
        case Field::micros: expected.micros = m.micros; break;
        case Field::payload_type: expected.payload_type = 5; break;
        case Field::capture_id: expected.capture_id = m.capture_id; break;
        case Field::keep_alive: expected.keep_alive = m.keep_alive; break;
        case Field::auth_key: expected.auth_key = m.auth_key; break;
        case Field::payload: expected.payload = m.payload; break;
        case Field::correlation_id: expected.correlation_id = m.correlation_id; break;
        case Field::vlan: expected.vlan = m.vlan; break;
        case Field::node_name: expected.node_name = m.node_name; break;
        case Field::mac_src: expected.mac_src = m.mac_src; break;
        case Field::mac_dst: expected.mac_dst = m.mac_dst; break;
        case Field::ethertype: expected.ethertype = m.ethertype; break;
        case Field::tcp_flags: expected.tcp_flags = m.tcp_flags; break;
        case Field::tos: expected.tos = m.tos; break;
        case Field::mos: expected.mos = m.mos; break;
        case Field::r_factor: expected.r_factor = m.r_factor; break;
        case Field::jitter: expected.jitter = m.jitter; break;
        case Field::transaction_type: expected.transaction_type = m.transaction_type; break;
        case Field::event_type: expected.event_type = m.event_type; break;
        case Field::extra_correlation: expected.extra_correlation = m.extra_correlation; break;
        }
        Bytes out;
        REQUIRE(encode_v3(expected, out));
        const auto back = decode(out);
        REQUIRE(back.ok());
        CHECK(back.value() == expected);
    }
}

TEST_CASE("encode_v3 refuses what it cannot write", "[hep][encode]") {
    const Bytes before = {1, 2, 3};
    SECTION("over 65535 bytes") {
        const std::string big(65535 - 6 - 6 + 1, 'x');  // header + chunk header + 1 too many
        Message m;
        m.payload = view(big);
        m.mark(Field::payload);
        Bytes out = before;
        CHECK_FALSE(encode_v3(m, out));
        CHECK(out == before);
        // One byte less fits exactly.
        m.payload = view(std::string_view(big).substr(1));
        REQUIRE(encode_v3(m, out));
        CHECK(out.size() == before.size() + 65535);
        CHECK(out[before.size() + 4] == 0xff);
        CHECK(out[before.size() + 5] == 0xff);
        // A single chunk longer than its u16 length can say.
        const std::string huge(100000, 'y');
        m.payload = view(huge);
        out = before;
        CHECK_FALSE(encode_v3(m, out));
        CHECK(out == before);
    }
    SECTION("an address marked present but empty") {
        Message m;
        m.mark(Field::dst_address);
        Bytes out = before;
        CHECK_FALSE(encode_v3(m, out));
        CHECK(out == before);
    }
}

TEST_CASE("a decoded v2 message re-encodes as v3", "[hep][encode][legacy]") {
    const Bytes v2 = {0x02, 0x10, 0x02, 0x11, 0x13, 0xc4, 0x13, 0xc5, 10,   0,    0,    1,    10,  0,   0,  2,
                      0x10, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00, 'S', 'I', 'P'};
    const auto m = decode(v2);
    REQUIRE(m.ok());
    Bytes out;
    REQUIRE(encode_v3(m.value(), out));
    const auto back = decode(out);
    REQUIRE(back.ok());
    Message expected = m.value();
    expected.version = 3;
    CHECK(back.value() == expected);
    CHECK(back->seconds == 16u);
    CHECK(back->micros == 32u);
    CHECK(back->capture_id == 7u);
}
