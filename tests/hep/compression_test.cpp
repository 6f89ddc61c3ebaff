#include "hep/compression.hpp"

#include "hep/decoder.hpp"
#include "hep_builder.hpp"

#include <catch2/catch.hpp>
#include <zlib.h>

#include <string>

using namespace hepd;
using namespace hepd::hep;
using hepd::hep::test::Bytes;
using hepd::hep::test::V3Builder;

namespace {

Bytes zlib_compress(const Bytes& in) {
    uLongf size = compressBound(static_cast<uLong>(in.size()));
    Bytes out(size);
    REQUIRE(compress2(out.data(), &size, in.data(), static_cast<uLong>(in.size()), Z_BEST_COMPRESSION) == Z_OK);
    out.resize(size);
    return out;
}

Bytes gzip_compress(const Bytes& in) {
    z_stream z{};
    REQUIRE(deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK);
    Bytes out(deflateBound(&z, static_cast<uLong>(in.size())) + 32);
    z.next_in = const_cast<Bytef*>(in.data());
    z.avail_in = static_cast<uInt>(in.size());
    z.next_out = out.data();
    z.avail_out = static_cast<uInt>(out.size());
    REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
    out.resize(z.total_out);
    deflateEnd(&z);
    return out;
}

const std::string sip_invite =
    "INVITE sip:bob@example.com SIP/2.0\r\n"
    "Via: SIP/2.0/UDP 192.0.2.1:5060;branch=z9hG4bK776asdhds\r\n"
    "Max-Forwards: 70\r\n"
    "To: Bob <sip:bob@example.com>\r\n"
    "From: Alice <sip:alice@example.com>;tag=1928301774\r\n"
    "Call-ID: a84b4c76e66710@pc33.example.com\r\n"
    "CSeq: 314159 INVITE\r\n"
    "Content-Length: 0\r\n\r\n";

Bytes payload_bytes() { return hep::test::bytes_of(sip_invite); }

}  // namespace

TEST_CASE("compression is detected from the stream header", "[hep][compression]") {
    CHECK(detect_compression(Bytes{0x78, 0x9c}) == Compression::zlib);  // default level
    CHECK(detect_compression(Bytes{0x78, 0x01}) == Compression::zlib);  // level 1
    CHECK(detect_compression(Bytes{0x78, 0xda}) == Compression::zlib);  // level 9
    CHECK(detect_compression(Bytes{0x58, 0x85}) == Compression::zlib);  // 16 KiB window: 0x5885 = 31 * 731
    CHECK(detect_compression(Bytes{0x1f, 0x8b, 0x08}) == Compression::gzip);
    CHECK(detect_compression(Bytes{0x1f, 0x8b}) == Compression::none);        // too short for gzip
    CHECK(detect_compression(Bytes{0x1f, 0x8b, 0x07}) == Compression::none);  // not deflate
    CHECK(detect_compression(Bytes{0x78, 0x9d}) == Compression::none);        // FCHECK wrong
    CHECK(detect_compression(Bytes{0x88, 0x98}) == Compression::none);        // CINFO 8 > 7
    CHECK(detect_compression(Bytes{0x78}) == Compression::none);
    CHECK(detect_compression(Bytes{}) == Compression::none);
    CHECK(detect_compression(hep::test::bytes_of("INVITE")) == Compression::none);
    CHECK(detect_compression(zlib_compress(payload_bytes())) == Compression::zlib);
    CHECK(detect_compression(gzip_compress(payload_bytes())) == Compression::gzip);
}

TEST_CASE("compressed payload chunk: decode, then inflate (zlib and gzip)", "[hep][compression]") {
    const Bytes plain = payload_bytes();
    for (const bool gzip : {false, true}) {
        CAPTURE(gzip);
        const Bytes packed = gzip ? gzip_compress(plain) : zlib_compress(plain);
        const Bytes msg = V3Builder().u8(0x0b, 1).chunk(0x10, packed).build();
        const auto m = decode(msg);
        REQUIRE(m.ok());
        CHECK(m->compressed);
        CHECK(Bytes(m->payload.begin(), m->payload.end()) == packed);

        std::array<std::uint8_t, 4096> buffer{};
        const auto out = decompress_payload(m->payload, buffer);
        REQUIRE(out.ok());
        CHECK(out->data() == buffer.data());
        CHECK(std::string(as_text(out.value())) == sip_invite);
    }
}

