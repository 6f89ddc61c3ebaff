#pragma once
// Shared test helpers: where the third-party fixtures live and how to read files.
#include <cstdint>
#include <string>
#include <vector>

namespace hepd::test {

// Full path of a capture in tests/fixtures/ (made with real third-party software; how each was
// recorded is in tests/fixtures/README.md). The captures are part of the repository, so a missing
// one is a broken checkout, never a reason to skip: this fails the calling test case with a
// message naming the file. Call it inside a test case only.
std::string fixture_path(const std::string& name);
std::vector<std::uint8_t> read_binary_file(const std::string& path);

}  // namespace hepd::test
