#pragma once
// The daemon's configuration: YAML in, typed and validated structs out, with every default
// embedded here (config/hepd.yaml documents the same values and a test keeps them equal).
// Start-up code: errors are thrown as ConfigError and the process exits with kExitConfig.
#include "core/address.hpp"
#include "core/cidr.hpp"
#include "core/payload_class.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace hepd::config {

constexpr int kExitConfig = 78;  // EX_CONFIG from sysexits.h

using Duration = std::chrono::microseconds;

// what() reads "FILE:LINE:COLUMN: KEY.PATH: DETAIL"; line and column are 1-based and 0 when
// unknown (e.g. a command-line override, whose source is the flag name).
class ConfigError : public std::runtime_error {
public:
    ConfigError(std::string source, int line, int column, std::string key_path, std::string detail);

    const std::string& source() const noexcept { return source_; }
    int line() const noexcept { return line_; }
    int column() const noexcept { return column_; }
    const std::string& key_path() const noexcept { return key_path_; }
    const std::string& detail() const noexcept { return detail_; }

private:
    std::string source_;
    int line_;
    int column_;
    std::string key_path_;
    std::string detail_;
};

enum class LogLevel : std::uint8_t { trace, debug, info, warn, error, critical, off };
std::string_view to_string(LogLevel level) noexcept;  // the spdlog level name
std::optional<LogLevel> parse_log_level(std::string_view text) noexcept;

struct UdpConfig {
    bool enabled = true;
    std::uint32_t receive_threads = 1;
    std::uint64_t receive_buffer_bytes = 8u << 20;  // SO_RCVBUF; 0 = kernel default
    std::uint32_t batch_size = 64;                  // datagrams per recvmmsg call
    friend bool operator==(const UdpConfig&, const UdpConfig&) = default;
};

struct TcpConfig {
    bool enabled = true;
    std::uint32_t max_connections = 1024;
    Duration idle_timeout = std::chrono::seconds(300);  // 0 = never close idle connections
    std::uint32_t max_frame_bytes = 65535;
    friend bool operator==(const TcpConfig&, const TcpConfig&) = default;
};

// Packets per second; rate 0 = unlimited; burst 0 = one second's worth of rate.
struct RateLimitConfig {
    std::uint64_t rate = 0;
    std::uint64_t burst = 0;
    std::uint64_t per_agent_rate = 0;
    std::uint64_t per_agent_burst = 0;
    friend bool operator==(const RateLimitConfig&, const RateLimitConfig&) = default;
};

// Extends (or renames an entry of) the built-in payload type table.
struct PayloadTypeConfig {
    std::uint8_t code = 0;
    std::string name;
    PayloadClass payload_class = PayloadClass::other;
    friend bool operator==(const PayloadTypeConfig&, const PayloadTypeConfig&) = default;
};

struct HepConfig {
    std::vector<Endpoint> listen{Endpoint{IpAddress::v4(0u), 9060}};  // UDP and TCP bind each
    UdpConfig udp;
    TcpConfig tcp;
    RateLimitConfig rate_limit;
    std::string auth_key;     // required value of chunk 0x0e when non-empty
    std::vector<Cidr> allow;  // empty = everyone
    std::uint64_t max_decompressed_bytes = 64u << 10;
    // Live only: a sender whose capture times are further than this from the receive time has
    // its times shifted by its measured offset (timers must not run on a wrong clock).
    Duration clock_offset_limit = std::chrono::seconds(5);
    std::vector<PayloadTypeConfig> payload_types;
    friend bool operator==(const HepConfig&, const HepConfig&) = default;
};

// A named capture agent (the `agent` metric label), matched by exactly one selector.
struct AgentConfig {
    enum class Selector : std::uint8_t { capture_id, cidr, node_name };
    std::string name;
    Selector selector = Selector::capture_id;
    std::uint32_t capture_id = 0;  // meaningful when selector == capture_id
    Cidr cidr;                     // when selector == cidr
    std::string node_name;         // when selector == node_name
    friend bool operator==(const AgentConfig&, const AgentConfig&) = default;
};

