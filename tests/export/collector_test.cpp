// The collector without HTTP: conversions checked by hand, the agent label, which series are
// always there and which only when seen, and shards summing exactly.
#include "export/collector.hpp"

#include "checks.hpp"
#include "estate.hpp"
#include "export/convert.hpp"
#include "intake/agent_map.hpp"
#include "peer/peer_groups.hpp"
#include "relay/relay.hpp"
#include "scrape.hpp"

#include <catch2/catch.hpp>

#include <set>

using namespace hepd;
using hepd::test::Exposition;
using hepd::test::to_exposition;

namespace {

// Single-shard semantics: every media address belongs to the shard that saw the SDP.
class SelfSink final : public shard::BindingSink {
public:
    explicit SelfSink(shard::ShardWorker& w) : worker_(w) {}
    void send(const MediaBinding& binding) override { worker_.bind(binding); }

private:
    shard::ShardWorker& worker_;
};

gen::Truth feed(shard::ShardWorker& worker, const gen::CorpusOptions& options) {
    SelfSink sink(worker);
    Timestamp last{};
    auto truth = gen::generate(options, [&](Timestamp t, const Endpoint& s, const Endpoint& d, ByteSpan p) {
        shard::Datagram dg;
        dg.time = t;
        dg.src = s;
        dg.dst = d;
        const bool sip = s.port == 5060 || d.port == 5060;
        dg.kind = sip ? PayloadClass::sip : PayloadClass::rtp;
        dg.agent = sip ? 1 : 0;
        dg.payload = p;
        worker.process(dg, sink);
        last = t;
    });
    worker.finish(last);
    return truth;
}

void send_sip(shard::ShardWorker& worker, std::string_view text, std::uint16_t agent, std::int64_t at_us) {
    struct Discard final : shard::BindingSink {
        void send(const MediaBinding&) override {}
    } discard;
    shard::Datagram d;
    d.time = Timestamp{at_us};
    d.src = Endpoint{IpAddress::v4(0x0a000001U), 5060};
    d.dst = Endpoint{IpAddress::v4(0x0a000002U), 5060};
    d.kind = PayloadClass::sip;
    d.agent = agent;
    d.from_agent = true;
    d.payload = as_bytes(text);
    worker.process(d, discard);
}

std::string options_request(int n) {
    return "OPTIONS sip:x@10.0.0.2 SIP/2.0\r\nVia: SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bK-" + std::to_string(n) +
           "\r\nFrom: <sip:m@10.0.0.1>;tag=f" + std::to_string(n) + "\r\nTo: <sip:x@10.0.0.2>\r\nCall-ID: c" +
           std::to_string(n) + "\r\nCSeq: 1 OPTIONS\r\nContent-Length: 0\r\n\r\n";
}

using L = test::Labels;

}  // namespace

TEST_CASE("histograms: core buckets become cumulative Prometheus buckets", "[export][convert]") {
    Histogram<3> h{{1.0, 2.0, 5.0}};
    for (double v : {0.5, 1.0, 1.5, 7.0}) h.observe(v);
    // Non-cumulative: le1 {0.5, 1.0}, le2 {1.5}, le5 {}, +Inf {7.0}.
    const auto p = metrics::to_client_histogram(h);
    REQUIRE(p.bucket.size() == 3);  // +Inf is the serialiser's, from sample_count
    CHECK(p.bucket[0].upper_bound == 1.0);
    CHECK(p.bucket[0].cumulative_count == 2);
    CHECK(p.bucket[1].upper_bound == 2.0);
    CHECK(p.bucket[1].cumulative_count == 3);
    CHECK(p.bucket[2].upper_bound == 5.0);
    CHECK(p.bucket[2].cumulative_count == 3);
    CHECK(p.sample_count == 4);
    CHECK(p.sample_sum == 10.0);

    const Histogram<2> empty{{0.0, 1.0}};
    const auto z = metrics::to_client_histogram(empty);
    CHECK(z.bucket.size() == 2);
    CHECK(z.bucket[0].cumulative_count == 0);
    CHECK(z.bucket[1].cumulative_count == 0);
    CHECK(z.sample_count == 0);
    CHECK(z.sample_sum == 0.0);

    Histogram<1> overflow{{0.1}};
    overflow.observe(3.0);
    overflow.observe(4.0);
    const auto o = metrics::to_client_histogram(overflow);
    CHECK(o.bucket[0].cumulative_count == 0);
    CHECK(o.sample_count == 2);
    CHECK(o.sample_sum == 7.0);
}

