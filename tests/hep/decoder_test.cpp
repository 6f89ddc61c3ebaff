#include "hep/decoder.hpp"

#include "hep_builder.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <set>
#include <string>

using namespace hepd;
using namespace hepd::hep;
using hepd::hep::test::Bytes;
using hepd::hep::test::V3Builder;

namespace {

std::string text_of(ByteSpan b) { return std::string(as_text(b)); }

// The message decodes to its "INVITE" payload and nothing else: every other chunk was skipped.
void check_only_the_payload(const Bytes& msg) {
    const auto r = decode(msg);
    REQUIRE(r.ok());
    CHECK(text_of(r->payload) == "INVITE");
    CHECK(r->present == (Message::bit(Field::payload_type) | Message::bit(Field::payload)));
    CHECK(r->ip_family == 0);
    CHECK(r->capture_id == 0);
}

IpAddress ip(std::string_view text) { return *IpAddress::parse(text); }

// Written out byte by byte in Kamailio's chunk order (1,2,3,4,7,8,9,10,11,12,17,15).
const Bytes kamailio_like = {
    // clang-format off
    'H', 'E', 'P', '3', 0x00, 0x75,                          // total 117
    0x00, 0x00, 0x00, 0x01, 0x00, 0x07, 0x02,                // family 2
    0x00, 0x00, 0x00, 0x02, 0x00, 0x07, 0x11,                // protocol 17
    0x00, 0x00, 0x00, 0x03, 0x00, 0x0a, 192, 0, 2, 1,        // src 192.0.2.1
    0x00, 0x00, 0x00, 0x04, 0x00, 0x0a, 198, 51, 100, 7,     // dst 198.51.100.7
    0x00, 0x00, 0x00, 0x07, 0x00, 0x08, 0x13, 0xc4,          // sport 5060
    0x00, 0x00, 0x00, 0x08, 0x00, 0x08, 0x13, 0xc5,          // dport 5061
    0x00, 0x00, 0x00, 0x09, 0x00, 0x0a, 0x65, 0x00, 0x00, 0x00,  // seconds 1694498816
    0x00, 0x00, 0x00, 0x0a, 0x00, 0x0a, 0x00, 0x01, 0xe2, 0x40,  // micros 123456
    0x00, 0x00, 0x00, 0x0b, 0x00, 0x07, 0x01,                // payload type SIP
    0x00, 0x00, 0x00, 0x0c, 0x00, 0x0a, 0x00, 0x00, 0x07, 0xd1,  // capture id 2001
    0x00, 0x00, 0x00, 0x11, 0x00, 0x0b, 'a', 'b', 'c', '@', 'h',  // correlation id
    0x00, 0x00, 0x00, 0x0f, 0x00, 0x0d, 'O', 'P', 'T', 'I', 'O', 'N', 'S',  // payload
    // clang-format on
};

// Offsets at which a chunk of kamailio_like ends.
const std::vector<std::size_t> kamailio_like_boundaries = {6, 13, 20, 30, 40, 48, 56, 66, 76, 83, 93, 104, 117};

}  // namespace

