#pragma once
// Checks every exposition must pass, whatever the traffic.
#include "scrape.hpp"

#include <cstddef>

namespace hepd::test {

// Every histogram series: _count and _sum present, buckets in ascending le ending at +Inf,
// cumulative counts never decreasing, +Inf bucket == _count. Returns the series checked.
std::size_t check_histograms(const Exposition& x);

// Labels come from closed sets: known label names only, and no value that looks like an IP
// address, a port, an SSRC, a Call-ID or a user. Returns the label values checked.
std::size_t check_label_hygiene(const Exposition& x, std::size_t shards);

}  // namespace hepd::test
