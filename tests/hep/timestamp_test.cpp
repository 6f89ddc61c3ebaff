#include "hep/timestamp.hpp"

#include <catch2/catch.hpp>

#include <set>

using namespace hepd;
using namespace hepd::hep;

namespace {

// 2026-11-30T00:53:20Z
constexpr Timestamp now{1'796'000'000'000'000};

Timestamp at(std::int64_t s, std::int64_t us) { return Timestamp::from_parts(s, us); }

}  // namespace

TEST_CASE("plausible timestamps are taken as sent", "[hep][timestamp]") {
    const auto r = normalise_timestamp(1'795'999'000, 250'000, now);
    CHECK(r.fixup == TimestampFixup::none);
    CHECK(r.time == at(1'795'999'000, 250'000));
}

TEST_CASE("the window is [now - 10 years, now + 24 h], inclusive", "[hep][timestamp]") {
    // 10 Julian years = 315,576,000 s: 1,796,000,000 - 315,576,000 = 1,480,424,000.
    CHECK(normalise_timestamp(1'480'424'000, 0, now).fixup == TimestampFixup::none);
    const auto old = normalise_timestamp(1'480'423'999, 999'999, now);
    CHECK(old.fixup == TimestampFixup::out_of_range);
    CHECK(old.time == now);
    // 1,796,000,000 + 86,400 = 1,796,086,400.
    const auto edge = normalise_timestamp(1'796'086'400, 0, now);
    CHECK(edge.fixup == TimestampFixup::none);
    CHECK(edge.time == at(1'796'086'400, 0));
    const auto future = normalise_timestamp(1'796'086'400, 1, now);
    CHECK(future.fixup == TimestampFixup::out_of_range);
    CHECK(future.time == now);
}

TEST_CASE("zero seconds fall back to the receive time", "[hep][timestamp]") {
    for (const std::uint32_t us : {0u, 5u, 999'999u, 4'000'000'000u}) {
        const auto r = normalise_timestamp(0, us, now);
        CHECK(r.fixup == TimestampFixup::zero);
        CHECK(r.time == now);
    }
}

TEST_CASE("NTP-epoch seconds are moved to the Unix epoch", "[hep][timestamp]") {
    // 1,795,999,000 + 2,208,988,800 = 4,004,987,800 (fits u32 until 2036).
    const auto r = normalise_timestamp(4'004'987'800u, 42, now);
    CHECK(r.fixup == TimestampFixup::ntp_epoch);
    CHECK(r.time == at(1'795'999'000, 42));
    // NTP and a micros overflow: one kind is reported, the seconds fix.
    const auto both = normalise_timestamp(4'004'987'800u, 2'000'000, now);
    CHECK(both.fixup == TimestampFixup::ntp_epoch);
    CHECK(both.time == at(1'795'999'002, 0));
}

TEST_CASE("byte-swapped seconds and microseconds are swapped back", "[hep][timestamp]") {
    // 1,795,999,000 = 0x6b0cc518, swapped 0x18c50c6b; 123,456 = 0x0001e240, swapped 0x40e20100.
    const auto r = normalise_timestamp(0x18c50c6bu, 0x40e20100u, now);
    CHECK(r.fixup == TimestampFixup::byte_swapped);
    CHECK(r.time == at(1'795'999'000, 123'456));
    // Microseconds that make sense as they are stay (500 swapped would be 0xf4010000).
    const auto keep = normalise_timestamp(0x18c50c6bu, 500, now);
    CHECK(keep.fixup == TimestampFixup::byte_swapped);
    CHECK(keep.time == at(1'795'999'000, 500));
}

TEST_CASE("microseconds past one second are carried", "[hep][timestamp]") {
    const auto r = normalise_timestamp(1'795'999'000, 1'500'000, now);
    CHECK(r.fixup == TimestampFixup::micros_overflow);
    CHECK(r.time == at(1'795'999'001, 500'000));
    const auto exact = normalise_timestamp(1'795'999'000, 1'000'000, now);
    CHECK(exact.fixup == TimestampFixup::micros_overflow);
    CHECK(exact.time == at(1'795'999'001, 0));
    // 4,294,967,295 us = 4294 s + 967,295 us.
    const auto max = normalise_timestamp(1'795'999'000, 0xffffffffu, now);
    CHECK(max.fixup == TimestampFixup::micros_overflow);
    CHECK(max.time == at(1'796'003'294, 967'295));
    // A carry that leaves the window is out of range.
    const auto over = normalise_timestamp(1'796'086'400, 1'000'000, now);
    CHECK(over.fixup == TimestampFixup::out_of_range);
    CHECK(over.time == now);
}

TEST_CASE("implausible timestamps fall back to the receive time", "[hep][timestamp]") {
    // 1 (1970), 2014, 0xffffffff (swapped: itself; as NTP: 2036), 2030.
    for (const std::uint32_t s : {1u, 1'400'000'000u, 0xffffffffu, 1'900'000'000u, 0x80000000u}) {
        CAPTURE(s);
        const auto r = normalise_timestamp(s, 0, now);
        CHECK(r.fixup == TimestampFixup::out_of_range);
        CHECK(r.time == now);
    }
}

TEST_CASE("a message without time uses the receive time", "[hep][timestamp]") {
    Message m;
    const auto r = normalise_timestamp(m, now);
    CHECK(r.fixup == TimestampFixup::missing);
    CHECK(r.time == now);
    m.seconds = 0x18c50c6bu;
    m.micros = 0x40e20100u;
    m.mark(Field::seconds);
    m.mark(Field::micros);
    const auto s = normalise_timestamp(m, now);
    CHECK(s.fixup == TimestampFixup::byte_swapped);
    CHECK(s.time == at(1'795'999'000, 123'456));
}

TEST_CASE("fix-up kinds have distinct snake_case names", "[hep][timestamp]") {
    std::set<std::string_view> names;
    for (std::size_t i = 0; i < timestamp_fixup_count; ++i) names.insert(to_string(static_cast<TimestampFixup>(i)));
    CHECK(names == std::set<std::string_view>{"none", "missing", "zero", "ntp_epoch", "byte_swapped", "micros_overflow",
                                              "out_of_range"});
    CHECK(to_string(static_cast<TimestampFixup>(timestamp_fixup_count)) == "unknown");
}