TEST_CASE("v3: a Kamailio-style message decodes field by field", "[hep][decode][v3]") {
    REQUIRE(kamailio_like.size() == 117);
    const auto r = decode(kamailio_like);
    REQUIRE(r.ok());
    const Message& m = r.value();
    CHECK(m.version == 3);
    CHECK(m.ip_family == 2);
    CHECK(m.ip_protocol == 17);
    CHECK(m.src == Endpoint{ip("192.0.2.1"), 5060});
    CHECK(m.dst == Endpoint{ip("198.51.100.7"), 5061});
    CHECK(m.seconds == 1694498816u);
    CHECK(m.micros == 123456u);
    CHECK(m.payload_type == 1);
    CHECK(m.has_capture_id());
    CHECK(m.capture_id == 2001u);
    CHECK(m.has_correlation_id());
    CHECK(text_of(m.correlation_id) == "abc@h");
    CHECK(text_of(m.payload) == "OPTIONS");
    CHECK_FALSE(m.compressed);
    // Views, not copies.
    CHECK(m.payload.data() == kamailio_like.data() + 110);
    const std::uint32_t expected_present =
        Message::bit(Field::ip_family) | Message::bit(Field::ip_protocol) | Message::bit(Field::src_address) |
        Message::bit(Field::dst_address) | Message::bit(Field::src_port) | Message::bit(Field::dst_port) |
        Message::bit(Field::seconds) | Message::bit(Field::micros) | Message::bit(Field::payload_type) |
        Message::bit(Field::capture_id) | Message::bit(Field::correlation_id) | Message::bit(Field::payload);
    CHECK(m.present == expected_present);
    CHECK_FALSE(m.has(Field::auth_key));
    CHECK(m.auth_key.empty());
    CHECK(m.vlan == 0);
}

TEST_CASE("v3: EEP3 is an alias of HEP3", "[hep][decode][v3]") {
    Bytes eep = kamailio_like;
    eep[0] = 'E';
    const auto a = decode(kamailio_like);
    const auto b = decode(eep);
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    CHECK(a.value() == b.value());
}

TEST_CASE("v3: every generic chunk lands in its field", "[hep][decode][v3]") {
    const std::uint8_t mac1[6] = {0x00, 0x11, 0x22, 0x33, 0x44, 0x55};
    const std::uint8_t mac2[6] = {0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb};
    const auto b = V3Builder()
                       .u8(0x01, 10)
                       .u8(0x02, 6)
                       .chunk(0x05, {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01})
                       .chunk(0x06, {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02})
                       .u16(0x07, 5062)
                       .u16(0x08, 65535)
                       .u32(0x09, 0xfffffffe)
                       .u32(0x0a, 999999)
                       .u8(0x0b, 5)
                       .u32(0x0c, 0xdeadbeef)
                       .u16(0x0d, 30)
                       .text(0x0e, "secret")
                       .text(0x11, "call-1@example")
                       .u16(0x12, 4094)
                       .text(0x13, "edge-proxy-1")
                       .chunk(0x14, Bytes(mac1, mac1 + 6))
                       .chunk(0x15, Bytes(mac2, mac2 + 6))
                       .u16(0x16, 0x86dd)
                       .u8(0x17, 0x18)
                       .u8(0x18, 0xb8)
                       .u16(0x20, 441)
                       .u16(0x21, 93)
                       .u32(0x23, 1234)
                       .text(0x24, "INVITE")
                       .u16(0x28, 7)
                       .text(0x65, R"({"cid":"x"})")
                       .text(0x0f, R"({"type":200})");
    const Bytes msg = b.build();
    const auto r = decode(msg);
    REQUIRE(r.ok());
    const Message& m = r.value();
    CHECK(m.ip_family == 10);
    CHECK(m.ip_protocol == 6);
    CHECK(m.src == Endpoint{ip("2001:db8::1"), 5062});
    CHECK(m.dst == Endpoint{ip("2001:db8::2"), 65535});
    CHECK(m.seconds == 0xfffffffeu);
    CHECK(m.micros == 999999u);
    CHECK(m.payload_type == 5);
    CHECK(m.capture_id == 0xdeadbeefu);
    CHECK(m.keep_alive == 30);
    CHECK(text_of(m.auth_key) == "secret");
    CHECK(text_of(m.correlation_id) == "call-1@example");
    CHECK(m.vlan == 4094);
    CHECK(text_of(m.node_name) == "edge-proxy-1");
    CHECK(Bytes(m.mac_src.begin(), m.mac_src.end()) == Bytes(mac1, mac1 + 6));
    CHECK(Bytes(m.mac_dst.begin(), m.mac_dst.end()) == Bytes(mac2, mac2 + 6));
    CHECK(m.ethertype == 0x86dd);
    CHECK(m.tcp_flags == 0x18);
    CHECK(m.tos == 0xb8);
    CHECK(m.mos == 441);
    CHECK(m.r_factor == 93);
    CHECK(m.jitter == 1234u);
    CHECK(text_of(m.transaction_type) == "INVITE");
    CHECK(m.event_type == 7);
    CHECK(text_of(m.extra_correlation) == R"({"cid":"x"})");
    CHECK(text_of(m.payload) == R"({"type":200})");
    CHECK_FALSE(m.compressed);
    // Every field but nothing else: 27 fields, all present.
    CHECK(m.present == (std::uint32_t{1} << 27) - 1);
}

