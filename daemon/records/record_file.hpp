#pragma once
// The call-record file: lines appended to one file, rotated by size and by age. Rotation renames
// the file to PATH.YYYYMMDDTHHMMSSZ (the moment of rotation; -2, -3... for more in one second),
// starts a new one and deletes the oldest rotated files beyond `keep`. A failed write (disk
// full) loses the lines it did not write whole, counted, and the part of a line it wrote is cut
// off the file again; the next write tries again. A file found ending in part of a line when it
// is opened (a crash or power loss in a write) has that part cut off too. A file removed or
// replaced under it (rm, logrotate) is noticed by tick() and the path opened again. Used by one
// thread.
#include "core/log.hpp"
#include "core/time.hpp"

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <string_view>

namespace hepd::records {

struct RecordFileOptions {
    std::string path;
    std::uint64_t max_bytes = 100u << 20;
    std::int64_t max_age_us = 3600LL * 1'000'000;  // 0 = by size only
    std::uint32_t keep = 24;
    std::size_t buffer_bytes = 64u << 10;  // lines are written when this much is buffered, or on flush()
    // write(2) unless set: tests stand in a disk that fills up part-way through a write.
    std::function<ssize_t(int fd, const void* data, std::size_t size)> write;
};

struct RecordFileStats {
    std::uint64_t lines = 0;  // written to the file
    std::uint64_t bytes = 0;
    std::uint64_t rotations = 0;
    std::uint64_t write_errors = 0;     // failed open, write, rename, truncation
    std::uint64_t lost_lines = 0;       // lines a failed write did not write whole
    std::uint64_t reopens = 0;          // the file was removed or replaced and opened again at its path
    std::uint64_t truncated_lines = 0;  // partial last lines found when the file was opened, cut off
};

class RecordFile {
public:
    // Creates the parent directory; the file is opened (appended to) on the first line.
    explicit RecordFile(RecordFileOptions options);
    ~RecordFile();
    RecordFile(const RecordFile&) = delete;
    RecordFile& operator=(const RecordFile&) = delete;

    // `line` ends with '\n'. `now` is wall time: it dates rotations and measures the file's age.
    void append(std::string_view line, Timestamp now);
    void flush();
    // Called by the writer about once a second: rotates a file past max_age even when no line
    // comes to do it (an empty file is not rotated), and opens the path again when the file was
    // removed or replaced (checked at most once a second).
    void tick(Timestamp now);

    const RecordFileStats& stats() const noexcept { return stats_; }
    const std::string& path() const noexcept { return options_.path; }

private:
    void make_directory();
    bool open(Timestamp now);
    void reopen_if_moved(Timestamp now);
    bool too_old(Timestamp now) const noexcept;
    void rotate(Timestamp now);
    void prune();
    void close();
    bool cut_off();
    void cut_partial_line();
    void lost(std::uint64_t lines);

    RecordFileOptions options_;
    RecordFileStats stats_;
    int fd_ = -1;
    std::uint64_t size_ = 0;  // of the open file, buffered lines included
    Timestamp opened_;
    Timestamp checked_;  // the last look for a removed or replaced file
    // A path that cannot be opened (read-only, a sandbox without it) is tried again once a
    // second, not at every line, and logged once an interval.
    Timestamp open_retry_at_{std::numeric_limits<std::int64_t>::min()};
    LogThrottle open_log_;
    std::string buffer_;
    std::uint64_t buffered_lines_ = 0;
    std::string last_stamp_;  // of the last rotation, and its number (1: no -N)
    std::uint64_t last_n_ = 0;
    bool cut_ = false;             // a failed write left part of a line after good_size_
    std::uint64_t good_size_ = 0;  // the file's size up to its last whole line, after a failed write
};

}  // namespace hepd::records
