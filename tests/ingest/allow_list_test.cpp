#include "ingest/allow_list.hpp"

#include "ingest_support.hpp"

#include <catch2/catch.hpp>

using namespace hepd;
using namespace hepd::ingest;
using hepd::test::ip;

TEST_CASE("allow list: empty allows everyone, otherwise any matching prefix", "[ingest][allow]") {
    const AllowList open;
    CHECK(open.allows(ip("198.51.100.7")));
    CHECK(open.allows(ip("::1")));

    const AllowList list({*Cidr::parse("10.0.0.0/8"), *Cidr::parse("2001:db8::/32")});
    CHECK(list.allows(ip("10.9.8.7")));
    CHECK(list.allows(ip("2001:db8::5")));
    CHECK(list.allows(ip("::ffff:10.0.0.1")));
    CHECK_FALSE(list.allows(ip("192.0.2.1")));
    CHECK_FALSE(list.allows(ip("2001:db9::5")));
    CHECK_FALSE(list.allows(IpAddress{}));
}
