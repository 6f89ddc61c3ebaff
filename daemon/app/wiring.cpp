#include "app/wiring.hpp"

#include <spdlog/spdlog.h>

namespace hepd::app {

intake::IntakeOptions intake_options(const config::Config& cfg) {
    intake::IntakeOptions o;
    for (const auto& pt : cfg.hep.payload_types) o.payload_types.set(pt.code, pt.name, pt.payload_class);
    o.auth_key = cfg.hep.auth_key;
    o.max_decompressed_bytes = cfg.hep.max_decompressed_bytes;
    intake::SenderClockOptions clocks;
    clocks.offset_limit_us = cfg.hep.clock_offset_limit.count();
    o.sender_clocks = clocks;
    return o;
}

shard::ShardConfig shard_config(const config::Config& cfg) {
    shard::ShardConfig s;
    s.dialogs.max_dialogs = cfg.tables.max_dialogs;
    s.dialogs.max_transactions = cfg.tables.max_transactions;
    s.dialogs.invite_timeout = cfg.timers.invite_timeout;
    s.dialogs.max_call_duration = cfg.timers.max_call_duration;
    s.dialogs.dialog_linger = cfg.timers.dialog_linger;
    s.dialogs.transaction_timeout = cfg.timers.transaction_timeout;
    s.dialogs.keep_caller_identity = cfg.records.enabled;  // only call records name the parties
    s.streams.max_streams = cfg.tables.max_streams;
    s.streams.max_reported_streams = cfg.tables.max_streams;
    s.streams.max_pending_media = cfg.tables.max_pending_media;
    s.streams.stream_idle_timeout_us = cfg.timers.stream_idle_timeout.count();
    s.streams.pending_media_timeout_us = cfg.timers.max_call_duration.count();
    s.duplicates.window_us = cfg.duplicates.window.count();
    s.duplicates.capacity = cfg.duplicates.capacity;
    s.duplicates.same_source = cfg.duplicates.same_source;
    return s;
}

pcap::CaptureOptions capture_options(const config::Config& cfg) {
    pcap::CaptureOptions o;
    o.hep_ports = cfg.pcap.hep_ports;
    o.sip_ports = cfg.pcap.sip_ports;
    o.tcp.max_streams = cfg.pcap.max_tcp_streams;
    o.intake = intake_options(cfg);
    return o;
}

records::RecordWriterOptions record_writer_options(const config::Config& cfg) {
    records::RecordWriterOptions o;
    const std::string& path = cfg.records.path;
    o.file.path = !path.empty() && path.front() == '/' ? path : cfg.state.dir + "/" + path;
    o.file.max_bytes = cfg.records.max_file_bytes;
    o.file.max_age_us = cfg.records.max_file_age.count();
    o.file.keep = cfg.records.keep_files;
    o.join.hold_us = cfg.records.hold.count();
    o.join.media_wait_us = cfg.timers.max_call_duration.count();
    o.join.max_waiting_media = cfg.records.max_waiting_media;
    o.queue_size = cfg.records.queue_size;
    o.flush_interval_us = cfg.records.flush_interval.count();
    return o;
}

// Configuration -> what ingest can change on SIGHUP (rate limits, auth key, allow list, agents).
ingest::IngestPolicy ingest_policy(const config::Config& cfg, const ingest::IngestPolicy* in_use) {
    ingest::IngestPolicy p;
    p.limits.rate = cfg.hep.rate_limit.rate;
    p.limits.burst = cfg.hep.rate_limit.burst;
    p.limits.per_agent_rate = cfg.hep.rate_limit.per_agent_rate;
    p.limits.per_agent_burst = cfg.hep.rate_limit.per_agent_burst;
    p.auth_key = cfg.hep.auth_key;
    p.allow = ingest::AllowList(cfg.hep.allow);
    std::vector<intake::AgentRule> rules;
    for (const auto& a : cfg.agents) {
        switch (a.selector) {
        case config::AgentConfig::Selector::capture_id:
            rules.push_back(intake::AgentRule::by_capture_id(a.name, a.capture_id));
            break;
        case config::AgentConfig::Selector::node_name:
            rules.push_back(intake::AgentRule::by_node_name(a.name, a.node_name));
            break;
        case config::AgentConfig::Selector::cidr: rules.push_back(intake::AgentRule::by_source(a.name, a.cidr)); break;
        }
    }
    p.agents =
        intake::AgentMap(std::move(rules), in_use != nullptr ? in_use->agents.names() : std::vector<std::string>{});
    if (p.agents.ignored_rules() > 0)
        spdlog::warn("{} agent entries ignored: at most {} agent names are labelled{}", p.agents.ignored_rules(),
                     intake::AgentMap::kMaxNames, in_use != nullptr ? " since start-up (a restart renumbers)" : "");
    return p;
}

relay::RelayOptions relay_options(const config::RelayDestinationConfig& destination, std::size_t producers) {
    relay::RelayOptions o;
    o.name = destination.name;
    o.host = destination.host;
    o.port = destination.port;
    o.transport = destination.transport == config::RelayDestinationConfig::Transport::tcp ? relay::Transport::tcp
                                                                                          : relay::Transport::udp;
    o.queue_bytes = destination.queue_bytes;
    o.producers = producers;
    return o;
}

void publish_peers(peer::PeerDirectory& directory, const config::Config& cfg, const intake::AgentMap& agents) {
    static_assert(config::kMaxPeers == peer::kMaxPeerNames);
    std::vector<peer::PeerRule> rules;
    rules.reserve(cfg.peers.size());
    for (const auto& p : cfg.peers) {
        peer::PeerRule rule;
        rule.name = p.name;
        rule.networks = p.cidrs;
        for (const auto& name : p.agents)
            for (std::size_t i = 1; i < agents.size(); ++i)
                if (agents.name(i) == name) rule.agents.push_back(static_cast<std::uint16_t>(i));
        rules.push_back(std::move(rule));
    }
    const auto refused = directory.publish(rules);
    for (const auto& name : refused)
        spdlog::warn(
            "peer group \"{}\" counts as \"other\" until a restart: {} peer names were already labelled "
            "since start-up",
            name, peer::kMaxPeerNames);
}

}  // namespace hepd::app
