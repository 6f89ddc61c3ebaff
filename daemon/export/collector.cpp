#include "export/collector.hpp"

#include "core/packet_meta.hpp"
#include "core/process_usage.hpp"
#include "core/version.hpp"
#include "export/convert.hpp"
#include "hep/error.hpp"
#include "hep/framer.hpp"
#include "hep/payload_type.hpp"
#include "hep/timestamp.hpp"
#include "ingest/tcp_stats.hpp"
#include "intake/agent_map.hpp"
#include "intake/intake_stats.hpp"
#include "peer/peer_groups.hpp"
#include "relay/relay.hpp"
#include "rtp/stream_stats.hpp"
#include "shard/pipeline.hpp"
#include "shard/shard_worker.hpp"
#include "sip/dialog_stats.hpp"

#include <array>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <string_view>
#include <utility>

namespace hepd::metrics {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

// Appends families in catalogue order; samples go to the family begun last.
class Collector::Writer {
public:
    using Labels = std::initializer_list<std::pair<std::string_view, std::string_view>>;

    void counter(std::string_view name, std::string_view help) { begin(name, help, MetricType::Counter); }
    void gauge(std::string_view name, std::string_view help) { begin(name, help, MetricType::Gauge); }
    void histogram(std::string_view name, std::string_view help) { begin(name, help, MetricType::Histogram); }

    void add(double value, Labels labels = {}) {
        ClientMetric m = with_labels(labels);
        if (families_.back().type == MetricType::Counter)
            m.counter.value = value;
        else
            m.gauge.value = value;
        families_.back().metric.push_back(std::move(m));
    }

    template <std::size_t N>
    void add(const Histogram<N>& h, Labels labels = {}) {
        ClientMetric m = with_labels(labels);
        m.histogram = to_client_histogram(h);
        families_.back().metric.push_back(std::move(m));
    }

    // One sample per value of a closed enum set, zeros included: `values` is indexed by the enum.
    template <class Enum, class Array>
    void by_enum(std::string_view label, const Array& values, std::size_t first = 0) {
        for (std::size_t i = first; i < values.size(); ++i)
            add(as_double(value_of(values[i])), {{label, to_string(static_cast<Enum>(i))}});
    }

    std::vector<MetricFamily> take() { return std::move(families_); }

private:
    void begin(std::string_view name, std::string_view help, MetricType type) {
        MetricFamily f;
        f.name = std::string(name);
        f.help = std::string(help);
        f.type = type;
        families_.push_back(std::move(f));
    }

    static ClientMetric with_labels(Labels labels) {
        ClientMetric m;
        m.label.reserve(labels.size());
        for (const auto& [name, value] : labels) m.label.push_back({std::string(name), std::string(value)});
        return m;
    }

    std::vector<MetricFamily> families_;
};

BuildInfo this_build() { return BuildInfo{kVersion, kGitCommit}; }

std::vector<std::string> agent_names(const intake::AgentMap& agents) {
    std::vector<std::string> names;
    names.reserve(agents.size());
    for (std::size_t i = 0; i < agents.size(); ++i) names.emplace_back(agents.name(i));
    return names;
}

Collector::Collector(CollectorOptions options) : options_(std::move(options)) {
    const auto& names = options_.agent_names;
    if (names.empty() || names.front() != "other")
        throw std::invalid_argument("agent names: index 0 must be \"other\"");
    if (names.size() > kMaxAgents)
        throw std::invalid_argument("agent names: at most " + std::to_string(kMaxAgents - 1) + " configured agents");
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (names[i].empty()) throw std::invalid_argument("agent names: empty name at index " + std::to_string(i));
        for (std::size_t j = 0; j < i; ++j)
            if (names[i] == names[j]) throw std::invalid_argument("agent names: \"" + names[i] + "\" appears twice");
    }
    std::copy(names.begin(), names.end(), agent_names_.begin());
    agent_count_.store(names.size(), std::memory_order_release);
}

void Collector::publish_agent_names(const std::vector<std::string>& names) {
    const std::size_t known = agent_count_.load(std::memory_order_relaxed);
    const std::size_t count = std::min(names.size(), agent_names_.size());
    if (count <= known) return;
    std::copy(names.begin() + static_cast<std::ptrdiff_t>(known), names.begin() + static_cast<std::ptrdiff_t>(count),
              agent_names_.begin() + static_cast<std::ptrdiff_t>(known));
    agent_count_.store(count, std::memory_order_release);
}

void Collector::add_shard(const shard::ShardWorker& worker) { shards_.push_back(&worker); }
void Collector::add_intake(const intake::IntakeStats& stats) { intakes_.push_back(&stats); }
void Collector::add_source_limiter(const ingest::SourceLimiterStats& stats) { source_limiters_.push_back(&stats); }
void Collector::add_tcp(const ingest::TcpStats& stats) { tcp_.push_back(&stats); }
void Collector::set_pipeline(const shard::Pipeline& pipeline) { pipeline_ = &pipeline; }
void Collector::set_kernel_drops(std::function<std::uint64_t()> read) { kernel_drops_ = std::move(read); }
void Collector::set_snapshot(std::function<SnapshotFigures()> read) { snapshot_ = std::move(read); }
void Collector::add_relay(const relay::Relay& relay) { relays_.push_back(&relay); }
void Collector::set_records(std::function<RecordFigures()> read) { records_ = std::move(read); }

