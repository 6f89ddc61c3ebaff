#pragma once
// Captures from other projects kept in tests/fixtures/third-party (origin, licence and the
// tshark figures the tests expect are in its README.md). They are part of the tree: a missing
// one is a broken checkout and fails the test instead of skipping it.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

namespace hepd::test {

inline std::string third_party_fixture(const std::string& name) {
    const std::string path = std::string(HEPD_THIRD_PARTY_FIXTURES_DIR) + "/" + name;
    if (!std::filesystem::exists(path)) FAIL("third-party fixture missing: " << path);
    return path;
}

}  // namespace hepd::test
