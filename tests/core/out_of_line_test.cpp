// OutOfLine: absent until written, reads of an absent part see the default, copies are deep,
// equality is by value.
#include "core/out_of_line.hpp"

#include <catch2/catch.hpp>

#include <utility>

using hepd::OutOfLine;

namespace {
struct Part {
    int a = 7;
    friend bool operator==(const Part&, const Part&) = default;
};
}  // namespace

TEST_CASE("an out-of-line part is allocated on its first write only", "[core][out_of_line]") {
    OutOfLine<Part> p;
    CHECK_FALSE(p.allocated());
    CHECK(p.get().a == 7);  // the default, without allocating
    CHECK_FALSE(p.allocated());
    CHECK(p == OutOfLine<Part>{});

    p.mut().a = 7;  // written, still equal to the default
    CHECK(p.allocated());
    CHECK(p == OutOfLine<Part>{});
    p.mut().a = 9;
    CHECK_FALSE(p == OutOfLine<Part>{});

    OutOfLine<Part> copy = p;  // deep: a change to one leaves the other
    copy.mut().a = 10;
    CHECK(p.get().a == 9);
    CHECK(copy.get().a == 10);
    copy = OutOfLine<Part>{};
    CHECK_FALSE(copy.allocated());

    OutOfLine<Part> moved = std::move(p);
    CHECK(moved.get().a == 9);
}
