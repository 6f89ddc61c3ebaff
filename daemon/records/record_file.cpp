#include "records/record_file.hpp"

#include "core/log.hpp"

#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <filesystem>
#include <string_view>
#include <utility>
#include <vector>

namespace hepd::records {

namespace fs = std::filesystem;

RecordFile::RecordFile(RecordFileOptions options) : options_(std::move(options)) { make_directory(); }

void RecordFile::make_directory() {
    std::error_code ec;
    const fs::path parent = fs::path(options_.path).parent_path();
    if (!parent.empty()) fs::create_directories(parent, ec);
    if (ec) spdlog::error("call records: cannot create {}: {}", parent.string(), ec.message());
}

RecordFile::~RecordFile() {
    flush();
    close();
}

bool RecordFile::open(Timestamp now) {
    if (fd_ >= 0) return true;
    if (now < open_retry_at_) return false;
    // Read too: the end of an existing file is looked at for a partial line.
    fd_ = ::open(options_.path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
    if (fd_ < 0 && errno == ENOENT) {
        make_directory();  // removed with the file
        fd_ = ::open(options_.path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
    }
    if (fd_ < 0) {
        const int err = errno;
        ++stats_.write_errors;
        open_retry_at_ = Timestamp{now.us + 1'000'000};
        log_throttled(open_log_, now, spdlog::level::err, [&](auto level, std::uint64_t more) {
            spdlog::log(level, "call records: cannot open {}: {} (tried again once a second; {} more failures)",
                        options_.path, error_text(err), more);
        });
        return false;
    }
    struct stat st {};
    size_ = ::fstat(fd_, &st) == 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
    cut_partial_line();
    size_ += buffer_.size();
    opened_ = now;  // an existing file's age counts from this start: its lines may be from before
    return true;
}

// A process (or machine) that died in a write left part of a line at the end of the file: the
// next line appended would be glued to it, and a shipper would reject or garble both. That part
// is not a record (restore does not count it as written), so it is cut off as a failed write's
// is; a shipper has read no further than the last '\n'. size_ is the file's size on entry.
void RecordFile::cut_partial_line() {
    std::array<char, 4096> block{};
    std::uint64_t end = size_;  // the bytes before `end` are looked at, the last block first
    while (end > 0) {
        const std::uint64_t from = end > block.size() ? end - block.size() : 0;
        const ssize_t n = ::pread(fd_, block.data(), end - from, static_cast<off_t>(from));
        if (n != static_cast<ssize_t>(end - from)) {
            if (n < 0 && errno == EINTR) continue;
            ++stats_.write_errors;  // unreadable: left as it is
            spdlog::error("call records: cannot read the end of {}: {}", options_.path,
                          error_text(n < 0 ? errno : EIO));
            return;
        }
        const std::string_view text(block.data(), static_cast<std::size_t>(n));
        if (end == size_ && text.back() == '\n') return;  // ends in a whole line: the usual case
        const std::size_t newline = text.rfind('\n');
        if (newline != std::string_view::npos) {
            end = from + newline + 1;
            break;
        }
        end = from;
    }
    if (end == size_) return;  // empty
    ++stats_.truncated_lines;
    spdlog::warn("call records: {} ended in part of a line ({} bytes, a write cut by a crash or power loss); cut off",
                 options_.path, size_ - end);
    good_size_ = end;
    cut_ = true;
    if (cut_off()) size_ = end;  // else the next flush tries again, or ends the line
}

void RecordFile::close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    cut_ = false;  // a cut line left in a closed file stays there: the next file starts clean
}

bool RecordFile::too_old(Timestamp now) const noexcept {
    return options_.max_age_us > 0 && now.us - opened_.us >= options_.max_age_us;
}

void RecordFile::append(std::string_view line, Timestamp now) {
    if (fd_ >= 0 && size_ > 0 && (size_ + line.size() > options_.max_bytes || too_old(now))) rotate(now);
    if (fd_ < 0 && !open(now)) {
        ++stats_.lost_lines;
        return;
    }
    if (size_ == 0) opened_ = now;  // an empty file (one opened again) ages from its first line
    buffer_.append(line);
    ++buffered_lines_;
    size_ += line.size();
    if (buffer_.size() >= options_.buffer_bytes) flush();
}

void RecordFile::tick(Timestamp now) {
    if (fd_ < 0) return;
    if (size_ > 0 && too_old(now)) {
        rotate(now);
        return;
    }
    // Once a second (or when the wall clock stepped back).
    if (now.us >= checked_.us && now.us - checked_.us < 1'000'000) return;
    checked_ = now;
    reopen_if_moved(now);
}

// rm, a shipper removing what it shipped or logrotate without copytruncate leave this process
// writing to a file no one reads: the path is opened again, and the buffered lines go there.
void RecordFile::reopen_if_moved(Timestamp now) {
    struct stat open_file {};
    struct stat at_path {};
    if (::fstat(fd_, &open_file) != 0) return;
    const bool gone = ::stat(options_.path.c_str(), &at_path) != 0;
    if (gone && errno != ENOENT && errno != ENOTDIR) return;  // can't tell (EACCES...): keep writing
    if (!gone && at_path.st_dev == open_file.st_dev && at_path.st_ino == open_file.st_ino) return;
    ++stats_.reopens;
    spdlog::warn("call records: {} was {}; writing to a new file there", options_.path, gone ? "removed" : "replaced");
    close();
    open(now);  // on failure, counted; the next line tries again
}

void RecordFile::flush() {
    if (buffer_.empty()) return;
    if (fd_ < 0) {
        // The file could not be (re)opened: counted as a write error already.
        lost(buffered_lines_);
        return;
    }
    // The writes append at the end of the file; a failure cuts the file back to a line's end.
    struct stat st {};
    const std::uint64_t start =
        ::fstat(fd_, &st) == 0 ? static_cast<std::uint64_t>(st.st_size) : size_ - buffer_.size();
    std::size_t first = 0;  // where the buffered lines start
    if (cut_ && !cut_off()) {
        // The cut line stays: end it, so that the lines after it still parse on their own.
        buffer_.insert(0, 1, '\n');
        first = 1;
    }
    std::size_t done = 0;
    while (done < buffer_.size()) {
        const ssize_t n = options_.write ? options_.write(fd_, buffer_.data() + done, buffer_.size() - done)
                                         : ::write(fd_, buffer_.data() + done, buffer_.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            const int err = n == 0 ? ENOSPC : errno;
            ++stats_.write_errors;
            // Lines written whole before the failure stay; a line cut short goes, and is lost.
            const std::size_t last = buffer_.rfind('\n', done == 0 ? 0 : done - 1);
            const std::size_t whole = done == 0 || last == std::string::npos ? 0 : last + 1;
            const auto kept = static_cast<std::uint64_t>(
                whole > first ? std::count(buffer_.begin() + static_cast<std::ptrdiff_t>(first),
                                           buffer_.begin() + static_cast<std::ptrdiff_t>(whole), '\n')
                              : 0);
            const std::uint64_t lines_lost = buffered_lines_ - kept;
            spdlog::error("call records: write to {} failed: {} ({} lines lost)", options_.path, error_text(err),
                          lines_lost);
            stats_.lines += buffered_lines_ - lines_lost;
            stats_.bytes += whole > first ? whole - first : 0;
            if (done > 0) {  // else the file is as it was, a cut line included
                good_size_ = start + whole;
                cut_ = whole < done;
                if (cut_) cut_off();
            }
            size_ = start + whole;
            lost(lines_lost);
            return;
        }
        done += static_cast<std::size_t>(n);
    }
    stats_.lines += buffered_lines_;
    stats_.bytes += done - first;
    size_ = start + done;
    cut_ = false;
    buffer_.clear();
    buffered_lines_ = 0;
}

// Truncates the file to its last whole line, after a write that stopped inside a line.
bool RecordFile::cut_off() {
    if (::ftruncate(fd_, static_cast<off_t>(good_size_)) == 0) {
        cut_ = false;
        return true;
    }
    ++stats_.write_errors;
    spdlog::error("call records: cannot cut the partial line off {}: {}", options_.path, error_text(errno));
    return false;
}

void RecordFile::lost(std::uint64_t lines) {
    stats_.lost_lines += lines;
    buffer_.clear();
    buffered_lines_ = 0;
}

void RecordFile::rotate(Timestamp now) {
    flush();
    close();
    // 2024-01-02T03:04:05.000006Z -> 20240102T030405Z
    std::string stamp = format_iso8601(now).substr(0, 19) + "Z";
    std::erase_if(stamp, [](char c) { return c == '-' || c == ':'; });
    const std::string base = options_.path + "." + stamp;
    // Within one second each rotation takes the next number, even where prune() has freed an
    // earlier one: a reused name would sort the newest file among the oldest.
    std::uint64_t n = stamp == last_stamp_ ? last_n_ + 1 : 1;
    auto aside = [&base](std::uint64_t k) { return k == 1 ? base : base + "-" + std::to_string(k); };
    std::error_code ec;
    while (fs::exists(aside(n), ec)) ++n;
    fs::rename(options_.path, aside(n), ec);
    if (ec) {
        // The file goes on growing rather than losing lines; tried again at the next line.
        ++stats_.write_errors;
        spdlog::error("call records: cannot rotate {}: {}", options_.path, ec.message());
        return;
    }
    ++stats_.rotations;
    last_stamp_ = std::move(stamp);
    last_n_ = n;
    prune();
}

// Rotated files sort by their stamp, then by the number after it: none (the first of its second),
// then -2, -3... -10, compared as numbers ("-10" after "-9").
namespace {

struct RotatedName {
    std::string_view stamp;
    std::uint64_t n = 1;
};

// `rest` is the name after "PATH."; anything but STAMP-DIGITS (at most 9) sorts as a stamp.
RotatedName rotated_name(std::string_view rest) {
    const std::size_t dash = rest.rfind('-');
    if (dash == std::string_view::npos || dash + 1 == rest.size() || dash + 1 + 9 < rest.size()) return {rest};
    std::uint64_t n = 0;
    for (const char c : rest.substr(dash + 1)) {
        if (c < '0' || c > '9') return {rest};
        n = n * 10 + static_cast<std::uint64_t>(c - '0');
    }
    return {rest.substr(0, dash), n};
}

}  // namespace

void RecordFile::prune() {
    const fs::path current(options_.path);
    const std::string prefix = current.filename().string() + ".";
    fs::path dir = current.parent_path();
    if (dir.empty()) dir = ".";
    std::vector<std::string> rotated;  // file names
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        std::string name = entry.path().filename().string();
        if (name.size() > prefix.size() && name.starts_with(prefix)) rotated.push_back(std::move(name));
    }
    if (ec || rotated.size() <= options_.keep) return;
    std::sort(rotated.begin(), rotated.end(), [&prefix](const std::string& a, const std::string& b) {
        const RotatedName x = rotated_name(std::string_view(a).substr(prefix.size()));
        const RotatedName y = rotated_name(std::string_view(b).substr(prefix.size()));
        if (x.stamp != y.stamp) return x.stamp < y.stamp;
        if (x.n != y.n) return x.n < y.n;
        return a < b;
    });
    for (std::size_t i = 0; i + options_.keep < rotated.size(); ++i) {
        const fs::path victim = dir / rotated[i];
        if (!fs::remove(victim, ec) && ec) {
            ++stats_.write_errors;
            spdlog::warn("call records: cannot remove {}: {}", victim.string(), ec.message());
        }
    }
}

}  // namespace hepd::records
