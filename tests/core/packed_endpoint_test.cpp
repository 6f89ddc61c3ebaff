// PackedEndpoint and EndpointPool: IPv4 and no-address endpoints in place, others in pool slots
// that are given back and taken again; every form unpacks to the endpoint packed. CompactEndpoints:
// the same in place, others out of line, compared by value.
#include "core/packed_endpoint.hpp"

#include <catch2/catch.hpp>

using hepd::CompactEndpoints;
using hepd::Endpoint;
using hepd::EndpointPool;
using hepd::IpAddress;
using hepd::PackedEndpoint;

TEST_CASE("packed endpoints: IPv4 in place, IPv6 in the pool, each unpacks to itself", "[core][address]") {
    EndpointPool pool;
    const Endpoint v4{IpAddress::v4(0xC0A80001), 5060};
    const Endpoint v6{*IpAddress::parse("2001:db8::1"), 5060};
    const Endpoint none{IpAddress{}, 0};

    const PackedEndpoint p4 = pool.pack(v4);
    const PackedEndpoint p6 = pool.pack(v6);
    const PackedEndpoint p0 = pool.pack(none);
    CHECK(p4.kind == PackedEndpoint::kV4);
    CHECK(p6.kind == PackedEndpoint::kPooled);
    CHECK(p0.kind == PackedEndpoint::kNoAddress);
    CHECK(pool.size() == 1);
    CHECK(pool.unpack(p4) == v4);
    CHECK(pool.unpack(p6) == v6);
    CHECK(pool.unpack(p0) == none);
    CHECK(EndpointPool::in_place(v4) == p4);
    CHECK_FALSE(EndpointPool::in_place(v6).has_value());

    CHECK(pool.matches(p4, v4));
    CHECK(pool.matches(p6, v6));
    CHECK(pool.matches(p0, none));
    CHECK_FALSE(pool.matches(p4, Endpoint{v4.address, 5062}));
    CHECK_FALSE(pool.matches(p6, Endpoint{v6.address, 5062}));
    // The IPv4 address with 2001:db8::1's first four bytes, and the IPv4-mapped form of v4, are others.
    CHECK_FALSE(pool.matches(p6, Endpoint{IpAddress::v4(0x20010db8), 5060}));
    CHECK_FALSE(pool.matches(p4, Endpoint{*IpAddress::parse("::ffff:192.168.0.1"), 5060}));
    CHECK_FALSE(pool.matches(p0, Endpoint{IpAddress::v4(0), 0}));
}

TEST_CASE("packed endpoints: a released slot is taken again, so the pool holds what is in use", "[core][address]") {
    EndpointPool pool;
    const Endpoint a{*IpAddress::parse("2001:db8::a"), 1000};
    const Endpoint b{*IpAddress::parse("2001:db8::b"), 2000};
    for (int round = 0; round < 1000; ++round) {
        const PackedEndpoint pa = pool.pack(a);
        const PackedEndpoint pb = pool.pack(b);
        CHECK(pool.size() == 2);
        CHECK(pool.unpack(pa) == a);
        CHECK(pool.unpack(pb) == b);
        pool.release(pa);
        pool.release(pb);
        pool.release(pool.pack(Endpoint{IpAddress::v4(1), 1}));  // in place: nothing to give back
    }
    CHECK(pool.size() == 0);
    CHECK(pool.memory_bytes() < 256);
}

TEST_CASE("compact endpoints: IPv4 in place, any other out of line, compared by value", "[core][address]") {
    const Endpoint v4{IpAddress::v4(0xC0A80001), 5060};
    const Endpoint v6{*IpAddress::parse("2001:db8::1"), 5080};
    const Endpoint mapped{*IpAddress::parse("::ffff:192.168.0.1"), 5060};  // not the IPv4 one
    const Endpoint none{IpAddress{}, 0};
    static_assert(sizeof(CompactEndpoints<3>) == 32);

    CompactEndpoints<3> e;
    CHECK(e.get(0) == none);
    CHECK(e.get(2) == none);
    e.set(0, v4);
    e.set(1, v4);
    CHECK(e.heap_bytes() == 0);
    CHECK(e.get(0) == v4);
    CHECK(e.get(1) == v4);

    e.set(1, v6);
    e.set(2, mapped);
    CHECK(e.heap_bytes() > 0);
    CHECK(e.get(0) == v4);
    CHECK(e.get(1) == v6);
    CHECK(e.get(2) == mapped);
    CHECK(e.get(2) != v4);

    // Copies are deep; equality is by value, whatever the other keeps out of line.
    CompactEndpoints<3> copy = e;
    CHECK(copy == e);
    e.set(1, v4);
    CHECK(copy.get(1) == v6);
    CHECK(copy != e);
    copy.set(1, v4);
    copy.set(2, mapped);
    CHECK(copy == e);
    CompactEndpoints<3> plain;
    plain.set(0, v4);
    plain.set(1, v4);
    plain.set(2, mapped);
    CHECK(plain == e);
    plain.set(2, none);
    CHECK(plain != e);
}
