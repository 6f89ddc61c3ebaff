#pragma once
#include "config/config.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hepd::app {

struct PcapArgs {
    std::vector<std::string> files;
    std::optional<std::uint32_t> cores;
    bool report = false;       // the full text report (else a one-line summary)
    std::string json_path;     // write the report as JSON ("-" = stdout)
    std::string records_path;  // write call records as JSON lines ("-" = stdout)
};

// Reads the captures through the shards and reports. Exit status 0, or 65 (EX_DATAERR) when a
// file could not be read to its end (the report then covers what was read).
int run_pcap(const PcapArgs& args, const config::Config& cfg);

}  // namespace hepd::app
