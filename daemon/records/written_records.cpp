#include "records/written_records.hpp"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string_view>

namespace hepd::records {

namespace {

// Index of the quote that closes the JSON string whose text starts at `at`; npos when none.
std::size_t string_end(std::string_view line, std::size_t at) noexcept {
    while (at < line.size()) {
        if (line[at] == '\\') {
            at += 2;
        } else if (line[at] == '"') {
            return at;
        } else {
            ++at;
        }
    }
    return std::string_view::npos;
}

// Length of record_key()'s part of `line` ({"v":N,"call_id":"...","from_tag":"...",); 0 when the
// line does not begin so.
std::size_t key_length(std::string_view line) noexcept {
    constexpr std::string_view kCallId = ",\"call_id\":\"";
    constexpr std::string_view kFromTag = ",\"from_tag\":\"";
    if (!line.starts_with("{\"v\":")) return 0;
    std::size_t at = line.find(kCallId);
    if (at > 16) return 0;  // not found (npos), or not right after "v"
    at = string_end(line, at + kCallId.size());
    if (at == std::string_view::npos || line.substr(at + 1, kFromTag.size()) != kFromTag) return 0;
    at = string_end(line, at + 1 + kFromTag.size());
    if (at == std::string_view::npos || at + 1 >= line.size() || line[at + 1] != ',') return 0;
    return at + 2;
}

std::int64_t modified_us(const std::filesystem::path& file) noexcept {
    struct stat st {};
    if (::stat(file.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return -1;
    return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000 + st.st_mtim.tv_nsec / 1000;
}

void scan(const std::filesystem::path& file, const std::unordered_set<std::string>& wanted,
          std::unordered_set<std::string>& found) {
    std::ifstream in(file, std::ios::binary);
    std::string line;
    // A line cut off at the end of the file (the writer died in a write) does not count.
    while (std::getline(in, line) && !in.eof()) {
        const std::size_t n = key_length(line);
        if (n == 0) continue;
        line.resize(n);
        if (wanted.count(line) != 0) found.insert(line);
    }
}

}  // namespace

std::unordered_set<std::string> find_written(const std::string& path, Timestamp since,
                                             const std::unordered_set<std::string>& wanted) {
    std::unordered_set<std::string> found;
    if (wanted.empty()) return found;
    const std::filesystem::path current(path);
    const std::string base = current.filename().string();
    const std::string rotated = base + ".";
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(current.parent_path(), ec)) {
        const std::string name = entry.path().filename().string();
        if (name != base && !name.starts_with(rotated)) continue;
        if (modified_us(entry.path()) < since.us - kWrittenSlackUs) continue;
        scan(entry.path(), wanted, found);
    }
    return found;
}

}  // namespace hepd::records