// A peer group (the caller_peer / callee_peer metric labels): the far ends of calls in `cidrs`,
// or on a hop captured by one of `agents` (names from `agents`). At least one of the two.
struct PeerConfig {
    std::string name;
    std::vector<Cidr> cidrs;
    std::vector<std::string> agents;
    friend bool operator==(const PeerConfig&, const PeerConfig&) = default;
};
// At most this many groups ("other" comes on top).
inline constexpr std::size_t kMaxPeers = 64;

struct MetricsConfig {
    // 9469: clear of node_exporter (9100), heplify-server (9096) and Prometheus itself (9090-9093).
    Endpoint listen{IpAddress::v4(0u), 9469};
    std::string path = "/metrics";
    friend bool operator==(const MetricsConfig&, const MetricsConfig&) = default;
};

struct StateConfig {
    std::string dir = "/var/lib/hepd";
    Duration snapshot_interval = std::chrono::seconds(60);  // 0 = only at shutdown
    bool snapshot_on_shutdown = true;
    friend bool operator==(const StateConfig&, const StateConfig&) = default;
};

struct ShardsConfig {
    std::uint32_t count = 0;  // 0 = one per hardware thread not receiving (see effective_shard_count)
    std::uint32_t queue_batches = 1024;
    std::uint32_t batch_size = 256;
    // How long a received packet may wait in a partial batch before it is handed to the shards.
    Duration max_batch_age = std::chrono::milliseconds(100);
    friend bool operator==(const ShardsConfig&, const ShardsConfig&) = default;
};

// Per shard.
struct TablesConfig {
    std::uint32_t max_dialogs = 100'000;
    std::uint32_t max_streams = 200'000;
    std::uint32_t max_pending_media = 200'000;
    std::uint32_t max_transactions = 100'000;
    friend bool operator==(const TablesConfig&, const TablesConfig&) = default;
};

struct TimersConfig {
    Duration invite_timeout = std::chrono::seconds(32);
    Duration max_call_duration = std::chrono::hours(4);
    Duration stream_idle_timeout = std::chrono::seconds(30);
    Duration dialog_linger = std::chrono::seconds(32);
    Duration transaction_timeout = std::chrono::seconds(32);
    friend bool operator==(const TimersConfig&, const TimersConfig&) = default;
};

struct PcapConfig {
    std::vector<std::uint16_t> hep_ports{9060};
    std::vector<std::uint16_t> sip_ports{5060};
    std::uint32_t max_tcp_streams = 10'000;
    friend bool operator==(const PcapConfig&, const PcapConfig&) = default;
};

// A downstream HEP collector (heplify-server, Kamailio sipcapture, another hepd) that every
// accepted HEP message is relayed to, byte for byte (`relay:`, off when the list is empty).
struct RelayDestinationConfig {
    enum class Transport : std::uint8_t { udp, tcp };
    std::string name;  // the `destination` metric label; defaults to the host when it is a DNS name
    std::string host;  // a literal IP address or a DNS name (resolved at every connection attempt)
    std::uint16_t port = 0;
    Transport transport = Transport::udp;
    std::uint64_t queue_bytes = 4u << 20;  // queue per receive thread
    friend bool operator==(const RelayDestinationConfig&, const RelayDestinationConfig&) = default;
};
std::string_view to_string(RelayDestinationConfig::Transport t) noexcept;
// "host:port", IPv6 literals in brackets.
std::string relay_address(const RelayDestinationConfig& d);

