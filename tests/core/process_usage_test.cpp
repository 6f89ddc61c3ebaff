// The process_* figures: the /proc parsers on real lines (a process name with spaces and
// parentheses, missing fields, other units) and read_process_usage() on this test process.
#include "core/process_usage.hpp"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <fstream>
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

TEST_CASE("boot time from the clocks agrees with /proc/stat's btime", "[core][process]") {
    const auto boot = boot_time_seconds();
    REQUIRE(boot);
    std::ifstream stat("/proc/stat");
    std::string key;
    double btime = 0;
    while (stat >> key)
        if (key == "btime" && stat >> btime) break;
    REQUIRE(btime > 0);
    // btime is whole seconds, truncated.
    CHECK(*boot >= btime - 1);
    CHECK(*boot < btime + 2);
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
    REQUIRE(before->start_time_seconds);
    CHECK(*before->start_time_seconds > now - 3600);  // started within the hour...
    CHECK(*before->start_time_seconds <= now + 1);    // ...and not in the future

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

namespace {

// Writes `text` to a /proc file of the new user namespace (uid_map, setgroups); false on failure.
bool write_file(const std::string& path, const std::string& text) {
    std::ofstream out(path);
    out << text;
    out.flush();
    return static_cast<bool>(out);
}

// What read_process_usage() sees in a process whose /proc shows only processes, as systemd's
// ProcSubset=pid (the shipped unit) mounts it: no /proc/stat. A child enters its own user, mount
// and PID namespaces, its child mounts such a /proc and reports its start time through a pipe.
// -1 when the namespaces cannot be had here (a container that forbids them), -2 when the figure is
// missing.
double start_time_under_proc_subset_pid() {
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    const uid_t uid = getuid();
    const gid_t gid = getgid();
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        close(fds[0]);
        auto report = [&](double value) {
            (void)!write(fds[1], &value, sizeof value);
            _exit(0);
        };
        if (unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID) != 0) report(-1);
        if (!write_file("/proc/self/setgroups", "deny") ||
            !write_file("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1") ||
            !write_file("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1"))
            report(-1);
        const pid_t inner = fork();  // the first process of the new PID namespace
        if (inner < 0) report(-1);
        if (inner == 0) {
            if (mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
                mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "subset=pid") != 0)
                report(-1);
            if (std::ifstream("/proc/stat")) report(-1);  // subset=pid unknown to this kernel
            const auto usage = read_process_usage();
            report(usage && usage->start_time_seconds ? *usage->start_time_seconds : -2);
        }
        int status = 0;
        waitpid(inner, &status, 0);
        _exit(0);
    }
    close(fds[1]);
    double value = -1;
    const bool got = read(fds[0], &value, sizeof value) == static_cast<ssize_t>(sizeof value);
    close(fds[0]);
    int status = 0;
    waitpid(child, &status, 0);
    return got ? value : -1;
}

}  // namespace

TEST_CASE("start time without /proc/stat (systemd's ProcSubset=pid)", "[core][process]") {
    const double before = static_cast<double>(std::time(nullptr));
    const double start = start_time_under_proc_subset_pid();
    const double after = static_cast<double>(std::time(nullptr));
    if (start == -1) {
        WARN("no user, mount and PID namespaces here: a /proc without /proc/stat cannot be made");
        return;
    }
    CHECK(start != -2);  // known, not left out
    // The process started between the two readings (the clock's whole seconds, and the clock
    // tick of the kernel's start time, make the bounds a little wider).
    CHECK(start >= before - 1);
    CHECK(start <= after + 1);
}
