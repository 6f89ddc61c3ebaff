#include "app/wiring.hpp"

#include <spdlog/spdlog.h>

namespace hepd::app {

intake::IntakeOptions intake_options(const config::Config& cfg) {
    intake::IntakeOptions o;
    for (const auto& pt : cfg.hep.payload_types) o.payload_types.set(pt.code, pt.name, pt.payload_class);
    o.auth_key = cfg.hep.auth_key;
    o.max_decompressed_bytes = cfg.hep.max_decompressed_bytes;
    return o;
}

intake::IntakeOptions live_intake_options(const config::Config& cfg) {
    intake::IntakeOptions o = intake_options(cfg);
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
    s.streams.max_streams = cfg.tables.max_streams;
    s.streams.max_reported_streams = cfg.tables.max_streams;
    s.streams.max_pending_media = cfg.tables.max_pending_media;
    s.streams.stream_idle_timeout_us = cfg.timers.stream_idle_timeout.count();
    s.streams.pending_media_timeout_us = cfg.timers.max_call_duration.count();
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

// Configuration -> what ingest can change on SIGHUP (rate limits, auth key, allow list, agents).
ingest::IngestPolicy ingest_policy(const config::Config& cfg) {
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
    p.agents = intake::AgentMap(std::move(rules));
    if (p.agents.ignored_rules() > 0)
        spdlog::warn("{} agent entries ignored: at most {} agent names are labelled", p.agents.ignored_rules(),
                     intake::AgentMap::kMaxNames);
    return p;
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
