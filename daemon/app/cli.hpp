#pragma once
// Command-line parsing: verbs, and flags that override configuration keys. Start-up code, so
// errors are exceptions carrying the message shown to the operator.
#include "config/config.hpp"

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace hepd::app {

enum class Verb { daemon, check_config, pcap, snapshot_show, help, version };

using Override = config::Override;

struct CommandLine {
    Verb verb = Verb::daemon;
    std::string config_path;          // --config, or check-config's FILE
    std::string snapshot_path;        // snapshot show FILE
    bool print_config = false;        // check-config --print
    std::vector<Override> overrides;  // in command-line order
    // pcap verb
    std::vector<std::string> pcap_files;
    bool pcap_report = false;
    std::string pcap_json;
    std::string pcap_records;  // --records PATH: call records as JSON lines
};

struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

CommandLine parse_command_line(int argc, char** argv);
// The configuration in force: the file (the embedded defaults when `path` is empty) with the
// flags applied on top, at start-up and again on SIGHUP. Throws config::ConfigError.
config::Config load_config(const std::string& path, const std::vector<Override>& overrides);
std::string usage_text();

}  // namespace hepd::app