TEST_CASE("value_of reads plain integers and core statistics alike", "[export][convert]") {
    CHECK(value_of(std::uint64_t{5}) == 5);
    Counter c;
    c.add(3);
    CHECK(value_of(c) == 3);
    StatCounter s;
    s.add(4);
    CHECK(value_of(s) == 4);
    Gauge g;
    g.add(-2);
    CHECK(value_of(g) == -2);
    const std::array<StatCounter, 2> a{};
    CHECK(value_of(a[1]) == 0);
}

TEST_CASE("agent names: other first, unique, bounded", "[export][agents]") {
    using V = std::vector<std::string>;
    auto make = [](V names) {
        metrics::CollectorOptions o;
        o.agent_names = std::move(names);
        return metrics::Collector(o);
    };
    CHECK_THROWS_AS(make({}), std::invalid_argument);
    CHECK_THROWS_AS(make({"kamailio"}), std::invalid_argument);
    CHECK_THROWS_AS(make({"other", "a", "a"}), std::invalid_argument);
    CHECK_THROWS_AS(make({"other", "other"}), std::invalid_argument);
    CHECK_THROWS_AS(make({"other", ""}), std::invalid_argument);
    V many{"other"};
    for (int i = 1; i < 32; ++i) many.push_back("a" + std::to_string(i));
    CHECK_NOTHROW(make(many));
    many.push_back("a32");
    CHECK_THROWS_AS(make(many), std::invalid_argument);

    CHECK(metrics::agent_names(intake::AgentMap{}) == V{"other"});
    CHECK(test::estate_agent_names() == V{"other", "kamailio", "asterisk"});
}