std::vector<MetricFamily> Collector::Collect() const {
    Writer out;
    out.gauge("hepd_build_info", "Version and commit of the running hepd; always 1.");
    out.add(1, {{"version", options_.build.version}, {"commit", options_.build.commit}});
    intake::IntakeStats intake;
    for (const auto* s : intakes_) intake.merge(*s);
    collect_intake(out, intake);
    collect_shards(out);
    // Some 30 kB of SIP counters: summed on the heap, once per scrape.
    auto dialogs = std::make_unique<sip::DialogStats>();
    rtp::StreamStats streams;
    shard::DuplicateStats duplicates;
    for (const auto* w : shards_) {
        dialogs->merge(w->dialogs().stats());
        streams.merge(w->streams().stats());
        duplicates.merge(w->duplicate_stats());
    }
    collect_duplicates(out, duplicates);
    // The peer-labelled families have their other/other series from start-up, like the others.
    dialogs->by_peers.at(peer::kOtherPeer, peer::kOtherPeer);
    streams.by_peers.at(peer::kOtherPeer, peer::kOtherPeer);
    collect_sip(out, *dialogs);
    collect_rfc6076(out, *dialogs);
    collect_rtp(out, streams);
    collect_evictions(out, *dialogs, streams, intake, duplicates);
    collect_snapshot(out);
    collect_relay(out);
    collect_records(out);
    collect_process(out);
    return out.take();
}

void Collector::collect_intake(Writer& out, const intake::IntakeStats& in) const {
    constexpr std::array<std::string_view, 3> kVersions{"1", "2", "3"};

    out.counter("hepd_hep_received_packets_total",
                "HEP packets received, by carrier and HEP version (unknown: not HEP at all).");
    for (std::size_t c = 0; c < intake::kCarrierCount; ++c) {
        const auto transport = to_string(static_cast<intake::Carrier>(c));
        for (std::size_t v = 0; v < kVersions.size(); ++v)
            out.add(as_double(value_of(in.packets[c][v])), {{"transport", transport}, {"version", kVersions[v]}});
        out.add(as_double(value_of(in.undecodable_packets[c])), {{"transport", transport}, {"version", "unknown"}});
    }
    out.counter("hepd_hep_received_bytes_total", "Bytes of the HEP packets received, by carrier and HEP version.");
    for (std::size_t c = 0; c < intake::kCarrierCount; ++c) {
        const auto transport = to_string(static_cast<intake::Carrier>(c));
        for (std::size_t v = 0; v < kVersions.size(); ++v)
            out.add(as_double(value_of(in.bytes[c][v])), {{"transport", transport}, {"version", kVersions[v]}});
    }

    // queue_full: accepted, then dropped by a full shard queue (the intake is told per batch).
    out.counter("hepd_hep_dropped_packets_total", "HEP packets dropped, by reason.");
    out.by_enum<intake::DropReason>("reason", in.dropped);
    out.counter("hepd_hep_decode_errors_total", "HEP packets that did not decode, by decoder error.");
    out.by_enum<hep::DecodeError>("reason", in.decode_errors);
    out.counter("hepd_hep_timestamp_fixups_total", "HEP capture times corrected or replaced, by kind of fix-up.");
    out.by_enum<hep::TimestampFixup>("kind", in.timestamp_fixups, 1);  // 0 is "none": nothing fixed

    // Every configured agent, zeros included: the set is closed and small (the configuration's).
    const auto names = agent_names();
    auto by_agent_label = [&](const std::array<StatCounter, kMaxAgents>& counts) {
        std::array<std::uint64_t, kMaxAgents> by_agent{};
        for (std::size_t a = 0; a < kMaxAgents; ++a) by_agent[agent_label(a)] += value_of(counts[a]);
        for (std::size_t a = 0; a < names.size(); ++a) out.add(as_double(by_agent[a]), {{"agent", names[a]}});
    };
    out.counter("hepd_hep_clock_offset_exceeded_total",
                "Senders whose clock was measured beyond hep.clock_offset_limit from the receive time (their "
                "capture times are shifted by the measured offset), by capture agent.");
    by_agent_label(in.clocks.offset_exceeded);
    out.counter("hepd_hep_clock_steps_total",
                "Senders' clock offsets measured again after a capture time fell beyond hep.clock_offset_limit of "
                "the receive time (a clock step or a late delivery), by capture agent.");
    by_agent_label(in.clocks.steps);

    out.counter("hepd_hep_packets_total", "HEP packets accepted, by payload class and capture agent.");
    for (std::size_t p = 0; p < kPayloadClassCount; ++p) {
        std::array<std::uint64_t, kMaxAgents> by_agent{};
        for (std::size_t a = 0; a < kMaxAgents; ++a) by_agent[agent_label(a)] += value_of(in.by_type[p][a]);
        const auto payload_type = to_string(static_cast<PayloadClass>(p));
        for (std::size_t a = 0; a < names.size(); ++a)
            out.add(as_double(by_agent[a]), {{"payload_type", payload_type}, {"agent", names[a]}});
    }

    std::int64_t open = 0;
    std::uint64_t accepted = 0;
    std::uint64_t accept_errors = 0;
    std::array<std::uint64_t, ingest::kTcpCloseReasonCount> closed{};
    std::array<std::uint64_t, hep::framer_error_count> frame_errors{};
    for (const auto* t : tcp_) {
        open += static_cast<std::int64_t>(value_of(t->open_connections));
        accepted += value_of(t->accepted_connections);
        accept_errors += value_of(t->accept_errors);
        for (std::size_t i = 0; i < closed.size(); ++i) closed[i] += value_of(t->closed[i]);
        for (std::size_t i = 0; i < frame_errors.size(); ++i) frame_errors[i] += value_of(t->frame_errors[i]);
    }
    out.gauge("hepd_tcp_connections", "HEP-over-TCP connections open.");
    out.add(as_double(open));
    out.counter("hepd_tcp_connections_accepted_total", "HEP-over-TCP connections accepted.");
    out.add(as_double(accepted));
    out.counter("hepd_tcp_connections_closed_total", "HEP-over-TCP connections closed, by reason.");
    out.by_enum<ingest::TcpCloseReason>("reason", closed);
    out.counter("hepd_tcp_accept_errors_total",
                "Failed accept() calls on the HEP TCP listeners (e.g. out of descriptors).");
    out.add(as_double(accept_errors));
    out.counter("hepd_tcp_frame_errors_total", "HEP-over-TCP streams cut because a frame header was bad, by error.");
    out.by_enum<hep::FramerError>("reason", frame_errors);

    out.counter("hepd_udp_kernel_drops_total",
                "Datagrams the kernel dropped on the HEP UDP sockets (receive buffer full).");
    out.add(as_double(kernel_drops_ ? kernel_drops_() : 0));
}

