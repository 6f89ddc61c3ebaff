#include "ingest/allow_list.hpp"

#include "ingest_support.hpp"

#include <catch2/catch.hpp>

using namespace hepd;
using namespace hepd::ingest;
using hepd::test::ip;

TEST_CASE("prefix: parse, canonical form and membership (IPv4)", "[ingest][allow]") {
    const auto eight = Prefix::parse("10.0.0.0/8");
    REQUIRE(eight);
    CHECK(eight->network() == ip("10.0.0.0"));
    CHECK(eight->length() == 8);
    CHECK(eight->to_string() == "10.0.0.0/8");
    CHECK(eight->contains(ip("10.0.0.0")));
    CHECK(eight->contains(ip("10.255.255.255")));
    CHECK_FALSE(eight->contains(ip("11.0.0.0")));
    CHECK_FALSE(eight->contains(ip("9.255.255.255")));

    // 77 = 0b01001101; a /26 keeps the top two bits of the last byte: 0b01000000 = 64, so the
    // network is .64 and the hosts run .64 to .127.
    const auto odd = Prefix::parse("192.168.1.77/26");
    REQUIRE(odd);
    CHECK(odd->to_string() == "192.168.1.64/26");
    CHECK(odd->contains(ip("192.168.1.64")));
    CHECK(odd->contains(ip("192.168.1.127")));
    CHECK_FALSE(odd->contains(ip("192.168.1.128")));
    CHECK_FALSE(odd->contains(ip("192.168.1.63")));

    const auto host = Prefix::parse("203.0.113.9");
    REQUIRE(host);
    CHECK(host->length() == 32);
    CHECK(host->contains(ip("203.0.113.9")));
    CHECK_FALSE(host->contains(ip("203.0.113.8")));

    const auto all = Prefix::parse("0.0.0.0/0");
    REQUIRE(all);
    CHECK(all->contains(ip("255.255.255.255")));
    CHECK(all->contains(ip("0.0.0.0")));
    CHECK_FALSE(all->contains(ip("::1")));  // a v4 prefix holds no native v6 address
}

TEST_CASE("prefix: IPv6, and IPv4-mapped senders match IPv4 prefixes", "[ingest][allow]") {
    const auto doc = Prefix::parse("2001:db8::/32");
    REQUIRE(doc);
    CHECK(doc->contains(ip("2001:db8:ffff::1")));
    CHECK_FALSE(doc->contains(ip("2001:db9::")));
    CHECK_FALSE(doc->contains(ip("10.0.0.1")));

    // /61: 48 bits plus the top 13 bits of the fourth group, i.e. that group masked by 0xfff8.
    const auto p61 = Prefix::parse("2001:db8:0:8::/61");
    REQUIRE(p61);
    CHECK(p61->contains(ip("2001:db8:0:f:1:2:3:4")));  // 0x000f & 0xfff8 = 0x0008
    CHECK_FALSE(p61->contains(ip("2001:db8:0:10::")));  // 0x0010
    CHECK_FALSE(p61->contains(ip("2001:db8:0:7::")));   // 0x0007 & 0xfff8 = 0

    const auto ten = Prefix::parse("10.0.0.0/8");
    REQUIRE(ten);
    CHECK(ten->contains(ip("::ffff:10.1.2.3")));
    CHECK_FALSE(ten->contains(ip("::ffff:11.0.0.1")));
    CHECK_FALSE(ten->contains(ip("::10.1.2.3")));  // IPv4-compatible (deprecated) is not mapped

    // make() clears host bits.
    const auto made = Prefix::make(ip("2001:db8::1"), 64);
    REQUIRE(made);
    CHECK(made->to_string() == "2001:db8::/64");
}

TEST_CASE("prefix: malformed text and impossible lengths are refused", "[ingest][allow]") {
    for (const char* bad : {"", "/8", "10.0.0.0/", "10.0.0.0/x", "10.0.0.0/33", "10.0.0/8", "10.0.0.0/8/9",
                            "::/129", "10.0.0.0/-1", "10.0.0.0/ 8", "host.example/8", "[::1]/128"}) {
        INFO(bad);
        CHECK_FALSE(Prefix::parse(bad));
    }
    CHECK_FALSE(Prefix::make(IpAddress{}, 0));
    CHECK_FALSE(Prefix::make(ip("10.0.0.0"), 33));
    CHECK(Prefix::make(ip("::"), 128));
    CHECK_FALSE(Prefix{}.contains(ip("10.0.0.1")));  // the default prefix holds nothing
}

TEST_CASE("allow list: empty allows everyone, otherwise any matching prefix", "[ingest][allow]") {
    const AllowList open;
    CHECK(open.allows(ip("198.51.100.7")));
    CHECK(open.allows(ip("::1")));

    const AllowList list({*Prefix::parse("10.0.0.0/8"), *Prefix::parse("2001:db8::/32")});
    CHECK(list.allows(ip("10.9.8.7")));
    CHECK(list.allows(ip("2001:db8::5")));
    CHECK(list.allows(ip("::ffff:10.0.0.1")));
    CHECK_FALSE(list.allows(ip("192.0.2.1")));
    CHECK_FALSE(list.allows(ip("2001:db9::5")));
    CHECK_FALSE(list.allows(IpAddress{}));
}
