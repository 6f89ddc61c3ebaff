#include "config/config.hpp"

#include "core/log.hpp"
#include "core/packet_meta.hpp"

#include <catch2/catch.hpp>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <stdexcept>
#include <string>

using namespace hepd::config;
using hepd::Cidr;
using hepd::Endpoint;
using hepd::IpAddress;
using hepd::parse_payload_class;
using hepd::PayloadClass;
using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

namespace {

Config load(std::string_view yaml) { return load_string(yaml, "test.yaml"); }

ConfigError load_error(std::string_view yaml) {
    try {
        (void)load(yaml);
    } catch (const ConfigError& e) {
        return e;
    }
    FAIL("no ConfigError for:\n" << yaml);
    throw std::logic_error("unreachable");
}

ConfigError override_error(Config& c, std::string_view key, std::string_view value, std::string_view flag = "--flag") {
    try {
        apply_override(c, key, value, flag);
    } catch (const ConfigError& e) {
        return e;
    }
    FAIL("no ConfigError for " << key << "=" << value);
    throw std::logic_error("unreachable");
}

Endpoint endpoint(std::string_view text) {
    const auto e = hepd::parse_endpoint(text);
    REQUIRE(e.has_value());
    return *e;
}

Cidr cidr(std::string_view text) {
    const auto c = Cidr::parse(text);
    REQUIRE(c.ok());
    return *c;
}

AgentConfig agent_by_capture_id(std::string name, std::uint32_t id) {
    AgentConfig a;
    a.name = std::move(name);
    a.selector = AgentConfig::Selector::capture_id;
    a.capture_id = id;
    return a;
}

AgentConfig agent_by_cidr(std::string name, std::string_view text) {
    AgentConfig a;
    a.name = std::move(name);
    a.selector = AgentConfig::Selector::cidr;
    a.cidr = cidr(text);
    return a;
}

AgentConfig agent_by_node_name(std::string name, std::string node) {
    AgentConfig a;
    a.name = std::move(name);
    a.selector = AgentConfig::Selector::node_name;
    a.node_name = std::move(node);
    return a;
}

RelayDestinationConfig relay_destination(std::string name, std::string host, std::uint16_t port,
                                         RelayDestinationConfig::Transport transport, std::uint64_t queue_bytes) {
    RelayDestinationConfig d;
    d.name = std::move(name);
    d.host = std::move(host);
    d.port = port;
    d.transport = transport;
    d.queue_bytes = queue_bytes;
    return d;
}

// A configuration where every key differs from its default.
Config custom_config() {
    Config c;
    c.log_level = LogLevel::debug;
    c.hep.listen = {endpoint("10.0.0.1:9061"), endpoint("[2001:db8::1]:9062")};
    c.hep.udp = {false, 4, 3000, 128};
    c.hep.tcp = {false, 2048, seconds(90), 1500};
    c.hep.rate_limit = {1000, 2000, 100, 200};
    c.hep.auth_key = "s3cr:et #1";
    c.hep.allow = {cidr("10.0.0.0/8"), cidr("2001:db8::/32")};
    c.hep.max_decompressed_bytes = 2u << 20;
    c.hep.clock_offset_limit = milliseconds(2500);
    c.hep.payload_types = {{61, "rtpengine_ng", PayloadClass::other}, {200, "custom-log", PayloadClass::log}};
    c.agents = {agent_by_capture_id("kam1", 101), agent_by_cidr("rtp", "10.1.2.0/24"),
                agent_by_node_name("pbx", "pbx01")};
    c.peers = {PeerConfig{"carrier-a", {cidr("192.0.2.0/24"), cidr("2001:db8:a::/48")}, {}},
               PeerConfig{"pbx-trunk", {}, {"pbx"}}};
    c.metrics.listen = endpoint("127.0.0.1:9470");
    c.metrics.path = "/hepd/metrics";
    c.state = {"/tmp/hepd-state", seconds(0), false};
    c.shards = {4, 512, 128, std::chrono::milliseconds(20)};
    c.tables = {1000, 2000, 3000, 4000};
    c.timers = {milliseconds(1500), hours(2), seconds(45), seconds(0), minutes(1)};
    c.pcap = {{9061, 9062}, {5060, 5080}, 500};
    c.relay = {relay_destination("homer", "homer.example.net", 9060, RelayDestinationConfig::Transport::tcp, 8u << 20),
               relay_destination("collector.example.net", "collector.example.net", 9061,
                                 RelayDestinationConfig::Transport::udp, 4u << 20)};
    c.records = {true, "/var/log/hepd/calls.jsonl", 1ULL << 30, seconds(0), 100, seconds(0), seconds(10), 1024, 5000};
    c.duplicates = {milliseconds(20), 4096, true};
    return c;
}

// The same configuration written by hand, in a different but equivalent spelling.
constexpr std::string_view kCustomYaml = R"(log_level: debug
hep:
  listen: ["10.0.0.1:9061", "[2001:db8::1]:9062"]
  udp: {enabled: false, receive_threads: 4, receive_buffer_bytes: 3000, batch_size: 128}
  tcp:
    enabled: False
    max_connections: 2048
    idle_timeout: 1m30s
    max_frame_bytes: 1500
  rate_limit: {rate: 1000, burst: 2000, per_agent_rate: 100, per_agent_burst: 200}
  auth_key: 's3cr:et #1'
  allow:
    - 10.0.0.0/8
    - 2001:db8::/32
  max_decompressed_bytes: 2MiB
  clock_offset_limit: 2s500ms
  payload_types:
    - {code: 0x3d, name: rtpengine_ng, class: other}
    - {code: 200, name: custom-log, class: log}
agents:
  - name: kam1
    capture_id: 101
  - name: rtp
    cidr: 10.1.2.0/24
  - name: pbx
    node_name: pbx01
peers:
  - name: carrier-a
    cidr: [192.0.2.0/24, "2001:db8:a::/48"]
  - name: pbx-trunk
    agents: [pbx]
metrics:
  listen: 127.0.0.1:9470
  path: /hepd/metrics
state:
  dir: /tmp/hepd-state
  snapshot_interval: 0
  snapshot_on_shutdown: false
shards: {count: 4, queue_batches: 512, batch_size: 128, max_batch_age: 20ms}
tables: {max_dialogs: 1000, max_streams: 2000, max_pending_media: 3000, max_transactions: 4000}
timers:
  invite_timeout: 1500ms
  max_call_duration: 120m
  stream_idle_timeout: 45s
  dialog_linger: 0s
  transaction_timeout: 60s
pcap: {hep_ports: [9061, 9062], sip_ports: [5060, 5080], max_tcp_streams: 500}
relay:
  - {name: homer, address: "homer.example.net:9060", transport: tcp, queue_bytes: 8MiB}
  - address: "collector.example.net:9061"
records:
  enabled: true
  path: /var/log/hepd/calls.jsonl
  max_file_bytes: 1GiB
  max_file_age: 0
  keep_files: 100
  flush_interval: 0ms
  hold: 10000ms
  queue_size: 1024
  max_waiting_media: 5000
duplicates: {window: 20ms, capacity: 4096, same_source: TRUE}
)";

constexpr std::string_view kDefaultsYaml = R"(log_level: info
hep:
  listen: ["0.0.0.0:9060"]
  udp:
    enabled: true
    receive_threads: 1
    receive_buffer_bytes: 8MiB
    batch_size: 64
  tcp:
    enabled: true
    max_connections: 1024
    idle_timeout: 5m
    max_frame_bytes: 65535
  rate_limit:
    rate: 0
    burst: 0
    per_agent_rate: 0
    per_agent_burst: 0
  auth_key: ""
  allow: []
  max_decompressed_bytes: 64KiB
  clock_offset_limit: 5s
  payload_types: []
agents: []
peers: []
metrics:
  listen: "0.0.0.0:9469"
  path: "/metrics"
state:
  dir: "/var/lib/hepd"
  snapshot_interval: 1m
  snapshot_on_shutdown: true
shards:
  count: 0
  queue_batches: 1024
  batch_size: 256
  max_batch_age: 100ms
tables:
  max_dialogs: 100000
  max_streams: 200000
  max_pending_media: 200000
  max_transactions: 100000
timers:
  invite_timeout: 32s
  max_call_duration: 4h
  stream_idle_timeout: 30s
  dialog_linger: 32s
  transaction_timeout: 32s
pcap:
  hep_ports: [9060]
  sip_ports: [5060]
  max_tcp_streams: 10000
relay: []
records:
  enabled: false
  path: "records/calls.jsonl"
  max_file_bytes: 100MiB
  max_file_age: 1h
  keep_files: 24
  flush_interval: 1s
  hold: 5s
  queue_size: 16384
  max_waiting_media: 200000
duplicates:
  window: 50ms
  capacity: 16384
  same_source: false
)";

// Dotted key paths of every mapping key in a document; list entries appear as "key[]".
void collect_keys(const YAML::Node& node, const std::string& prefix, std::set<std::string>& out) {
    if (node.IsMap()) {
        for (const auto& entry : node) {
            const std::string path = prefix.empty() ? entry.first.Scalar() : prefix + "." + entry.first.Scalar();
            out.insert(path);
            collect_keys(entry.second, path, out);
        }
    } else if (node.IsSequence()) {
        for (const auto& element : node) collect_keys(element, prefix + "[]", out);
    }
}

std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    REQUIRE(in.good());
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

const std::string kShippedConfig = std::string(HEPD_SOURCE_DIR) + "/config/hepd.yaml";

}  // namespace

// ---------------------------------------------------------------------------------------------
// Defaults

