#include "app/pcap_progress.hpp"

#include <catch2/catch.hpp>

#include <cstdio>

using hepd::app::PcapProgress;
using hepd::app::progress_line;
using hepd::app::ProgressFigures;

TEST_CASE("progress line: where, how fast, how long still", "[app][progress]") {
    ProgressFigures f;
    f.file = 2;
    f.files = 3;
    f.offset = 250'000'000;
    f.size = 500'000'000;
    f.bytes_done = 750'000'000;  // the first file (500 MB) and half of this one
    f.bytes_left = 250'000'000 + 500'000'000;
    f.packets = 3'000'000;
    f.seconds = 1.5;
    // 2 M packets/s; 750 MB left at 500 MB/s: 1.5 s, shown rounded.
    CHECK(progress_line(f) == "file 2/3, 50 % of 500.0 MB, 3.00 M packets, 2.00 M packets/s, 0:02 left");

    f.bytes_left = 90'000'000'000;  // 180 s at that rate
    f.packets = 1500;
    CHECK(progress_line(f) == "file 2/3, 50 % of 500.0 MB, 1.5 k packets, 1.0 k packets/s, 3:00 left");
}

TEST_CASE("progress line before any time has passed has no rate", "[app][progress]") {
    ProgressFigures f;
    f.file = 1;
    f.files = 1;
    f.size = 1'000'000;
    CHECK(progress_line(f) == "file 1/1, 0 % of 1.0 MB, 0 packets");
}

TEST_CASE("progress stays silent when the output is not a terminal", "[app][progress]") {
    std::FILE* out = std::tmpfile();
    REQUIRE(out != nullptr);
    PcapProgress progress(out, {"/nonexistent.pcap"});
    progress.start_file(0);
    progress.update(10, 100, 5);
    progress.finish();
    CHECK(std::ftell(out) == 0);
    std::fclose(out);
}