TEST_CASE("v3: each chunk alone sets only its own presence bit", "[hep][decode][v3]") {
    struct Case {
        std::uint16_t type;
        Bytes value;
        Field field;
    };
    const std::vector<Case> cases = {
        {0x01, {2}, Field::ip_family},
        {0x02, {17}, Field::ip_protocol},
        {0x03, {10, 0, 0, 1}, Field::src_address},
        {0x04, {10, 0, 0, 2}, Field::dst_address},
        {0x07, {0, 1}, Field::src_port},
        {0x08, {0, 2}, Field::dst_port},
        {0x09, {0, 0, 0, 1}, Field::seconds},
        {0x0a, {0, 0, 0, 1}, Field::micros},
        {0x0b, {100}, Field::payload_type},
        {0x0c, {0, 0, 0, 0}, Field::capture_id},
        {0x0d, {0, 0}, Field::keep_alive},
        {0x0e, {}, Field::auth_key},
        {0x0f, {'x'}, Field::payload},
        {0x10, {0x78, 0x9c}, Field::payload},
        {0x11, {'c'}, Field::correlation_id},
        {0x12, {0, 1}, Field::vlan},
        {0x13, {'n'}, Field::node_name},
        {0x14, {1, 2, 3, 4, 5, 6}, Field::mac_src},
        {0x15, {1, 2, 3, 4, 5, 6}, Field::mac_dst},
        {0x16, {0x08, 0x00}, Field::ethertype},
        {0x17, {0x02}, Field::tcp_flags},
        {0x18, {0}, Field::tos},
        {0x20, {0, 0}, Field::mos},
        {0x21, {0, 0}, Field::r_factor},
        {0x23, {0, 0, 0, 0}, Field::jitter},
        {0x24, {'t'}, Field::transaction_type},
        {0x28, {0, 0}, Field::event_type},
        {0x65, {'{', '}'}, Field::extra_correlation},
    };
    for (const auto& c : cases) {
        CAPTURE(c.type);
        const Bytes msg = V3Builder().chunk(c.type, c.value).build();
        const auto r = decode(msg);
        REQUIRE(r.ok());
        CHECK(r->present == Message::bit(c.field));
        CHECK(r->compressed == (c.type == 0x10));
    }
}

TEST_CASE("v3: fixed-width chunks with the wrong width are errors", "[hep][decode][v3][error]") {
    const std::vector<std::pair<std::uint16_t, std::size_t>> fixed = {
        {0x01, 1}, {0x02, 1}, {0x03, 4}, {0x04, 4}, {0x05, 16}, {0x06, 16}, {0x07, 2},
        {0x08, 2}, {0x09, 4}, {0x0a, 4}, {0x0b, 1}, {0x0c, 4},  {0x0d, 2},  {0x12, 2},
        {0x16, 2}, {0x17, 1}, {0x18, 1}, {0x20, 2}, {0x21, 2},  {0x23, 4},  {0x28, 2}};
    for (const auto& [type, width] : fixed) {
        CAPTURE(type, width);
        CHECK(decode(V3Builder().chunk(type, Bytes(width, 0x02)).build()).ok());  // 2: not SIP
        for (const std::size_t wrong : {std::size_t{0}, width - 1, width + 1, width * 2}) {
            if (wrong == width) continue;
            CAPTURE(wrong);
            const auto r = decode(V3Builder().chunk(type, Bytes(wrong, 0x01)).build());
            REQUIRE_FALSE(r.ok());
            CHECK(r.error() == DecodeError::bad_chunk_width);
        }
    }
}