void Collector::collect_shards(Writer& out) const {
    out.gauge("hepd_shard_queue_depth", "Batches waiting in a shard's input queues.");
    if (pipeline_ != nullptr)
        for (std::size_t s = 0; s < pipeline_->shards(); ++s)
            out.add(as_double(pipeline_->queue_depth(s)), {{"shard", std::to_string(s)}});
    out.counter("hepd_shard_queue_dropped_datagrams_total", "Datagrams dropped because a shard's queue was full.");
    out.add(as_double(pipeline_ != nullptr ? pipeline_->queue_full_drops() : 0));
    out.counter("hepd_shard_queue_dropped_bindings_total",
                "Media bindings lost between shards because a shard-to-shard queue was full.");
    out.add(as_double(pipeline_ != nullptr ? pipeline_->binding_drops() : 0));
    out.counter(
        "hepd_shard_wakeups_total",
        "Times a shard thread slept for want of work and was woken (by traffic, a peer, a snapshot or its idle tick).");
    if (pipeline_ != nullptr)
        for (std::size_t s = 0; s < pipeline_->shards(); ++s)
            out.add(as_double(pipeline_->wakeups(s)), {{"shard", std::to_string(s)}});

    out.counter("hepd_shard_datagrams_total", "Datagrams processed, by shard and payload kind.");
    for (std::size_t s = 0; s < shards_.size(); ++s) {
        const std::string shard = std::to_string(s);
        const auto& datagrams = shards_[s]->stats().datagrams;
        for (std::size_t k = 0; k < datagrams.size(); ++k)
            out.add(as_double(value_of(datagrams[k])),
                    {{"shard", shard}, {"kind", to_string(static_cast<PayloadClass>(k))}});
    }
    std::uint64_t sent = 0;
    std::uint64_t received = 0;
    for (const auto* w : shards_) {
        sent += value_of(w->stats().bindings_sent);
        received += value_of(w->stats().bindings_received);
    }
    out.counter("hepd_shard_bindings_total",
                "Media bindings (SDP address -> Call-ID) sent by the shard owning a dialog and received by the "
                "shard owning the media address.");
    out.add(as_double(sent), {{"direction", "sent"}});
    out.add(as_double(received), {{"direction", "received"}});
    std::uint64_t unbinds_sent = 0;
    std::uint64_t unbinds_received = 0;
    for (const auto* w : shards_) {
        unbinds_sent += value_of(w->stats().unbinds_sent);
        unbinds_received += value_of(w->stats().unbinds_received);
    }
    out.counter("hepd_shard_unbinds_total",
                "Ends of a dialog's media bindings (one per media address of a dialog leaving its table) sent "
                "by the shard owning the dialog and received by the shard owning the media address.");
    out.add(as_double(unbinds_sent), {{"direction", "sent"}});
    out.add(as_double(unbinds_received), {{"direction", "received"}});

    // Summed over shards, as hepd_table_evictions_total is; each shard refreshes its figures once
    // a second of packet time.
    const auto bytes = shard::total_table_memory_bytes(shards_);
    out.gauge("hepd_table_memory_bytes",
              "Bytes held by the shards' tables (their structures and the key text they own), by table.");
    for (std::size_t t = 0; t < bytes.size(); ++t)
        out.add(static_cast<double>(bytes[t]), {{"table", std::string(shard::kTableNames[t])}});
}

