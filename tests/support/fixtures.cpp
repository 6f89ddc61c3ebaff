#include "support/fixtures.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace hepd::test {

std::string fixture_path(const std::string& name) {
    std::string path = std::string(HEPD_FIXTURES_DIR) + "/" + name;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) {
        FAIL("fixture " << name << " is missing: expected at " << path
                        << " (tests/fixtures/ in the repository; see tests/fixtures/README.md)");
    }
    return path;
}

std::vector<std::uint8_t> read_binary_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open " + path);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace hepd::test
