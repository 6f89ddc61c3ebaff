#include "hep/framer.hpp"

#include "hep_builder.hpp"

#include <catch2/catch.hpp>

#include <random>
#include <set>

using namespace hepd;
using namespace hepd::hep;
using hepd::hep::test::Bytes;
using hepd::hep::test::V3Builder;

namespace {

std::vector<Bytes> sample_messages() {
    return {
        V3Builder().u8(0x0b, 1).text(0x0f, "INVITE sip:x SIP/2.0\r\n\r\n").build(),
        V3Builder("EEP3").build(),  // header only: 6 bytes
        V3Builder().u32(0x0c, 9).chunk(0x0f, Bytes(1000, 'a')).build(),
        V3Builder().text(0x11, "c").text(0x0f, "BYE").build(),
    };
}

Bytes concat(const std::vector<Bytes>& messages) {
    Bytes all;
    for (const auto& m : messages) all.insert(all.end(), m.begin(), m.end());
    return all;
}

// Feeds `stream` in pieces of `piece` bytes, cutting frames as a TCP session would.
std::vector<Bytes> reassemble(const StreamFramer& framer, const Bytes& stream, std::size_t piece) {
    std::vector<Bytes> frames;
    Bytes buffer;
    std::size_t fed = 0;
    while (fed < stream.size()) {
        const std::size_t n = std::min(piece, stream.size() - fed);
        buffer.insert(buffer.end(), stream.begin() + static_cast<std::ptrdiff_t>(fed),
                      stream.begin() + static_cast<std::ptrdiff_t>(fed + n));
        fed += n;
        for (;;) {
            const FrameStatus s = framer.next(buffer);
            REQUIRE_FALSE(s.is_error());
            if (s.need_more()) {
                REQUIRE(s.size > buffer.size());
                break;
            }
            REQUIRE(s.size >= 6);
            REQUIRE(s.size <= buffer.size());
            frames.emplace_back(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(s.size));
            buffer.erase(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(s.size));
        }
    }
    CHECK(buffer.empty());
    return frames;
}

}  // namespace

TEST_CASE("framer: several frames in one buffer", "[hep][framer]") {
    const auto messages = sample_messages();
    const Bytes all = concat(messages);
    const StreamFramer framer;
    ByteSpan rest(all);
    for (const auto& m : messages) {
        const FrameStatus s = framer.next(rest);
        REQUIRE(s.is_frame());
        CHECK(s.size == m.size());
        CHECK(Bytes(rest.begin(), rest.begin() + static_cast<std::ptrdiff_t>(s.size)) == m);
        rest = rest.subspan(s.size);
    }
    CHECK(rest.empty());
    const FrameStatus end = framer.next(rest);
    CHECK(end.need_more());
    CHECK(end.size == 6);
}

TEST_CASE("framer: the stream split at every byte", "[hep][framer]") {
    const auto messages = sample_messages();
    const Bytes all = concat(messages);
    const StreamFramer framer;
    SECTION("two deliveries, cut at each offset") {
        for (std::size_t cut = 0; cut <= all.size(); ++cut) {
            CAPTURE(cut);
            // First delivery alone, then the rest: the frames wholly inside the first come out.
            std::vector<Bytes> frames;
            Bytes buffer(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(cut));
            auto drain = [&] {
                for (;;) {
                    const FrameStatus s = framer.next(buffer);
                    REQUIRE_FALSE(s.is_error());
                    if (s.need_more()) break;
                    frames.emplace_back(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(s.size));
                    buffer.erase(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(s.size));
                }
            };
            drain();
            buffer.insert(buffer.end(), all.begin() + static_cast<std::ptrdiff_t>(cut), all.end());
            drain();
            CHECK(frames == messages);
            CHECK(buffer.empty());
        }
    }
    SECTION("delivered in pieces of every size") {
        for (std::size_t piece = 1; piece <= 64; ++piece) {
            CAPTURE(piece);
            CHECK(reassemble(framer, all, piece) == messages);
        }
        CHECK(reassemble(framer, all, all.size()) == messages);
    }
}

TEST_CASE("framer: need_more says how much is needed", "[hep][framer]") {
    const StreamFramer framer;
    const Bytes m = V3Builder().text(0x0f, "0123456789").build();  // 6 + 16 = 22 bytes
    REQUIRE(m.size() == 22);
    for (std::size_t n = 0; n < m.size(); ++n) {
        CAPTURE(n);
        const FrameStatus s = framer.next(ByteSpan(m.data(), n));
        REQUIRE(s.need_more());
        CHECK(s.size == (n < 6 ? 6u : 22u));
    }
    const FrameStatus done = framer.next(m);
    REQUIRE(done.is_frame());
    CHECK(done.size == 22);
}

