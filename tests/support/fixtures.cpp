#include "support/fixtures.hpp"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace hepd::test {

std::string fixture_path(const std::string& name) { return std::string(HEPD_FIXTURES_DIR) + "/" + name; }

bool fixture_exists(const std::string& name) { return std::filesystem::exists(fixture_path(name)); }

std::vector<std::uint8_t> read_binary_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open " + path);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

} // namespace hepd::test
