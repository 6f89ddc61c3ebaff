#include "core/cidr.hpp"

#include <catch2/catch.hpp>

#include <array>
#include <cstdint>

using hepd::Cidr;
using hepd::CidrError;
using hepd::IpAddress;

namespace {

Cidr cidr(std::string_view text) {
    const auto r = Cidr::parse(text);
    INFO(text);
    REQUIRE(r.ok());
    return *r;
}

CidrError cidr_error(std::string_view text) {
    const auto r = Cidr::parse(text);
    INFO(text);
    REQUIRE_FALSE(r.ok());
    return r.error();
}

IpAddress ip(std::string_view text) {
    const auto a = IpAddress::parse(text);
    INFO(text);
    REQUIRE(a.has_value());
    return *a;
}

}  // namespace

TEST_CASE("an IPv4 prefix parses into network and length", "[core][cidr]") {
    const Cidr c = cidr("10.0.0.0/8");
    CHECK(c.network() == IpAddress::v4(0x0a000000u));
    CHECK(c.prefix_len() == 8);
    CHECK(c.to_string() == "10.0.0.0/8");
    CHECK(cidr("10.0.0.0/08") == c);  // leading zero in the length is still 8
}

TEST_CASE("a bare address is a host prefix", "[core][cidr]") {
    CHECK(cidr("192.168.1.7") == cidr("192.168.1.7/32"));
    CHECK(cidr("192.168.1.7").prefix_len() == 32);
    CHECK(cidr("2001:db8::1").prefix_len() == 128);
    CHECK(cidr("2001:db8::1").to_string() == "2001:db8::1/128");
}

TEST_CASE("IPv4 /0 contains every IPv4 address and no IPv6 one", "[core][cidr]") {
    const Cidr all = cidr("0.0.0.0/0");
    CHECK(all.contains(ip("0.0.0.0")));
    CHECK(all.contains(ip("1.2.3.4")));
    CHECK(all.contains(ip("255.255.255.255")));
    CHECK_FALSE(all.contains(ip("::1")));
    CHECK_FALSE(all.contains(ip("2001:db8::1")));
    CHECK_FALSE(all.contains(ip("::")));
    CHECK_FALSE(all.contains(IpAddress{}));
}

TEST_CASE("IPv4 /32 contains exactly one address", "[core][cidr]") {
    const Cidr host = cidr("192.168.1.7/32");
    CHECK(host.contains(ip("192.168.1.7")));
    CHECK_FALSE(host.contains(ip("192.168.1.6")));
    CHECK_FALSE(host.contains(ip("192.168.1.8")));
    CHECK_FALSE(host.contains(ip("193.168.1.7")));
}

TEST_CASE("prefixes that end inside a byte compare the right bits", "[core][cidr]") {
    const Cidr nine = cidr("10.0.0.0/9");  // 10.0.0.0 - 10.127.255.255
    CHECK(nine.contains(ip("10.0.0.0")));
    CHECK(nine.contains(ip("10.127.255.255")));
    CHECK_FALSE(nine.contains(ip("10.128.0.0")));
    CHECK_FALSE(nine.contains(ip("11.0.0.0")));

    const Cidr rfc1918 = cidr("172.16.0.0/12");  // 172.16.0.0 - 172.31.255.255
    CHECK(rfc1918.contains(ip("172.16.0.0")));
    CHECK(rfc1918.contains(ip("172.31.255.255")));
    CHECK_FALSE(rfc1918.contains(ip("172.32.0.0")));
    CHECK_FALSE(rfc1918.contains(ip("172.15.255.255")));

    const Cidr v31 = cidr("192.0.2.4/31");  // .4 and .5
    CHECK(v31.contains(ip("192.0.2.4")));
    CHECK(v31.contains(ip("192.0.2.5")));
    CHECK_FALSE(v31.contains(ip("192.0.2.6")));
    CHECK_FALSE(v31.contains(ip("192.0.2.3")));

    const Cidr v6 = cidr("2001:db8:8000::/33");  // the upper half of 2001:db8::/32
    CHECK(v6.contains(ip("2001:db8:8000::")));
    CHECK(v6.contains(ip("2001:db8:ffff:ffff:ffff:ffff:ffff:ffff")));
    CHECK_FALSE(v6.contains(ip("2001:db8:7fff:ffff:ffff:ffff:ffff:ffff")));
}

TEST_CASE("IPv6 /0 contains every IPv6 address and no IPv4 one", "[core][cidr]") {
    const Cidr all = cidr("::/0");
    CHECK(all.to_string() == "::/0");
    CHECK(all.contains(ip("::")));
    CHECK(all.contains(ip("::1")));
    CHECK(all.contains(ip("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff")));
    CHECK_FALSE(all.contains(ip("0.0.0.0")));
    CHECK_FALSE(all.contains(ip("10.1.2.3")));
}

TEST_CASE("IPv6 /128 contains exactly one address", "[core][cidr]") {
    const Cidr host = cidr("2001:db8::1/128");
    CHECK(host.contains(ip("2001:db8::1")));
    CHECK(host.contains(ip("2001:0db8:0000:0000:0000:0000:0000:0001")));
    CHECK_FALSE(host.contains(ip("2001:db8::")));
    CHECK_FALSE(host.contains(ip("2001:db8::2")));
    CHECK_FALSE(host.contains(ip("3001:db8::1")));
}

