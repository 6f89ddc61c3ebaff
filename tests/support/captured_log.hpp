#pragma once
// Log lines written while a CapturedLog lives: spdlog's default logger is swapped for one that
// writes bare messages ("%v") to a string, at `level` and above, and put back at the end.
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace hepd::test {

class CapturedLog {
public:
    explicit CapturedLog(spdlog::level::level_enum level = spdlog::level::trace) : previous_(spdlog::default_logger()) {
        auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out_);
        sink->set_pattern("%v");
        auto logger = std::make_shared<spdlog::logger>("captured", sink);
        logger->set_level(level);
        spdlog::set_default_logger(logger);
    }
    ~CapturedLog() { spdlog::set_default_logger(previous_); }
    CapturedLog(const CapturedLog&) = delete;
    CapturedLog& operator=(const CapturedLog&) = delete;

    std::vector<std::string> lines() const {
        std::vector<std::string> v;
        std::istringstream in(out_.str());
        for (std::string l; std::getline(in, l);) v.push_back(l);
        return v;
    }

private:
    std::ostringstream out_;
    std::shared_ptr<spdlog::logger> previous_;
};

}  // namespace hepd::test
