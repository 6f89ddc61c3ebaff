#include "rtp/ntp.hpp"

#include <catch2/catch.hpp>

using namespace hepd::rtp;

TEST_CASE("middle 32 bits of an NTP timestamp", "[ntp]") {
    CHECK(ntp_middle32(0x83aa7e8080000000ull) == 0x7e808000u);
    CHECK(ntp_middle32(0x0123456789abcdefull) == 0x456789abu);
    CHECK(ntp_middle32(0) == 0);
}

TEST_CASE("signed 24-bit conversion", "[ntp]") {
    CHECK(sign_extend_24(0) == 0);
    CHECK(sign_extend_24(1) == 1);
    CHECK(sign_extend_24(0x7fffff) == 8'388'607);
    CHECK(sign_extend_24(0x800000) == -8'388'608);
    CHECK(sign_extend_24(0xffffff) == -1);
    CHECK(sign_extend_24(0xfffffe) == -2);
    CHECK(sign_extend_24(0xab000005u) == 5);  // the octet above (fraction lost) is ignored
    CHECK(sign_extend_24(0x40ffffffu) == -1);
}

TEST_CASE("Unix microseconds to NTP and back", "[ntp]") {
    // 2208988800 = 0x83aa7e80 seconds from 1900 to 1970.
    CHECK(ntp_from_unix_micros(0) == 0x83aa7e8000000000ull);
    CHECK(ntp_from_unix_micros(500'000) == 0x83aa7e8080000000ull);
    CHECK(ntp_from_unix_micros(1'750'000) == 0x83aa7e81c0000000ull);
    CHECK(ntp_from_unix_micros(-500'000) == 0x83aa7e7f80000000ull);
    // 1 us = 2^32 / 10^6 = 4294.967296 units, truncated
    CHECK(ntp_from_unix_micros(1) == 0x83aa7e8000000000ull + 4294);
    // 2036-02-07T06:28:16Z: NTP era 1 begins, the seconds field wraps to 0.
    CHECK(ntp_from_unix_micros(2'085'978'496'000'000) == 0);
    CHECK(ntp_from_unix_micros(2'085'978'497'250'000) == 0x0000000140000000ull);

    CHECK(unix_micros_from_ntp(0x83aa7e8000000000ull) == 0);
    CHECK(unix_micros_from_ntp(0x83aa7e81c0000000ull) == 1'750'000);
    CHECK(unix_micros_from_ntp(0x83aa7e8000000000ull + 2147) == 0);   // 0.49989 us rounds down
    CHECK(unix_micros_from_ntp(0x83aa7e8000000000ull + 2148) == 1);   // 0.50012 us rounds up
    CHECK(unix_micros_from_ntp(0x83aa7e80ffffffffull) == 1'000'000);  // 0.99999999977 s
    CHECK(unix_micros_from_ntp(0) == -2'208'988'800'000'000);
    // 2024-01-01T00:00:00Z = 1704067200 s; NTP seconds 3913056000 = 0xe93c7f00
    CHECK(ntp_from_unix_micros(1'704'067'200'000'000) == 0xe93c7f0000000000ull);
    CHECK(unix_micros_from_ntp(0xe93c7f0000000000ull) == 1'704'067'200'000'000);
}

TEST_CASE("compact NTP durations in microseconds", "[ntp]") {
    CHECK(compact_ntp_to_micros(0) == 0);
    CHECK(compact_ntp_to_micros(0x00010000) == 1'000'000);
    CHECK(compact_ntp_to_micros(0x00008000) == 500'000);
    CHECK(compact_ntp_to_micros(0x00054000) == 5'250'000);
    CHECK(compact_ntp_to_micros(1) == 15);                        // 15.2587890625 us
    CHECK(compact_ntp_to_micros(2) == 31);                        // 30.517578125 us
    CHECK(compact_ntp_to_micros(0xffffffffu) == 65'535'999'985);  // 65535.999984741 s
}

TEST_CASE("round-trip time from LSR and DLSR", "[ntp][rtt]") {
    // RFC 3550 6.4.1: A 0xb7108000, LSR 0xb7052000, DLSR 0x00054000 -> 0x00062000 = 6.125 s.
    CHECK(round_trip_micros(0xb7108000u, 0xb7052000u, 0x00054000u) == 6'125'000);
    // No SR seen yet: LSR 0 means no RTT.
    CHECK_FALSE(round_trip_micros(0xb7108000u, 0, 0x00054000u).has_value());
    // Arrival exactly LSR + DLSR: zero RTT.
    CHECK(round_trip_micros(0xb7096000u, 0xb7052000u, 0x00044000u) == 0);
    // One unit before that: negative, rejected.
    CHECK_FALSE(round_trip_micros(0xb7095fffu, 0xb7052000u, 0x00044000u).has_value());
    // Wrap of the 32-bit compact clock between LSR and arrival.
    CHECK(round_trip_micros(0x00001000u, 0xfffff000u, 0x00001000u) == 62'500);  // 0x1000 = 1/16 s
}
