#pragma once
// What the kernel says about this process: CPU time, memory, file descriptors and start time.
// The daemon exports it as the process_* metrics every Prometheus client library serves (the
// same names, so existing dashboards and alerts work); the offline run reports its memory.
// The parsers are pure (text in, figures out); read_process_usage() reads Linux's /proc.
#include <cstdint>
#include <optional>
#include <string_view>

namespace hepd {

struct ProcessUsage {
    double cpu_seconds = 0.0;                  // user + system, all threads
    std::uint64_t resident_bytes = 0;          // VmRSS
    std::uint64_t resident_anon_bytes = 0;     // RssAnon: heap and tables, not mapped files
    std::uint64_t peak_resident_bytes = 0;     // VmHWM
    std::uint64_t virtual_bytes = 0;           // VmSize
    std::uint64_t open_fds = 0;                // entries of /proc/self/fd
    std::uint64_t max_fds = 0;                 // RLIMIT_NOFILE, soft
    std::optional<double> start_time_seconds;  // since the Unix epoch; nothing when unknown
};

// When the process started, in clock ticks after boot: field 22 of /proc/PID/stat. The process
// name (field 2) may hold spaces and parentheses, so fields are counted after the last ')'.
// Nothing for text that is not a stat line.
std::optional<std::uint64_t> parse_start_ticks(std::string_view proc_pid_stat) noexcept;

// "Key:  N kB" lines of /proc/PID/status into `out` (VmRSS, RssAnon, VmHWM, VmSize); false
// when VmRSS is missing (not a status file).
bool parse_proc_status(std::string_view text, ProcessUsage& out) noexcept;

// When the system booted, in seconds since the epoch: the wall clock less the time since boot
// (CLOCK_BOOTTIME, which counts suspend as the start times of /proc/PID/stat do), as the kernel
// computes /proc/stat's btime. Not read from there: systemd's ProcSubset=pid, which the shipped
// unit sets, hides /proc/stat. Nothing if a clock cannot be read.
std::optional<double> boot_time_seconds() noexcept;

// CPU time of every thread of this process, user and system, in seconds (one clock read).
double process_cpu_seconds() noexcept;

// This process, now; nothing where /proc is not readable (a figure is never made up).
std::optional<ProcessUsage> read_process_usage();

}  // namespace hepd