TEST_CASE("v3: vendor chunks and unknown types are skipped", "[hep][decode][v3][vendor]") {
    const auto msg = V3Builder()
                         .u8(0x0b, 1)
                         .text(0x0f, "INVITE")
                         // Vendor 3 uses generic type numbers: must not overwrite anything.
                         .raw_chunk(0x0003, 0x000f, hep::test::bytes_of("EVIL PAYLOAD"))
                         .raw_chunk(0x0003, 0x0001, {10})
                         .raw_chunk(0x0003, 0x000c, {0, 0, 0, 9})
                         // A vendor chunk with a generic fixed type but the wrong width is fine.
                         .raw_chunk(0xffff, 0x0009, {1, 2, 3})
                         // Unknown generic types (including the spec's 0x22) are skipped.
                         .chunk(0x22, {1, 2, 3})
                         .chunk(0x99, {})
                         .chunk(0xffff, Bytes(100, 0xee))
                         .build();
    check_only_the_payload(msg);
}

TEST_CASE("v3: a repeated generic chunk: the last one wins", "[hep][decode][v3]") {
    // The message must outlive the views decode() returns into it.
    const Bytes msg =
        V3Builder().u32(0x0c, 1).text(0x0f, "first").u32(0x0c, 2).text(0x10, "\x78\x9c").text(0x0f, "second").build();
    const auto r = decode(msg);
    REQUIRE(r.ok());
    CHECK(r->capture_id == 2u);
    CHECK(text_of(r->payload) == "second");
    CHECK_FALSE(r->compressed);  // the flag follows the chunk that won
}

namespace {

// The chunks of `message` in the order `order` gives, each `copies` times in a row.
Bytes reordered(const Bytes& message, const std::vector<std::size_t>& boundaries, const std::vector<std::size_t>& order,
                int copies = 1) {
    Bytes out(message.begin(), message.begin() + 6);
    for (const std::size_t c : order)
        for (int k = 0; k < copies; ++k)
            out.insert(out.end(), message.begin() + static_cast<std::ptrdiff_t>(boundaries[c]),
                       message.begin() + static_cast<std::ptrdiff_t>(boundaries[c + 1]));
    hep::test::set_total_length(out, out.size());
    return out;
}

}  // namespace

TEST_CASE("v3: chunk order and repeated chunks do not change the result", "[hep][decode][v3]") {
    const auto& bounds = kamailio_like_boundaries;
    const auto expected = decode(kamailio_like);
    REQUIRE(expected.ok());
    std::vector<std::size_t> order(bounds.size() - 1);
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::mt19937 random(7);  // fixed: the same orders every run
    for (int round = 0; round < 200; ++round) {
        std::shuffle(order.begin(), order.end(), random);
        CAPTURE(round);
        const int copies = 1 + round % 3;
        const Bytes msg = reordered(kamailio_like, bounds, order, copies);
        const auto r = decode(msg);
        REQUIRE(r.ok());
        CHECK(*r == *expected);
    }
    // Reversed: the family chunk after the address chunks.
    std::reverse(order.begin(), order.end());
    const Bytes reversed = reordered(kamailio_like, bounds, order);
    CHECK(decode(reversed).value() == *expected);
}

