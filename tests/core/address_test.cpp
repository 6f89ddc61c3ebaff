#include "core/address.hpp"

#include "core/hash.hpp"

#include <catch2/catch.hpp>

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <compare>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace hepd;

TEST_CASE("IPv4 and IPv6 addresses parse and print", "[core][address]") {
    auto v4 = IpAddress::parse("192.0.2.7");
    REQUIRE(v4);
    CHECK(v4->is_v4());
    CHECK(v4->v4_host_order() == 0xc0000207U);
    CHECK(v4->to_string() == "192.0.2.7");
    CHECK(*v4 == IpAddress::v4(0xc0000207U));

    auto v6 = IpAddress::parse("2001:db8::1");
    REQUIRE(v6);
    CHECK(v6->is_v6());
    CHECK(v6->bytes()[0] == 0x20);
    CHECK(v6->bytes()[15] == 0x01);
    CHECK(v6->to_string() == "2001:db8::1");

    CHECK_FALSE(IpAddress::parse(""));
    CHECK_FALSE(IpAddress::parse("256.1.1.1"));
    CHECK_FALSE(IpAddress::parse("1.2.3"));
    CHECK_FALSE(IpAddress::parse("2001:db8:::1"));
    CHECK_FALSE(IpAddress::parse(std::string(100, '1')));
    CHECK(IpAddress{}.to_string() == "-");
}

TEST_CASE("endpoints parse host:port and [v6]:port", "[core][address]") {
    auto a = parse_endpoint("0.0.0.0:9060");
    REQUIRE(a);
    CHECK(a->port == 9060);
    CHECK(a->to_string() == "0.0.0.0:9060");

    auto b = parse_endpoint("[::1]:65535");
    REQUIRE(b);
    CHECK(b->address.is_v6());
    CHECK(b->port == 65535);
    CHECK(b->to_string() == "[::1]:65535");

    for (const char* bad : {"", "1.2.3.4", "1.2.3.4:", "1.2.3.4:65536", "1.2.3.4:9x", "::1:9060", "[::1]9060",
                            "[::1]:", "host.example:5060", "1.2.3.4:123456"}) {
        INFO(bad);
        CHECK_FALSE(parse_endpoint(bad));
    }
}

TEST_CASE("hashes are stable across runs and hosts", "[core][hash]") {
    // Snapshots are re-routed with these hashes: a change of value is a format change.
    CHECK(hash_text("") == hash_text(""));
    CHECK(hash_text("a84b4c76e66710@pc33.atlanta.com") != hash_text("a84b4c76e66710@pc33.atlanta.con"));
    // Every tail length (0-7 bytes after the words), pinned at the values hepd has always had.
    struct Pinned {
        std::size_t length;
        std::uint64_t hash;
    };
    const Pinned pinned[] = {
        {0, 0x25fc6dd36ce04b20ULL},  {1, 0x270aeb36a95726cfULL},  {2, 0xbb0b4c6bc718dc0cULL},
        {3, 0x1570bf8f1c9a0884ULL},  {4, 0x9a09129337c2b80cULL},  {5, 0xab93f65ce8262f60ULL},
        {6, 0xef69d2ad934ff93cULL},  {7, 0xb3ec5f5cf397e1ceULL},  {8, 0x2edb0db2147786c6ULL},
        {9, 0x1961324446bd4424ULL},  {10, 0x0593d67fc585c582ULL}, {11, 0x5c3891c02e0e2de1ULL},
        {12, 0xdc76889e786819e3ULL}, {13, 0xefb1d161bec6c24cULL}, {14, 0x2c9711bf54811b9aULL},
        {15, 0x5b485589e90d5ab0ULL}, {16, 0x9a20b911c4b0769fULL}, {17, 0x8095012149295598ULL},
    };
    const std::string_view text = "a84b4c76e66710@pc";
    for (const Pinned& p : pinned) {
        INFO(p.length);
        CHECK(hash_text(text.substr(0, p.length)) == p.hash);
    }
    CHECK(mix64(0) == 0);
    CHECK(mix64(1) == 0x5692161d100b05e5ULL);
    const Endpoint e1{IpAddress::v4(0x0a000001U), 4000};
    const Endpoint e2{IpAddress::v4(0x0a000001U), 4002};
    CHECK(hash_endpoint(e1) == hash_endpoint(e1));
    CHECK(hash_endpoint(e1) != hash_endpoint(e2));
}

TEST_CASE("hash spreads sequential Call-IDs evenly over shards", "[core][hash]") {
    constexpr int kShards = 4;
    int counts[kShards] = {};
    for (int i = 0; i < 40000; ++i) {
        const std::string id = "call-" + std::to_string(i) + "@host";
        ++counts[hash_text(id) % kShards];
    }
    for (int c : counts) {
        CHECK(c > 9500);
        CHECK(c < 10500);
    }
}