TEST_CASE("a collector with no sources still shows every fixed series at zero", "[export][collector]") {
    const metrics::Collector collector;
    const Exposition x = to_exposition(collector.Collect());

    // Label-less series are always there.
    for (const char* name :
         {"hepd_tcp_connections", "hepd_udp_kernel_drops_total", "hepd_shard_queue_dropped_datagrams_total",
          "hepd_rtp_packets_total", "hepd_rtp_streams_active", "hepd_dialogs_created_total",
          "hepd_snapshot_failures_total", "hepd_snapshot_duration_seconds",
          "hepd_snapshot_last_success_timestamp_seconds", "hepd_snapshot_shard_pause_seconds"}) {
        INFO(name);
        CHECK(x.at(name) == 0);
    }
    for (const char* name : {"hepd_rtcp_rtt_seconds"}) {
        INFO(name);
        CHECK(x.at(std::string(name) + "_count") == 0);
        CHECK(x.at(std::string(name) + "_bucket", {{"le", "+Inf"}}) == 0);
    }
    // Families labelled by peer groups: the other/other pair, at zero.
    CHECK(x.at("hepd_dialog_pdd_seconds_count", {{"caller_peer", "other"}, {"callee_peer", "other"}}) == 0);
    CHECK(x.at("hepd_dialog_pdd_seconds_bucket",
               {{"le", "+Inf"}, {"caller_peer", "other"}, {"callee_peer", "other"}}) == 0);
    // The per-stream families, for both sources (measured from RTP, reported over RTCP-JSON); MOS
    // and jitter by peer groups too.
    for (const char* source : {"measured", "rtcp"}) {
        for (const char* name : {"hepd_rtp_mos", "hepd_rtp_jitter_seconds"}) {
            INFO(name << " " << source);
            CHECK(x.at(std::string(name) + "_count",
                       {{"source", source}, {"caller_peer", "other"}, {"callee_peer", "other"}}) == 0);
            CHECK(x.at(std::string(name) + "_bucket",
                       {{"source", source}, {"caller_peer", "other"}, {"callee_peer", "other"}, {"le", "+Inf"}}) == 0);
        }
        for (const char* name : {"hepd_rtp_loss_ratio", "hepd_rtp_rtt_seconds"}) {
            INFO(name << " " << source);
            CHECK(x.at(std::string(name) + "_count", {{"source", source}}) == 0);
            CHECK(x.at(std::string(name) + "_bucket", {{"source", source}, {"le", "+Inf"}}) == 0);
        }
    }
    CHECK(x.find("hepd_rtp_streams_finished_total").size() == 2 * 6);
    CHECK(x.at("hepd_rtp_streams_finished_total", {{"source", "rtcp"}, {"reason", "idle"}}) == 0);
    CHECK(x.at("hepd_rtp_streams_finished_total", {{"source", "rtcp"}, {"reason", "call_ended"}}) == 0);
    CHECK(x.find("hepd_rtp_lost_packets_total").size() == 2);
    CHECK(x.find("hepd_shard_unbinds_total").size() == 2);
    // Small closed sets: every member, at zero.
    CHECK(x.find("hepd_dialogs_active").size() == 8);
    CHECK(x.find("hepd_dialogs_finished_total").size() == 5);
    CHECK(x.find("hepd_hep_dropped_packets_total").size() == 5);
    CHECK(x.find("hepd_hep_timestamp_fixups_total").size() == 6);
    CHECK(x.find("hepd_hep_packets_total").size() == kPayloadClassCount);  // agent "other" only
    CHECK(x.at("hepd_hep_packets_total", {{"payload_type", "qos"}, {"agent", "other"}}) == 0);
    CHECK(x.find("hepd_rtcp_reports_total").size() == 3);
    CHECK(x.find("hepd_table_evictions_total").size() == 8);
    CHECK(x.at("hepd_table_evictions_total", {{"table", "hep_senders"}, {"reason", "cap"}}) == 0);
    CHECK(x.at("hepd_table_evictions_total", {{"table", "hep_rate_limit"}, {"reason", "cap"}}) == 0);
    CHECK(x.at("hepd_table_evictions_total", {{"table", "duplicates"}, {"reason", "cap"}}) == 0);
    CHECK(x.find("hepd_duplicates_total").size() == kPayloadClassCount);
    CHECK(x.at("hepd_duplicates_total", {{"kind", "rtcp_json"}}) == 0);
    CHECK(x.find("hepd_hep_clock_offset_exceeded_total").size() == 1);  // agent "other" only
    CHECK(x.at("hepd_hep_clock_offset_exceeded_total", {{"agent", "other"}}) == 0);
    CHECK(x.at("hepd_hep_clock_steps_total", {{"agent", "other"}}) == 0);
    CHECK(x.find("hepd_rtp_parse_errors_total").size() == 8);
    CHECK(x.find("hepd_sip_parse_errors_total").size() == 12);
    CHECK(x.find("hepd_sip_defects_total").size() == 5);
    CHECK(x.at("hepd_sip_defects_total", {{"reason", "sdp_media_overflow"}}) == 0);
    CHECK(x.find("hepd_sip_retransmissions_total").size() == 15);
    CHECK(x.at("hepd_sip_retransmissions_total", {{"method", "other"}}) == 0);
    // Large label spaces: only what was seen; the family is still declared.
    for (const char* name : {"hepd_sip_requests_total", "hepd_sip_responses_total", "hepd_sip_q850_causes_total",
                             "hepd_sip_transactions_total", "hepd_shard_queue_depth", "hepd_shard_wakeups_total",
                             "hepd_shard_datagrams_total"}) {
        INFO(name);
        CHECK(x.types.count(name) == 1);
        CHECK(x.find(name).empty());
    }
    CHECK(x.at("hepd_build_info",
               {{"version", metrics::this_build().version}, {"commit", metrics::this_build().commit}}) == 1);
    CHECK(x.find("hepd_dialogs_final_status_total").size() == 19);
    CHECK(x.at("hepd_dialogs_final_status_total",
               {{"code", "none"}, {"caller_peer", "other"}, {"callee_peer", "other"}}) == 0);
    CHECK(x.find("hepd_sip_registrations_total").size() == 3);
    CHECK(x.at("hepd_sip_srd_seconds_count",
               {{"result", "failure"}, {"caller_peer", "other"}, {"callee_peer", "other"}}) == 0);
    CHECK(test::check_histograms(x) == 17);  // every histogram but the per-method transaction delay
    test::check_label_hygiene(x, 0);
}