TEST_CASE("v3: vendor and type are matched as a pair", "[hep][decode][v3][vendor]") {
    // Types whose low byte is a generic type, and vendors whose low byte is zero or one.
    const Bytes msg = V3Builder()
                          .u8(0x0b, 1)
                          .text(0x0f, "INVITE")
                          .raw_chunk(0x0000, 0x0101, {10})
                          .raw_chunk(0x0000, 0x010c, {0, 0, 0, 9})
                          .raw_chunk(0x0000, 0x100f, hep::test::bytes_of("EVIL"))
                          .raw_chunk(0x0100, 0x0001, {10})
                          .raw_chunk(0x0001, 0x000c, {0, 0, 0, 9})
                          .raw_chunk(0x0001, 0x0000, {1, 2})
                          .raw_chunk(0x0000, 0x0000, {1, 2, 3})
                          .raw_chunk(0x0000, 0x0066, {})
                          .build();
    check_only_the_payload(msg);
}

TEST_CASE("v3: the family chunk picks between IPv4 and IPv6 address chunks", "[hep][decode][v3]") {
    const Bytes v4s = {10, 0, 0, 1};
    const Bytes v4d = {10, 0, 0, 2};
    const Bytes v6s = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01};
    const Bytes v6d = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02};
    SECTION("family 10 with both: IPv6, whatever the order") {
        const auto r = decode(
            V3Builder().chunk(0x05, v6s).chunk(0x03, v4s).chunk(0x04, v4d).chunk(0x06, v6d).u8(0x01, 10).build());
        REQUIRE(r.ok());
        CHECK(r->src.address == ip("fe80::1"));
        CHECK(r->dst.address == ip("fe80::2"));
    }
    SECTION("family 2 with both: IPv4") {
        const auto r =
            decode(V3Builder().u8(0x01, 2).chunk(0x05, v6s).chunk(0x03, v4s).chunk(0x04, v4d).chunk(0x06, v6d).build());
        REQUIRE(r.ok());
        CHECK(r->src.address == ip("10.0.0.1"));
        CHECK(r->dst.address == ip("10.0.0.2"));
    }
    SECTION("no family chunk: IPv4 preferred") {
        const auto r = decode(V3Builder().chunk(0x05, v6s).chunk(0x03, v4s).chunk(0x06, v6d).build());
        REQUIRE(r.ok());
        CHECK(r->src.address == ip("10.0.0.1"));
        CHECK(r->dst.address == ip("fe80::2"));  // only one destination: it is used
        CHECK(r->has(Field::dst_address));
    }
    SECTION("family 2 but only IPv6 chunks: what was sent is used") {
        const auto r = decode(V3Builder().u8(0x01, 2).chunk(0x05, v6s).build());
        REQUIRE(r.ok());
        CHECK(r->src.address == ip("fe80::1"));
        CHECK(r->has(Field::src_address));
        CHECK_FALSE(r->has(Field::dst_address));
        CHECK(r->dst.address.empty());
    }
}

TEST_CASE("v3: payload rules", "[hep][decode][v3][error]") {
    SECTION("SIP without payload") {
        const auto r = decode(V3Builder().u8(0x0b, 1).u32(0x0c, 7).build());
        REQUIRE_FALSE(r.ok());
        CHECK(r.error() == DecodeError::missing_payload);
    }
    SECTION("SIP with an empty payload chunk") {
        const auto r = decode(V3Builder().u8(0x0b, 1).text(0x0f, "").build());
        REQUIRE_FALSE(r.ok());
        CHECK(r.error() == DecodeError::missing_payload);
    }
    SECTION("SIP payload only in a vendor chunk") {
        const auto r = decode(V3Builder().u8(0x0b, 1).raw_chunk(7, 0x0f, hep::test::bytes_of("INVITE")).build());
        REQUIRE_FALSE(r.ok());
        CHECK(r.error() == DecodeError::missing_payload);
    }
    SECTION("no payload is fine for other types and without a type") {
        CHECK(decode(V3Builder().u8(0x0b, 100).build()).ok());
        CHECK(decode(V3Builder().u16(0x0d, 60).build()).ok());
        CHECK(decode(V3Builder().build()).ok());  // header only
    }
}

