#include "core/result.hpp"

#include "core/bytes.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace hepd;

namespace {
enum class E { bad, worse };
Result<int, E> half(int x) {
    if (x % 2 != 0) return fail(E::bad);
    return x / 2;
}
}  // namespace

TEST_CASE("result carries a value or an error", "[core]") {
    auto ok = half(8);
    REQUIRE(ok.ok());
    CHECK(*ok == 4);
    auto err = half(3);
    REQUIRE_FALSE(err);
    CHECK(err.error() == E::bad);
    Result<std::string, E> s = std::string("x");
    CHECK(s->size() == 1);
}

TEST_CASE("byte loads read network and little-endian order", "[core]") {
    const std::uint8_t b[] = {0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0};
    CHECK(load_be16(b) == 0x1234);
    CHECK(load_le16(b) == 0x3412);
    CHECK(load_be32(b) == 0x12345678U);
    CHECK(load_le32(b) == 0x78563412U);
    CHECK(load_be64(b) == 0x123456789abcdef0ULL);
    std::uint8_t out[4] = {};
    store_be32(out, 0xdeadbeef);
    CHECK(load_be32(out) == 0xdeadbeefU);
    store_be16(out, 0xcafe);
    CHECK(load_be16(out) == 0xcafe);
    CHECK(as_text(as_bytes("abc")) == "abc");
}