TEST_CASE("the agent label: names by index, unnamed indices count as other", "[export][agents]") {
    shard::ShardWorker worker{shard::ShardConfig{}};
    // agent index -> requests sent: 0 and the unnamed 5 and 31 are all "other".
    const std::vector<std::pair<std::uint16_t, int>> sent{{0, 2}, {1, 3}, {5, 4}, {31, 1}};
    int n = 0;
    for (const auto& [agent, count] : sent)
        for (int i = 0; i < count; ++i, ++n) send_sip(worker, options_request(n), agent, 1'000'000 + n);

    metrics::CollectorOptions o;
    o.agent_names = {"other", "edge", "core"};
    metrics::Collector collector(o);
    collector.add_shard(worker);
    const Exposition x = to_exposition(collector.Collect());
    CHECK(x.at("hepd_sip_requests_total", {{"method", "OPTIONS"}, {"agent", "other"}}) == 2 + 4 + 1);
    CHECK(x.at("hepd_sip_requests_total", {{"method", "OPTIONS"}, {"agent", "edge"}}) == 3);
    CHECK(!x.value("hepd_sip_requests_total", {{"method", "OPTIONS"}, {"agent", "core"}}));  // never seen
    CHECK(x.find("hepd_sip_requests_total").size() == 2);
    CHECK(x.at("hepd_sip_transactions_started_total", {{"method", "OPTIONS"}}) == 10);
    CHECK(x.at("hepd_sip_transactions_active", {{"state", "pending"}}) == 10);
    CHECK(x.find("hepd_sip_transactions_total").empty());  // none answered
    CHECK(x.find("hepd_sip_transaction_delay_seconds_count").empty());
    CHECK(x.at("hepd_shard_datagrams_total", {{"shard", "0"}, {"kind", "sip"}}) == 10);
    CHECK(x.find("hepd_shard_datagrams_total").size() == 7);

    // A message that does not parse is a reason, never a label made of its text.
    send_sip(worker, "GARBAGE\r\n\r\n", 1, 2'000'000);
    const Exposition y = to_exposition(collector.Collect());
    CHECK(y.at("hepd_sip_parse_errors_total", {{"reason", "bad_start_line"}}) == 1);
    CHECK(y.sum("hepd_sip_parse_errors_total") == 1);
    test::check_label_hygiene(y, 1);
}

TEST_CASE("per-sender rate-limit buckets evicted at their cap are counted", "[export][collector]") {
    // Spoofed source addresses evict the buckets of real senders, which come back with a full
    // burst: the eviction must show (it wears hep.rate_limit.per_agent_rate down).
    ingest::SourceLimiterStats first;
    ingest::SourceLimiterStats second;
    first.evictions.add(3);
    metrics::Collector collector;
    collector.add_source_limiter(first);
    collector.add_source_limiter(second);
    const Exposition x = to_exposition(collector.Collect());
    CHECK(x.at("hepd_table_evictions_total", {{"table", "hep_rate_limit"}, {"reason", "cap"}}) == 3);
}