TEST_CASE("v3: framing errors", "[hep][decode][v3][error]") {
    auto error_of = [](const Bytes& b) {
        const auto r = decode(b);
        REQUIRE_FALSE(r.ok());
        return r.error();
    };
    CHECK(error_of({}) == DecodeError::truncated);
    CHECK(error_of({'H'}) == DecodeError::truncated);
    CHECK(error_of({'E', 'E', 'P'}) == DecodeError::truncated);
    CHECK(error_of({'H', 'E', 'P', '3', 0x00}) == DecodeError::truncated);
    CHECK(error_of({'X'}) == DecodeError::not_hep);
    CHECK(error_of({'H', 'X'}) == DecodeError::not_hep);
    CHECK(error_of({'H', 'E', 'P', '2', 0x00, 0x06}) == DecodeError::not_hep);
    CHECK(error_of({'h', 'e', 'p', '3', 0x00, 0x06}) == DecodeError::not_hep);
    CHECK(error_of({0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07}) == DecodeError::not_hep);
    CHECK(error_of({0x03, 0x10, 0x02, 0x11, 0x13, 0xc4, 0x13, 0xc4}) == DecodeError::not_hep);
    CHECK(error_of(hep::test::bytes_of("INVITE sip:a@b SIP/2.0\r\n")) == DecodeError::not_hep);

    Bytes good = kamailio_like;
    SECTION("total length says more or less than the datagram") {
        for (const std::size_t lie :
             {std::size_t{0}, std::size_t{5}, std::size_t{6}, std::size_t{116}, std::size_t{118}, std::size_t{65535}}) {
            CAPTURE(lie);
            Bytes b = good;
            hep::test::set_total_length(b, lie);
            CHECK(error_of(b) == DecodeError::length_mismatch);
        }
        Bytes longer = good;
        longer.push_back(0);  // trailing byte after a correct message
        CHECK(error_of(longer) == DecodeError::length_mismatch);
    }
    SECTION("chunk length below 6") {
        for (const int lie : {0, 1, 5}) {
            Bytes b = good;
            b[11] = static_cast<std::uint8_t>(lie);  // the family chunk's length
            CHECK(error_of(b) == DecodeError::bad_chunk_length);
        }
    }
    SECTION("chunk length past the end of the message") {
        Bytes b = good;
        b[109] = 14;  // payload chunk claims one byte more than there is
        CHECK(error_of(b) == DecodeError::bad_chunk_length);
        b[108] = 0xff;
        CHECK(error_of(b) == DecodeError::bad_chunk_length);
    }
    SECTION("chunk length shorter than the value: the rest is read as a chunk") {
        Bytes b = good;
        b[109] = 12;  // payload "OPTION", leaving "S" (1 byte) as a partial chunk header
        CHECK(error_of(b) == DecodeError::bad_chunk_length);
    }
    SECTION("a partial chunk header at the end") {
        for (std::size_t extra = 1; extra < 6; ++extra) {
            Bytes b = good;
            b.insert(b.end(), extra, 0);
            hep::test::set_total_length(b, b.size());
            CHECK(error_of(b) == DecodeError::bad_chunk_length);
        }
    }
}

TEST_CASE("v3: every truncation of a valid message fails cleanly", "[hep][decode][v3][truncation]") {
    const auto& boundaries = kamailio_like_boundaries;
    for (std::size_t n = 0; n < kamailio_like.size(); ++n) {
        CAPTURE(n);
        // Exact-size copy so that ASan sees any read past the end.
        const Bytes cut(kamailio_like.begin(), kamailio_like.begin() + static_cast<std::ptrdiff_t>(n));
        const auto r = decode(cut);
        REQUIRE_FALSE(r.ok());
        CHECK(r.error() == (n < 6 ? DecodeError::truncated : DecodeError::length_mismatch));

        // The same cut with a total length that agrees with it: now the chunks are checked.
        if (n < 6) continue;
        Bytes lying = cut;
        hep::test::set_total_length(lying, n);
        const auto l = decode(lying);
        const bool on_boundary = std::find(boundaries.begin(), boundaries.end(), n) != boundaries.end();
        if (!on_boundary) {
            REQUIRE_FALSE(l.ok());
            CHECK(l.error() == DecodeError::bad_chunk_length);
        } else if (n >= 83) {
            // The payload type (SIP) chunk ends at 83 and the payload is cut off.
            REQUIRE_FALSE(l.ok());
            CHECK(l.error() == DecodeError::missing_payload);
        } else {
            CHECK(l.ok());
        }
    }
}

