#include "app/wiring.hpp"

namespace hepd::app {

ingest::IntakeOptions intake_options(const config::Config& cfg) {
    ingest::IntakeOptions o;
    for (const auto& pt : cfg.hep.payload_types) {
        const auto cls = hep::parse_payload_class(config::to_string(pt.payload_class));
        o.payload_types.set(pt.code, pt.name, cls.value_or(hep::PayloadClass::other));
    }
    o.auth_key = cfg.hep.auth_key;
    o.max_decompressed_bytes = cfg.hep.max_decompressed_bytes;
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

} // namespace hepd::app
