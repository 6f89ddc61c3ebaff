#include "checks.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace hepd::test {

namespace {

bool all_digits(const std::string& s) {
    return !s.empty() &&
           std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; });
}

// Four dot-separated runs of 1-3 digits anywhere in the text: an IPv4 address.
bool has_ipv4(const std::string& s) {
    int groups = 0;
    int digits = 0;
    for (std::size_t i = 0; i <= s.size(); ++i) {
        const char c = i < s.size() ? s[i] : '\0';
        if (std::isdigit(static_cast<unsigned char>(c))) {
            ++digits;
            continue;
        }
        if (digits >= 1 && digits <= 3) {
            ++groups;
            if (groups == 4) return true;
            if (c != '.') groups = 0;
        } else {
            groups = 0;
        }
        digits = 0;
    }
    return false;
}

bool safe_text(const std::string& s) {
    if (s.empty() || s.size() > 40) return false;
    return std::all_of(s.begin(), s.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '+' || c == '-';
    });
}

double le_value(const std::string& le) { return le == "+Inf" ? INFINITY : std::stod(le); }

}  // namespace

std::size_t check_histograms(const Exposition& x) {
    std::size_t series = 0;
    for (const auto& [family, type] : x.types) {
        if (type != "histogram") continue;
        // labels without le -> (le, cumulative count)
        std::map<Labels, std::vector<std::pair<double, double>>> buckets;
        for (const auto* s : x.find(family + "_bucket")) {
            Labels key = s->labels;
            REQUIRE(key.count("le") == 1);
            const double le = le_value(key.at("le"));
            key.erase("le");
            buckets[key].emplace_back(le, s->value);
        }
        for (const auto* s : x.find(family + "_count")) {
            INFO(family);
            ++series;
            const auto count = s->value;
            REQUIRE(x.value(family + "_sum", s->labels).has_value());
            CHECK(*x.value(family + "_sum", s->labels) >= 0);
            auto& b = buckets[s->labels];
            REQUIRE(b.size() >= 2);
            // As written: ascending bounds, the last one +Inf.
            for (std::size_t i = 1; i < b.size(); ++i) {
                CHECK(b[i - 1].first < b[i].first);
                CHECK(b[i - 1].second <= b[i].second);
            }
            CHECK(std::isinf(b.back().first));
            CHECK(b.back().second == count);
        }
        CHECK(buckets.size() == x.find(family + "_count").size());
    }
    return series;
}

std::size_t check_label_hygiene(const Exposition& x, std::size_t shards) {
    static const std::set<std::string> kNames{
        "agent",     "callee_peer", "caller_peer", "cause", "code",         "codec",   "commit",       "destination",
        "direction", "event",       "kind",        "le",    "method",       "outcome", "payload_type", "reason",
        "result",    "shard",       "source",      "state", "status_class", "table",   "transport",    "version"};
    std::size_t checked = 0;
    for (const auto& s : x.samples) {
        if (s.name.rfind("hepd_", 0) != 0) continue;  // the HTTP library's own exposer_* metrics
        for (const auto& [name, value] : s.labels) {
            INFO(s.name << " " << name << "=\"" << value << "\"");
            ++checked;
            CHECK(kNames.count(name) == 1);
            if (name == "le") continue;
            CHECK(safe_text(value));
            CHECK(!has_ipv4(value));
            CHECK(std::count(value.begin(), value.end(), ':') == 0);
            CHECK(value.find('@') == std::string::npos);
            CHECK(value.rfind("gen-", 0) != 0);
            CHECK(value.rfind("opt-", 0) != 0);
            if (all_digits(value)) {
                // Only small closed numeric sets: a port, an SSRC or a count never becomes a label.
                const auto n = std::stoull(value);
                if (name == "shard") {
                    CHECK(n < shards);
                } else if (name == "cause") {
                    CHECK(n <= 127);
                } else if (name == "code") {
                    CHECK((n >= 200 && n <= 699));  // a SIP final status
                } else if (name == "version") {
                    CHECK((n >= 1 && n <= 3));
                } else {
                    FAIL_CHECK("numeric label value");
                }
            }
        }
    }
    return checked;
}

}  // namespace hepd::test