TEST_CASE("decode_into resets the message it reuses", "[hep][decode]") {
    Message m;
    REQUIRE_FALSE(decode_into(kamailio_like, m).has_value());
    CHECK(m.capture_id == 2001u);
    REQUIRE_FALSE(decode_into(V3Builder().u16(0x0d, 5).build(), m).has_value());
    CHECK(m.present == Message::bit(Field::keep_alive));
    CHECK(m.capture_id == 0u);
    CHECK(m.payload.empty());
    CHECK(decode_into(Bytes{'X'}, m) == DecodeError::not_hep);
}

TEST_CASE("decode_into over a message with every field equals a fresh decode", "[hep][decode]") {
    const Bytes full = V3Builder()
                           .u8(0x01, 10)
                           .u8(0x02, 6)
                           .chunk(0x05, Bytes(16, 0x20))
                           .chunk(0x06, Bytes(16, 0x21))
                           .u16(0x07, 5062)
                           .u16(0x08, 5063)
                           .u32(0x09, 1)
                           .u32(0x0a, 2)
                           .u8(0x0b, 5)
                           .u32(0x0c, 3)
                           .u16(0x0d, 4)
                           .text(0x0e, "key")
                           .text(0x10, "zz")
                           .text(0x11, "cid")
                           .u16(0x12, 5)
                           .text(0x13, "node")
                           .chunk(0x14, Bytes(6, 1))
                           .chunk(0x15, Bytes(6, 2))
                           .u16(0x16, 6)
                           .u8(0x17, 7)
                           .u8(0x18, 8)
                           .u16(0x20, 9)
                           .u16(0x21, 10)
                           .u32(0x23, 11)
                           .text(0x24, "tt")
                           .u16(0x28, 12)
                           .text(0x65, "{}")
                           .build();
    const std::vector<Bytes> others = {kamailio_like, V3Builder().u16(0x0d, 5).build(), V3Builder().u8(0x0b, 5).build(),
                                       Bytes{0x01, 0x10, 0x02, 0x11, 1, 2, 3, 4, 10, 0, 0, 1, 10, 0, 0, 2, 'x'}};
    for (const Bytes& other : others) {
        Message m;
        REQUIRE_FALSE(decode_into(full, m).has_value());
        CHECK(m.present == (std::uint32_t{1} << 27) - 1);
        REQUIRE_FALSE(decode_into(other, m).has_value());
        const auto fresh = decode(other);
        REQUIRE(fresh.ok());
        CHECK(m == *fresh);
        CHECK(m.present == fresh->present);
    }
}

TEST_CASE("decode errors have distinct snake_case names", "[hep][decode]") {
    std::set<std::string_view> names;
    for (std::size_t i = 0; i < decode_error_count; ++i) {
        const auto name = to_string(static_cast<DecodeError>(i));
        CAPTURE(i, name);
        CHECK(name != "unknown");
        CHECK(name.find_first_not_of("abcdefghijklmnopqrstuvwxyz_0123456789") == std::string_view::npos);
        names.insert(name);
    }
    CHECK(names.size() == decode_error_count);
    CHECK(to_string(DecodeError::decompressed_too_large) == "decompressed_too_large");
    CHECK(to_string(DecodeError::missing_payload) == "missing_payload");
    CHECK(to_string(static_cast<DecodeError>(decode_error_count)) == "unknown");
}
