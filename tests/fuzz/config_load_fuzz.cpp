// load_string on arbitrary bytes. A ConfigError is the expected way to reject input; any other
// exception escaping (yaml-cpp's own included), a crash or a sanitizer report is a bug. Accepted
// input must also survive the printer: to_yaml() of the result loads back to the same value.
#include "config/config.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    // Inputs this large only slow the fuzzer down; a configuration file is a few KiB.
    if (size > 64 * 1024) return 0;
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    hepd::config::Config config;
    try {
        config = hepd::config::load_string(text, "fuzz.yaml");
    } catch (const hepd::config::ConfigError&) {
        return 0;
    }
    const std::string printed = hepd::config::to_yaml(config);
    try {
        if (hepd::config::load_string(printed, "printed.yaml") == config) return 0;
        std::fprintf(stderr, "to_yaml round trip changed the configuration:\n%s\n", printed.c_str());
    } catch (const hepd::config::ConfigError& e) {
        std::fprintf(stderr, "to_yaml output does not load: %s\n%s\n", e.what(), printed.c_str());
    }
    std::abort();
}
