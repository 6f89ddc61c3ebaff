#pragma once
// From the core single-writer statistics to prometheus-cpp's ClientMetric values. Reads only:
// these run on a scrape thread while shards and receive threads keep writing.
#include "core/stats.hpp"

#include <prometheus/client_metric.h>

#include <cstddef>
#include <cstdint>

namespace hepd::metrics {

template <class T>
double as_double(T v) noexcept {
    return static_cast<double>(v);
}

// Prometheus buckets are cumulative and the +Inf bucket is the sample count; the core keeps one
// count per bucket. Each bucket is read exactly once and the count is derived from those reads,
// so the result is self-consistent (+Inf == count, buckets non-decreasing) even while the writer
// keeps observing. The +Inf bucket itself is left to the serialiser, which writes sample_count.
template <std::size_t N>
prometheus::ClientMetric::Histogram to_client_histogram(const Histogram<N>& h) {
    prometheus::ClientMetric::Histogram out;
    out.bucket.reserve(N);
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i < N; ++i) {
        cumulative += h.bucket(i);
        prometheus::ClientMetric::Bucket b;
        b.cumulative_count = cumulative;
        b.upper_bound = h.bounds()[i];
        out.bucket.push_back(b);
    }
    out.sample_count = cumulative + h.bucket(N);
    out.sample_sum = h.sum();
    return out;
}

}  // namespace hepd::metrics
