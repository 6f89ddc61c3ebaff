// decode_plain_udp(), the one-pass decode of the common frame, against the general path it stands
// in for (decode_ip() + decode_transport()): on every frame of the repository's captures and of
// the reader's fuzz corpus, and on the same frames with header bytes changed at random, it either
// declines or gives exactly the packet the general path gives.
#include "pcap/decode.hpp"

#include "pcap/reader.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

using namespace hepd;
using namespace hepd::pcap;

namespace {

struct Tally {
    std::uint64_t frames = 0;
    std::uint64_t taken = 0;  // decode_plain_udp() took the frame
    std::uint64_t plain = 0;  // the general path found plain UDP in an untagged IPv4 frame
};

bool same(const L4Packet& a, const L4Packet& b) {
    return a.time == b.time && a.src == b.src && a.dst == b.dst && a.transport == b.transport &&
           a.ip_protocol == b.ip_protocol && a.vlan == b.vlan && a.tcp_seq == b.tcp_seq && a.tcp_flags == b.tcp_flags &&
           a.payload.data() == b.payload.data() && a.payload.size() == b.payload.size();
}

void compare(const Frame& frame, Tally& t) {
    ++t.frames;
    L4Packet fast;
    const bool taken = decode_plain_udp(frame, fast);
    IpPacket ip;
    L4Packet slow;
    const bool udp = decode_ip(frame, ip) == DecodeError::none && !ip.fragment &&
                     decode_transport(ip, slow) == DecodeError::none && slow.transport == Transport::udp;
    const bool untagged_ipv4 = frame.link_type == LinkType::ethernet && frame.data.size() >= 14 &&
                               frame.data[12] == 0x08 && frame.data[13] == 0x00;
    const bool plain = udp && untagged_ipv4 && ip.tunnel == TunnelKind::none;
    if (taken) {
        ++t.taken;
        REQUIRE(plain);
        REQUIRE(same(fast, slow));
    }
    if (plain) {
        ++t.plain;
        REQUIRE(taken);  // the common case must not fall through to the slow path
    }
}

std::vector<std::string> captures() {
    const std::filesystem::path root(HEPD_SOURCE_DIR);
    std::vector<std::string> out;
    for (const char* dir :
         {"tests/fixtures", "tests/fixtures/third-party", "tests/pcap/data", "tests/fuzz/corpus/pcap_reader_fuzz"})
        for (const auto& entry : std::filesystem::directory_iterator(root / dir))
            if (entry.is_regular_file() && entry.path().extension() != ".md") out.push_back(entry.path().string());
    return out;
}

}  // namespace

TEST_CASE("the one-pass UDP decode gives what the general path gives, or declines", "[pcap][decode]") {
    Tally t;
    std::mt19937 random(7);
    std::vector<std::uint8_t> bytes;
    for (const auto& path : captures()) {
        auto opened = FileReader::open(path);
        if (!opened) continue;  // the corpus holds files the reader refuses on purpose
        Frame frame;
        for (std::size_t n = 0; n < 2000 && opened->next(frame); ++n) {
            compare(frame, t);
            // The same frame with one to three header bytes changed (a copy: the mapping is read-only).
            if (n >= 50) continue;
            if (frame.data.empty()) continue;
            for (int round = 0; round < 200; ++round) {
                bytes.assign(frame.data.begin(), frame.data.end());
                const std::size_t span = std::min<std::size_t>(bytes.size(), 14 + 20 + 8);
                for (int k = 1 + static_cast<int>(random() % 3); k > 0; --k)
                    bytes[random() % span] = static_cast<std::uint8_t>(random());
                Frame changed = frame;
                changed.data = ByteSpan(bytes);
                compare(changed, t);
            }
        }
    }
    INFO("frames " << t.frames << ", taken " << t.taken << ", plain " << t.plain);
    CHECK(t.taken > 1000);      // not vacuous: the fixtures are mostly plain UDP
    CHECK(t.taken < t.frames);  // and the rest reached the general path
}

TEST_CASE("SLL and SLL2 frames with the VLAN tag libpcap puts back decode as their untagged twins", "[pcap][decode]") {
    // libpcap restores a tag the NIC took off after the cooked header (tcpdump -i any on a
    // trunk): protocol 0x8100, the TCI, then the real EtherType.
    const std::vector<std::uint8_t> ip = {0x45, 0,  0, 30, 0, 1,    0x40, 0,    64,   17, 0,  0, 10, 0,   0,
                                          1,    10, 0, 0,  2, 0x13, 0xc4, 0x13, 0xd8, 0,  10, 0, 0,  'h', 'i'};
    const auto frame_of = [&](LinkType link, std::vector<std::uint8_t> bytes) {
        bytes.insert(bytes.end(), ip.begin(), ip.end());
        return std::pair{link, bytes};
    };
    // SLL: packet type, ARPHRD_ETHER, address length and 8 address bytes, then the protocol.
    const std::vector<std::uint8_t> sll = {0, 0, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0};
    // SLL2: the protocol first, reserved, interface index, ARPHRD, packet type, address length, address.
    const std::vector<std::uint8_t> sll2_protocol_after = {0, 0, 0, 0, 0, 2, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0};
    const auto with = [](std::vector<std::uint8_t> head, std::vector<std::uint8_t> tail) {
        head.insert(head.end(), tail.begin(), tail.end());
        return head;
    };
    const std::vector<std::pair<LinkType, std::vector<std::uint8_t>>> untagged_and_tagged[] = {
        {frame_of(LinkType::linux_sll, with(sll, {0x08, 0x00})),
         frame_of(LinkType::linux_sll, with(sll, {0x81, 0x00, 0x00, 100, 0x08, 0x00}))},
        {frame_of(LinkType::linux_sll2, with({0x08, 0x00}, sll2_protocol_after)),
         frame_of(LinkType::linux_sll2, with(with({0x81, 0x00}, sll2_protocol_after), {0x00, 100, 0x08, 0x00}))},
    };
    for (const auto& twins : untagged_and_tagged) {
        std::vector<L4Packet> got;
        for (const auto& [link, bytes] : twins) {
            Frame f;
            f.link_type = link;
            f.data = ByteSpan(bytes);
            const auto p = decode_frame(f);
            REQUIRE(p);
            got.push_back(*p);
            CHECK(std::string(as_text(p->payload)) == "hi");
        }
        CHECK(got[0].vlan == 0);
        CHECK(got[1].vlan == 100);
        CHECK(got[0].src == got[1].src);
        CHECK(got[0].dst == got[1].dst);
    }
}