TEST_CASE("decompression is capped by the output buffer", "[hep][compression][bomb][catalogue]") {
    // 1 MiB of zeros packs into about a kilobyte: a classic bomb.
    const Bytes zeros(1 << 20, 0);
    for (const bool gzip : {false, true}) {
        CAPTURE(gzip);
        const Bytes bomb = gzip ? gzip_compress(zeros) : zlib_compress(zeros);
        CHECK(bomb.size() < 2048);
        std::vector<std::uint8_t> out(65536);
        const auto r = decompress_payload(bomb, out);
        REQUIRE_FALSE(r.ok());
        CHECK(r.error() == DecodeError::decompressed_too_large);
    }
    const Bytes plain = payload_bytes();
    for (const bool gzip : {false, true}) {
        CAPTURE(gzip);
        const Bytes packed = gzip ? gzip_compress(plain) : zlib_compress(plain);
        SECTION("exactly the right size fits") {
            std::vector<std::uint8_t> out(plain.size());
            const auto r = decompress_payload(packed, out);
            REQUIRE(r.ok());
            CHECK(r->size() == plain.size());
            CHECK(Bytes(r->begin(), r->end()) == plain);
        }
        SECTION("one byte short is an error, not a truncated result") {
            std::vector<std::uint8_t> out(plain.size() - 1);
            const auto r = decompress_payload(packed, out);
            REQUIRE_FALSE(r.ok());
            CHECK(r.error() == DecodeError::decompressed_too_large);
        }
        SECTION("an empty output buffer") {
            const auto r = decompress_payload(packed, std::span<std::uint8_t>());
            REQUIRE_FALSE(r.ok());
            CHECK(r.error() == DecodeError::decompressed_too_large);
        }
    }
}

TEST_CASE("corrupt, truncated and padded streams are errors", "[hep][compression][error]") {
    const Bytes plain = payload_bytes();
    std::vector<std::uint8_t> out(4096);
    for (const bool gzip : {false, true}) {
        CAPTURE(gzip);
        const Bytes packed = gzip ? gzip_compress(plain) : zlib_compress(plain);
        // The minimum header that is recognised: 2 bytes for zlib, 3 for gzip.
        const std::size_t sniff = gzip ? 3 : 2;
        for (std::size_t n = 0; n < packed.size(); ++n) {
            CAPTURE(n);
            const Bytes cut(packed.begin(), packed.begin() + static_cast<std::ptrdiff_t>(n));
            const auto r = decompress_payload(cut, out);
            REQUIRE_FALSE(r.ok());
            CHECK(r.error() == (n < sniff ? DecodeError::unknown_compression : DecodeError::bad_compressed_payload));
        }
        Bytes padded = packed;
        padded.push_back(0);
        const auto p = decompress_payload(padded, out);
        REQUIRE_FALSE(p.ok());
        CHECK(p.error() == DecodeError::bad_compressed_payload);

        Bytes twice = packed;
        twice.insert(twice.end(), packed.begin(), packed.end());  // a second gzip member / stream
        const auto t = decompress_payload(twice, out);
        REQUIRE_FALSE(t.ok());
        CHECK(t.error() == DecodeError::bad_compressed_payload);

        // The trailer (zlib: adler32; gzip: the length mod 2^32) catches a flipped bit in the last byte.
        Bytes flipped = packed;
        flipped.back() ^= 0x01;
        const auto f = decompress_payload(flipped, out);
        REQUIRE_FALSE(f.ok());
        CHECK(f.error() == DecodeError::bad_compressed_payload);
    }
    const auto raw = decompress_payload(payload_bytes(), out);
    REQUIRE_FALSE(raw.ok());
    CHECK(raw.error() == DecodeError::unknown_compression);
    // A zlib header with garbage behind it: the deflate data itself is invalid (block type 3).
    const auto garbage = decompress_payload(Bytes{0x78, 0x9c, 0xff, 0xff, 0xff, 0xff}, out);
    REQUIRE_FALSE(garbage.ok());
    CHECK(garbage.error() == DecodeError::bad_compressed_payload);
}

TEST_CASE("an Inflater is reused across formats and after errors", "[hep][compression]") {
    const Bytes plain = payload_bytes();
    const Bytes z = zlib_compress(plain);
    const Bytes g = gzip_compress(plain);
    Inflater inflater;
    std::vector<std::uint8_t> out(4096);
    for (int round = 0; round < 3; ++round) {
        CAPTURE(round);
        auto a = inflater.inflate(z, out);
        REQUIRE(a.ok());
        CHECK(Bytes(a->begin(), a->end()) == plain);
        auto bad = inflater.inflate(Bytes(g.begin(), g.begin() + 10), out);
        CHECK_FALSE(bad.ok());
        auto b = inflater.inflate(g, out);
        REQUIRE(b.ok());
        CHECK(Bytes(b->begin(), b->end()) == plain);
        std::vector<std::uint8_t> small(10);
        auto big = inflater.inflate(z, small);
        REQUIRE_FALSE(big.ok());
        CHECK(big.error() == DecodeError::decompressed_too_large);
    }
    Inflater moved = std::move(inflater);
    const auto c = moved.inflate(z, out);
    REQUIRE(c.ok());
    CHECK(c->size() == plain.size());
}