void Collector::collect_sip(Writer& out, const sip::DialogStats& d) const {
    const auto names = agent_names();
    auto method_name = [](std::size_t m) { return to_string(static_cast<sip::Method>(m)); };

    // method x agent (x status class) is large and mostly empty: only series seen are exported.
    out.counter("hepd_sip_requests_total",
                "SIP requests seen (retransmissions included), by method and capture agent.");
    for (std::size_t m = 0; m < sip::kMethodCount; ++m) {
        std::array<std::uint64_t, kMaxAgents> by_agent{};
        for (std::size_t a = 0; a < kMaxAgents; ++a) by_agent[agent_label(a)] += value_of(d.requests[m][a]);
        for (std::size_t a = 0; a < names.size(); ++a)
            if (by_agent[a] != 0) out.add(as_double(by_agent[a]), {{"method", method_name(m)}, {"agent", names[a]}});
    }
    out.counter("hepd_sip_responses_total",
                "SIP responses seen, by method of the CSeq, status class and capture agent.");
    for (std::size_t m = 0; m < sip::kMethodCount; ++m) {
        for (std::size_t c = 0; c < sip::kStatusClassCount; ++c) {
            std::array<std::uint64_t, kMaxAgents> by_agent{};
            for (std::size_t a = 0; a < kMaxAgents; ++a) by_agent[agent_label(a)] += value_of(d.responses[m][c][a]);
            for (std::size_t a = 0; a < names.size(); ++a)
                if (by_agent[a] != 0)
                    out.add(
                        as_double(by_agent[a]),
                        {{"method", method_name(m)}, {"status_class", sip::status_class_name(c)}, {"agent", names[a]}});
        }
    }
    out.counter("hepd_sip_retransmissions_total", "SIP retransmissions recognised, by method.");
    out.by_enum<sip::Method>("method", d.retransmissions);
    out.counter("hepd_sip_parse_errors_total", "SIP messages that did not parse, by reason.");
    out.by_enum<sip::ParseError>("reason", d.parse_errors);
    out.counter("hepd_sdp_parse_errors_total", "SDP bodies that did not parse, by reason.");
    out.by_enum<sip::SdpError>("reason", d.sdp_errors);
    out.counter("hepd_sip_anomalies_total", "SIP messages the dialog and transaction tables could not use, by reason.");
    out.by_enum<sip::DialogAnomaly>("reason", d.anomalies);
    out.counter("hepd_sip_defects_total", "SIP messages used as far as they go although defective, by reason.");
    out.by_enum<sip::MessageDefect>("reason", d.defects);

    out.counter("hepd_dialogs_created_total", "INVITE dialogs started.");
    out.add(as_double(value_of(d.dialogs_created)));
    out.gauge("hepd_dialogs_active",
              "Dialog records held, by state (terminal states linger briefly after the end of the call).");
    out.by_enum<sip::DialogState>("state", d.dialogs_by_state);
    out.counter("hepd_dialogs_evicted_total",
                "Dialogs evicted from a full dialog table, by the state they were in (ended ones first, then "
                "unanswered ones, ringing ones, confirmed calls last).");
    out.by_enum<sip::DialogState>("state", d.dialog_evictions);
    // The families labelled by peer groups: one series set per pair of groups seen.
    auto by_peers = [&](auto&& add) {
        d.by_peers.for_each([&](peer::PeerId caller, peer::PeerId callee, const sip::PeerDialogFigures& f) {
            add(f, peer_name(caller), peer_name(callee));
        });
    };
    out.counter("hepd_dialogs_finished_total", "INVITE dialogs ended, by outcome and peer groups.");
    by_peers([&](const sip::PeerDialogFigures& f, std::string_view caller, std::string_view callee) {
        for (std::size_t o = 0; o < sip::kDialogOutcomeCount; ++o)
            out.add(as_double(value_of(f.finished[o])), {{"outcome", to_string(static_cast<sip::DialogOutcome>(o))},
                                                         {"caller_peer", caller},
                                                         {"callee_peer", callee}});
    });
    out.counter("hepd_dialog_reinvites_total", "re-INVITEs within established dialogs.");
    out.add(as_double(value_of(d.reinvites)));
    out.counter("hepd_dialogs_forked_total", "Dialogs that received answers from more than one callee (forking).");
    out.add(as_double(value_of(d.forked_dialogs)));
    out.histogram("hepd_dialog_pdd_seconds", "Post-dial delay: INVITE to the first ringing, by peer groups.");
    by_peers([&](const sip::PeerDialogFigures& f, std::string_view caller, std::string_view callee) {
        out.add(f.pdd, {{"caller_peer", caller}, {"callee_peer", callee}});
    });
    out.histogram("hepd_dialog_setup_seconds", "Call set-up time: INVITE to the 2xx answer, by peer groups.");
    by_peers([&](const sip::PeerDialogFigures& f, std::string_view caller, std::string_view callee) {
        out.add(f.setup, {{"caller_peer", caller}, {"callee_peer", callee}});
    });
    out.histogram("hepd_dialog_duration_seconds", "Call duration: answer to BYE, by peer groups.");
    by_peers([&](const sip::PeerDialogFigures& f, std::string_view caller, std::string_view callee) {
        out.add(f.duration, {{"caller_peer", caller}, {"callee_peer", callee}});
    });
    out.counter("hepd_sip_q850_causes_total", "Finished dialogs that carried a Q.850 cause (Reason header), by cause.");
    for (std::size_t c = 0; c < sip::kQ850Slots; ++c) {
        const std::uint64_t n = value_of(d.q850_causes[c]);
        if (n == 0) continue;
        const std::string cause = c + 1 < sip::kQ850Slots ? std::to_string(c) : std::string("other");
        out.add(as_double(n), {{"cause", cause}});
    }

    out.counter("hepd_sip_transactions_started_total", "Non-INVITE transactions outside dialogs started, by method.");
    out.by_enum<sip::Method>("method", d.transactions_started);
    out.counter("hepd_sip_transactions_total",
                "Non-INVITE transactions outside dialogs ended, by method and outcome (final status class, "
                "timed_out or evicted).");
    for (std::size_t m = 0; m < sip::kMethodCount; ++m)
        for (std::size_t o = 0; o < sip::kTransactionOutcomeCount; ++o)
            if (const std::uint64_t n = value_of(d.transactions_finished[m][o]); n != 0)
                out.add(as_double(n),
                        {{"method", method_name(m)}, {"outcome", to_string(static_cast<sip::TransactionOutcome>(o))}});
    out.gauge("hepd_sip_transactions_active",
              "Non-INVITE transactions held: pending (no final response yet) or lingering (answered, absorbing "
              "retransmissions).");
    out.add(as_double(value_of(d.transactions_pending)), {{"state", "pending"}});
    out.add(as_double(value_of(d.transactions_lingering)), {{"state", "lingering"}});
    out.histogram("hepd_sip_transaction_delay_seconds",
                  "Non-INVITE transactions outside dialogs: request to final response, by method.");
    for (std::size_t m = 0; m < sip::kMethodCount; ++m)
        if (d.transaction_delay[m].count() != 0) out.add(d.transaction_delay[m], {{"method", method_name(m)}});
}