TEST_CASE("the agent label after a reload: names are added, never moved", "[export][agents]") {
    shard::ShardWorker worker{shard::ShardConfig{}};
    metrics::CollectorOptions o;
    o.agent_names = {"other", "kam1", "kam2"};
    metrics::Collector collector(o);
    collector.add_shard(worker);
    send_sip(worker, options_request(1), 2, 1'000'000);
    // A SIGHUP'd file drops kam1 and adds pbx: the new map keeps kam1 at 1, kam2 at 2 and puts
    // pbx at 3 (AgentMap's `earlier`); a list that would move a name changes nothing known.
    collector.publish_agent_names({"other", "kam1", "kam2", "pbx"});
    collector.publish_agent_names({"other", "kam2"});
    send_sip(worker, options_request(2), 3, 2'000'000);
    send_sip(worker, options_request(3), 2, 3'000'000);
    const Exposition x = to_exposition(collector.Collect());
    CHECK(x.at("hepd_sip_requests_total", {{"method", "OPTIONS"}, {"agent", "kam2"}}) == 2);
    CHECK(x.at("hepd_sip_requests_total", {{"method", "OPTIONS"}, {"agent", "pbx"}}) == 1);
    CHECK(!x.value("hepd_sip_requests_total", {{"method", "OPTIONS"}, {"agent", "other"}}));
    CHECK(collector.agent_names().size() == 4);
}

TEST_CASE("a second agent's copy: hepd_duplicates_total, not a request, datagram or retransmission",
          "[export][duplicates]") {
    shard::ShardWorker worker{shard::ShardConfig{}};
    const std::string options = options_request(1);
    send_sip(worker, options, 1, 1'000'000);
    send_sip(worker, options, 2, 1'000'300);  // the other end's agent, 300 us later
    send_sip(worker, options, 1, 1'000'400);  // the first agent again: what a duplicating network does
    metrics::CollectorOptions o;
    o.agent_names = {"other", "edge", "core"};
    metrics::Collector collector(o);
    collector.add_shard(worker);
    const Exposition x = to_exposition(collector.Collect());
    CHECK(x.at("hepd_duplicates_total", {{"kind", "sip"}}) == 1);
    CHECK(x.sum("hepd_duplicates_total") == 1);
    CHECK(x.at("hepd_shard_datagrams_total", {{"shard", "0"}, {"kind", "sip"}}) == 2);
    CHECK(x.at("hepd_sip_requests_total", {{"method", "OPTIONS"}, {"agent", "edge"}}) == 2);
    CHECK(!x.value("hepd_sip_requests_total", {{"method", "OPTIONS"}, {"agent", "core"}}));
    CHECK(x.at("hepd_sip_retransmissions_total", {{"method", "OPTIONS"}}) == 1);  // the edge's repeat only
    CHECK(x.at("hepd_sip_transactions_started_total", {{"method", "OPTIONS"}}) == 1);
}