TEST_CASE("defaults match the documented schema", "[config][defaults]") {
    const Config c = defaults();
    CHECK(c.log_level == LogLevel::info);
    REQUIRE(c.hep.listen.size() == 1);
    CHECK(c.hep.listen[0].address == IpAddress::v4(0u));
    CHECK(c.hep.listen[0].port == 9060);
    CHECK(c.hep.udp.enabled);
    CHECK(c.hep.udp.receive_threads == 1);
    CHECK(c.hep.udp.receive_buffer_bytes == 8'388'608);
    CHECK(c.hep.udp.batch_size == 64);
    CHECK(c.hep.tcp.enabled);
    CHECK(c.hep.tcp.max_connections == 1024);
    CHECK(c.hep.tcp.idle_timeout.count() == 300'000'000);
    CHECK(c.hep.tcp.max_frame_bytes == 65535);
    CHECK(c.hep.rate_limit.rate == 0);
    CHECK(c.hep.rate_limit.burst == 0);
    CHECK(c.hep.rate_limit.per_agent_rate == 0);
    CHECK(c.hep.rate_limit.per_agent_burst == 0);
    CHECK(c.hep.auth_key.empty());
    CHECK(c.hep.allow.empty());
    CHECK(c.hep.max_decompressed_bytes == 65'536);
    CHECK(c.hep.payload_types.empty());
    CHECK(c.agents.empty());
    CHECK(c.metrics.listen.address == IpAddress::v4(0u));
    CHECK(c.metrics.listen.port == 9469);
    CHECK(c.metrics.listen.port != 9100);  // node_exporter
    CHECK(c.metrics.listen.port != 9096);  // heplify-server
    CHECK(c.metrics.path == "/metrics");
    CHECK(c.state.dir == "/var/lib/hepd");
    CHECK(c.state.snapshot_interval.count() == 60'000'000);
    CHECK(c.state.snapshot_on_shutdown);
    CHECK(c.shards.count == 0);
    CHECK(c.shards.queue_batches == 1024);
    CHECK(c.shards.batch_size == 256);
    CHECK(c.shards.max_batch_age == std::chrono::milliseconds(100));
    CHECK(c.tables.max_dialogs == 100'000);
    CHECK(c.tables.max_streams == 200'000);
    CHECK(c.tables.max_pending_media == 200'000);
    CHECK(c.tables.max_transactions == 100'000);
    CHECK(c.timers.invite_timeout.count() == 32'000'000);
    CHECK(c.timers.max_call_duration.count() == 14'400'000'000);
    CHECK(c.timers.stream_idle_timeout.count() == 30'000'000);
    CHECK(c.timers.dialog_linger.count() == 32'000'000);
    CHECK(c.timers.transaction_timeout.count() == 32'000'000);
    CHECK(c.pcap.hep_ports == std::vector<std::uint16_t>{9060});
    CHECK(c.pcap.sip_ports == std::vector<std::uint16_t>{5060});
    CHECK(c.pcap.max_tcp_streams == 10'000);
    CHECK(c.duplicates.window.count() == 50'000);
    CHECK(c.duplicates.capacity == 16'384);
    CHECK_FALSE(c.duplicates.same_source);
    CHECK(kExitConfig == 78);
    CHECK(c == Config{});
}

TEST_CASE("empty and partial documents keep the defaults", "[config][defaults]") {
    CHECK(load("") == defaults());
    CHECK(load("# nothing but a comment\n") == defaults());
    CHECK(load("---\n") == defaults());
    CHECK(load("{}") == defaults());
    CHECK(load("hep:\n") == defaults());  // a section with every key commented out
    CHECK(load("hep:\n  udp:\n  tcp: {}\n") == defaults());

    Config expected = defaults();
    expected.hep.tcp.max_connections = 5;
    CHECK(load("hep:\n  tcp:\n    max_connections: 5\n") == expected);

    expected = defaults();
    expected.timers.invite_timeout = seconds(10);
    expected.log_level = LogLevel::warn;
    CHECK(load("timers: {invite_timeout: 10s}\nlog_level: warn\n") == expected);

    expected = defaults();
    expected.pcap.hep_ports.clear();
    CHECK(load("pcap:\n  hep_ports:\n") == expected);  // every entry commented out: empty list
}

TEST_CASE("effective shard count resolves 0 to the hardware threads", "[config][defaults]") {
    ShardsConfig s;
    CHECK(effective_shard_count(s, 8) == 8);
    CHECK(effective_shard_count(s, 0) == 1);  // hardware_concurrency() may report 0
    CHECK(effective_shard_count(s, 5000) == 1024);
    // The daemon leaves the cores its UDP receive threads keep busy.
    CHECK(effective_shard_count(s, 14, 1) == 13);
    CHECK(effective_shard_count(s, 2, 1) == 1);
    CHECK(effective_shard_count(s, 2, 4) == 1);
    s.count = 3;
    CHECK(effective_shard_count(s, 8) == 3);
}

TEST_CASE("enum names", "[config][defaults]") {
    CHECK(to_string(LogLevel::trace) == "trace");
    CHECK(to_string(LogLevel::critical) == "critical");
    CHECK(to_string(LogLevel::off) == "off");
    CHECK(parse_log_level("warn") == LogLevel::warn);
    // The names are the ones the logging set-up accepts.
    for (auto level : {LogLevel::trace, LogLevel::debug, LogLevel::info, LogLevel::warn, LogLevel::error,
                       LogLevel::critical, LogLevel::off}) {
        INFO(to_string(level));
        CHECK(hepd::is_valid_log_level(to_string(level)));
        CHECK(parse_log_level(to_string(level)) == level);
    }
    CHECK_FALSE(parse_log_level("warning").has_value());
    CHECK_FALSE(parse_log_level("INFO").has_value());
    CHECK(to_string(PayloadClass::rtcp_json) == "rtcp_json");
    CHECK(to_string(PayloadClass::other) == "other");
    CHECK(parse_payload_class("qos") == PayloadClass::qos);
    CHECK(parse_payload_class("rtp") == PayloadClass::rtp);
    CHECK_FALSE(parse_payload_class("rtcp_xr").has_value());
}

// ---------------------------------------------------------------------------------------------
// The shipped file

TEST_CASE("config/hepd.yaml is exactly the defaults", "[config][shipped]") {
    CHECK(load_file(kShippedConfig) == defaults());
}

TEST_CASE("config/hepd.yaml shows every key", "[config][shipped]") {
    std::set<std::string> documented;
    collect_keys(YAML::LoadFile(kShippedConfig), "", documented);
    std::set<std::string> printed;
    collect_keys(YAML::Load(to_yaml(defaults())), "", printed);
    for (const auto& key : printed) {
        INFO(key);
        CHECK(documented.count(key) == 1);
    }
    CHECK(documented == printed);

    // Keys inside list entries (empty lists by default) are documented in comments.
    std::set<std::string> item_keys;
    collect_keys(YAML::Load(to_yaml(custom_config())), "", item_keys);
    const std::string text = read_text(kShippedConfig);
    std::size_t checked = 0;
    for (const auto& key : item_keys) {
        const auto bracket = key.find("[].");
        if (bracket == std::string::npos) continue;
        const std::string leaf = key.substr(key.rfind('.') + 1);
        INFO(key);
        CHECK(text.find("#   " + leaf + ":") != std::string::npos);
        ++checked;
    }
    CHECK(checked == 14);  // payload type code, name, class; agent name, capture_id, cidr, node_name;
                           // relay name, address, transport, queue_bytes; peer name, cidr, agents
}

// ---------------------------------------------------------------------------------------------
// Printing and round trips

TEST_CASE("to_yaml prints the defaults in the file's schema", "[config][round_trip]") {
    CHECK(to_yaml(defaults()) == kDefaultsYaml);
    CHECK(load(kDefaultsYaml) == defaults());
}

TEST_CASE("every key round-trips", "[config][round_trip]") {
    const Config custom = custom_config();
    // Sanity of the fixture: no section is left at its default.
    const Config d = defaults();
    CHECK(custom.log_level != d.log_level);
    CHECK(custom.hep.listen != d.hep.listen);
    CHECK(custom.hep.udp.enabled != d.hep.udp.enabled);
    CHECK(custom.hep.udp.receive_threads != d.hep.udp.receive_threads);
    CHECK(custom.hep.udp.receive_buffer_bytes != d.hep.udp.receive_buffer_bytes);
    CHECK(custom.hep.udp.batch_size != d.hep.udp.batch_size);
    CHECK(custom.hep.tcp.enabled != d.hep.tcp.enabled);
    CHECK(custom.hep.tcp.max_connections != d.hep.tcp.max_connections);
    CHECK(custom.hep.tcp.idle_timeout != d.hep.tcp.idle_timeout);
    CHECK(custom.hep.tcp.max_frame_bytes != d.hep.tcp.max_frame_bytes);
    CHECK(custom.hep.rate_limit.rate != d.hep.rate_limit.rate);
    CHECK(custom.hep.rate_limit.burst != d.hep.rate_limit.burst);
    CHECK(custom.hep.rate_limit.per_agent_rate != d.hep.rate_limit.per_agent_rate);
    CHECK(custom.hep.rate_limit.per_agent_burst != d.hep.rate_limit.per_agent_burst);
    CHECK(custom.hep.auth_key != d.hep.auth_key);
    CHECK(custom.hep.allow != d.hep.allow);
    CHECK(custom.hep.max_decompressed_bytes != d.hep.max_decompressed_bytes);
    CHECK(custom.hep.clock_offset_limit != d.hep.clock_offset_limit);
    CHECK(custom.hep.payload_types != d.hep.payload_types);
    CHECK(custom.agents != d.agents);
    CHECK(custom.metrics.listen != d.metrics.listen);
    CHECK(custom.metrics.path != d.metrics.path);
    CHECK(custom.state.dir != d.state.dir);
    CHECK(custom.state.snapshot_interval != d.state.snapshot_interval);
    CHECK(custom.state.snapshot_on_shutdown != d.state.snapshot_on_shutdown);
    CHECK(custom.shards.count != d.shards.count);
    CHECK(custom.shards.queue_batches != d.shards.queue_batches);
    CHECK(custom.shards.batch_size != d.shards.batch_size);
    CHECK(custom.shards.max_batch_age != d.shards.max_batch_age);
    CHECK(custom.tables.max_dialogs != d.tables.max_dialogs);
    CHECK(custom.tables.max_streams != d.tables.max_streams);
    CHECK(custom.tables.max_pending_media != d.tables.max_pending_media);
    CHECK(custom.tables.max_transactions != d.tables.max_transactions);
    CHECK(custom.timers.invite_timeout != d.timers.invite_timeout);
    CHECK(custom.timers.max_call_duration != d.timers.max_call_duration);
    CHECK(custom.timers.stream_idle_timeout != d.timers.stream_idle_timeout);
    CHECK(custom.timers.dialog_linger != d.timers.dialog_linger);
    CHECK(custom.timers.transaction_timeout != d.timers.transaction_timeout);
    CHECK(custom.pcap.hep_ports != d.pcap.hep_ports);
    CHECK(custom.pcap.sip_ports != d.pcap.sip_ports);
    CHECK(custom.pcap.max_tcp_streams != d.pcap.max_tcp_streams);
    CHECK(custom.relay != d.relay);
    CHECK(custom.duplicates.window != d.duplicates.window);
    CHECK(custom.duplicates.capacity != d.duplicates.capacity);
    CHECK(custom.duplicates.same_source != d.duplicates.same_source);

    SECTION("the hand-written file loads into every field") { CHECK(load(kCustomYaml) == custom); }
    SECTION("printing and loading again gives the same configuration") {
        CHECK(load(to_yaml(custom)) == custom);
        CHECK(to_yaml(load(to_yaml(custom))) == to_yaml(custom));
    }
    SECTION("the printed form") {
        const std::string expected = R"(log_level: debug
hep:
  listen: ["10.0.0.1:9061", "[2001:db8::1]:9062"]
  udp:
    enabled: false
    receive_threads: 4
    receive_buffer_bytes: 3000
    batch_size: 128
  tcp:
    enabled: false
    max_connections: 2048
    idle_timeout: 90s
    max_frame_bytes: 1500
  rate_limit:
    rate: 1000
    burst: 2000
    per_agent_rate: 100
    per_agent_burst: 200
  auth_key: "s3cr:et #1"
  allow: ["10.0.0.0/8", "2001:db8::/32"]
  max_decompressed_bytes: 2MiB
  clock_offset_limit: 2500ms
  payload_types:
    - code: 61
      name: "rtpengine_ng"
      class: other
    - code: 200
      name: "custom-log"
      class: log
agents:
  - name: "kam1"
    capture_id: 101
  - name: "rtp"
    cidr: "10.1.2.0/24"
  - name: "pbx"
    node_name: "pbx01"
peers:
  - name: "carrier-a"
    cidr: ["192.0.2.0/24", "2001:db8:a::/48"]
  - name: "pbx-trunk"
    agents: ["pbx"]
metrics:
  listen: "127.0.0.1:9470"
  path: "/hepd/metrics"
state:
  dir: "/tmp/hepd-state"
  snapshot_interval: 0s
  snapshot_on_shutdown: false
shards:
  count: 4
  queue_batches: 512
  batch_size: 128
  max_batch_age: 20ms
tables:
  max_dialogs: 1000
  max_streams: 2000
  max_pending_media: 3000
  max_transactions: 4000
timers:
  invite_timeout: 1500ms
  max_call_duration: 2h
  stream_idle_timeout: 45s
  dialog_linger: 0s
  transaction_timeout: 1m
pcap:
  hep_ports: [9061, 9062]
  sip_ports: [5060, 5080]
  max_tcp_streams: 500
relay:
  - name: "homer"
    address: "homer.example.net:9060"
    transport: tcp
    queue_bytes: 8MiB
  - name: "collector.example.net"
    address: "collector.example.net:9061"
    transport: udp
    queue_bytes: 4MiB
records:
  enabled: true
  path: "/var/log/hepd/calls.jsonl"
  max_file_bytes: 1GiB
  max_file_age: 0s
  keep_files: 100
  flush_interval: 0s
  hold: 10s
  queue_size: 1024
  max_waiting_media: 5000
duplicates:
  window: 20ms
  capacity: 4096
  same_source: true
)";
        CHECK(to_yaml(custom) == expected);
    }
}

TEST_CASE("strings that look like other YAML values survive a round trip", "[config][round_trip]") {
    for (const char* text :
         {"",      "null",   "~",        "true",        "5",   "0x10",  "a: b",      "#hash",
          " lead", "trail ", "quote\"d", "back\\slash", "[x]", "{y}",   "é ünïcode", "- dash",
          "*star", "&amp",   "!bang",    "%pct",        "@at", "`tick", "'single'",  "line\\nnot-a-break"}) {
        Config c = defaults();
        c.hep.auth_key = text;
        c.agents = {agent_by_node_name("n", text[0] != '\0' ? text : "x")};
        INFO(text);
        CHECK(load(to_yaml(c)) == c);
    }
}

TEST_CASE("key_paths lists every settable key in schema order", "[config][round_trip]") {
    const std::vector<std::string> expected{
        "log_level",
        "hep.listen",
        "hep.udp.enabled",
        "hep.udp.receive_threads",
        "hep.udp.receive_buffer_bytes",
        "hep.udp.batch_size",
        "hep.tcp.enabled",
        "hep.tcp.max_connections",
        "hep.tcp.idle_timeout",
        "hep.tcp.max_frame_bytes",
        "hep.rate_limit.rate",
        "hep.rate_limit.burst",
        "hep.rate_limit.per_agent_rate",
        "hep.rate_limit.per_agent_burst",
        "hep.auth_key",
        "hep.allow",
        "hep.max_decompressed_bytes",
        "hep.clock_offset_limit",
        "hep.payload_types",
        "agents",
        "peers",
        "metrics.listen",
        "metrics.path",
        "state.dir",
        "state.snapshot_interval",
        "state.snapshot_on_shutdown",
        "shards.count",
        "shards.queue_batches",
        "shards.batch_size",
        "shards.max_batch_age",
        "tables.max_dialogs",
        "tables.max_streams",
        "tables.max_pending_media",
        "tables.max_transactions",
        "timers.invite_timeout",
        "timers.max_call_duration",
        "timers.stream_idle_timeout",
        "timers.dialog_linger",
        "timers.transaction_timeout",
        "pcap.hep_ports",
        "pcap.sip_ports",
        "pcap.max_tcp_streams",
        "relay",
        "records.enabled",
        "records.path",
        "records.max_file_bytes",
        "records.max_file_age",
        "records.keep_files",
        "records.flush_interval",
        "records.hold",
        "records.queue_size",
        "records.max_waiting_media",
        "duplicates.window",
        "duplicates.capacity",
        "duplicates.same_source",
    };
    CHECK(key_paths() == expected);
}

// ---------------------------------------------------------------------------------------------
// Overrides

TEST_CASE("every scalar and list key can be overridden", "[config][override]") {
    const std::vector<std::pair<std::string, std::string>> overrides{
        {"log_level", "debug"},
        {"hep.listen", "10.0.0.1:9061, [2001:db8::1]:9062"},
        {"hep.udp.enabled", "false"},
        {"hep.udp.receive_threads", "4"},
        {"hep.udp.receive_buffer_bytes", "3000"},
        {"hep.udp.batch_size", "128"},
        {"hep.tcp.enabled", "false"},
        {"hep.tcp.max_connections", "2048"},
        {"hep.tcp.idle_timeout", "90s"},
        {"hep.tcp.max_frame_bytes", "1500"},
        {"hep.rate_limit.rate", "1000"},
        {"hep.rate_limit.burst", "2000"},
        {"hep.rate_limit.per_agent_rate", "100"},
        {"hep.rate_limit.per_agent_burst", "200"},
        {"hep.auth_key", "s3cr:et #1"},
        {"hep.allow", "10.0.0.0/8,2001:db8::/32"},
        {"hep.max_decompressed_bytes", "2MiB"},
        {"hep.clock_offset_limit", "2500ms"},
        {"metrics.listen", "127.0.0.1:9470"},
        {"metrics.path", "/hepd/metrics"},
        {"state.dir", "/tmp/hepd-state"},
        {"state.snapshot_interval", "0"},
        {"state.snapshot_on_shutdown", "false"},
        {"shards.count", "4"},
        {"shards.queue_batches", "512"},
        {"shards.batch_size", "128"},
        {"shards.max_batch_age", "20ms"},
        {"tables.max_dialogs", "1000"},
        {"tables.max_streams", "2000"},
        {"tables.max_pending_media", "3000"},
        {"tables.max_transactions", "4000"},
        {"timers.invite_timeout", "1500ms"},
        {"timers.max_call_duration", "2h"},
        {"timers.stream_idle_timeout", "45s"},
        {"timers.dialog_linger", "0s"},
        {"timers.transaction_timeout", "1m"},
        {"pcap.hep_ports", "9061,9062"},
        {"pcap.sip_ports", "5060,5080"},
        {"pcap.max_tcp_streams", "500"},
        {"records.enabled", "true"},
        {"records.path", "/var/log/hepd/calls.jsonl"},
        {"records.max_file_bytes", "1GiB"},
        {"records.max_file_age", "0"},
        {"records.keep_files", "100"},
        {"records.flush_interval", "0"},
        {"records.hold", "10s"},
        {"records.queue_size", "1024"},
        {"records.max_waiting_media", "5000"},
        {"duplicates.window", "20ms"},
        {"duplicates.capacity", "4096"},
        {"duplicates.same_source", "true"},
    };
    // The table covers every key but the two that only a file can hold.
    std::set<std::string> covered;
    for (const auto& [key, value] : overrides) covered.insert(key);
    for (const auto& key : key_paths()) {
        if (key == "agents" || key == "peers" || key == "hep.payload_types" || key == "relay") continue;
        INFO(key);
        CHECK(covered.count(key) == 1);
    }

    Config c = defaults();
    for (const auto& [key, value] : overrides) {
        INFO(key << "=" << value);
        const Config before = c;
        apply_override(c, key, value, "--test");
        CHECK(c != before);  // each key lands somewhere...
    }
    // ...and in the right place: everything but the file-only lists now equals the custom config.
    Config expected = custom_config();
    expected.hep.payload_types.clear();
    expected.agents.clear();
    expected.relay.clear();
    expected.peers.clear();
    CHECK(c == expected);
}

TEST_CASE("override errors name the flag and the key", "[config][override]") {
    Config c = defaults();
    const Config before = c;

    auto e = override_error(c, "hep.tcp.max_connections", "lots", "--hep-tcp-max-connections");
    CHECK(std::string(e.what()) ==
          "--hep-tcp-max-connections: hep.tcp.max_connections: expected an integer in [1, 1000000], got \"lots\"");
    CHECK(e.source() == "--hep-tcp-max-connections");
    CHECK(e.line() == 0);
    CHECK(e.key_path() == "hep.tcp.max_connections");

    e = override_error(c, "hep.listen", "0.0.0.0:9060,nonsense", "--hep-listen");
    CHECK(std::string(e.what()) ==
          "--hep-listen: hep.listen[1]: expected ADDRESS:PORT with a literal IP address (e.g. 0.0.0.0:9060 or "
          "[::]:9060), got \"nonsense\"");

    e = override_error(c, "hep.listen", "0.0.0.0:9060,", "--hep-listen");
    CHECK(e.key_path() == "hep.listen[1]");

    e = override_error(c, "hep.listen", "", "--hep-listen");
    CHECK(e.key_path() == "hep.listen");
    CHECK(e.detail().find("must list at least one") == 0);

    e = override_error(c, "hep.rate_limit.rate", "-5", "--hep-rate-limit");
    CHECK(std::string(e.what()) ==
          "--hep-rate-limit: hep.rate_limit.rate: expected an integer in [0, 1000000000], got \"-5\"");

    e = override_error(c, "log_level", "loud", "--log-level");
    CHECK(std::string(e.what()) ==
          "--log-level: log_level: expected one of trace, debug, info, warn, error, critical, off, got \"loud\"");

    e = override_error(c, "metrics.listen", "0.0.0.0:9060", "--metrics-listen");
    CHECK(std::string(e.what()) ==
          "--metrics-listen: metrics.listen: 0.0.0.0:9060 clashes with HEP over TCP on 0.0.0.0:9060 (hep.listen)");

    e = override_error(c, "hep.tcp.max_conections", "5");
    CHECK(e.key_path() == "hep.tcp.max_conections");
    CHECK(e.detail().find("unknown key (expected one of: log_level, hep.listen,") == 0);

    e = override_error(c, "hep.tcp", "5");
    CHECK(std::string(e.what()) ==
          "--flag: hep.tcp: is a section; set one of: hep.tcp.enabled, hep.tcp.max_connections, "
          "hep.tcp.idle_timeout, hep.tcp.max_frame_bytes");

    e = override_error(c, "agents", "x");
    CHECK(std::string(e.what()) == "--flag: agents: can only be set in the configuration file");
    e = override_error(c, "hep.payload_types", "x");
    CHECK(e.detail() == "can only be set in the configuration file");

    e = override_error(c, "log_level.x", "5");
    CHECK(e.detail().find("unknown key") == 0);
    e = override_error(c, "", "5");
    CHECK(e.detail().find("unknown key") == 0);

    CHECK(c == before);  // failed overrides change nothing
}

TEST_CASE("flags are applied together, then checked once", "[config][override]") {
    // The file's HEP address is on the port --metrics-listen takes; --hep-listen moves it.
    Config c = load("hep:\n  listen: [\"0.0.0.0:39070\"]\n");
    apply_overrides(c, {{"--metrics-listen", "metrics.listen", "127.0.0.1:39070"},
                        {"--hep-listen", "hep.listen", "127.0.0.1:39071"}});
    CHECK(c.metrics.listen == endpoint("127.0.0.1:39070"));
    CHECK(c.hep.listen == std::vector<Endpoint>{endpoint("127.0.0.1:39071")});

    // A clash that stays names the flag that set the key it reports...
    c = load("hep:\n  listen: [\"0.0.0.0:39070\"]\n");
    const Config before = c;
    try {
        apply_overrides(c,
                        {{"--metrics-listen", "metrics.listen", "127.0.0.1:39070"}, {"--cores", "shards.count", "2"}});
        FAIL("no error");
    } catch (const ConfigError& e) {
        CHECK(std::string(e.what()) ==
              "--metrics-listen: metrics.listen: 127.0.0.1:39070 clashes with HEP over TCP on 0.0.0.0:39070 "
              "(hep.listen)");
    }
    CHECK(c == before);  // nothing applied
    // ...and "command line" when that key came from elsewhere.
    try {
        apply_overrides(c, {{"--hep-listen", "hep.listen", "0.0.0.0:9469"}});
        FAIL("no error");
    } catch (const ConfigError& e) {
        CHECK(e.source() == "command line");
        CHECK(e.key_path() == "metrics.listen");
    }
    // A bad value is refused by its own flag, whatever comes after.
    try {
        apply_overrides(c, {{"--cores", "shards.count", "many"}, {"--log-level", "log_level", "debug"}});
        FAIL("no error");
    } catch (const ConfigError& e) {
        CHECK(std::string(e.what()) == "--cores: shards.count: expected an integer in [0, 1024], got \"many\"");
    }
    // An empty list of addresses: the flag that emptied it.
    try {
        apply_overrides(c, {{"--hep-listen", "hep.listen", ""}});
        FAIL("no error");
    } catch (const ConfigError& e) {
        CHECK(e.source() == "--hep-listen");
        CHECK(e.key_path() == "hep.listen");
    }
    CHECK(c == before);
}

TEST_CASE("the default flag source is 'command line'", "[config][override]") {
    Config c = defaults();
    try {
        apply_override(c, "shards.count", "many");
        FAIL("no error");
    } catch (const ConfigError& e) {
        CHECK(std::string(e.what()) == "command line: shards.count: expected an integer in [0, 1024], got \"many\"");
    }
}

TEST_CASE("overrides are checked against the rest of the configuration", "[config][override]") {
    Config c = defaults();
    apply_override(c, "hep.udp.enabled", "false");
    // TCP still needs an address.
    CHECK(override_error(c, "hep.listen", "").key_path() == "hep.listen");
    apply_override(c, "hep.tcp.enabled", "false");
    apply_override(c, "hep.listen", "");
    CHECK(c.hep.listen.empty());
    // Re-enabling a transport without an address is refused.
    CHECK(override_error(c, "hep.tcp.enabled", "true").key_path() == "hep.listen");
    CHECK_FALSE(c.hep.tcp.enabled);

    c = defaults();
    apply_override(c, "hep.allow", "");
    CHECK(c.hep.allow.empty());
    apply_override(c, "hep.allow", " 192.0.2.0/24 ");
    CHECK(c.hep.allow == std::vector<Cidr>{cidr("192.0.2.0/24")});
    CHECK(override_error(c, "pcap.sip_ports", "5060,9060").key_path() == "pcap.sip_ports");
    // A value a YAML parser would read as a list or null is taken literally.
    apply_override(c, "hep.auth_key", "[a, b]");
    CHECK(c.hep.auth_key == "[a, b]");
    apply_override(c, "hep.auth_key", "~");
    CHECK(c.hep.auth_key == "~");
    apply_override(c, "hep.listen", "[::1]:9060");
    CHECK(c.hep.listen == std::vector<Endpoint>{endpoint("[::1]:9060")});
}

// ---------------------------------------------------------------------------------------------
// Errors: locations and key paths

TEST_CASE("a wrong value names file, line, column, key and expectation", "[config][errors]") {
    const auto e = load_error("log_level: info\nhep:\n  tcp:\n    max_connections: lots\n");
    CHECK(std::string(e.what()) ==
          "test.yaml:4:22: hep.tcp.max_connections: expected an integer in [1, 1000000], got \"lots\"");
    CHECK(e.source() == "test.yaml");
    CHECK(e.line() == 4);
    CHECK(e.column() == 22);
    CHECK(e.key_path() == "hep.tcp.max_connections");
    CHECK(e.detail() == "expected an integer in [1, 1000000], got \"lots\"");
}

TEST_CASE("unknown keys are errors at every depth", "[config][errors]") {
    auto e = load_error("log_level: info\nverbose: true\n");
    CHECK(std::string(e.what()) ==
          "test.yaml:2:1: verbose: unknown key (expected one of: log_level, hep, agents, peers, metrics, state, "
          "shards, tables, timers, pcap, relay, records, duplicates)");

    e = load_error("hep:\n  tcp:\n    max_conections: 5\n");
    CHECK(std::string(e.what()) ==
          "test.yaml:3:5: hep.tcp.max_conections: unknown key (did you mean "
          "\"max_connections\"?)");

    e = load_error("hep:\n  tcp:\n    enabled: true\n    colour: red\n");
    CHECK(std::string(e.what()) ==
          "test.yaml:4:5: hep.tcp.colour: unknown key (expected one of: enabled, "
          "max_connections, idle_timeout, max_frame_bytes)");

    e = load_error("hep:\n  udp: {enabled: true, threads: 2}\n");
    CHECK(e.key_path() == "hep.udp.threads");
    CHECK(e.line() == 2);
    CHECK(e.column() == 24);

    e = load_error("agents:\n  - name: a\n    capture_id: 1\n    colour: red\n");
    CHECK(std::string(e.what()) ==
          "test.yaml:4:5: agents[0].colour: unknown key (expected one of: name, capture_id, cidr, node_name)");

    e = load_error(
        "hep:\n  payload_types:\n    - {code: 1, name: x, class: sip}\n    - {code: 2, nmae: y, class: log}\n");
    CHECK(std::string(e.what()) == "test.yaml:4:17: hep.payload_types[1].nmae: unknown key (did you mean \"name\"?)");

    e = load_error("Log_Level: info\n");  // keys are case-sensitive
    CHECK(e.key_path() == "Log_Level");
    CHECK(e.detail() == "unknown key (did you mean \"log_level\"?)");

    e = load_error("5: x\n");
    CHECK(e.key_path() == "5");
    CHECK(e.line() == 1);
}

TEST_CASE("duplicate keys are errors", "[config][errors]") {
    auto e = load_error("log_level: info\nlog_level: debug\n");
    CHECK(std::string(e.what()) == "test.yaml:2:1: log_level: duplicate key (first at line 1)");
    e = load_error("hep:\n  tcp:\n    enabled: true\n\n    enabled: false\n");
    CHECK(std::string(e.what()) == "test.yaml:5:5: hep.tcp.enabled: duplicate key (first at line 3)");
}

TEST_CASE("wrong types are errors", "[config][errors]") {
    auto e = load_error("hep:\n  listen: {a: 1}\n");
    CHECK(std::string(e.what()) == "test.yaml:2:11: hep.listen: expected a list, got a mapping");

    e = load_error("hep: [1, 2]\n");
    CHECK(std::string(e.what()) == "test.yaml:1:6: hep: expected a mapping of keys, got a list");

    e = load_error("metrics: 9469\n");
    CHECK(std::string(e.what()) == "test.yaml:1:10: metrics: expected a mapping of keys, got \"9469\"");

    e = load_error("pcap:\n  hep_ports: 9060\n");
    CHECK(std::string(e.what()) == "test.yaml:2:14: pcap.hep_ports: expected a list, got \"9060\"");

    e = load_error("hep:\n  max_decompressed_bytes: -5\n");
    CHECK(std::string(e.what()) ==
          "test.yaml:2:27: hep.max_decompressed_bytes: expected a size in [1KiB, 64MiB] (bytes, or a whole number "
          "with KiB, MiB or GiB), got \"-5\" (negative)");

    e = load_error("hep:\n  udp:\n    receive_buffer_bytes: -1MiB\n");
    CHECK(e.key_path() == "hep.udp.receive_buffer_bytes");
    CHECK(e.detail().find("(negative)") != std::string::npos);

    e = load_error("shards:\n  count: \"4\"\n");
    CHECK(std::string(e.what()) ==
          "test.yaml:2:10: shards.count: expected an integer in [0, 1024], got the quoted "
          "string \"4\" (numbers and booleans are written without quotes)");

    e = load_error("hep:\n  udp:\n    enabled: yes\n");
    CHECK(std::string(e.what()) == "test.yaml:3:14: hep.udp.enabled: expected true or false, got \"yes\"");

    e = load_error("hep:\n  udp:\n    enabled: 1\n");
    CHECK(e.detail() == "expected true or false, got \"1\"");

    e = load_error("shards:\n  count: [4]\n");
    CHECK(e.detail() == "expected an integer in [0, 1024], got a list");

    e = load_error("shards:\n  count: 4.0\n");
    CHECK(e.detail() == "expected an integer in [0, 1024], got \"4.0\"");

    e = load_error("shards:\n  count:\n");
    CHECK(std::string(e.what()) == "test.yaml:2:3: shards.count: expected an integer in [0, 1024], got nothing (null)");

    e = load_error("hep:\n  auth_key: {a: b}\n");
    CHECK(e.detail() == "expected a string of at most 1024 bytes, got a mapping");

    e = load_error("state:\n  dir: ~\n");
    CHECK(e.detail() == "expected a string of 1 to 4096 bytes, got nothing (null)");

    e = load_error("agents: {name: x}\n");
    CHECK(std::string(e.what()) == "test.yaml:1:9: agents: expected a list, got a mapping");

    e = load_error("agents:\n  - kamailio\n");
    CHECK(std::string(e.what()) == "test.yaml:2:5: agents[0]: expected a mapping of keys, got \"kamailio\"");

    e = load_error("hello\n");
    CHECK(std::string(e.what()) == "test.yaml:1:1: expected a mapping of keys, got \"hello\"");

    e = load_error("- a\n- b\n");
    CHECK(std::string(e.what()) == "test.yaml:1:1: expected a mapping of keys, got a list");

    e = load_error("? [a, b]\n: 1\n");
    CHECK(e.line() == 1);
    CHECK(e.detail() == "keys must be plain names, got a list");

    e = load_error("hep:\n  auth_key: !secret vault/hep\n");
    CHECK(std::string(e.what()) == "test.yaml:2:13: hep.auth_key: unsupported YAML tag \"!secret\"");
}

TEST_CASE("out-of-range values are errors and the bounds are inclusive", "[config][errors]") {
    CHECK(load("hep: {tcp: {max_connections: 1}}").hep.tcp.max_connections == 1);
    CHECK(load("hep: {tcp: {max_connections: 1000000}}").hep.tcp.max_connections == 1'000'000);
    CHECK(load_error("hep: {tcp: {max_connections: 0}}").key_path() == "hep.tcp.max_connections");
    CHECK(load_error("hep: {tcp: {max_connections: 1000001}}").key_path() == "hep.tcp.max_connections");
    CHECK(load_error("hep: {tcp: {max_connections: 99999999999999999999999}}").detail() ==
          "expected an integer in [1, 1000000], got \"99999999999999999999999\"");

    CHECK(load("hep: {tcp: {max_frame_bytes: 6}}").hep.tcp.max_frame_bytes == 6);
    CHECK(load_error("hep: {tcp: {max_frame_bytes: 5}}").detail().find("(out of range)") != std::string::npos);
    const auto e = load_error("hep: {tcp: {max_frame_bytes: 64KiB}}");  // 65536, one too many
    CHECK(
        e.detail() ==
        "expected a size in [6, 65535] (bytes, or a whole number with KiB, MiB or GiB), got \"64KiB\" (out of range)");

    CHECK(load("hep: {udp: {receive_threads: 256}}").hep.udp.receive_threads == 256);
    CHECK(load_error("hep: {udp: {receive_threads: 257}}").key_path() == "hep.udp.receive_threads");
    CHECK(load_error("hep: {udp: {batch_size: 0}}").key_path() == "hep.udp.batch_size");
    CHECK(load("hep: {udp: {receive_buffer_bytes: 0}}").hep.udp.receive_buffer_bytes == 0);
    CHECK(load("hep: {udp: {receive_buffer_bytes: 1GiB}}").hep.udp.receive_buffer_bytes == 1'073'741'824);
    CHECK(load_error("hep: {udp: {receive_buffer_bytes: 1073741825}}").key_path() == "hep.udp.receive_buffer_bytes");
    CHECK(load_error("hep: {max_decompressed_bytes: 1023}").key_path() == "hep.max_decompressed_bytes");
    CHECK(load_error("shards: {count: 1025}").key_path() == "shards.count");
    CHECK(load("shards: {queue_batches: 1048576}").shards.queue_batches == 1'048'576);
    CHECK(load_error("shards: {queue_batches: 1048577}").key_path() == "shards.queue_batches");
    CHECK(load_error("tables: {max_dialogs: 0}").key_path() == "tables.max_dialogs");
    CHECK(load_error("tables: {max_streams: 8000001}").key_path() == "tables.max_streams");
    CHECK(load("tables: {max_streams: 8000000, max_pending_media: 8000000}").tables.max_pending_media == 8'000'000);
    CHECK(load_error("pcap: {max_tcp_streams: 0}").key_path() == "pcap.max_tcp_streams");
    CHECK(load("hep: {rate_limit: {rate: 1000000000}}").hep.rate_limit.rate == 1'000'000'000);
    CHECK(load_error("hep: {rate_limit: {per_agent_burst: 1000000001}}").key_path() ==
          "hep.rate_limit.per_agent_burst");
}

TEST_CASE("durations in the file", "[config][errors]") {
    CHECK(load("timers: {invite_timeout: 500ms}").timers.invite_timeout == milliseconds(500));
    CHECK(load("timers: {max_call_duration: 1h30m}").timers.max_call_duration == minutes(90));
    CHECK(load("timers: {max_call_duration: 120h}").timers.max_call_duration == hours(120));
    CHECK(load("timers: {dialog_linger: 0}").timers.dialog_linger == seconds(0));
    CHECK(load("hep: {tcp: {idle_timeout: 0}}").hep.tcp.idle_timeout == seconds(0));
    CHECK(load("state: {snapshot_interval: 0s}").state.snapshot_interval == seconds(0));
    CHECK(load("state: {snapshot_interval: 1s}").state.snapshot_interval == seconds(1));
    CHECK(load("hep: {clock_offset_limit: 100ms}").hep.clock_offset_limit == milliseconds(100));
    CHECK(load("hep: {clock_offset_limit: 24h}").hep.clock_offset_limit == hours(24));
    {
        const auto limit = load_error("log_level: info\nhep:\n  clock_offset_limit: 99ms\n");
        CHECK(std::string(limit.what()) ==
              "test.yaml:3:23: hep.clock_offset_limit: expected a duration in [100ms, 24h] (whole numbers with us, "
              "ms, s, m or h, e.g. 500ms, 32s, 1h30m), got \"99ms\" (out of range)");
        CHECK(load_error("hep: {clock_offset_limit: 0}").key_path() == "hep.clock_offset_limit");
        CHECK(load_error("hep: {clock_offset_limit: 25h}").key_path() == "hep.clock_offset_limit");
    }

    auto e = load_error("timers:\n  invite_timeout: 32\n");
    CHECK(std::string(e.what()) ==
          "test.yaml:2:19: timers.invite_timeout: expected a duration in [1ms, 24h] (whole numbers with us, ms, s, "
          "m or h, e.g. 500ms, 32s, 1h30m), got \"32\" (missing unit)");
    e = load_error("timers:\n  invite_timeout: 1.5s\n");
    CHECK(e.detail().find("got \"1.5s\" (not a whole number followed by a unit)") != std::string::npos);
    e = load_error("timers:\n  invite_timeout: 2d\n");
    CHECK(e.detail().find("(unknown unit)") != std::string::npos);
    e = load_error("timers:\n  invite_timeout: 0s\n");
    CHECK(e.detail().find("got \"0s\" (out of range)") != std::string::npos);
    e = load_error("timers:\n  max_call_duration: 121h\n");
    CHECK(e.key_path() == "timers.max_call_duration");
    e = load_error("timers:\n  stream_idle_timeout: 99999999999999999999h\n");
    CHECK(e.detail().find("(too large)") != std::string::npos);
    e = load_error("timers:\n  stream_idle_timeout: -1s\n");
    CHECK(e.detail().find("(negative)") != std::string::npos);
    e = load_error("state:\n  snapshot_interval: 500ms\n");
    CHECK(std::string(e.what()) ==
          "test.yaml:2:22: state.snapshot_interval: expected 0 or a duration in [1s, 24h] (whole numbers with us, "
          "ms, s, m or h, e.g. 500ms, 32s, 1h30m), got \"500ms\" (out of range)");
    e = load_error("state:\n  snapshot_interval: 25h\n");
    CHECK(e.key_path() == "state.snapshot_interval");
}

TEST_CASE("log levels", "[config][errors]") {
    for (const auto* level : {"trace", "debug", "info", "warn", "error", "critical", "off"}) {
        INFO(level);
        CHECK(to_string(load(std::string("log_level: ") + level).log_level) == level);
    }
    const auto e = load_error("\nlog_level: verbose\n");
    CHECK(std::string(e.what()) ==
          "test.yaml:2:12: log_level: expected one of trace, debug, info, warn, error, critical, off, got \"verbose\"");
    CHECK(load_error("log_level: Info").key_path() == "log_level");
}

TEST_CASE("listen addresses", "[config][errors]") {
    const Config c = load("hep:\n  listen: [\"0.0.0.0:9060\", \"[::]:9060\", 127.0.0.1:0]\n");
    CHECK(c.hep.listen ==
          std::vector<Endpoint>{endpoint("0.0.0.0:9060"), endpoint("[::]:9060"), endpoint("127.0.0.1:0")});

    auto e = load_error("hep:\n  listen:\n    - 0.0.0.0:9060\n    - localhost:9060\n");
    CHECK(std::string(e.what()) ==
          "test.yaml:4:7: hep.listen[1]: expected ADDRESS:PORT with a literal IP address "
          "(e.g. 0.0.0.0:9060 or [::]:9060), got \"localhost:9060\"");
    CHECK(load_error("hep:\n  listen: [\"0.0.0.0\"]\n").key_path() == "hep.listen[0]");
    CHECK(load_error("hep:\n  listen: [\"0.0.0.0:65536\"]\n").key_path() == "hep.listen[0]");
    CHECK(load_error("hep:\n  listen: [\"::1:9060\"]\n").key_path() == "hep.listen[0]");

    e = load_error("hep:\n  listen:\n    - 0.0.0.0:9060\n    - 0.0.0.0:9060\n");
    CHECK(std::string(e.what()) == "test.yaml:4:7: hep.listen[1]: duplicate entry (first at line 3)");

    e = load_error("hep:\n  listen: []\n");
    CHECK(std::string(e.what()) ==
          "test.yaml:2:11: hep.listen: must list at least one ADDRESS:PORT while hep.udp or hep.tcp is enabled (set "
          "hep.udp.enabled and hep.tcp.enabled to false to receive no HEP)");
    CHECK(load_error("hep:\n  listen: []\n  udp: {enabled: false}\n").key_path() == "hep.listen");
    CHECK(load_error("hep:\n  listen: []\n  tcp: {enabled: false}\n").key_path() == "hep.listen");
    CHECK(load("hep:\n  listen: []\n  udp: {enabled: false}\n  tcp: {enabled: false}\n").hep.listen.empty());
    CHECK(load_error("hep:\n  listen:\n").key_path() == "hep.listen");
}

TEST_CASE("no more agents than the daemon has room for", "[config][errors]") {
    auto agents = [](std::size_t n) {
        std::string yaml = "log_level: info\nagents:\n";
        for (std::size_t i = 1; i <= n; ++i)
            yaml += "  - {name: a" + std::to_string(i) + ", capture_id: " + std::to_string(i) + "}\n";
        return yaml;
    };
    CHECK(load(agents(hepd::kMaxAgents - 1)).agents.size() == hepd::kMaxAgents - 1);
    const auto e = load_error(agents(hepd::kMaxAgents));
    CHECK(std::string(e.what()) ==
          "test.yaml:3:3: agents: at most 31 agents can be named, got 32 (traffic from unnamed agents is counted as "
          "\"other\")");
    CHECK(load_error(agents(1025)).key_path() == "agents");
}

TEST_CASE("HEP addresses that the kernel would not bind together", "[config][errors]") {
    auto e = load_error("hep:\n  listen: [\"0.0.0.0:39200\", \"127.0.0.1:39200\"]\n");
    CHECK(std::string(e.what()) ==
          "test.yaml:2:11: hep.listen[1]: 127.0.0.1:39200 overlaps 0.0.0.0:39200 (hep.listen[0]): 0.0.0.0:39200 "
          "already takes port 39200 on every IPv4 address, so the second could not be bound; list one of them");
    CHECK(load_error("hep:\n  listen: [\"[fd00::1]:9060\", \"10.0.0.1:9061\", \"[::]:9060\"]\n").key_path() ==
          "hep.listen[2]");
    // Another family, another port, two specific addresses, port 0: all bind.
    CHECK(load("hep:\n  listen: [\"0.0.0.0:9060\", \"[::]:9060\"]\n").hep.listen.size() == 2);
    CHECK(load("hep:\n  listen: [\"0.0.0.0:9060\", \"127.0.0.1:9061\"]\n").hep.listen.size() == 2);
    CHECK(load("hep:\n  listen: [\"127.0.0.1:9060\", \"127.0.0.2:9060\"]\n").hep.listen.size() == 2);
    CHECK(load("hep:\n  listen: [\"0.0.0.0:0\", \"127.0.0.1:0\"]\n").hep.listen.size() == 2);
    // Nothing is bound without UDP and TCP.
    CHECK(load("hep:\n  listen: [\"0.0.0.0:9060\", \"127.0.0.1:9060\"]\n  udp: {enabled: false}\n"
               "  tcp: {enabled: false}\n")
              .hep.listen.size() == 2);
    // The flags of the reviewer's case.
    Config c = defaults();
    e = override_error(c, "hep.listen", "0.0.0.0:39200,127.0.0.1:39200", "--hep-listen");
    CHECK(e.source() == "--hep-listen");
    CHECK(e.key_path() == "hep.listen[1]");
}

TEST_CASE("an IPv6 metrics address where the HTTP library has no IPv6", "[config][errors]") {
    const Capabilities no_ipv6{false};
    try {
        (void)load_string("metrics:\n  listen: \"[::]:9469\"\n", "test.yaml", no_ipv6);
        FAIL("no error");
    } catch (const ConfigError& e) {
        CHECK(std::string(e.what()) ==
              "test.yaml:2:11: metrics.listen: cannot serve metrics on [::]:9469: the civetweb library in use was "
              "built without IPv6 support; listen on an IPv4 address instead (0.0.0.0:9469 for all)");
    }
    CHECK(load_string("metrics:\n  listen: \"127.0.0.1:9469\"\n", "test.yaml", no_ipv6).metrics.listen.port == 9469);
    CHECK(load_string("metrics:\n  listen: \"[::1]:9469\"\n", "test.yaml").metrics.listen == endpoint("[::1]:9469"));
    Config c = defaults();
    try {
        apply_overrides(c, {{"--metrics-listen", "metrics.listen", "[::1]:9469"}}, no_ipv6);
        FAIL("no error");
    } catch (const ConfigError& e) {
        CHECK(e.source() == "--metrics-listen");
        CHECK(e.detail().find("built without IPv6 support") != std::string::npos);
    }
}

TEST_CASE("metrics endpoint", "[config][errors]") {
    auto e = load_error("metrics:\n  listen: 0.0.0.0:9060\n");
    CHECK(std::string(e.what()) ==
          "test.yaml:2:11: metrics.listen: 0.0.0.0:9060 clashes with HEP over TCP on 0.0.0.0:9060 (hep.listen)");
    CHECK(load_error("metrics:\n  listen: 127.0.0.1:9060\n").key_path() == "metrics.listen");  // wildcard covers it
    // UDP-only HEP does not use the TCP port; another family or port does not clash either.
    CHECK(load("hep: {tcp: {enabled: false}}\nmetrics: {listen: 0.0.0.0:9060}").metrics.listen.port == 9060);
    CHECK(load("metrics: {listen: \"[::]:9060\"}").metrics.listen == endpoint("[::]:9060"));
    CHECK(load("hep: {listen: [127.0.0.1:9060]}\nmetrics: {listen: 127.0.0.2:9060}").metrics.listen.port == 9060);
    CHECK(load("hep: {listen: [127.0.0.1:0]}\nmetrics: {listen: 127.0.0.1:0}").metrics.listen.port == 0);

    e = load_error("metrics:\n  path: metrics\n");
    CHECK(
        std::string(e.what()) ==
        "test.yaml:2:9: metrics.path: expected an URL path starting with '/' (no spaces, '?' or '#'), got \"metrics\"");
    CHECK(load_error("metrics: {path: \"/a b\"}").key_path() == "metrics.path");
    CHECK(load_error("metrics: {path: \"/m?x=1\"}").key_path() == "metrics.path");
    CHECK(load_error("metrics: {path: \"\"}").key_path() == "metrics.path");
    CHECK(load("metrics: {path: /}").metrics.path == "/");
}

TEST_CASE("allow lists and CIDRs", "[config][errors]") {
    const Config c = load("hep:\n  allow: [10.0.0.0/8, \"::1\", \"fd00::/8\"]\n");
    CHECK(c.hep.allow == std::vector<Cidr>{cidr("10.0.0.0/8"), cidr("::1/128"), cidr("fd00::/8")});

    auto e = load_error("hep:\n  allow: [\"10.0.0.0/8\", \"bad\"]\n");
    CHECK(std::string(e.what()) ==
          "test.yaml:2:25: hep.allow[1]: expected a CIDR such as 10.0.0.0/8 or "
          "2001:db8::/32 (or a single address), got \"bad\" (not a literal IPv4 or IPv6 "
          "address)");
    e = load_error("hep:\n  allow:\n    - 10.1.2.3/8\n");
    CHECK(e.detail().find("(bits set after the prefix; did you mean 10.0.0.0/8?)") != std::string::npos);
    CHECK(e.line() == 3);
    e = load_error("hep:\n  allow:\n    - 2001:db8::1/32\n");
    CHECK(e.detail().find("did you mean 2001:db8::/32?") != std::string::npos);
    e = load_error("hep:\n  allow:\n    - 10.0.0.0/33\n");
    CHECK(e.detail().find("(the prefix length is over 32 (IPv4) or 128 (IPv6))") != std::string::npos);
    e = load_error("hep:\n  allow:\n    - 10.0.0.0/abc\n");
    CHECK(e.detail().find("(the prefix length is not a number)") != std::string::npos);
    e = load_error("hep:\n  allow:\n    - 10.0.0.0/8\n    - 10.0.0.0/8\n");
    CHECK(std::string(e.what()) == "test.yaml:4:7: hep.allow[1]: duplicate entry (first at line 3)");
}

TEST_CASE("peers", "[config][errors]") {
    const Config c = load(R"y(agents:
  - {name: sbc-a, capture_id: 1}
peers:
  - name: carrier-a
    cidr: 192.0.2.0/24
  - name: carrier-b
    cidr: [198.51.100.0/24, "2001:db8::/32"]
    agents: [sbc-a]
)y");
    REQUIRE(c.peers.size() == 2);
    CHECK(c.peers[0] == PeerConfig{"carrier-a", {cidr("192.0.2.0/24")}, {}});
    CHECK(c.peers[1] == PeerConfig{"carrier-b", {cidr("198.51.100.0/24"), cidr("2001:db8::/32")}, {"sbc-a"}});

    auto e = load_error("peers:\n  - name: a\n");
    CHECK(std::string(e.what()) ==
          "test.yaml:2:5: peers[0]: needs at least one network (cidr) or capture agent (agents)");
    e = load_error("peers:\n  - {name: other, cidr: 10.0.0.0/8}\n");
    CHECK(e.key_path() == "peers[0].name");
    CHECK(e.detail() == "\"other\" is reserved for far ends in no group");
    e = load_error("peers:\n  - {name: a, cidr: 10.0.0.0/8}\n  - {name: a, cidr: 10.1.0.0/16}\n");
    CHECK(e.detail() == "duplicate peer name \"a\" (first at line 2)");
    e = load_error("peers:\n  - {name: a, cidr: 10.0.0.0/8}\n  - {name: b, cidr: [10.1.0.0/16, 10.0.0.0/8]}\n");
    CHECK(e.key_path() == "peers[1].cidr");
    CHECK(e.detail() == "cidr 10.0.0.0/8 is already in peer \"a\" (first at line 2)");
    e = load_error("peers:\n  - {name: a, cidr: 10.0.0.1/8}\n");
    CHECK(e.key_path() == "peers[0].cidr");
    CHECK(e.detail().find("did you mean 10.0.0.0/8?") != std::string::npos);
    e = load_error("peers:\n  - {name: a, agents: [nobody]}\n");
    CHECK(e.key_path() == "peers[0].agents");
    CHECK(e.detail() == "agent \"nobody\" is not named under agents");
    e = load_error(
        "agents:\n  - {name: x, capture_id: 1}\npeers:\n  - {name: a, agents: [x]}\n  - {name: b, agents: [x]}\n");
    CHECK(e.detail() == "agent \"x\" is already in peer \"a\" (first at line 4)");
    CHECK(load_error("peers:\n  - {name: a, cidr: 10.0.0.0/8, via: x}\n").key_path() == "peers[0].via");

    // 64 groups plus "other"; a 65th is refused.
    std::string yaml = "peers:\n";
    for (int i = 0; i < 64; ++i)
        yaml += "  - {name: p" + std::to_string(i) + ", cidr: 10.0." + std::to_string(i) + ".0/24}\n";
    CHECK(load(yaml).peers.size() == 64);
    e = load_error(yaml + "  - {name: p64, cidr: 10.0.64.0/24}\n");
    CHECK(e.detail() == "too many entries (at most 64)");
    Config d = defaults();
    CHECK(override_error(d, "peers", "x").detail() == "can only be set in the configuration file");
}

TEST_CASE("agents", "[config][errors]") {
    const Config c = load(R"y(agents:
  - name: edge-1
    capture_id: 0
  - name: edge-2
    capture_id: 4294967295
  - name: media.pool
    cidr: 10.1.0.0/16
  - name: PBX_01
    node_name: "pbx 01 (Paris)"
)y");
    CHECK(c.agents == std::vector<AgentConfig>{
                          agent_by_capture_id("edge-1", 0), agent_by_capture_id("edge-2", 4294967295u),
                          agent_by_cidr("media.pool", "10.1.0.0/16"), agent_by_node_name("PBX_01", "pbx 01 (Paris)")});

    auto e = load_error("agents:\n  - name: kam\n    capture_id: 1\n  - name: kam\n    capture_id: 2\n");
    CHECK(std::string(e.what()) == "test.yaml:4:11: agents[1].name: duplicate agent name \"kam\" (first at line 2)");

    e = load_error("agents:\n  - name: kam\n");
    CHECK(std::string(e.what()) == "test.yaml:2:5: agents[0]: needs one of capture_id, cidr, node_name");

    e = load_error("agents:\n  - name: kam\n    capture_id: 1\n    cidr: 10.0.0.0/8\n");
    CHECK(std::string(e.what()) ==
          "test.yaml:4:11: agents[0].cidr: an agent is matched by exactly one of "
          "capture_id, cidr, node_name; this one already has capture_id");

    e = load_error("agents:\n  - capture_id: 1\n");
    CHECK(std::string(e.what()) == "test.yaml:2:5: agents[0]: missing required key name");

    e = load_error("agents:\n  - {name: other, capture_id: 1}\n");
    CHECK(e.key_path() == "agents[0].name");
    CHECK(e.detail() == "\"other\" is reserved for traffic from unnamed agents");

    e = load_error("agents:\n  - {name: \"kam 1\", capture_id: 1}\n");
    CHECK(e.detail() == "expected a name of 1 to 64 letters, digits, '_', '-' or '.', got \"kam 1\"");
    CHECK(load_error("agents:\n  - {name: \"\", capture_id: 1}\n").key_path() == "agents[0].name");
    CHECK(load_error("agents:\n  - {name: " + std::string(65, 'a') + ", capture_id: 1}\n").key_path() ==
          "agents[0].name");
    CHECK(load("agents:\n  - {name: " + std::string(64, 'a') + ", capture_id: 1}\n").agents[0].name ==
          std::string(64, 'a'));

    e = load_error("agents:\n  - {name: a, capture_id: 4294967296}\n");
    CHECK(e.detail() == "expected an integer in [0, 4294967295], got \"4294967296\"");
    CHECK(load_error("agents:\n  - {name: a, capture_id: -1}\n").key_path() == "agents[0].capture_id");

    e = load_error("agents:\n  - {name: a, capture_id: 7}\n  - {name: b, capture_id: 7}\n");
    CHECK(std::string(e.what()) ==
          "test.yaml:3:27: agents[1].capture_id: capture_id 7 already names another agent (first at line 2)");
    e = load_error("agents:\n  - {name: a, cidr: 10.0.0.0/8}\n  - {name: b, cidr: 10.0.0.0/8}\n");
    CHECK(e.detail() == "cidr 10.0.0.0/8 already names another agent (first at line 2)");
    e = load_error("agents:\n  - {name: a, node_name: n}\n  - {name: b, node_name: n}\n");
    CHECK(e.detail() == "node_name \"n\" already names another agent (first at line 2)");
    // The same value under different selectors is not a clash.
    CHECK(load("agents:\n  - {name: a, capture_id: 7}\n  - {name: b, node_name: \"7\"}\n").agents.size() == 2);

    e = load_error("agents:\n  - {name: a, cidr: 10.0.0.1/8}\n");
    CHECK(e.key_path() == "agents[0].cidr");
    CHECK(e.detail().find("did you mean 10.0.0.0/8?") != std::string::npos);
    CHECK(load_error("agents:\n  - {name: a, node_name: \"\"}\n").key_path() == "agents[0].node_name");
}

TEST_CASE("relay destinations", "[config][errors]") {
    using Transport = RelayDestinationConfig::Transport;
    const Config c = load(R"y(relay:
  - {name: sipcapture, address: 10.0.0.5:9060}
  - name: homer
    address: homer.example.net:9061
    transport: tcp
    queue_bytes: 128KiB
  - {name: v6, address: "[2001:db8::5]:9060", transport: udp, queue_bytes: 1GiB}
  - address: collector-2.example.net:9060
)y");
    CHECK(c.relay ==
          std::vector<RelayDestinationConfig>{
              relay_destination("sipcapture", "10.0.0.5", 9060, Transport::udp, 4u << 20),
              relay_destination("homer", "homer.example.net", 9061, Transport::tcp, 128u << 10),
              relay_destination("v6", "2001:db8::5", 9060, Transport::udp, 1u << 30),
              relay_destination("collector-2.example.net", "collector-2.example.net", 9060, Transport::udp, 4u << 20)});
    CHECK(relay_address(c.relay[2]) == "[2001:db8::5]:9060");
    // An IP address is no label: such a destination needs a name.
    for (const std::string address : {"10.0.0.5:9060", "[2001:db8::5]:9060"}) {
        INFO(address);
        const auto e = load_error("relay:\n  - address: \"" + address + "\"\n");
        CHECK(std::string(e.what()) ==
              "test.yaml:2:5: relay[0]: needs a name (the `destination` label of the relay metrics, e.g. name: "
              "homer): only a DNS name of up to 64 characters stands for itself");
    }
    CHECK(load("relay:\n").relay.empty());  // every entry commented out

    auto e = load_error("relay:\n  - name: homer\n");
    CHECK(std::string(e.what()) == "test.yaml:2:5: relay[0]: missing required key address");

    constexpr std::string_view kAddress =
        "expected HOST:PORT with a DNS name or IPv4 address, or [IPV6]:PORT (e.g. homer.example.net:9060, "
        "10.0.0.5:9060, [2001:db8::5]:9060), got ";
    for (const std::string bad :
         {"homer.example.net", "homer:0", "homer:65536", "homer:90x", ":9060", "2001:db8::5:9060", "[10.0.0.5]:9060",
          "[2001:db8::5]9060", "[2001:db8::5]:", "ho mer:9060", "-homer:9060", "homer/x:9060"}) {
        INFO(bad);
        e = load_error("relay:\n  - address: \"" + bad + "\"\n");
        CHECK(e.key_path() == "relay[0].address");
        CHECK(e.detail() == std::string(kAddress) + "\"" + bad + "\"");
        CHECK(e.line() == 2);
    }

    e = load_error("relay:\n  - {address: \"h:1\", transport: sctp}\n");
    CHECK(std::string(e.what()) == "test.yaml:2:33: relay[0].transport: expected udp or tcp, got \"sctp\"");
    e = load_error("relay:\n  - {address: \"h:1\", queue_bytes: 64KiB}\n");
    CHECK(e.key_path() == "relay[0].queue_bytes");
    CHECK(e.detail().find("out of range") != std::string::npos);
    e = load_error("relay:\n  - {address: \"h:1\", queue_byte: 1MiB}\n");
    CHECK(e.key_path() == "relay[0].queue_byte");
    CHECK(e.detail() == "unknown key (did you mean \"queue_bytes\"?)");
    e = load_error("relay:\n  - {address: \"h:1\", name: \"a b\"}\n");
    CHECK(e.key_path() == "relay[0].name");

    e = load_error("relay:\n  - {name: a, address: \"h:1\"}\n  - {name: a, address: \"h:2\"}\n");
    CHECK(std::string(e.what()) ==
          "test.yaml:3:12: relay[1].name: duplicate relay destination name \"a\" (first at line 2); give each "
          "destination its own name");
    // The same address and transport twice, whatever the names.
    e = load_error("relay:\n  - {address: \"h:1\", transport: tcp}\n  - {name: b, address: \"h:1\", transport: tcp}\n");
    CHECK(load_error("relay:\n  - address: \"h:1\"\n  - address: \"h:2\"\n")
              .detail()
              .find("duplicate relay destination "
                    "name \"h\"") == 0);
    CHECK(std::string(e.what()) ==
          "test.yaml:3:24: relay[1].address: tcp://h:1 is listed twice (first at line 2); it would receive every "
          "message twice");
    // The same address over the other transport is another destination.
    CHECK(load("relay:\n  - {name: a, address: \"h:1\"}\n  - {name: b, address: \"h:1\", transport: tcp}\n")
              .relay.size() == 2);

    std::string many = "relay:\n";
    for (int i = 0; i < 17; ++i) many += "  - address: \"h:" + std::to_string(i + 1) + "\"\n";
    CHECK(load_error(many).detail() == "too many entries (at most 16)");

    Config o;
    e = override_error(o, "relay", "h:1");
    CHECK(e.detail() == "can only be set in the configuration file");
}

TEST_CASE("payload types", "[config][errors]") {
    const Config c = load(
        "hep:\n  payload_types:\n    - {code: 0x3D, name: ng, class: other}\n"
        "    - {code: 255, name: j, class: rtcp_json}\n    - {code: 0, name: z, class: sip}\n");
    CHECK(c.hep.payload_types == std::vector<PayloadTypeConfig>{{61, "ng", PayloadClass::other},
                                                                {255, "j", PayloadClass::rtcp_json},
                                                                {0, "z", PayloadClass::sip}});

    auto e = load_error("hep:\n  payload_types:\n    - {code: 256, name: x, class: sip}\n");
    CHECK(std::string(e.what()) ==
          "test.yaml:3:14: hep.payload_types[0].code: expected an integer in [0, 255], got \"256\"");
    e = load_error("hep:\n  payload_types:\n    - {code: 5, name: x, class: rtcp_xr}\n");
    CHECK(e.detail() == "expected one of sip, rtp, rtcp, rtcp_json, qos, log, other, got \"rtcp_xr\"");
    e = load_error("hep:\n  payload_types:\n    - {code: 5, name: x}\n");
    CHECK(std::string(e.what()) == "test.yaml:3:7: hep.payload_types[0]: missing required key class");
    e = load_error(
        "hep:\n  payload_types:\n    - {code: 5, name: x, class: sip}\n    - {code: 0x05, name: y, class: log}\n");
    CHECK(std::string(e.what()) ==
          "test.yaml:4:14: hep.payload_types[1].code: payload type 5 is listed twice (first at line 3)");
    CHECK(load_error("hep:\n  payload_types:\n    - {code: 0x, name: x, class: sip}\n").key_path() ==
          "hep.payload_types[0].code");
}

TEST_CASE("duplicates window: 0 or 1ms to 250ms, below SIP's T1", "[config][errors]") {
    CHECK(load("duplicates: {window: 0}").duplicates.window.count() == 0);
    CHECK(load("duplicates: {window: 250ms}").duplicates.window == std::chrono::milliseconds(250));
    CHECK(load_error("duplicates: {window: 500ms}").key_path() == "duplicates.window");
    CHECK(load_error("duplicates: {window: 500us}").key_path() == "duplicates.window");
    CHECK(load_error("duplicates: {capacity: 3}").key_path() == "duplicates.capacity");
    CHECK(load("duplicates: {capacity: 16777216}").duplicates.capacity == 16'777'216);
    CHECK(load_error("duplicates: {capacity: 16777217}").key_path() == "duplicates.capacity");
}

TEST_CASE("pcap ports", "[config][errors]") {
    CHECK(load("pcap: {hep_ports: [], sip_ports: [5060, 5061, 65535, 1]}").pcap.sip_ports ==
          std::vector<std::uint16_t>{5060, 5061, 65535, 1});
    CHECK(load_error("pcap: {sip_ports: [0]}").key_path() == "pcap.sip_ports[0]");
    CHECK(load_error("pcap: {sip_ports: [5060, 65536]}").key_path() == "pcap.sip_ports[1]");
    CHECK(load_error("pcap: {sip_ports: [5060, 5060]}").detail() == "duplicate entry (first at line 1)");
    const auto e = load_error("pcap:\n  hep_ports: [9060]\n  sip_ports: [5060, 9060]\n");
    CHECK(std::string(e.what()) ==
          "test.yaml:3:14: pcap.sip_ports: port 9060 is also in pcap.hep_ports; a port "
          "is read as one or the other");
}

TEST_CASE("strings refuse control characters and invalid UTF-8", "[config][errors]") {
    CHECK(load("hep: {auth_key: \"caf\\u00e9\"}").hep.auth_key == "caf\xc3\xa9");
    auto e = load_error("hep:\n  auth_key: \"a\\x01b\"\n");
    CHECK(std::string(e.what()) ==
          "test.yaml:2:13: hep.auth_key: expected a string of at most 1024 bytes, got "
          "\"a\\x01b\" (control characters or invalid UTF-8)");
    CHECK(load_error("hep: {auth_key: \"a\\tb\"}").key_path() == "hep.auth_key");
    CHECK(load_error("hep: {auth_key: \"\\u0085\"}").key_path() == "hep.auth_key");  // NEL, a YAML line break
    CHECK(load_error("hep: {auth_key: \"\\u2028\"}").key_path() == "hep.auth_key");
    CHECK(load_error(std::string("hep: {auth_key: \"a\xff\"}")).key_path() == "hep.auth_key");
    CHECK(load_error("hep: {auth_key: " + std::string(1025, 'k') + "}").key_path() == "hep.auth_key");
    CHECK(load("hep: {auth_key: " + std::string(1024, 'k') + "}").hep.auth_key.size() == 1024);
    CHECK(load_error("state: {dir: \"\"}").key_path() == "state.dir");
}

TEST_CASE("broken YAML becomes a ConfigError with a location", "[config][errors]") {
    auto e = load_error("hep:\n  listen: [\"0.0.0.0:9060\",\n");
    CHECK(e.key_path().empty());
    CHECK(e.detail().find("invalid YAML: ") == 0);
    CHECK(e.line() >= 2);

    e = load_error("hep:\n\tudp: {}\n");
    CHECK(e.detail().find("invalid YAML: ") == 0);

    e = load_error("a: *missing\n");
    CHECK(e.detail().find("invalid YAML: ") == 0);
    CHECK(e.line() == 1);

    e = load_error("log_level: info\n---\nlog_level: debug\n");
    CHECK(e.detail() == "expected a single YAML document, found a second one");
    CHECK(e.line() == 2);
    CHECK(load_error("---\n---\n").line() == 2);
    // yaml-cpp alone would report endless empty documents at a stray ','.
    e = load_error(",");
    CHECK(std::string(e.what()) == "test.yaml:1:1: invalid YAML: unexpected \",\"");
    e = load_error("[a],\n");
    CHECK(std::string(e.what()) == "test.yaml:1:4: invalid YAML: unexpected \",\"");
    // An explicit end marker or a leading "---" is still one document.
    CHECK(load("log_level: warn\n...\n").log_level == LogLevel::warn);
    CHECK(load("---\nlog_level: warn\n...\n# trailing comment\n").log_level == LogLevel::warn);

    // yaml-cpp refuses very deep nesting itself; that must still come out as ConfigError.
    e = load_error(std::string(100'000, '['));
    CHECK(e.detail().find("invalid YAML: ") == 0);
    e = load_error(std::string(5'000, '{') + std::string(5'000, '}'));
    CHECK(e.detail().find("invalid YAML: ") == 0);
}

TEST_CASE("self-referencing aliases cannot loop the loader", "[config][errors]") {
    // &a names a list that contains itself; the schema walk is finite whatever the graph is.
    auto e = load_error("hep:\n  listen: &a [*a]\n");
    CHECK(e.key_path() == "hep.listen[0]");
    e = load_error("hep: &h\n  udp: *h\n");
    CHECK(e.key_path().rfind("hep.udp.", 0) == 0);
    // Aliases to ordinary values work.
    const Config c = load("hep:\n  listen: &l [\"127.0.0.1:9060\"]\npcap:\n  sip_ports: &p [5060]\n");
    CHECK(c.hep.listen == std::vector<Endpoint>{endpoint("127.0.0.1:9060")});
}

TEST_CASE("load_file names the file and reports unreadable files", "[config][errors]") {
    const auto dir = std::filesystem::temp_directory_path() / "hepd_config_test";
    std::filesystem::create_directories(dir);
    const std::string path = (dir / "bad.yaml").string();
    {
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        out << "# comment\nshards:\n  count: lots\n";
    }
    try {
        (void)load_file(path);
        FAIL("no error");
    } catch (const ConfigError& e) {
        CHECK(std::string(e.what()) == path + ":3:10: shards.count: expected an integer in [0, 1024], got \"lots\"");
    }
    {
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        out << "shards:\n  count: 3\n";
    }
    CHECK(load_file(path).shards.count == 3);
    std::filesystem::remove(path);

    const std::string missing = (dir / "missing.yaml").string();
    try {
        (void)load_file(missing);
        FAIL("no error");
    } catch (const ConfigError& e) {
        CHECK(e.source() == missing);
        CHECK(e.line() == 0);
        CHECK(std::string(e.what()) == missing + ": cannot open the file: No such file or directory");
    }
    try {
        (void)load_file(dir.string());
        FAIL("no error");
    } catch (const ConfigError& e) {
        CHECK(e.source() == dir.string());
        CHECK(e.line() == 0);
    }
    std::filesystem::remove_all(dir);
}
