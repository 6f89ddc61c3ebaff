// The process_* figures: the /proc parsers on real lines (a process name with spaces and
// parentheses, missing fields, other units) and read_process_usage() on this test process.
#include "core/process_usage.hpp"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <ctime>
#include <string>

using namespace hepd;

TEST_CASE("start time from /proc/PID/stat, whatever the process name holds", "[core][process]") {
    const std::string tail =
        " S 1 11114 1282 0 -1 4194304 97 0 1 0 5 3 0 0 20 0 1 0 216746 3133440 347 18446744073709551615";
    CHECK(parse_start_ticks("11117 (hepd)" + tail) == 216746U);
    CHECK(parse_start_ticks("11117 (a (b) c) d)" + tail) == 216746U);
    CHECK(parse_start_ticks("11117 (two words)" + tail + "\n") == 216746U);
    CHECK_FALSE(parse_start_ticks("11117 hepd" + tail));     // no name
    CHECK_FALSE(parse_start_ticks("11117 (hepd) S 1 2 3"));  // cut short
    CHECK_FALSE(parse_start_ticks("11117 (hepd) S 1 11114 1282 0 -1 4194304 97 0 1 0 5 3 0 0 20 0 1 0 x"));
    CHECK_FALSE(parse_start_ticks(""));
}

TEST_CASE("memory from /proc/PID/status", "[core][process]") {
    ProcessUsage u;
    REQUIRE(
        parse_proc_status("Name:\thepd\nVmSize:\t    3896 kB\nVmHWM:\t    2064 kB\nVmRSS:\t    2000 kB\n"
                          "RssAnon:\t     160 kB\nThreads:\t4\n",
                          u));
    CHECK(u.virtual_bytes == 3896U * 1024);
    CHECK(u.peak_resident_bytes == 2064U * 1024);
    CHECK(u.resident_bytes == 2000U * 1024);
    CHECK(u.resident_anon_bytes == 160U * 1024);

    ProcessUsage other;
    CHECK_FALSE(parse_proc_status("Name:\thepd\nThreads:\t4\n", other));  // no VmRSS: not a status file
    CHECK_FALSE(parse_proc_status("VmRSS:\t2000 MB\n", other));           // a unit the kernel never writes
    CHECK_FALSE(parse_proc_status("", other));
    CHECK(parse_proc_status("VmRSS:\t7 kB", other));  // no final newline
    CHECK(other.resident_bytes == 7U * 1024);
}

TEST_CASE("boot time from /proc/stat", "[core][process]") {
    CHECK(parse_boot_time("cpu  1 2 3\nintr 5\nbtime 1796303155\nprocesses 9\n") == 1796303155U);
    CHECK_FALSE(parse_boot_time("cpu  1 2 3\nbtimex 5\n"));
    CHECK_FALSE(parse_boot_time("btime\n"));
}

TEST_CASE("this process, read from /proc", "[core][process]") {
    const auto before = read_process_usage();
    REQUIRE(before);
    CHECK(before->resident_bytes > 0);
    CHECK(before->resident_anon_bytes <= before->resident_bytes);
    CHECK(before->peak_resident_bytes >= before->resident_bytes);
    CHECK(before->virtual_bytes >= before->resident_bytes);
    CHECK(before->max_fds > 0);
    CHECK(before->open_fds >= 3);  // at least the standard streams ctest gives us
    CHECK(before->open_fds <= before->max_fds);
    const double now = static_cast<double>(std::time(nullptr));
    CHECK(before->start_time_seconds > now - 3600);  // started within the hour...
    CHECK(before->start_time_seconds <= now + 1);    // ...and not in the future

    // One more descriptor is seen; burnt CPU shows.
    const int fd = open("/dev/null", O_RDONLY);
    REQUIRE(fd >= 0);
    volatile double sink = 0;
    for (int i = 0; i < 20'000'000; ++i) sink = sink + i * 0.5;
    const auto after = read_process_usage();
    close(fd);
    REQUIRE(after);
    CHECK(after->open_fds == before->open_fds + 1);
    CHECK(after->cpu_seconds > before->cpu_seconds);
}
