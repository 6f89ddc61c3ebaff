#include "pcap/reader.hpp"
#include "support/fixtures.hpp"

#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using namespace hepd;
using namespace hepd::pcap;

namespace {

// Builds a classic pcap file in memory: global header + records, in the requested byte order.
class PcapWriter {
public:
    PcapWriter(std::uint32_t link, bool big_endian, bool nanos) : big_(big_endian) {
        put32(nanos ? 0xa1b23c4dU : 0xa1b2c3d4U);
        put16(2);
        put16(4);
        put32(0);
        put32(0);
        put32(65535);
        put32(link);
    }
    void record(std::uint32_t secs, std::uint32_t frac, const std::vector<std::uint8_t>& data) {
        put32(secs);
        put32(frac);
        put32(static_cast<std::uint32_t>(data.size()));
        put32(static_cast<std::uint32_t>(data.size()));
        bytes_.insert(bytes_.end(), data.begin(), data.end());
    }
    std::string write(const std::string& name, std::size_t cut = 0) const {
        const auto path = (std::filesystem::temp_directory_path() / name).string();
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(bytes_.data()),
                  static_cast<std::streamsize>(bytes_.size() - cut));
        return path;
    }

private:
    void put16(std::uint16_t v) {
        if (big_) {
            bytes_.push_back(static_cast<std::uint8_t>(v >> 8));
            bytes_.push_back(static_cast<std::uint8_t>(v));
        } else {
            bytes_.push_back(static_cast<std::uint8_t>(v));
            bytes_.push_back(static_cast<std::uint8_t>(v >> 8));
        }
    }
    void put32(std::uint32_t v) {
        if (big_) {
            put16(static_cast<std::uint16_t>(v >> 16));
            put16(static_cast<std::uint16_t>(v));
        } else {
            put16(static_cast<std::uint16_t>(v));
            put16(static_cast<std::uint16_t>(v >> 16));
        }
    }
    bool big_;
    std::vector<std::uint8_t> bytes_;
};

// 10.0.0.1:5060 -> 10.0.0.2:5080, UDP, payload "hi" (IPv4 header checksum is not verified).
std::vector<std::uint8_t> ipv4_udp_hi() {
    return {0x45, 0, 0, 30, 0, 1, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
            0x13, 0xc4, 0x13, 0xd8, 0, 10, 0, 0, 'h', 'i'};
}

std::vector<std::uint8_t> with_prefix(std::vector<std::uint8_t> prefix, const std::vector<std::uint8_t>& body) {
    prefix.insert(prefix.end(), body.begin(), body.end());
    return prefix;
}

void check_hi(const L4Packet& p) {
    CHECK(p.transport == Transport::udp);
    CHECK(p.src.to_string() == "10.0.0.1:5060");
    CHECK(p.dst.to_string() == "10.0.0.2:5080");
    CHECK(as_text(p.payload) == "hi");
}

} // namespace

TEST_CASE("classic pcap in both byte orders and timestamp resolutions", "[pcap]") {
    for (bool big : {false, true}) {
        for (bool nanos : {false, true}) {
            PcapWriter w(101, big, nanos);
            w.record(1700000000, nanos ? 123456789U : 123456U, ipv4_udp_hi());
            const auto path = w.write("hepd_pcap_order.pcap");
            auto reader = FileReader::open(path);
            REQUIRE(reader.ok());
            CHECK(reader->link_type() == LinkType::raw);
            Frame f;
            REQUIRE(reader->next(f));
            CHECK(f.time.us == 1700000000LL * 1'000'000 + 123456);
            auto p = decode_frame(f);
            REQUIRE(p.ok());
            check_hi(*p);
            CHECK_FALSE(reader->next(f));
            CHECK(reader->error() == FileError::none);
        }
    }
}

