// daemon/export/METRICS.md is the operators' catalogue: its table must list exactly what the
// exporter serves, with the same types and label names.
#include "estate.hpp"
#include "export/exporter.hpp"
#include "scrape.hpp"

#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

using namespace hepd;

namespace {

struct Row {
    std::string type;
    std::set<std::string> labels;
};

std::string trim(const std::string& s) {
    const auto b = s.find_first_not_of(' ');
    const auto e = s.find_last_not_of(' ');
    return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

std::set<std::string> backticked(const std::string& cell) {
    std::set<std::string> out;
    std::size_t at = 0;
    while ((at = cell.find('`', at)) != std::string::npos) {
        const auto end = cell.find('`', at + 1);
        if (end == std::string::npos) break;
        out.insert(cell.substr(at + 1, end - at - 1));
        at = end + 1;
    }
    return out;
}

// Rows "| `hepd_name` | type | `label`, `label` (or —) | meaning |".
std::map<std::string, Row> parse_catalogue(const std::string& text, std::string& problems) {
    std::map<std::string, Row> rows;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("| `hepd_", 0) != 0) continue;
        std::vector<std::string> cells;
        std::size_t at = 1;
        while (at < line.size()) {
            const auto bar = line.find('|', at);
            if (bar == std::string::npos) break;
            cells.push_back(trim(line.substr(at, bar - at)));
            at = bar + 1;
        }
        if (cells.size() != 4) {
            problems += "not 4 cells: " + line + "\n";
            continue;
        }
        const auto names = backticked(cells[0]);
        if (names.size() != 1) {
            problems += "not one metric name: " + line + "\n";
            continue;
        }
        Row row{cells[1], backticked(cells[2])};
        if (row.labels.empty() && cells[2] != "—") problems += "labels neither backticked nor —: " + line + "\n";
        if (cells[3].empty()) problems += "no meaning: " + line + "\n";
        if (!rows.emplace(*names.begin(), row).second) problems += "listed twice: " + line + "\n";
    }
    return rows;
}

std::string read_text(const std::string& path) {
    std::ifstream in(path);
    REQUIRE(in.good());
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace

TEST_CASE("METRICS.md lists exactly the metrics served, with their types and labels", "[export][catalogue]") {
    const std::string markdown = read_text(std::string(HEPD_SOURCE_DIR) + "/daemon/export/METRICS.md");
    std::string problems;
    const auto catalogue = parse_catalogue(markdown, problems);
    CHECK(problems.empty());
    INFO(problems);
    REQUIRE(catalogue.size() > 50);

    gen::CorpusOptions corpus;
    corpus.calls = 20;
    corpus.media_seconds = 0.3;
    corpus.failed_percent = 20;
    corpus.cancelled_percent = 20;
    test::Estate estate(corpus, 2);
    metrics::ExporterOptions options;
    options.listen = Endpoint{IpAddress::v4(0x7f000001U), 0};
    metrics::Exporter exporter(options, estate.collector);
    const auto x = test::parse_exposition(test::http_get(exporter.local_endpoint().port, "/metrics").body);

    std::set<std::string> served;
    for (const auto& [name, type] : x.types) {
        if (name.rfind("hepd_", 0) != 0) {
            // prometheus-cpp's own exposer_* families: named in the notes, not in the table.
            INFO(name);
            CHECK(markdown.find(name) != std::string::npos);
            continue;
        }
        served.insert(name);
    }
    std::set<std::string> listed;
    for (const auto& [name, row] : catalogue) listed.insert(name);
    for (const auto& name : served) {
        INFO("served but not in METRICS.md: " << name);
        CHECK(listed.count(name) == 1);
    }
    for (const auto& name : listed) {
        INFO("in METRICS.md but not served: " << name);
        CHECK(served.count(name) == 1);
    }

    for (const auto& [name, row] : catalogue) {
        if (served.count(name) == 0) continue;
        INFO(name);
        CHECK(row.type == x.types.at(name));
        // The estate exercises every family, so the label names are seen, not guessed.
        std::set<std::string> seen;
        std::size_t samples = 0;
        for (const auto& s : x.samples) {
            if (x.family_of(s.name) != name) continue;
            ++samples;
            for (const auto& [label, value] : s.labels)
                if (label != "le") seen.insert(label);
        }
        CHECK(samples > 0);
        CHECK(seen == row.labels);
    }
}