// RFC 6076 figures; METRICS.md says which section each follows and how the ratios are built.
void Collector::collect_rfc6076(Writer& out, const sip::DialogStats& d) const {
    out.histogram("hepd_sip_srd_seconds",
                  "RFC 6076 session request delay: INVITE to the first provisional other than 100, else to the "
                  "final response; by result of that response (success, failure) and peer groups.");
    d.by_peers.for_each([&](peer::PeerId caller, peer::PeerId callee, const sip::PeerDialogFigures& f) {
        for (std::size_t r = 0; r < sip::kSetupResultCount; ++r)
            out.add(f.srd[r], {{"result", to_string(static_cast<sip::SetupResult>(r))},
                               {"caller_peer", peer_name(caller)},
                               {"callee_peer", peer_name(callee)}});
    });
    out.histogram("hepd_sip_sdd_seconds", "RFC 6076 session disconnect delay: BYE to its final response.");
    out.add(d.sdd);
    out.counter("hepd_dialogs_final_status_total",
                "INVITE dialogs by final response to the INVITE (none: ended without one) and peer groups, "
                "counted when the set-up is decided.");
    d.by_peers.for_each([&](peer::PeerId caller, peer::PeerId callee, const sip::PeerDialogFigures& f) {
        for (std::size_t c = 0; c < sip::kFinalStatusCount; ++c)
            out.add(as_double(value_of(f.final_status[c])), {{"code", sip::kFinalStatusNames[c]},
                                                             {"caller_peer", peer_name(caller)},
                                                             {"callee_peer", peer_name(callee)}});
    });
    out.histogram("hepd_sip_rrd_seconds",
                  "RFC 6076 registration request delay: first REGISTER of an attempt (401/407 retries included) "
                  "to its 2xx.");
    out.add(d.rrd);
    out.counter("hepd_sip_registrations_total",
                "Registration attempts (a REGISTER and its retries after 401/407/423) ended, by result (success, "
                "failure, timeout).");
    out.by_enum<sip::RegistrationResult>("result", d.registrations);
}

