#include "core/time.hpp"

#include <cstdio>
#include <ctime>

namespace hepd {

std::string format_iso8601(Timestamp t) {
    std::int64_t secs = t.us / 1'000'000;
    std::int64_t micros = t.us % 1'000'000;
    if (micros < 0) {
        micros += 1'000'000;
        secs -= 1;
    }
    const std::time_t tt = static_cast<std::time_t>(secs);
    std::tm tm{};
    gmtime_r(&tt, &tm);
    char buf[48];
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", tm.tm_year + 1900, tm.tm_mon + 1,
                  tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long long>(micros));
    return buf;
}

double thread_cpu_seconds() noexcept {
    timespec ts{};
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

}  // namespace hepd
