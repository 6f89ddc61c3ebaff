#include "core/process_usage.hpp"

#include "core/decimal.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace hepd {
namespace {

std::optional<std::uint64_t> number(std::string_view text) noexcept { return parse_decimal<std::uint64_t>(text); }

// Next space-separated word of `rest`, consumed.
std::string_view word(std::string_view& rest) noexcept {
    const std::size_t begin = rest.find_first_not_of(" \t\n");
    if (begin == std::string_view::npos) {
        rest = {};
        return {};
    }
    const std::size_t end = std::min(rest.find_first_of(" \t\n", begin), rest.size());
    const std::string_view w = rest.substr(begin, end - begin);
    rest.remove_prefix(end);
    return w;
}

std::optional<std::string> slurp(const char* path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return std::nullopt;
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

std::optional<std::uint64_t> parse_start_ticks(std::string_view proc_pid_stat) noexcept {
    const std::size_t close = proc_pid_stat.rfind(')');
    if (close == std::string_view::npos || proc_pid_stat.find('(') > close) return std::nullopt;
    std::string_view rest = proc_pid_stat.substr(close + 1);
    for (int field = 3; field < 22; ++field)  // field 3 (state) is the first after the name
        if (word(rest).empty()) return std::nullopt;
    return number(word(rest));
}

bool parse_proc_status(std::string_view text, ProcessUsage& out) noexcept {
    bool rss = false;
    while (!text.empty()) {
        const std::size_t eol = std::min(text.find('\n'), text.size());
        std::string_view line = text.substr(0, eol);
        text.remove_prefix(std::min(eol + 1, text.size()));
        const std::size_t colon = line.find(':');
        if (colon == std::string_view::npos) continue;
        const std::string_view key = line.substr(0, colon);
        std::uint64_t* target = key == "VmRSS"     ? &out.resident_bytes
                                : key == "RssAnon" ? &out.resident_anon_bytes
                                : key == "VmHWM"   ? &out.peak_resident_bytes
                                : key == "VmSize"  ? &out.virtual_bytes
                                                   : nullptr;
        if (target == nullptr) continue;
        std::string_view rest = line.substr(colon + 1);
        const auto kib = number(word(rest));
        if (!kib || word(rest) != "kB") continue;
        *target = *kib * 1024;
        rss = rss || target == &out.resident_bytes;
    }
    return rss;
}

std::optional<double> boot_time_seconds() noexcept {
    timespec real{};
    timespec boot{};
    if (clock_gettime(CLOCK_REALTIME, &real) != 0 || clock_gettime(CLOCK_BOOTTIME, &boot) != 0) return std::nullopt;
    return static_cast<double>(real.tv_sec - boot.tv_sec) + static_cast<double>(real.tv_nsec - boot.tv_nsec) * 1e-9;
}

double process_cpu_seconds() noexcept {
    timespec cpu{};
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu) != 0) return 0.0;
    return static_cast<double>(cpu.tv_sec) + static_cast<double>(cpu.tv_nsec) * 1e-9;
}

std::optional<ProcessUsage> read_process_usage() {
    ProcessUsage usage;
    const auto status = slurp("/proc/self/status");
    if (!status || !parse_proc_status(*status, usage)) return std::nullopt;

    usage.cpu_seconds = process_cpu_seconds();

    const auto stat = slurp("/proc/self/stat");
    const auto start = stat ? parse_start_ticks(*stat) : std::nullopt;
    const auto boot_time = boot_time_seconds();
    const long ticks = sysconf(_SC_CLK_TCK);
    if (start && boot_time && ticks > 0)
        usage.start_time_seconds = *boot_time + static_cast<double>(*start) / static_cast<double>(ticks);

    std::error_code ec;
    for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end; it.increment(ec))
        ++usage.open_fds;
    if (usage.open_fds > 0) --usage.open_fds;  // the iterator's own descriptor
    rlimit limit{};
    if (getrlimit(RLIMIT_NOFILE, &limit) == 0) usage.max_fds = limit.rlim_cur;
    return usage;
}

}  // namespace hepd