void Collector::collect_rtp(Writer& out, const rtp::StreamStats& s) const {
    // The families labelled by peer groups (those of the stream's dialog).
    auto by_peers = [&](auto&& add) {
        s.by_peers.for_each([&](peer::PeerId caller, peer::PeerId callee, const rtp::PeerStreamFigures& f) {
            add(f, peer_name(caller), peer_name(callee));
        });
    };
    out.gauge("hepd_rtp_streams_active", "RTP streams tracked.");
    out.add(as_double(value_of(s.streams_active)));
    out.counter("hepd_rtp_streams_started_total", "RTP streams seen for the first time.");
    out.add(as_double(value_of(s.streams_started)));
    // The per-stream families carry `source`: measured from captured RTP, or rtcp (streams known
    // only from their receivers' RTCP-JSON reports).
    const auto measured = to_string(rtp::StreamSource::measured);
    const auto reported = to_string(rtp::StreamSource::rtcp);
    const rtp::ReportedStreamStats& r = s.reported;
    out.counter("hepd_rtp_streams_finished_total",
                "RTP streams ended, by source (measured, rtcp) and reason (idle, evicted, flushed, rebound, "
                "restarted, call_ended).");
    for (std::size_t i = 0; i < rtp::kFinishReasonCount; ++i) {
        const auto reason = to_string(static_cast<rtp::FinishReason>(i));
        out.add(as_double(value_of(s.streams_finished[i])), {{"source", measured}, {"reason", reason}});
        out.add(as_double(value_of(r.finished[i])), {{"source", reported}, {"reason", reason}});
    }
    out.counter("hepd_rtp_streams_by_codec_total", "Finished RTP streams, by source and codec.");
    for (std::size_t i = 0; i < rtp::kCodecLabelCount; ++i) {
        const auto codec = to_string(static_cast<rtp::CodecLabel>(i));
        out.add(as_double(value_of(s.finished_streams_by_codec[i])), {{"source", measured}, {"codec", codec}});
        out.add(as_double(value_of(r.by_codec[i])), {{"source", reported}, {"codec", codec}});
    }
    out.counter("hepd_rtp_packets_total", "RTP packets received (duplicates included).");
    out.add(as_double(value_of(s.rtp_packets)));
    out.counter("hepd_rtp_payload_bytes_total", "RTP payload bytes received.");
    out.add(as_double(value_of(s.rtp_bytes)));
    // lost, jitter and MOS also carry the peer groups of the stream's dialog.
    auto by_source_and_peers = [&](auto&& add) {
        for (std::size_t src = 0; src < rtp::kStreamSourceCount; ++src) {
            const auto source = to_string(static_cast<rtp::StreamSource>(src));
            by_peers([&](const rtp::PeerStreamFigures& f, std::string_view caller, std::string_view callee) {
                add(f.by_source[src], {{"source", source}, {"caller_peer", caller}, {"callee_peer", callee}});
            });
        }
    };
    using SourceFigures = rtp::PeerStreamFigures::Figures;
    out.counter("hepd_rtp_lost_packets_total",
                "RTP packets lost, counted when a stream ends: expected minus received (measured), or the "
                "receiver's last cumulative number lost (rtcp); by peer groups.");
    by_source_and_peers([&](const SourceFigures& f, const Writer::Labels& labels) {
        out.add(as_double(value_of(f.lost_packets)), labels);
    });
    out.counter("hepd_rtp_duplicate_packets_total", "RTP packets received more than once.");
    out.add(as_double(value_of(s.duplicate_packets)));
    out.counter("hepd_rtp_out_of_order_packets_total", "RTP packets that arrived after a later one.");
    out.add(as_double(value_of(s.out_of_order_packets)));
    out.counter("hepd_rtp_event_packets_total", "RTP telephone-event packets (RFC 4733).");
    out.add(as_double(value_of(s.event_packets)));
    out.histogram("hepd_rtp_jitter_seconds",
                  "Largest interarrival jitter of each finished RTP stream (measured, or the largest reported), by "
                  "peer groups.");
    by_source_and_peers(
        [&](const SourceFigures& f, const Writer::Labels& labels) { out.add(f.jitter_seconds, labels); });
    out.histogram("hepd_rtp_mos", "Estimated MOS (E-model) of each finished RTP stream, by source and peer groups.");
    by_source_and_peers([&](const SourceFigures& f, const Writer::Labels& labels) { out.add(f.mos, labels); });
    out.histogram("hepd_rtp_loss_ratio",
                  "Loss of each finished RTP stream, 0..1 (measured, or the mean reported fraction lost).");
    out.add(s.loss_ratio, {{"source", measured}});
    out.add(r.loss_ratio, {{"source", reported}});
    out.histogram("hepd_rtp_rtt_seconds",
                  "Last round-trip time (RTCP LSR/DLSR) of each finished RTP stream that had one.");
    out.add(s.rtt_seconds, {{"source", measured}});
    out.add(r.rtt_seconds, {{"source", reported}});
    out.gauge("hepd_rtp_pending_bindings", "Media bindings from SDP waiting for their RTP streams.");
    out.add(as_double(value_of(s.pending_bindings)));
    out.counter("hepd_rtp_binding_events_total",
                "Media bindings that did not attach cleanly: late (streams already running), rebound (SDP of "
                "another call for a pair or address with running streams), expired (no stream came), ambiguous "
                "(a stream from a sender no SDP named, to an address several calls share: left unbound), untracked (a "
                "late one naming CN, events or voice a dynamic payload type that came before it and that the "
                "stream did not note, more than two: its packets stay voice or events as counted).");
    out.add(as_double(value_of(s.late_bindings)), {{"event", "late"}});
    out.add(as_double(value_of(s.rebindings)), {{"event", "rebound"}});
    out.add(as_double(value_of(s.pending_bindings_expired)), {{"event", "expired"}});
    out.add(as_double(value_of(s.bindings_released)), {{"event", "released"}});
    out.add(as_double(value_of(s.ambiguous_bindings)), {{"event", "ambiguous"}});
    out.add(as_double(value_of(s.untracked_late_types)), {{"event", "untracked"}});
    out.counter("hepd_rtp_clock_rate_unmatched_total",
                "Finished RTP streams whose SDP clock rate matched no candidate (jitter taken at the best guess).");
    out.add(as_double(value_of(s.clock_rate_unmatched)));
    out.counter("hepd_rtp_streams_unvalidated_total",
                "Finished RTP streams that never passed RFC 3550 probation (two packets in sequence): no loss, "
                "jitter or MOS is scored for them.");
    out.add(as_double(value_of(s.unvalidated_streams)));
    out.counter("hepd_rtp_parse_errors_total", "RTP packets that did not parse, by reason.");
    out.by_enum<rtp::RtpError>("reason", s.rtp_errors);

    out.counter("hepd_rtcp_reports_total", "RTCP reports used, by source (rtcp, rtcp_json, xr).");
    out.by_enum<rtp::ReportSource>("source", s.rtcp_reports);
    out.histogram("hepd_rtcp_fraction_lost", "Fraction lost (0..1) reported by RTCP report blocks.");
    out.add(s.rtcp_fraction_lost);
    out.histogram("hepd_rtcp_rtt_seconds", "Round-trip time derived from RTCP reports.");
    out.add(s.rtcp_rtt_seconds);
    out.gauge("hepd_rtcp_reported_streams",
              "Streams known only from receivers' RTCP-JSON reports, or RTCP from an a=rtcp address.");
    out.add(as_double(value_of(s.reported_streams_active)));
    out.counter("hepd_rtcp_unmatched_blocks_total", "RTCP report or XR blocks about no known stream.");
    out.add(as_double(value_of(s.rtcp_unmatched_blocks)));
    out.counter("hepd_rtcp_json_uncorrelated_total", "RTCP-JSON reports dropped for want of a usable correlation id.");
    out.add(as_double(value_of(s.rtcp_json_without_call_id)));
    out.counter("hepd_rtcp_parse_errors_total", "RTCP packets that did not parse, by reason.");
    out.by_enum<rtp::RtcpError>("reason", s.rtcp_errors);
    out.counter("hepd_rtcp_json_parse_errors_total", "RTCP-JSON reports that did not parse, by reason.");
    out.by_enum<rtp::RtcpJsonError>("reason", s.rtcp_json_errors);
}