TEST_CASE("peer groups label dialog and stream families by name", "[export][peers]") {
    // The generator's callers are in 10.1/16, its callees in 10.2/16.
    peer::PeerDirectory peers;
    peers.publish({peer::PeerRule{"customers", {*Cidr::parse("10.1.0.0/16")}, {}},
                   peer::PeerRule{"carrier", {*Cidr::parse("10.2.0.0/16")}, {}}});
    shard::ShardConfig config;
    config.peers = &peers;
    shard::ShardWorker worker{config};
    gen::CorpusOptions o;
    o.calls = 20;
    o.media_seconds = 0.4;
    o.loss_percent = 5;
    o.failed_percent = 20;
    o.cancelled_percent = 10;
    const auto truth = feed(worker, o);

    metrics::CollectorOptions options;
    options.peers = &peers;
    metrics::Collector collector(options);
    collector.add_shard(worker);
    const Exposition x = to_exposition(collector.Collect());
    const L pair{{"caller_peer", "customers"}, {"callee_peer", "carrier"}};
    const L none{{"caller_peer", "other"}, {"callee_peer", "other"}};
    auto with = [](L labels, std::string name, std::string value) {
        labels.emplace(std::move(name), std::move(value));
        return labels;
    };
    // Every dialog is customers -> carrier; the other/other series are there, at zero.
    CHECK(x.sum("hepd_dialogs_finished_total", pair) == o.calls);
    CHECK(x.sum("hepd_dialogs_finished_total", none) == 0);
    CHECK(x.sum("hepd_dialogs_finished_total") == o.calls);
    CHECK(x.sum("hepd_dialogs_final_status_total", pair) == o.calls);
    CHECK(x.at("hepd_dialogs_final_status_total", with(none, "code", "200")) == 0);
    CHECK(x.at("hepd_dialog_pdd_seconds_count", pair) == o.calls);
    CHECK(x.at("hepd_sip_srd_seconds_count", with(pair, "result", "success")) +
              x.at("hepd_sip_srd_seconds_count", with(pair, "result", "failure")) ==
          o.calls);
    CHECK(x.at("hepd_dialog_setup_seconds_count", pair) ==
          x.at("hepd_dialogs_final_status_total", with(pair, "code", "200")));
    // Streams take their dialog's groups (measured from RTP here: nothing under source="rtcp").
    const L measured = with(pair, "source", "measured");
    CHECK(x.at("hepd_rtp_mos_count", measured) == static_cast<double>(truth.streams.size()));
    CHECK(x.at("hepd_rtp_jitter_seconds_count", measured) == static_cast<double>(truth.streams.size()));
    CHECK(x.at("hepd_rtp_mos_count", with(none, "source", "measured")) == 0);
    CHECK(x.sum("hepd_rtp_mos_count", {{"source", "rtcp"}}) == 0);
    CHECK(x.at("hepd_rtp_lost_packets_total", measured) > 0);
    CHECK(x.sum("hepd_rtp_lost_packets_total") == x.at("hepd_rtp_lost_packets_total", measured));
    test::check_label_hygiene(x, 1);
}

TEST_CASE("shards merge by summing: every series of two shards is the sum of each", "[export][collector][merge]") {
    shard::ShardWorker a{shard::ShardConfig{}};
    shard::ShardWorker b{shard::ShardConfig{}};
    gen::CorpusOptions oa;
    oa.calls = 30;
    oa.media_seconds = 0.4;
    oa.loss_percent = 5;
    oa.duplicate_percent = 2;
    oa.failed_percent = 20;
    oa.cancelled_percent = 10;
    gen::CorpusOptions ob = oa;
    ob.calls = 17;
    ob.seed = 7;
    ob.failed_percent = 40;
    const auto ta = feed(a, oa);
    const auto tb = feed(b, ob);

    metrics::Collector only_a;
    only_a.add_shard(a);
    metrics::Collector only_b;
    only_b.add_shard(b);
    metrics::Collector both;
    both.add_shard(a);
    both.add_shard(b);
    const Exposition xa = to_exposition(only_a.Collect());
    const Exposition xb = to_exposition(only_b.Collect());
    const Exposition xab = to_exposition(both.Collect());

    // Spot checks against the generator first: the property below must not hold vacuously.
    CHECK(xa.at("hepd_rtp_packets_total") == static_cast<double>(ta.rtp_packets));
    CHECK(xb.at("hepd_rtp_packets_total") == static_cast<double>(tb.rtp_packets));
    CHECK(xab.at("hepd_rtp_packets_total") == static_cast<double>(ta.rtp_packets + tb.rtp_packets));
    CHECK(xab.at("hepd_dialogs_created_total") == oa.calls + ob.calls);
    CHECK(xab.at("hepd_dialog_pdd_seconds_count", {{"caller_peer", "other"}, {"callee_peer", "other"}}) ==
          oa.calls + ob.calls);
    CHECK(xab.at("hepd_sip_requests_total", {{"method", "INVITE"}, {"agent", "other"}}) == oa.calls + ob.calls);

    // The shard label names the registration index, so per-shard series are compared apart.
    auto per_shard = [](const std::string& name) { return name.rfind("hepd_shard_datagrams_total", 0) == 0; };
    std::set<std::pair<std::string, test::Labels>> keys;
    for (const auto* x : {&xa, &xb, &xab})
        for (const auto& s : x->samples) keys.emplace(s.name, s.labels);
    std::size_t compared = 0;
    std::size_t nonzero = 0;
    for (const auto& [name, labels] : keys) {
        // The process's own figures are not the shards' to sum.
        if (name == "hepd_build_info" || per_shard(name) || name.rfind("process_", 0) == 0) continue;
        INFO(name);
        const double va = xa.value(name, labels).value_or(0);
        const double vb = xb.value(name, labels).value_or(0);
        const auto vab = xab.value(name, labels);
        REQUIRE(vab);  // a series of either shard is a series of both
        if (name.size() > 4 && name.compare(name.size() - 4, 4, "_sum") == 0)
            CHECK(*vab == Approx(va + vb).margin(1e-5));
        else
            CHECK(*vab == va + vb);
        ++compared;
        nonzero += *vab != 0 ? 1 : 0;
    }
    CHECK(compared > 250);
    CHECK(nonzero > 60);
    for (const char* kind : {"sip", "rtp"}) {
        CHECK(xab.at("hepd_shard_datagrams_total", {{"shard", "0"}, {"kind", kind}}) ==
              xa.at("hepd_shard_datagrams_total", {{"shard", "0"}, {"kind", kind}}));
        CHECK(xab.at("hepd_shard_datagrams_total", {{"shard", "1"}, {"kind", kind}}) ==
              xb.at("hepd_shard_datagrams_total", {{"shard", "0"}, {"kind", kind}}));
    }
    test::check_histograms(xab);
    test::check_label_hygiene(xab, 2);
}