TEST_CASE("framer: a bad header loses the stream", "[hep][framer][error]") {
    const StreamFramer framer(1000);
    auto check_error = [&](const Bytes& b, FramerError e) {
        const FrameStatus s = framer.next(b);
        REQUIRE(s.is_error());
        CHECK(s.error == e);
    };
    SECTION("wrong magic is seen at the first wrong byte") {
        check_error({'X'}, FramerError::not_hep);
        check_error({'H', 'X'}, FramerError::not_hep);
        check_error({'H', 'E', 'X'}, FramerError::not_hep);
        check_error({'E', 'E', 'P', '2'}, FramerError::not_hep);
        check_error({0x02, 0x10, 0x02, 0x11, 0x00, 0x00}, FramerError::not_hep);  // HEPv2 has no framing
        check_error(hep::test::bytes_of("INVITE sip:a@b SIP/2.0\r\n"), FramerError::not_hep);
        CHECK(framer.next(Bytes{'H', 'E', 'P'}).need_more());
        CHECK(framer.next(Bytes{'E'}).need_more());
    }
    SECTION("length below 6") {
        for (std::uint8_t len = 0; len < 6; ++len) {
            CAPTURE(len);
            check_error({'H', 'E', 'P', '3', 0x00, len}, FramerError::length_too_small);
        }
        CHECK(framer.next(Bytes{'H', 'E', 'P', '3', 0x00, 0x06}).is_frame());
    }
    SECTION("length above the maximum") {
        check_error({'H', 'E', 'P', '3', 0x03, 0xe9}, FramerError::length_too_large);  // 1001
        check_error({'H', 'E', 'P', '3', 0xff, 0xff}, FramerError::length_too_large);
        const FrameStatus at_max = framer.next(Bytes{'H', 'E', 'P', '3', 0x03, 0xe8});  // 1000
        CHECK(at_max.need_more());
        CHECK(at_max.size == 1000);
    }
    SECTION("a good frame followed by garbage") {
        Bytes b = V3Builder().text(0x0f, "x").build();
        const std::size_t first = b.size();
        b.push_back('G');
        const FrameStatus s = framer.next(b);
        REQUIRE(s.is_frame());
        CHECK(s.size == first);
        check_error(Bytes(b.begin() + static_cast<std::ptrdiff_t>(first), b.end()), FramerError::not_hep);
    }
}

TEST_CASE("framer: the maximum is clamped to what the header can say", "[hep][framer]") {
    CHECK(StreamFramer(0).max_frame() == 6);
    CHECK(StreamFramer(100).max_frame() == 100);
    CHECK(StreamFramer(1u << 20).max_frame() == 65535);
    CHECK(StreamFramer().max_frame() == 65535);
    CHECK(StreamFramer(6).next(Bytes{'H', 'E', 'P', '3', 0x00, 0x07}).error == FramerError::length_too_large);
    CHECK(StreamFramer().next(Bytes{'H', 'E', 'P', '3', 0xff, 0xff}).size == 65535);
}

TEST_CASE("framer: always makes progress on arbitrary bytes", "[hep][framer]") {
    std::mt19937 rng(12345);
    const StreamFramer framer(2000);
    for (int round = 0; round < 2000; ++round) {
        Bytes b(rng() % 40);
        for (auto& x : b) x = static_cast<std::uint8_t>(rng());
        // Half the time a valid magic, so that the length path is exercised.
        if (b.size() >= 4 && (round & 1)) {
            b[0] = (round & 2) ? 'H' : 'E';
            b[1] = 'E';
            b[2] = 'P';
            b[3] = '3';
        }
        const FrameStatus s = framer.next(b);
        if (s.is_frame()) {
            CHECK(s.size >= 6);
            CHECK(s.size <= b.size());
        } else if (s.need_more()) {
            // Asking for more than is there, and never more than a frame may be.
            CHECK(s.size > b.size());
            CHECK(s.size <= 2000);
        }
    }
    std::set<std::string_view> names;
    for (std::size_t i = 0; i < framer_error_count; ++i) names.insert(to_string(static_cast<FramerError>(i)));
    CHECK(names == std::set<std::string_view>{"not_hep", "length_too_small", "length_too_large"});
}