void Collector::collect_duplicates(Writer& out, const shard::DuplicateStats& dup) {
    out.counter("hepd_duplicates_total",
                "Copies of a packet another capture agent sent within duplicates.window, dropped before the "
                "tables, by payload kind.");
    out.by_enum<PayloadClass>("kind", dup.duplicates);
}

std::string_view Collector::peer_name(std::uint8_t id) const noexcept {
    return options_.peers != nullptr ? options_.peers->name(id) : std::string_view("other");
}

void Collector::collect_evictions(Writer& out, const sip::DialogStats& d, const rtp::StreamStats& s,
                                  const intake::IntakeStats& in, const shard::DuplicateStats& dup) const {
    out.counter("hepd_table_evictions_total", "Records evicted from a full table (at its cap), by table and reason.");
    out.add(as_double(d.dialog_evictions_total()), {{"table", "dialogs"}, {"reason", "cap"}});
    out.add(as_double(value_of(d.transaction_evictions)), {{"table", "transactions"}, {"reason", "cap"}});
    for (std::size_t t = 0; t < rtp::kStreamTableKindCount; ++t)
        out.add(as_double(value_of(s.evictions[t])),
                {{"table", to_string(static_cast<rtp::StreamTableKind>(t))}, {"reason", "cap"}});
    out.add(as_double(value_of(in.clocks.evictions)), {{"table", "hep_senders"}, {"reason", "cap"}});
    out.add(as_double(value_of(dup.evictions)), {{"table", "duplicates"}, {"reason", "cap"}});
    // A sender evicted from the per-sender buckets comes back with a full burst: many source
    // addresses (spoofed UDP) wear the per-agent rate limit down, and this shows it.
    std::uint64_t limiter_evictions = 0;
    for (const auto* l : source_limiters_) limiter_evictions += value_of(l->evictions);
    out.add(as_double(limiter_evictions), {{"table", "hep_rate_limit"}, {"reason", "cap"}});
}

void Collector::collect_snapshot(Writer& out) const {
    const SnapshotFigures f = snapshot_ ? snapshot_() : SnapshotFigures{};
    out.gauge("hepd_snapshot_duration_seconds", "Time the last snapshot attempt took.");
    out.add(f.last_duration_seconds);
    out.counter("hepd_snapshot_failures_total", "Snapshots that could not be written.");
    out.add(as_double(f.failures));
    out.gauge("hepd_snapshot_last_success_timestamp_seconds", "Unix time of the last snapshot written (0: none yet).");
    out.add(f.last_success_unix_seconds);
    out.gauge("hepd_snapshot_shard_pause_seconds",
              "Time the shards took no packets while they copied their tables for the last snapshot.");
    out.add(f.last_shard_pause_seconds);
}

