#include "rtp/demux.hpp"

#include "test_bytes.hpp"

#include <catch2/catch.hpp>

using namespace hepd;
using namespace hepd::rtp;
using namespace hepd::rtp::test;

namespace {

PacketKind kind_of(std::uint8_t first, std::uint8_t second) {
    const Bytes bytes{first, second, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    return classify(span_of(bytes));
}

}  // namespace

TEST_CASE("RFC 7983 first-octet ranges", "[demux]") {
    struct Case {
        int first;
        PacketKind expected;
    };
    for (const Case c :
         {Case{0, PacketKind::stun}, Case{1, PacketKind::stun}, Case{3, PacketKind::stun}, Case{4, PacketKind::unknown},
          Case{15, PacketKind::unknown}, Case{16, PacketKind::zrtp}, Case{19, PacketKind::zrtp},
          Case{20, PacketKind::dtls}, Case{22, PacketKind::dtls}, Case{63, PacketKind::dtls},
          Case{64, PacketKind::turn_channel}, Case{79, PacketKind::turn_channel}, Case{80, PacketKind::unknown},
          Case{127, PacketKind::unknown}, Case{128, PacketKind::rtp}, Case{191, PacketKind::rtp},
          Case{192, PacketKind::unknown}, Case{255, PacketKind::unknown}}) {
        CAPTURE(c.first);
        CHECK(kind_of(static_cast<std::uint8_t>(c.first), 0x08) == c.expected);
    }
}

TEST_CASE("RFC 5761: second octet 192-223 is RTCP, anything else RTP", "[demux]") {
    struct Case {
        int second;
        PacketKind expected;
    };
    for (const Case c : {Case{0x00, PacketKind::rtp},     // PT 0
                         Case{0x08, PacketKind::rtp},     // PT 8
                         Case{0x48, PacketKind::rtp},     // PT 72 without marker
                         Case{0x7f, PacketKind::rtp},     // PT 127
                         Case{0x88, PacketKind::rtp},     // marker + PT 8
                         Case{0xbf, PacketKind::rtp},     // marker + PT 63
                         Case{192, PacketKind::rtcp},     // marker + PT 64: the colliding range
                         Case{200, PacketKind::rtcp},     // SR
                         Case{201, PacketKind::rtcp},     // RR
                         Case{207, PacketKind::rtcp},     // XR
                         Case{223, PacketKind::rtcp},     // marker + PT 95
                         Case{224, PacketKind::rtp},      // marker + PT 96
                         Case{0xe5, PacketKind::rtp},     // marker + PT 101 (telephone-event)
                         Case{0xff, PacketKind::rtp}}) {  // marker + PT 127
        CAPTURE(c.second);
        CHECK(kind_of(0x80, static_cast<std::uint8_t>(c.second)) == c.expected);
        CHECK(kind_of(0xbf, static_cast<std::uint8_t>(c.second)) == c.expected);
    }
}

TEST_CASE("classify with too few octets", "[demux][hostile]") {
    CHECK(classify(ByteSpan{}) == PacketKind::unknown);
    const Bytes rtp_first{0x80};
    CHECK(classify(span_of(rtp_first)) == PacketKind::unknown);
    const Bytes stun_first{0x00};
    CHECK(classify(span_of(stun_first)) == PacketKind::stun);
    const Bytes rtcp_two{0x81, 0xc8};
    CHECK(classify(span_of(rtcp_two)) == PacketKind::rtcp);
}

TEST_CASE("PacketKind names", "[demux]") {
    CHECK(to_string(PacketKind::unknown) == "unknown");
    CHECK(to_string(PacketKind::rtp) == "rtp");
    CHECK(to_string(PacketKind::rtcp) == "rtcp");
    CHECK(to_string(PacketKind::stun) == "stun");
    CHECK(to_string(PacketKind::zrtp) == "zrtp");
    CHECK(to_string(PacketKind::dtls) == "dtls");
    CHECK(to_string(PacketKind::turn_channel) == "turn_channel");
}
