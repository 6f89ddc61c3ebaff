#include "intake/agent_map.hpp"

#include "ingest/ingest_support.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace hepd;
using namespace hepd::intake;
using hepd::test::ip;

namespace {
ByteSpan text(std::string_view s) { return as_bytes(s); }
}  // namespace

TEST_CASE("agent map: capture id, then node name, then the longest source prefix", "[ingest][agent]") {
    const AgentMap map({
        AgentRule::by_capture_id("kamailio", 2001), AgentRule::by_node_name("pbx", "pbx01"),
        AgentRule::by_source("rtpengine", *Cidr::parse("10.1.2.0/24")),
        AgentRule::by_source("lan", *Cidr::parse("10.0.0.0/8")),
        AgentRule::by_capture_id("kamailio", 2002),  // a second selector for the same name
    });
    REQUIRE(map.size() == 5);
    CHECK(map.name(0) == "other");
    CHECK(map.name(1) == "kamailio");
    CHECK(map.name(2) == "pbx");
    CHECK(map.name(3) == "rtpengine");
    CHECK(map.name(4) == "lan");
    CHECK(map.name(5) == "other");
    CHECK(map.ignored_rules() == 0);

    CHECK(map.lookup(2001, {}, ip("192.0.2.1")) == 1);
    CHECK(map.lookup(2002, {}, ip("192.0.2.1")) == 1);
    CHECK(map.lookup(2001, text("pbx01"), ip("10.1.2.3")) == 1);          // capture id wins
    CHECK(map.lookup(std::nullopt, text("pbx01"), ip("10.1.2.3")) == 2);  // node name beats source
    CHECK(map.lookup(7, text("pbx01"), ip("10.1.2.3")) == 2);             // unknown id falls through
    CHECK(map.lookup(std::nullopt, {}, ip("10.1.2.3")) == 3);             // /24 beats /8
    CHECK(map.lookup(std::nullopt, {}, ip("10.9.9.9")) == 4);
    CHECK(map.lookup(std::nullopt, {}, ip("::ffff:10.9.9.9")) == 4);
    CHECK(map.lookup(7, text("PBX01"), ip("192.0.2.1")) == 0);  // node names are exact
    CHECK(map.lookup(std::nullopt, text("pbx0"), ip("192.0.2.1")) == 0);
}

TEST_CASE("agent map: capture id 0 matches only when the message carries one", "[ingest][agent]") {
    const AgentMap map({AgentRule::by_capture_id("zero", 0)});
    CHECK(map.lookup(0, {}, ip("192.0.2.1")) == 1);
    CHECK(map.lookup(std::nullopt, {}, ip("192.0.2.1")) == 0);
    const AgentMap empty;
    CHECK(empty.size() == 1);
    CHECK(empty.lookup(0, text("x"), ip("10.0.0.1")) == 0);
}

TEST_CASE("agent map: the label set is capped, 'other' is reserved", "[ingest][agent]") {
    std::vector<AgentRule> rules;
    rules.push_back(AgentRule::by_capture_id("other", 99));
    for (std::uint32_t i = 1; i <= 40; ++i) rules.push_back(AgentRule::by_capture_id("agent" + std::to_string(i), i));
    const AgentMap map(std::move(rules));
    CHECK(map.size() == kMaxAgents);  // 31 names + other
    CHECK(map.ignored_rules() == 1 + 9);
    CHECK(map.lookup(99, {}, {}) == 0);
    CHECK(map.lookup(1, {}, {}) == 1);
    CHECK(map.lookup(31, {}, {}) == 31);
    CHECK(map.name(31) == "agent31");
    CHECK(map.lookup(32, {}, {}) == 0);
    CHECK(map.lookup(40, {}, {}) == 0);
}

TEST_CASE("agent map: a reload keeps every name at its index, new names after them", "[ingest][agent]") {
    // The counters are kept by index and labelled by name: an index must name one agent for the
    // life of the process, whatever a SIGHUP'd file removes, reorders or adds.
    std::vector<AgentRule> first{AgentRule::by_capture_id("kam1", 2001), AgentRule::by_capture_id("kam2", 2002)};
    const AgentMap before(std::move(first));
    REQUIRE(before.lookup(2002, {}, {}) == 2);

    std::vector<AgentRule> second{AgentRule::by_capture_id("pbx", 3000), AgentRule::by_capture_id("kam2", 2002)};
    const AgentMap after(std::move(second), before.names());
    CHECK(after.lookup(2002, {}, {}) == 2);  // kam2 stays 2 (it would be 1 of a fresh map)
    CHECK(after.lookup(3000, {}, {}) == 3);  // the new name after the earlier ones
    CHECK(after.lookup(2001, {}, {}) == 0);  // kam1's rule is gone: other
    CHECK(after.name(1) == "kam1");          // its index keeps its name (and its counts)
    CHECK(after.name(2) == "kam2");
    CHECK(after.name(3) == "pbx");
    CHECK(after.size() == 4);

    // The cap counts the earlier names too.
    std::vector<std::string> many;
    for (int i = 1; i <= 31; ++i) many.push_back("a" + std::to_string(i));
    const AgentMap full({AgentRule::by_capture_id("late", 7)}, many);
    CHECK(full.size() == kMaxAgents);
    CHECK(full.ignored_rules() == 1);
    CHECK(full.lookup(7, {}, {}) == 0);
}