// The HEP relay, per destination (a closed set: the configuration's names). Without `relay:`
// destinations the families are left out altogether: a family without samples tells nothing.
void Collector::collect_relay(Writer& out) const {
    if (relays_.empty()) return;
    std::vector<relay::RelayFigures> figures;
    figures.reserve(relays_.size());
    for (const auto* r : relays_) figures.push_back(r->figures());
    auto each = [&](auto value_of_figures) {
        for (std::size_t i = 0; i < relays_.size(); ++i)
            out.add(as_double(value_of_figures(figures[i])), {{"destination", relays_[i]->options().name}});
    };
    out.counter("hepd_relay_messages_total",
                "Accepted HEP messages relayed to a downstream collector, by destination.");
    each([](const relay::RelayFigures& f) { return f.messages; });
    out.counter("hepd_relay_bytes_total", "Bytes of the HEP messages relayed, by destination.");
    each([](const relay::RelayFigures& f) { return f.bytes; });
    out.counter("hepd_relay_dropped_messages_total",
                "Accepted HEP messages not relayed, by destination and reason (queue_full, send_error, "
                "not_connected, unframable, shutdown).");
    for (std::size_t i = 0; i < relays_.size(); ++i)
        for (std::size_t r = 0; r < relay::kDropReasonCount; ++r)
            out.add(as_double(figures[i].dropped[r]), {{"destination", relays_[i]->options().name},
                                                       {"reason", to_string(static_cast<relay::DropReason>(r))}});
    out.gauge("hepd_relay_connected",
              "1 while the relay to a destination is connected (UDP: its address resolved), else 0.");
    each([](const relay::RelayFigures& f) { return f.connected; });
    out.counter("hepd_relay_reconnects_total", "Connections to a destination made again after one was lost.");
    each([](const relay::RelayFigures& f) { return f.reconnects; });
    out.counter("hepd_relay_connect_failures_total", "Connection attempts to a destination that failed.");
    each([](const relay::RelayFigures& f) { return f.connect_failures; });
    out.gauge("hepd_relay_queued_bytes", "Bytes waiting in a destination's queues.");
    each([](const relay::RelayFigures& f) { return f.queued_bytes; });
}

void Collector::collect_records(Writer& out) const {
    const RecordFigures f = records_ ? records_() : RecordFigures{};
    out.counter("hepd_records_written_total", "Call records written to the record file.");
    out.add(as_double(f.written));
    out.counter("hepd_records_written_bytes_total", "Bytes of call records written to the record file.");
    out.add(as_double(f.bytes));
    out.counter("hepd_records_rotations_total", "Times the call-record file was rotated.");
    out.add(as_double(f.rotations));
    out.counter("hepd_records_write_errors_total",
                "Failed opens, writes, truncations, renames and removals of call-record files.");
    out.add(as_double(f.write_errors));
    out.counter("hepd_records_reopens_total",
                "Times the call-record file was found removed or replaced (rm, logrotate) and opened again.");
    out.add(as_double(f.reopens));
    out.counter("hepd_records_truncated_lines_total",
                "Partial last lines (a write cut by a crash or power loss) cut off the call-record file when opened.");
    out.add(as_double(f.truncated_lines));
    out.counter("hepd_records_dropped_total",
                "Dialogs, streams or lines that did not reach the call-record file, by reason.");
    for (std::size_t r = 0; r < f.dropped.size(); ++r)
        out.add(as_double(f.dropped[r]),
                {{"reason", std::string(records::to_string(static_cast<records::DropReason>(r)))}});
    out.counter("hepd_records_unbound_streams_total",
                "Finished streams no SDP bound to a call: measured, but in no call record.");
    out.add(as_double(f.unbound_streams));
    out.gauge("hepd_records_held_dialogs", "Finished dialogs waiting out records.hold before their record is written.");
    out.add(static_cast<double>(f.held));
    out.gauge("hepd_records_waiting_streams", "Finished streams and reports waiting for their dialog to finish.");
    out.add(static_cast<double>(f.waiting));
}

// The names, types and meanings every Prometheus client library gives them (client_golang,
// client_python), so that dashboards and alerts written for any process work for hepd. Absent
// when /proc cannot be read.
void Collector::collect_process(Writer& out) {
    const auto usage = read_process_usage();
    if (!usage) return;
    out.counter("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.");
    out.add(usage->cpu_seconds);
    out.gauge("process_resident_memory_bytes", "Resident memory size in bytes.");
    out.add(static_cast<double>(usage->resident_bytes));
    out.gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.");
    out.add(static_cast<double>(usage->virtual_bytes));
    out.gauge("process_open_fds", "Number of open file descriptors.");
    out.add(static_cast<double>(usage->open_fds));
    out.gauge("process_max_fds", "Maximum number of open file descriptors.");
    out.add(static_cast<double>(usage->max_fds));
    // Left out rather than 0 (a start in 1970) when it cannot be known.
    if (usage->start_time_seconds) {
        out.gauge("process_start_time_seconds", "Start time of the process since unix epoch in seconds.");
        out.add(*usage->start_time_seconds);
    }
}

}  // namespace hepd::metrics