TEST_CASE("an IPv4-mapped IPv6 address unmaps to the IPv4 address it carries", "[core][address]") {
    CHECK(IpAddress::parse("::ffff:10.1.2.3")->unmapped() == *IpAddress::parse("10.1.2.3"));
    CHECK(IpAddress::parse("::ffff:10.1.2.3")->unmapped().is_v4());
    for (const char* unchanged : {"10.1.2.3", "::1", "::10.1.2.3", "2001:db8::ffff:10.1.2.3", "::fffe:10.1.2.3"}) {
        INFO(unchanged);
        CHECK(IpAddress::parse(unchanged)->unmapped() == *IpAddress::parse(unchanged));
    }
    CHECK(IpAddress{}.unmapped().empty());
    // Same address, same hash; v4 and its mapped form are different keys until unmapped.
    CHECK(hash_address(*IpAddress::parse("10.1.2.3")) == hash_address(IpAddress::parse("::ffff:10.1.2.3")->unmapped()));
    CHECK(hash_address(*IpAddress::parse("10.1.2.3")) != hash_address(*IpAddress::parse("::ffff:10.1.2.3")));
}

TEST_CASE("IPv4 text is accepted exactly when inet_pton accepts it", "[core][address]") {
    // IpAddress::parse reads dotted quads itself; the C library is the reference.
    const auto agrees = [](const std::string& text) {
        unsigned char expected[4] = {};
        const bool library = inet_pton(AF_INET, text.c_str(), expected) == 1;
        const auto parsed = IpAddress::parse(text);
        INFO("'" << text << "'");
        REQUIRE(parsed.has_value() == library);
        if (library) {
            CHECK(parsed->is_v4());
            CHECK(std::memcmp(parsed->bytes().data(), expected, 4) == 0);
        }
    };
    for (const char* text :
         {"0.0.0.0",  "255.255.255.255", "10.3.0.1",  "01.2.3.4",  "1.2.3.04",  "1.2.3.0",   "1.2.3.4.",
          ".1.2.3.4", "1..2.3",          "1.2.3.4.5", "256.0.0.1", "1.2.3.255", "1.2.3.256", "1.2.3.-4",
          " 1.2.3.4", "1.2.3.4 ",        "1.2.3.4a",  "1.2.3",     "00.1.2.3",  "1.2.3.00",  "4294967296.0.0.1"})
        agrees(text);
    // Random strings over the characters a dotted quad is made of, with a few others.
    std::mt19937 rng(7);
    const std::string alphabet = "0123456789....  x";
    std::uniform_int_distribution<std::size_t> length(1, 17);
    std::uniform_int_distribution<std::size_t> pick(0, alphabet.size() - 1);
    std::uniform_int_distribution<int> octet(0, 299);
    for (int n = 0; n < 20000; ++n) {
        std::string text;
        if (n % 2 == 0) {
            const std::size_t size = length(rng);
            for (std::size_t i = 0; i < size; ++i) text += alphabet[pick(rng)];
        } else {
            // Near-valid: four numbers, sometimes with a leading zero or a fifth part.
            for (int part = 0; part < 4 + (n % 7 == 1 ? 1 : 0); ++part) {
                if (part > 0) text += '.';
                if (n % 5 == 1) text += '0';
                text += std::to_string(octet(rng));
            }
        }
        agrees(text);
    }
}

TEST_CASE("addresses and endpoints order by family, then bytes as written, then port", "[core][address]") {
    // The reference: the defaulted order of the same fields (family, then lexicographic bytes).
    const auto reference = [](const IpAddress& a, const IpAddress& b) {
        if (a.family() != b.family()) return a.family() <=> b.family();
        return std::lexicographical_compare_three_way(a.bytes().begin(), a.bytes().end(), b.bytes().begin(),
                                                      b.bytes().end());
    };
    std::mt19937 rng(7);
    std::vector<IpAddress> addresses{IpAddress{}};
    for (int i = 0; i < 300; ++i) {
        std::array<std::uint8_t, 16> b{};
        // Few distinct byte values and a random first differing position: equal prefixes are common.
        for (auto& byte : b) byte = static_cast<std::uint8_t>(std::array<int, 4>{0, 1, 0x7f, 0xff}[rng() % 4]);
        addresses.push_back(i % 2 == 0 ? IpAddress::v6(b)
                                       : IpAddress::v4(std::span<const std::uint8_t, 4>(b.data(), 4)));
    }
    for (const IpAddress& a : addresses) {
        for (const IpAddress& b : addresses) {
            CHECK((a <=> b) == reference(a, b));
            CHECK((a == b) == (reference(a, b) == 0));
            const Endpoint ea{a, 5060};
            const Endpoint eb{b, 5061};
            CHECK((ea < eb) == (reference(a, b) <= 0));
        }
    }
}
