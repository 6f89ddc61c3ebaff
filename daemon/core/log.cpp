#include "core/log.hpp"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <array>
#include <cstdlib>
#include <memory>
#include <string>
#include <system_error>

namespace hepd {

namespace {
constexpr std::array<std::string_view, 7> kLevels{"trace", "debug", "info", "warn", "error", "critical", "off"};

// journald takes a stream line's priority only from a "<N>" prefix (sd-daemon(3)); without it
// every line is stored at info and `journalctl -p warning` finds nothing.
class JournalPriority final : public spdlog::custom_flag_formatter {
public:
    void format(const spdlog::details::log_msg& msg, const std::tm& /*time*/, spdlog::memory_buf_t& dest) override {
        std::string_view prefix = "<6>";
        switch (msg.level) {
        case spdlog::level::trace:
        case spdlog::level::debug: prefix = "<7>"; break;
        case spdlog::level::info: prefix = "<6>"; break;
        case spdlog::level::warn: prefix = "<4>"; break;
        case spdlog::level::err: prefix = "<3>"; break;
        case spdlog::level::critical: prefix = "<2>"; break;
        default: break;
        }
        dest.append(prefix.data(), prefix.data() + prefix.size());
    }
    [[nodiscard]] std::unique_ptr<custom_flag_formatter> clone() const override {
        return std::make_unique<JournalPriority>();
    }
};
}  // namespace

bool is_valid_log_level(std::string_view level) noexcept {
    for (auto l : kLevels)
        if (l == level) return true;
    return false;
}

void set_log_level(std::string_view level) { spdlog::set_level(spdlog::level::from_str(std::string(level))); }

void setup_logging(std::string_view level) {
    auto logger = spdlog::stderr_color_mt("hepd");
    // Under systemd the journal stamps time and unit itself; keep lines short there, and lead
    // each with its priority for the journal.
    // NOLINTNEXTLINE(concurrency-mt-unsafe): called once at start-up, before any thread exists
    if (std::getenv("JOURNAL_STREAM") != nullptr) {
        auto formatter = std::make_unique<spdlog::pattern_formatter>();
        formatter->add_flag<JournalPriority>('*').set_pattern("%*[%l] %v");
        logger->set_formatter(std::move(formatter));
    } else {
        logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%-5l%$ %v");
    }
    spdlog::set_default_logger(logger);
    set_log_level(level);
}

std::string error_text(int errnum) { return std::system_category().message(errnum); }

}  // namespace hepd