TEST_CASE("IPv6 /32 and /64 prefixes", "[core][cidr]") {
    const Cidr doc = cidr("2001:db8::/32");
    CHECK(doc.to_string() == "2001:db8::/32");
    CHECK(doc.contains(ip("2001:db8::")));
    CHECK(doc.contains(ip("2001:db8:ffff:ffff:ffff:ffff:ffff:ffff")));
    CHECK_FALSE(doc.contains(ip("2001:db9::")));
    CHECK_FALSE(doc.contains(ip("2001:db7:ffff::")));
    const Cidr lan = cidr("fe80::/64");
    CHECK(lan.contains(ip("fe80::1234:5678:9abc:def0")));
    CHECK_FALSE(lan.contains(ip("fe80:0:0:1::1")));
}

TEST_CASE("an IPv4 prefix contains the IPv4-mapped form of its addresses", "[core][cidr]") {
    const Cidr ten = cidr("10.0.0.0/8");
    CHECK(ten.contains(ip("::ffff:10.1.2.3")));
    CHECK_FALSE(ten.contains(ip("::ffff:11.0.0.1")));
    // ::10.1.2.3 (v4-compatible, not mapped) is an ordinary IPv6 address.
    CHECK_FALSE(ten.contains(ip("::10.1.2.3")));
    CHECK_FALSE(ten.contains(ip("::fffe:10.1.2.3")));
    CHECK(cidr("0.0.0.0/0").contains(ip("::ffff:1.2.3.4")));
    CHECK(cidr("10.1.2.3/32").contains(ip("::ffff:10.1.2.3")));
    CHECK_FALSE(cidr("10.1.2.3/32").contains(ip("::ffff:10.1.2.4")));
    // The converse is not done: an IPv6 prefix holds IPv6 addresses only.
    CHECK_FALSE(cidr("::ffff:0:0/96").contains(ip("10.1.2.3")));
}

TEST_CASE("malformed prefixes are refused with the reason", "[core][cidr]") {
    CHECK(cidr_error("") == CidrError::empty);
    CHECK(cidr_error("/8") == CidrError::bad_address);
    CHECK(cidr_error("10.0.0/8") == CidrError::bad_address);
    CHECK(cidr_error("10.0.0.256/32") == CidrError::bad_address);
    CHECK(cidr_error("example.com/24") == CidrError::bad_address);
    CHECK(cidr_error("[::1]/128") == CidrError::bad_address);
    CHECK(cidr_error("10.0.0.0/") == CidrError::bad_prefix);
    CHECK(cidr_error("10.0.0.0/x") == CidrError::bad_prefix);
    CHECK(cidr_error("10.0.0.0/-1") == CidrError::bad_prefix);
    CHECK(cidr_error("10.0.0.0/8/9") == CidrError::bad_prefix);
    CHECK(cidr_error("10.0.0.0/0008") == CidrError::bad_prefix);
    CHECK(cidr_error("10.0.0.0/ 8") == CidrError::bad_prefix);
    CHECK(cidr_error("10.0.0.0/33") == CidrError::prefix_range);
    CHECK(cidr_error("::/129") == CidrError::prefix_range);
    CHECK(cidr_error("::/999") == CidrError::prefix_range);
    CHECK(cidr_error("10.0.0.1/8") == CidrError::host_bits_set);
    CHECK(cidr("10.128.0.0/9").prefix_len() == 9);  // the one bit of the second byte is in the prefix
    CHECK(cidr_error("0.0.0.1/0") == CidrError::host_bits_set);
    CHECK(cidr_error("192.0.2.5/31") == CidrError::host_bits_set);
    CHECK(cidr_error("2001:db8::1/64") == CidrError::host_bits_set);
    CHECK(cidr_error("2001:db8:8000::/32") == CidrError::host_bits_set);
}

TEST_CASE("make() applies the same rules as parse()", "[core][cidr]") {
    const auto ok = Cidr::make(IpAddress::v4(0x0a000000u), 8);
    REQUIRE(ok.ok());
    CHECK(*ok == cidr("10.0.0.0/8"));
    CHECK(Cidr::make(IpAddress{}, 0).error() == CidrError::bad_address);
    CHECK(Cidr::make(IpAddress::v4(0x0a000001u), 8).error() == CidrError::host_bits_set);
    CHECK(Cidr::make(IpAddress::v4(0u), 33).error() == CidrError::prefix_range);
}

TEST_CASE("a default Cidr matches nothing", "[core][cidr]") {
    const Cidr none;
    CHECK_FALSE(none.contains(ip("0.0.0.0")));
    CHECK_FALSE(none.contains(ip("::")));
    CHECK_FALSE(none.contains(IpAddress{}));
}

TEST_CASE("cidr errors have snake_case names", "[core][cidr]") {
    CHECK(to_string(CidrError::empty) == "empty");
    CHECK(to_string(CidrError::bad_address) == "bad_address");
    CHECK(to_string(CidrError::bad_prefix) == "bad_prefix");
    CHECK(to_string(CidrError::prefix_range) == "prefix_range");
    CHECK(to_string(CidrError::host_bits_set) == "host_bits_set");
}
