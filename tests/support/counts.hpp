#pragma once
// Named counter values, for tests that check bad input moved exactly the counters it should
// and nothing else (the bad-input catalogue, tests/CATALOGUE.md).
#include <cstdint>
#include <map>
#include <string>

namespace hepd::test {

using Counts = std::map<std::string, std::uint64_t>;

// The counters that moved, with how much.
inline Counts moved(const Counts& before, const Counts& after) {
    Counts out;
    for (const auto& [name, value] : after)
        if (value != before.at(name)) out[name] = value - before.at(name);
    return out;
}

}  // namespace hepd::test