// Call records (daemon/records/RECORDS.md): one JSON line per finished dialog, written by one
// thread off the shards into a rotated file under state.dir.
struct RecordsConfig {
    bool enabled = false;
    std::string path = "records/calls.jsonl";           // relative paths are under state.dir
    std::uint64_t max_file_bytes = 100u << 20;          // rotate at this size
    Duration max_file_age = std::chrono::hours(1);      // and at this age; 0 = by size only
    std::uint32_t keep_files = 24;                      // rotated files kept beside the current one
    Duration flush_interval = std::chrono::seconds(1);  // 0 = write after every batch of records
    // A finished dialog waits this long for streams that finish on other shards just after it.
    Duration hold = std::chrono::seconds(5);
    std::uint32_t queue_size = 16384;           // events per shard in flight to the writer
    std::uint32_t max_waiting_media = 200'000;  // finished streams waiting for their dialog
    friend bool operator==(const RecordsConfig&, const RecordsConfig&) = default;
};

// Copies of one packet mirrored by several capture agents, counted once (per shard, on packet
// time; see shard/duplicate_filter.hpp).
struct DuplicatesConfig {
    Duration window = std::chrono::milliseconds(50);  // 0 = keep every copy
    std::uint32_t capacity = 16'384;                  // entries per shard
    bool same_source = false;                         // a repeat from the first copy's own agent is a copy too
    friend bool operator==(const DuplicatesConfig&, const DuplicatesConfig&) = default;
};

struct Config {
    LogLevel log_level = LogLevel::info;
    HepConfig hep;
    std::vector<AgentConfig> agents;
    std::vector<PeerConfig> peers;
    MetricsConfig metrics;
    StateConfig state;
    ShardsConfig shards;
    TablesConfig tables;
    TimersConfig timers;
    PcapConfig pcap;
    std::vector<RelayDestinationConfig> relay;
    RecordsConfig records;
    DuplicatesConfig duplicates;
    friend bool operator==(const Config&, const Config&) = default;
};

// The embedded defaults (the same as a value-initialised Config).
Config defaults();

// What this build can serve, which no file can say: checked with the configuration, so that
// check-config refuses what the daemon would refuse at start. The defaults assume everything.
struct Capabilities {
    bool metrics_ipv6 = true;  // the HTTP library serves IPv6 (Debian 12's civetweb does not)
};

// Parse and validate. Keys left out keep their defaults; an empty document is valid.
Config load_file(const std::string& path, const Capabilities& caps = {});
Config load_string(std::string_view yaml, std::string_view source_name, const Capabilities& caps = {});

// Sets one key from a command-line flag with the same validation as the file, then re-checks the
// whole configuration. key_path is dotted ("hep.tcp.max_connections"); list keys take a
// comma-separated value ("0.0.0.0:9060,[::]:9060"; "" = empty list). agents and
// hep.payload_types can only be set in the file. Errors name `flag` as their source.
void apply_override(Config& config, std::string_view key_path, std::string_view value,
                    std::string_view flag = "command line", const Capabilities& caps = {});

// One command-line flag's value for one key.
struct Override {
    std::string flag;  // as typed, for error messages
    std::string key;   // configuration key path
    std::string value;
};

// Sets every key of `overrides` in order (a later one for the same key wins), each value with
// the same checks as the file's, then checks the whole configuration once: a flag is not refused
// for a value another flag replaces. An error in one flag's own value names that flag; one
// between keys names the flag that set the key it reports, else "command line". On error the
// configuration is left as it was.
void apply_overrides(Config& config, const std::vector<Override>& overrides, const Capabilities& caps = {});

// The effective configuration in the file's schema: load_string(to_yaml(c), ...) == c.
std::string to_yaml(const Config& config);

// Every settable key path in schema order, e.g. "hep.udp.batch_size" (list-of-map keys such as
// "agents" are listed once, without their item keys).
std::vector<std::string> key_paths();

// shards.count resolved: the configured count, or when it is 0 one per hardware thread left
// after `reserved_threads` other busy threads (the daemon's UDP receive threads), at least 1.
std::uint32_t effective_shard_count(const ShardsConfig& shards, unsigned hardware_threads,
                                    unsigned reserved_threads = 0);

}  // namespace hepd::config