TEST_CASE("relay destinations: one series each by name, none without", "[export][collector][relay]") {
    {
        const metrics::Collector collector;
        const Exposition x = to_exposition(collector.Collect());
        CHECK(x.find("hepd_relay_messages_total").empty());
        CHECK(x.find("hepd_relay_dropped_messages_total").empty());
        for (const auto& family : collector.Collect()) CHECK(family.name.rfind("hepd_relay_", 0) != 0);
    }
    relay::RelayOptions o;
    o.host = "127.0.0.1";
    o.queue_bytes = 128u << 10;
    o.producers = 2;
    o.name = "homer";
    relay::Relay homer(o);  // never started: what is pushed stays queued
    o.name = "sipcapture";
    relay::Relay sipcapture(o);
    const std::vector<std::uint8_t> message(60000, 0x48);
    for (int i = 0; i < 3; ++i) homer.producer(1).push(message);  // two fit, the third is queue_full
    CHECK(homer.producer(0).push(message));

    metrics::Collector collector;
    collector.add_relay(homer);
    collector.add_relay(sipcapture);
    const Exposition x = to_exposition(collector.Collect());
    CHECK(x.find("hepd_relay_messages_total").size() == 2);
    CHECK(x.find("hepd_relay_dropped_messages_total").size() == 2 * relay::kDropReasonCount);
    CHECK(x.at("hepd_relay_dropped_messages_total", {{"destination", "homer"}, {"reason", "queue_full"}}) == 1);
    CHECK(x.at("hepd_relay_dropped_messages_total", {{"destination", "homer"}, {"reason", "not_connected"}}) == 0);
    CHECK(x.at("hepd_relay_dropped_messages_total", {{"destination", "sipcapture"}, {"reason", "queue_full"}}) == 0);
    CHECK(x.at("hepd_relay_queued_bytes", {{"destination", "homer"}}) == 3 * 60004);
    CHECK(x.at("hepd_relay_queued_bytes", {{"destination", "sipcapture"}}) == 0);
    CHECK(x.at("hepd_relay_connected", {{"destination", "homer"}}) == 0);
    CHECK(x.at("hepd_relay_messages_total", {{"destination", "sipcapture"}}) == 0);
    CHECK(x.at("hepd_relay_bytes_total", {{"destination", "homer"}}) == 0);
    CHECK(x.at("hepd_relay_reconnects_total", {{"destination", "homer"}}) == 0);
    CHECK(x.at("hepd_relay_connect_failures_total", {{"destination", "homer"}}) == 0);
}
