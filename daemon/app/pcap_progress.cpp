#include "app/pcap_progress.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>

namespace hepd::app {

namespace {

constexpr auto kRedrawEvery = std::chrono::milliseconds(250);

std::string megabytes(std::uint64_t bytes) { return fmt::format("{:.1f} MB", static_cast<double>(bytes) / 1e6); }

std::string count(double n) {
    if (n >= 1e6) return fmt::format("{:.2f} M", n / 1e6);
    if (n >= 1e3) return fmt::format("{:.1f} k", n / 1e3);
    return fmt::format("{:.0f}", n);
}

}  // namespace

std::string progress_line(const ProgressFigures& f) {
    const unsigned percent =
        f.size == 0 ? 100U : static_cast<unsigned>(100.0 * static_cast<double>(f.offset) / static_cast<double>(f.size));
    std::string line = fmt::format("file {}/{}, {} % of {}, {} packets", f.file, f.files, percent, megabytes(f.size),
                                   count(static_cast<double>(f.packets)));
    if (f.seconds <= 0 || f.bytes_done == 0) return line;
    line += fmt::format(", {} packets/s", count(static_cast<double>(f.packets) / f.seconds));
    // Time left at the byte rate so far; a gzip file still to come counts at its size on disk.
    const double left = static_cast<double>(f.bytes_left) * f.seconds / static_cast<double>(f.bytes_done);
    const auto s = static_cast<std::uint64_t>(std::llround(left));
    line += fmt::format(", {}:{:02} left", s / 60, s % 60);
    return line;
}

PcapProgress::PcapProgress(std::FILE* out, const std::vector<std::string>& files)
    : out_(out), enabled_(isatty(fileno(out)) == 1) {
    for (const auto& path : files) {
        std::error_code ec;
        const auto size = std::filesystem::file_size(path, ec);
        disk_sizes_.push_back(ec ? 0 : size);
    }
}

void PcapProgress::start_file(std::size_t index) {
    if (index > file_) bytes_before_ += last_size_;
    file_ = index;
    last_size_ = 0;
}

void PcapProgress::update(std::uint64_t offset, std::uint64_t size, std::uint64_t packets) {
    last_size_ = size;
    if (!enabled_) return;
    const auto now = Clock::now();
    if (drawn_once_ && now - drawn_ < kRedrawEvery) return;
    drawn_ = now;
    drawn_once_ = true;
    ProgressFigures f;
    f.file = file_ + 1;
    f.files = disk_sizes_.size();
    f.offset = offset;
    f.size = size;
    f.bytes_done = bytes_before_ + offset;
    f.bytes_left = size - std::min(offset, size);
    for (std::size_t i = file_ + 1; i < disk_sizes_.size(); ++i) f.bytes_left += disk_sizes_[i];
    f.packets = packets;
    f.seconds = std::chrono::duration<double>(now - start_).count();
    // \r and erase-to-end: the line is redrawn in place.
    std::fprintf(out_, "\r\033[Khepd pcap: %s", progress_line(f).c_str());
    std::fflush(out_);
}

void PcapProgress::finish() {
    if (!enabled_ || !drawn_once_) return;
    std::fputs("\r\033[K", out_);
    std::fflush(out_);
}

}  // namespace hepd::app
