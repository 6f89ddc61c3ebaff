#include "core/log.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <array>
#include <cstdlib>
#include <string>
#include <system_error>

namespace hepd {

namespace {
constexpr std::array<std::string_view, 7> kLevels{"trace", "debug", "info", "warn", "error", "critical", "off"};
}

bool is_valid_log_level(std::string_view level) noexcept {
    for (auto l : kLevels)
        if (l == level) return true;
    return false;
}

void set_log_level(std::string_view level) { spdlog::set_level(spdlog::level::from_str(std::string(level))); }

void setup_logging(std::string_view level) {
    auto logger = spdlog::stderr_color_mt("hepd");
    // Under systemd the journal stamps time and unit itself; keep lines short there.
    // NOLINTNEXTLINE(concurrency-mt-unsafe): called once at start-up, before any thread exists
    if (std::getenv("JOURNAL_STREAM") != nullptr) {
        logger->set_pattern("[%l] %v");
    } else {
        logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%-5l%$ %v");
    }
    spdlog::set_default_logger(logger);
    set_log_level(level);
}

std::string error_text(int errnum) { return std::system_category().message(errnum); }

}  // namespace hepd
