#pragma once
// Shared test helpers: where the third-party fixtures live and how to read files.
#include <cstdint>
#include <string>
#include <vector>

namespace hepd::test {

// Full path of a file in ../shared/fixtures (captures made with real third-party software).
std::string fixture_path(const std::string& name);
bool fixture_exists(const std::string& name);
std::vector<std::uint8_t> read_binary_file(const std::string& path);

} // namespace hepd::test
