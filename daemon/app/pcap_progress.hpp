#pragma once
// The status line `hepd pcap` keeps on a terminal while it reads: how far, how fast, how long
// still. Silent when stderr is not a terminal (a pipe, a log file, a CI run), so scripts and
// reports never see it.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace hepd::app {

struct ProgressFigures {
    std::size_t file = 0;  // 1-based
    std::size_t files = 0;
    std::uint64_t offset = 0;      // into the current (inflated) file
    std::uint64_t size = 0;        // of the current (inflated) file
    std::uint64_t bytes_done = 0;  // of every file so far, the current one's offset included
    std::uint64_t bytes_left = 0;  // of the current file and the ones after it (on disk)
    std::uint64_t packets = 0;     // handed to the shards so far
    double seconds = 0;            // since the start
};

// "file 1/2, 45 % of 521.0 MB, 1.23 M packets, 3.10 M packets/s, 0:04 left"
std::string progress_line(const ProgressFigures& f);

class PcapProgress {
public:
    // Enabled only when `out` is a terminal.
    PcapProgress(std::FILE* out, const std::vector<std::string>& files);

    void start_file(std::size_t index);  // 0-based
    // Redraws the line, at most a few times a second.
    void update(std::uint64_t offset, std::uint64_t size, std::uint64_t packets);
    // Clears the line before the report is printed.
    void finish();

private:
    using Clock = std::chrono::steady_clock;

    std::FILE* out_;
    bool enabled_;
    std::vector<std::uint64_t> disk_sizes_;
    std::size_t file_ = 0;
    std::uint64_t bytes_before_ = 0;  // of the files finished
    std::uint64_t last_size_ = 0;     // of the current file, once known
    Clock::time_point start_ = Clock::now();
    Clock::time_point drawn_{};
    bool drawn_once_ = false;
};

}  // namespace hepd::app
