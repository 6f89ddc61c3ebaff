#pragma once
// Configuration → the options each module takes (modules do not depend on the config module).
#include "config/config.hpp"
#include "ingest/ingest_control.hpp"
#include "intake/hep_intake.hpp"
#include "pcap/capture_source.hpp"
#include "records/record_writer.hpp"
#include "relay/relay.hpp"
#include "shard/shard_worker.hpp"

namespace hepd::app {

// The intake of the daemon and of `hepd pcap`: every HEP sender's capture times kept on the
// receive clock (live: the wall clock; offline: the capture's frame times).
intake::IntakeOptions intake_options(const config::Config& cfg);
shard::ShardConfig shard_config(const config::Config& cfg);
pcap::CaptureOptions capture_options(const config::Config& cfg);
// records: with its path resolved under state.dir.
records::RecordWriterOptions record_writer_options(const config::Config& cfg);
// What ingest can change on SIGHUP: rate limits, auth key, allow list, agent names.
// `in_use`: on a reload, the policy running now (its agents keep their indices).
ingest::IngestPolicy ingest_policy(const config::Config& cfg, const ingest::IngestPolicy* in_use = nullptr);
// One relay destination, fed by `producers` receive threads.
relay::RelayOptions relay_options(const config::RelayDestinationConfig& destination, std::size_t producers);
// Publishes the configuration's peer groups (agents resolved through `agents`, the same
// configuration's map); logs the names that found no id. Start-up and SIGHUP.
void publish_peers(peer::PeerDirectory& directory, const config::Config& cfg, const intake::AgentMap& agents);

}  // namespace hepd::app