TEST_CASE("link types: Ethernet with QinQ, SLL, SLL2, BSD loopback", "[pcap]") {
    const auto ip = ipv4_udp_hi();
    struct Case {
        std::uint32_t link;
        std::vector<std::uint8_t> prefix;
        std::uint16_t vlan;
    };
    const std::vector<Case> cases{
        {1, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x08, 0x00}, 0},
        {1, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x88, 0xa8, 0x00, 0x0a, 0x81, 0x00, 0x20, 0x2a, 0x08, 0x00}, 42},
        {113, {0, 0, 0, 1, 0, 6, 0, 1, 2, 3, 4, 5, 0, 0, 0x08, 0x00}, 0},
        {276, {0x08, 0x00, 0, 0, 0, 0, 0, 1, 0, 1, 0, 6, 0, 1, 2, 3, 4, 5, 0, 0}, 0},
        {0, {2, 0, 0, 0}, 0},
    };
    for (const auto& c : cases) {
        PcapWriter w(c.link, false, false);
        w.record(1, 2, with_prefix(c.prefix, ip));
        auto reader = FileReader::open(w.write("hepd_pcap_link.pcap"));
        REQUIRE(reader.ok());
        Frame f;
        REQUIRE(reader->next(f));
        auto p = decode_frame(f);
        INFO("link type " << c.link);
        REQUIRE(p.ok());
        check_hi(*p);
        CHECK(p->vlan == c.vlan);
    }
}

TEST_CASE("truncated and garbage files give clear errors", "[pcap]") {
    PcapWriter w(101, false, false);
    w.record(1, 0, ipv4_udp_hi());
    w.record(2, 0, ipv4_udp_hi());
    auto reader = FileReader::open(w.write("hepd_pcap_cut.pcap", 5));
    REQUIRE(reader.ok());
    Frame f;
    CHECK(reader->next(f));
    CHECK_FALSE(reader->next(f));
    CHECK(reader->error() == FileError::truncated_record);

    const auto garbage = (std::filesystem::temp_directory_path() / "hepd_pcap_garbage.pcap").string();
    std::ofstream(garbage) << "this is not a capture file at all";
    auto bad = FileReader::open(garbage);
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.error() == FileError::not_a_capture);
    CHECK(to_string(bad.error()) == "not_a_capture");

    auto missing = FileReader::open("/nonexistent/file.pcap");
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.error() == FileError::open_failed);
}

TEST_CASE("IPv4 fragments and non-IP frames are reported, not decoded", "[pcap]") {
    auto ip = ipv4_udp_hi();
    ip[6] = 0x20;  // More Fragments
    Frame f{Timestamp{}, LinkType::raw, ByteSpan(ip), 30};
    auto p = decode_frame(f);
    REQUIRE_FALSE(p.ok());
    CHECK(p.error() == DecodeError::ip_fragment);

    const std::vector<std::uint8_t> arp{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x08, 0x06, 0, 1};
    Frame a{Timestamp{}, LinkType::ethernet, ByteSpan(arp), 16};
    auto q = decode_frame(a);
    REQUIRE_FALSE(q.ok());
    CHECK(q.error() == DecodeError::not_ip);
}

TEST_CASE("every truncation of a frame is rejected without reading out of bounds", "[pcap]") {
    const auto full = with_prefix({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x08, 0x00}, ipv4_udp_hi());
    for (std::size_t n = 0; n < full.size(); ++n) {
        std::vector<std::uint8_t> cut(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n));
        Frame f{Timestamp{}, LinkType::ethernet, ByteSpan(cut), static_cast<std::uint32_t>(n)};
        auto p = decode_frame(f);
        // Cut inside the UDP payload still decodes (the capture is what it is); anything shorter fails.
        if (n >= 14 + 28) {
            REQUIRE(p.ok());
            CHECK(p->payload.size() == n - 14 - 28);
        } else {
            CHECK_FALSE(p.ok());
        }
    }
}

TEST_CASE("the Kamailio HEP-over-UDP fixture reads as 60 UDP datagrams to 9060", "[pcap][fixture]") {
    const auto name = "kamailio-siptrace-hep3-udp.pcap";
    if (!test::fixture_exists(name)) {
        WARN("fixture missing: " << test::fixture_path(name));
        return;
    }
    auto reader = FileReader::open(test::fixture_path(name));
    REQUIRE(reader.ok());
    CHECK(reader->link_type() == LinkType::ethernet);
    Frame f;
    int count = 0;
    while (reader->next(f)) {
        auto p = decode_frame(f);
        REQUIRE(p.ok());
        CHECK(p->transport == Transport::udp);
        CHECK(p->dst.to_string() == "127.0.0.1:9060");
        CHECK(p->payload.size() > 6);
        ++count;
    }
    CHECK(reader->error() == FileError::none);
    CHECK(count == 60);
}
