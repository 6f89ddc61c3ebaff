#include "core/stats.hpp"

#include <catch2/catch.hpp>

using namespace hepd;

TEST_CASE("histogram buckets are upper-inclusive, with +Inf last", "[core][stats]") {
    Histogram<3> h({0.1, 1.0, 10.0});
    for (double v : {0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 11.0, 1e9}) h.observe(v);
    CHECK(h.bucket(0) == 2);  // 0.05, 0.1
    CHECK(h.bucket(1) == 2);  // 0.5, 1.0
    CHECK(h.bucket(2) == 2);  // 5, 10
    CHECK(h.bucket(3) == 2);  // 11, 1e9
    CHECK(h.count() == 8);
    CHECK(h.sum() == Approx(0.05 + 0.1 + 0.5 + 1.0 + 5.0 + 10.0 + 11.0 + 1e9));

    Histogram<3> other({0.1, 1.0, 10.0});
    other.observe(0.2);
    h.merge(other);
    CHECK(h.bucket(1) == 3);
    CHECK(h.count() == 9);
    const Histogram<3> copy = h;
    CHECK(copy.count() == 9);
}

TEST_CASE("counters and gauges", "[core][stats]") {
    Counter c;
    c.add();
    c.add(41);
    CHECK(c.value() == 42);
    Gauge g;
    g.add(3);
    g.add(-5);
    CHECK(g.value() == -2);
    g.set(7);
    CHECK(g.value() == 7);
}
