#pragma once
// A scraper for the export tests: a blocking HTTP/1.1 request over a real socket (bounded by
// timeouts) and a strict parser of the Prometheus text exposition format.
#include <prometheus/metric_family.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hepd::test {

struct HttpResponse {
    int status = 0;
    std::map<std::string, std::string> headers;  // names lower-cased
    std::string body;
};

// `method` http://127.0.0.1:port/path with Connection: close. Throws std::runtime_error on a
// socket error, a timeout, or a response that is not HTTP. A HEAD answer's Content-Length is
// the body GET would have, so it is not checked against the (empty) body.
HttpResponse http_request(std::uint16_t port, const std::string& method, const std::string& path,
                          std::chrono::milliseconds timeout = std::chrono::seconds(5));
inline HttpResponse http_get(std::uint16_t port, const std::string& path,
                             std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    return http_request(port, "GET", path, timeout);
}

using Labels = std::map<std::string, std::string>;

struct Sample {
    std::string name;  // as written: a histogram's lines end in _bucket, _sum, _count
    Labels labels;
    double value = 0;
};

struct Exposition {
    std::map<std::string, std::string> types;  // family -> counter, gauge, histogram, ...
    std::map<std::string, std::string> helps;
    std::vector<Sample> samples;

    // The family a sample line belongs to (a histogram's _bucket/_sum/_count lines map to it).
    std::string family_of(const std::string& sample_name) const;
    // The sample with exactly these labels; nullopt when absent.
    std::optional<double> value(const std::string& name, const Labels& labels = {}) const;
    // value() that fails the test (throws) when the sample is absent.
    double at(const std::string& name, const Labels& labels = {}) const;
    // Sum of the samples of `name` whose labels include every pair of `subset`.
    double sum(const std::string& name, const Labels& subset = {}) const;
    std::vector<const Sample*> find(const std::string& name) const;
    // The cumulative count of histogram `family`'s bucket whose bound is `le` (compared as a
    // number: the text form of bounds is the serialiser's business). Throws when absent.
    double bucket(const std::string& family, double le, const Labels& labels = {}) const;
};

// Throws std::runtime_error naming the line on anything that is not valid exposition text
// (also: a sample before its # TYPE, a repeated series, a repeated label name).
Exposition parse_exposition(std::string_view text);

// The same path the HTTP server takes: prometheus-cpp's TextSerializer, then parse_exposition().
Exposition to_exposition(const std::vector<prometheus::MetricFamily>& families);

}  // namespace hepd::test
