// The exporter end to end: a real estate (generated calls through two shards, HEP intakes), a
// real HTTP server on 127.0.0.1 port 0, a real HTTP client, and every figure checked against
// what was fed.
#include "export/exporter.hpp"

#include "checks.hpp"
#include "estate.hpp"
#include "scrape.hpp"
#include "sip/dialog.hpp"

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <ctime>
#include <thread>

using namespace hepd;
using hepd::test::Estate;
using hepd::test::Exposition;
using hepd::test::http_get;
using hepd::test::parse_exposition;

namespace {

const Endpoint kLoopbackAnyPort{IpAddress::v4(0x7f000001U), 0};

metrics::ExporterOptions loopback(std::string path = "/metrics") {
    metrics::ExporterOptions o;
    o.listen = kLoopbackAnyPort;
    o.path = std::move(path);
    return o;
}

gen::CorpusOptions corpus() {
    gen::CorpusOptions o;
    o.calls = 60;
    o.media_seconds = 0.5;
    o.loss_percent = 4;
    o.failed_percent = 15;
    o.cancelled_percent = 15;
    o.call_interval_us = 20'000;
    return o;
}

struct CallCounts {
    double calls = 0, completed = 0, failed = 0, cancelled = 0;
    double callee_hangups = 0;  // completed calls whose BYE (Q.850 cause 16) comes from the callee
    double pdd_sum = 0, setup_sum = 0, duration_sum = 0;
    double pdd_le_100ms = 0, pdd_le_250ms = 0;
    double rtp_lost = 0;
};

CallCounts count_calls(const gen::Truth& truth) {
    CallCounts c;
    for (std::size_t i = 0; i < truth.calls.size(); ++i) {
        const auto& call = truth.calls[i];
        ++c.calls;
        c.pdd_sum += static_cast<double>(call.pdd_us) / 1e6;
        c.pdd_le_100ms += call.pdd_us <= 100'000 ? 1 : 0;
        c.pdd_le_250ms += call.pdd_us <= 250'000 ? 1 : 0;
        switch (call.outcome) {
        case gen::CallOutcome::completed:
            ++c.completed;
            c.callee_hangups += i % 3 == 0 ? 1 : 0;  // the generator's rule
            c.setup_sum += static_cast<double>(call.setup_us) / 1e6;
            c.duration_sum += static_cast<double>(call.duration_us) / 1e6;
            break;
        case gen::CallOutcome::failed: ++c.failed; break;
        case gen::CallOutcome::cancelled: ++c.cancelled; break;
        }
    }
    for (const auto& s : truth.streams) c.rtp_lost += static_cast<double>(s.lost);
    return c;
}

// A listening TCP socket on 127.0.0.1, port chosen by the kernel.
class Squatter {
public:
    Squatter() : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
        REQUIRE(fd_ >= 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        REQUIRE(::bind(fd_, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0);
        REQUIRE(::listen(fd_, 1) == 0);
        socklen_t len = sizeof a;
        REQUIRE(::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0);
        port_ = ntohs(a.sin_port);
    }
    ~Squatter() { ::close(fd_); }
    std::uint16_t port() const { return port_; }

private:
    int fd_;
    std::uint16_t port_ = 0;
};

// Stopping the HTTP server takes civetweb up to 2 s, so the estate is built, served and scraped
// once for all the sections below (Catch re-enters the test case once per section).
struct Scraped {
    std::unique_ptr<Estate> estate;
    CallCounts counts;
    std::uint16_t port = 0;
    std::string url;
    test::HttpResponse response;
    Exposition first;
    Exposition second;
};

const Scraped& scraped() {
    static const Scraped s = [] {
        Scraped r;
        r.estate = std::make_unique<Estate>(corpus(), 2);
        r.counts = count_calls(r.estate->truth);
        metrics::Exporter exporter(loopback(), r.estate->collector);
        r.port = exporter.local_endpoint().port;
        r.url = exporter.url();
        r.response = http_get(r.port, "/metrics");
        r.first = parse_exposition(r.response.body);
        r.second = parse_exposition(http_get(r.port, "/metrics").body);
        return r;
    }();
    return s;
}

}  // namespace

TEST_CASE("a scrape over HTTP reports the estate exactly", "[export][http]") {
    const Scraped& s = scraped();
    const Estate& e = *s.estate;
    const CallCounts& c = s.counts;
    REQUIRE(c.completed > 0);
    REQUIRE(c.failed > 0);
    REQUIRE(c.cancelled > 0);
    REQUIRE(c.callee_hangups > 0);

    const std::uint16_t port = s.port;
    REQUIRE(port != 0);
    CHECK(s.url == "http://127.0.0.1:" + std::to_string(port) + "/metrics");
    REQUIRE(s.response.status == 200);
    CHECK(s.response.headers.at("content-type").rfind("text/plain", 0) == 0);
    const Exposition& x = s.first;

    SECTION("every metric the design names is there, with samples") {
        for (const char* name : {"hepd_build_info",
                                 "hepd_hep_received_packets_total",
                                 "hepd_hep_received_bytes_total",
                                 "hepd_hep_dropped_packets_total",
                                 "hepd_hep_decode_errors_total",
                                 "hepd_hep_timestamp_fixups_total",
                                 "hepd_hep_packets_total",
                                 "hepd_tcp_connections",
                                 "hepd_tcp_connections_closed_total",
                                 "hepd_udp_kernel_drops_total",
                                 "hepd_shard_queue_depth",
                                 "hepd_shard_queue_dropped_datagrams_total",
                                 "hepd_shard_wakeups_total",
                                 "hepd_sip_requests_total",
                                 "hepd_sip_responses_total",
                                 "hepd_sip_retransmissions_total",
                                 "hepd_dialogs_active",
                                 "hepd_dialogs_finished_total",
                                 "hepd_dialog_pdd_seconds",
                                 "hepd_dialog_setup_seconds",
                                 "hepd_dialog_duration_seconds",
                                 "hepd_sip_q850_causes_total",
                                 "hepd_sip_transactions_total",
                                 "hepd_rtp_streams_active",
                                 "hepd_rtp_packets_total",
                                 "hepd_rtp_lost_packets_total",
                                 "hepd_rtp_jitter_seconds",
                                 "hepd_rtp_mos",
                                 "hepd_rtcp_reports_total",
                                 "hepd_rtcp_fraction_lost",
                                 "hepd_rtcp_rtt_seconds",
                                 "hepd_table_evictions_total",
                                 "hepd_rtp_parse_errors_total",
                                 "hepd_sip_parse_errors_total",
                                 "hepd_snapshot_duration_seconds",
                                 "hepd_snapshot_failures_total",
                                 "hepd_snapshot_last_success_timestamp_seconds",
                                 "hepd_snapshot_shard_pause_seconds"}) {
            INFO(name);
            REQUIRE(x.types.count(name) == 1);
            CHECK(x.helps.count(name) == 1);
            const std::string sample = x.types.at(name) == "histogram" ? std::string(name) + "_count" : name;
            CHECK(!x.find(sample).empty());
        }
        CHECK(x.types.at("hepd_hep_received_packets_total") == "counter");
        CHECK(x.types.at("hepd_tcp_connections") == "gauge");
        CHECK(x.types.at("hepd_dialog_pdd_seconds") == "histogram");
        CHECK(x.at("hepd_build_info", {{"version", "9.8.7"}, {"commit", "0123456789ab"}}) == 1);
    }

    SECTION("the process's own figures, under the names every client library uses") {
        CHECK(x.types.at("process_cpu_seconds_total") == "counter");
        for (const char* name : {"process_resident_memory_bytes", "process_virtual_memory_bytes", "process_open_fds",
                                 "process_max_fds", "process_start_time_seconds"}) {
            INFO(name);
            CHECK(x.types.at(name) == "gauge");
        }
        CHECK(x.at("process_cpu_seconds_total") > 0);
        CHECK(x.at("process_resident_memory_bytes") > 1'000'000);  // the estate's tables at least
        CHECK(x.at("process_virtual_memory_bytes") >= x.at("process_resident_memory_bytes"));
        CHECK(x.at("process_open_fds") >= 2);  // the listening socket and this scrape's connection
        CHECK(x.at("process_open_fds") <= x.at("process_max_fds"));
        const double now = static_cast<double>(std::time(nullptr));
        CHECK(x.at("process_start_time_seconds") <= now + 1);
        CHECK(x.at("process_start_time_seconds") > now - 3600);
    }

    SECTION("the tables' memory, by table") {
        CHECK(x.types.at("hepd_table_memory_bytes") == "gauge");
        // Every call of the estate is still in its table (lingering): its dialog, streams and
        // bindings hold memory. The duplicate filter's table comes with the first packet from an
        // agent (raw packets skip the filter), so it may not be in a refresh yet.
        const double dialogs = x.at("hepd_table_memory_bytes", {{"table", "dialogs"}});
        CHECK(dialogs > static_cast<double>(c.calls) * sizeof(hepd::sip::Dialog));
        CHECK(x.at("hepd_table_memory_bytes", {{"table", "streams"}}) > 0);
        CHECK(x.at("hepd_table_memory_bytes", {{"table", "transactions"}}) > 0);
        CHECK(x.value("hepd_table_memory_bytes", {{"table", "duplicates"}}).has_value());
        CHECK(dialogs < x.at("process_resident_memory_bytes"));
    }

    SECTION("dialogs: outcomes, states, timings and causes as generated") {
        CHECK(x.at("hepd_dialogs_created_total") == c.calls);
        CHECK(x.at("hepd_dialogs_finished_total",
                   {{"outcome", "completed"}, {"caller_peer", "other"}, {"callee_peer", "other"}}) == c.completed);
        CHECK(x.at("hepd_dialogs_finished_total",
                   {{"outcome", "failed"}, {"caller_peer", "other"}, {"callee_peer", "other"}}) == c.failed);
        CHECK(x.at("hepd_dialogs_finished_total",
                   {{"outcome", "cancelled"}, {"caller_peer", "other"}, {"callee_peer", "other"}}) == c.cancelled);
        CHECK(x.at("hepd_dialogs_finished_total",
                   {{"outcome", "timed_out"}, {"caller_peer", "other"}, {"callee_peer", "other"}}) == 0);
        CHECK(x.at("hepd_dialogs_finished_total",
                   {{"outcome", "evicted"}, {"caller_peer", "other"}, {"callee_peer", "other"}}) == 0);
        // Every record still lingers (the run is far shorter than dialog_linger).
        CHECK(x.at("hepd_dialogs_active", {{"state", "terminated"}}) == c.completed);
        CHECK(x.at("hepd_dialogs_active", {{"state", "failed"}}) == c.failed);
        CHECK(x.at("hepd_dialogs_active", {{"state", "cancelled"}}) == c.cancelled);
        CHECK(x.sum("hepd_dialogs_active") == c.calls);
        CHECK(x.find("hepd_dialogs_active").size() == 8);

        CHECK(x.at("hepd_dialog_pdd_seconds_count", {{"caller_peer", "other"}, {"callee_peer", "other"}}) == c.calls);
        CHECK(x.at("hepd_dialog_pdd_seconds_sum", {{"caller_peer", "other"}, {"callee_peer", "other"}}) ==
              Approx(c.pdd_sum).margin(1e-5));
        CHECK(x.bucket("hepd_dialog_pdd_seconds", 0.1, {{"caller_peer", "other"}, {"callee_peer", "other"}}) ==
              c.pdd_le_100ms);
        CHECK(x.bucket("hepd_dialog_pdd_seconds", 0.25, {{"caller_peer", "other"}, {"callee_peer", "other"}}) ==
              c.pdd_le_250ms);
        CHECK(x.bucket("hepd_dialog_pdd_seconds", 0.5, {{"caller_peer", "other"}, {"callee_peer", "other"}}) ==
              c.calls);
        CHECK(c.pdd_le_100ms > 0);
        CHECK(c.pdd_le_250ms > c.pdd_le_100ms);
        CHECK(c.pdd_le_250ms < c.calls);
        CHECK(x.at("hepd_dialog_setup_seconds_count", {{"caller_peer", "other"}, {"callee_peer", "other"}}) ==
              c.completed);
        CHECK(x.at("hepd_dialog_setup_seconds_sum", {{"caller_peer", "other"}, {"callee_peer", "other"}}) ==
              Approx(c.setup_sum).margin(1e-5));
        CHECK(x.at("hepd_dialog_duration_seconds_count", {{"caller_peer", "other"}, {"callee_peer", "other"}}) ==
              c.completed);
        CHECK(x.at("hepd_dialog_duration_seconds_sum", {{"caller_peer", "other"}, {"callee_peer", "other"}}) ==
              Approx(c.duration_sum).margin(1e-5));

        CHECK(x.at("hepd_sip_q850_causes_total", {{"cause", "16"}}) == c.callee_hangups);
        CHECK(x.at("hepd_sip_q850_causes_total", {{"cause", "17"}}) == c.failed);
        CHECK(x.find("hepd_sip_q850_causes_total").size() == 2);  // zero causes are not exported
    }

    SECTION("RFC 6076: SRD, SDD, RRD and final statuses as generated") {
        // Every generated call rings (100, then 180 or 183) before its answer, 486 or 487.
        CHECK(x.at("hepd_sip_srd_seconds_count",
                   {{"result", "success"}, {"caller_peer", "other"}, {"callee_peer", "other"}}) == c.calls);
        CHECK(x.at("hepd_sip_srd_seconds_sum",
                   {{"result", "success"}, {"caller_peer", "other"}, {"callee_peer", "other"}}) ==
              Approx(c.pdd_sum).margin(1e-5));
        CHECK(x.at("hepd_sip_srd_seconds_count",
                   {{"result", "failure"}, {"caller_peer", "other"}, {"callee_peer", "other"}}) == 0);
        CHECK(x.at("hepd_sip_sdd_seconds_count") == c.completed);  // every BYE is answered
        CHECK(x.at("hepd_dialogs_final_status_total",
                   {{"code", "200"}, {"caller_peer", "other"}, {"callee_peer", "other"}}) == c.completed);
        CHECK(x.at("hepd_dialogs_final_status_total",
                   {{"code", "486"}, {"caller_peer", "other"}, {"callee_peer", "other"}}) == c.failed);
        CHECK(x.at("hepd_dialogs_final_status_total",
                   {{"code", "487"}, {"caller_peer", "other"}, {"callee_peer", "other"}}) == c.cancelled);
        CHECK(x.sum("hepd_dialogs_final_status_total") == c.calls);
        CHECK(x.find("hepd_dialogs_final_status_total").size() == 19);
        // No REGISTER in the estate: the families are there, at zero.
        CHECK(x.at("hepd_sip_rrd_seconds_count") == 0);
        CHECK(x.sum("hepd_sip_registrations_total") == 0);
        CHECK(x.find("hepd_sip_registrations_total").size() == 3);
    }

    SECTION("SIP requests and responses by method, status class and agent") {
        const double caller_byes = c.completed - c.callee_hangups;
        const double pings = test::kOptionsPings;
        CHECK(x.at("hepd_sip_requests_total", {{"method", "INVITE"}, {"agent", "kamailio"}}) == c.calls);
        CHECK(x.at("hepd_sip_requests_total", {{"method", "ACK"}, {"agent", "kamailio"}}) == c.calls);
        CHECK(x.at("hepd_sip_requests_total", {{"method", "CANCEL"}, {"agent", "kamailio"}}) == c.cancelled);
        CHECK(x.at("hepd_sip_requests_total", {{"method", "BYE"}, {"agent", "kamailio"}}) == caller_byes);
        CHECK(x.at("hepd_sip_requests_total", {{"method", "BYE"}, {"agent", "asterisk"}}) == c.callee_hangups);
        CHECK(x.at("hepd_sip_requests_total", {{"method", "OPTIONS"}, {"agent", "kamailio"}}) == pings);
        CHECK(x.find("hepd_sip_requests_total").size() == 6);
        CHECK(x.sum("hepd_sip_requests_total") == 2 * c.calls + c.cancelled + c.completed + pings);

        CHECK(x.at("hepd_sip_responses_total",
                   {{"method", "INVITE"}, {"status_class", "1xx"}, {"agent", "asterisk"}}) == 2 * c.calls);
        CHECK(x.at("hepd_sip_responses_total",
                   {{"method", "INVITE"}, {"status_class", "2xx"}, {"agent", "asterisk"}}) == c.completed);
        CHECK(x.at("hepd_sip_responses_total",
                   {{"method", "INVITE"}, {"status_class", "4xx"}, {"agent", "asterisk"}}) == c.failed + c.cancelled);
        CHECK(x.at("hepd_sip_responses_total",
                   {{"method", "CANCEL"}, {"status_class", "2xx"}, {"agent", "asterisk"}}) == c.cancelled);
        CHECK(x.at("hepd_sip_responses_total", {{"method", "BYE"}, {"status_class", "2xx"}, {"agent", "asterisk"}}) ==
              caller_byes);
        CHECK(x.at("hepd_sip_responses_total", {{"method", "BYE"}, {"status_class", "2xx"}, {"agent", "kamailio"}}) ==
              c.callee_hangups);
        CHECK(x.at("hepd_sip_responses_total",
                   {{"method", "OPTIONS"}, {"status_class", "2xx"}, {"agent", "asterisk"}}) == pings);
        CHECK(x.find("hepd_sip_responses_total").size() == 7);

        CHECK(x.sum("hepd_sip_retransmissions_total") == 0);
        CHECK(x.find("hepd_sip_retransmissions_total").size() == 15);
        CHECK(x.sum("hepd_sip_parse_errors_total") == 0);

        CHECK(x.at("hepd_sip_transactions_started_total", {{"method", "OPTIONS"}}) == pings);
        CHECK(x.at("hepd_sip_transactions_total", {{"method", "OPTIONS"}, {"outcome", "2xx"}}) == pings);
        CHECK(x.find("hepd_sip_transactions_total").size() == 1);
        CHECK(x.at("hepd_sip_transactions_active", {{"state", "pending"}}) == 0);
        CHECK(x.at("hepd_sip_transactions_active", {{"state", "lingering"}}) == pings);
        // Each answered after 12 ms: all in the le=0.025 bucket, none by 0.01.
        CHECK(x.at("hepd_sip_transaction_delay_seconds_count", {{"method", "OPTIONS"}}) == pings);
        CHECK(x.bucket("hepd_sip_transaction_delay_seconds", 0.01, {{"method", "OPTIONS"}}) == 0);
        CHECK(x.bucket("hepd_sip_transaction_delay_seconds", 0.025, {{"method", "OPTIONS"}}) == pings);
        CHECK(x.at("hepd_sip_transaction_delay_seconds_sum", {{"method", "OPTIONS"}}) ==
              Approx(pings * test::kOptionsDelayUs / 1e6).margin(1e-5));
    }

    SECTION("RTP streams and packets as generated") {
        const double streams = static_cast<double>(e.truth.streams.size());
        REQUIRE(streams == 2 * c.completed);
        CHECK(x.at("hepd_rtp_packets_total") == static_cast<double>(e.truth.rtp_packets));
        CHECK(x.at("hepd_rtp_payload_bytes_total") == 160.0 * static_cast<double>(e.truth.rtp_packets));
        CHECK(x.at("hepd_rtp_lost_packets_total",
                   {{"source", "measured"}, {"caller_peer", "other"}, {"callee_peer", "other"}}) == c.rtp_lost);
        CHECK(x.sum("hepd_rtp_lost_packets_total", {{"source", "rtcp"}}) == 0);
        CHECK(c.rtp_lost > 0);
        CHECK(x.at("hepd_rtp_duplicate_packets_total") == 0);
        CHECK(x.at("hepd_rtp_streams_started_total") == streams);
        CHECK(x.at("hepd_rtp_streams_finished_total", {{"source", "measured"}, {"reason", "flushed"}}) == streams);
        CHECK(x.at("hepd_rtp_streams_finished_total", {{"source", "measured"}, {"reason", "idle"}}) == 0);
        CHECK(x.sum("hepd_rtp_streams_finished_total", {{"source", "rtcp"}}) == 0);
        CHECK(x.at("hepd_rtp_streams_by_codec_total", {{"source", "measured"}, {"codec", "pcma"}}) == streams);
        CHECK(x.at("hepd_rtp_streams_active") == 0);
        const test::Labels measured_other{{"source", "measured"}, {"caller_peer", "other"}, {"callee_peer", "other"}};
        CHECK(x.at("hepd_rtp_jitter_seconds_count", measured_other) == streams);
        CHECK(x.at("hepd_rtp_mos_count", measured_other) == streams);
        CHECK(x.at("hepd_rtp_loss_ratio_count", {{"source", "measured"}}) == streams);
        CHECK(x.sum("hepd_rtp_mos_count", {{"source", "rtcp"}}) == 0);
        CHECK(x.sum("hepd_rtp_parse_errors_total") == 0);
        CHECK(x.at("hepd_rtcp_fraction_lost_count") == 0);
        CHECK(x.sum("hepd_table_evictions_total") == 0);
        CHECK(x.find("hepd_table_evictions_total").size() == 8);
        CHECK(x.sum("hepd_duplicates_total") == 0);  // one agent per packet in this estate
    }

    SECTION("two shards: per-shard figures sum to the whole, nothing dropped") {
        const double sip = static_cast<double>(e.truth.sip_packets + e.options_datagrams);
        const double rtp = static_cast<double>(e.truth.rtp_packets);
        CHECK(x.sum("hepd_shard_datagrams_total", {{"kind", "sip"}}) == sip);
        CHECK(x.sum("hepd_shard_datagrams_total", {{"kind", "rtp"}}) == rtp);
        CHECK(x.sum("hepd_shard_datagrams_total") == sip + rtp);
        CHECK(x.at("hepd_shard_datagrams_total", {{"shard", "0"}, {"kind", "sip"}}) > 0);
        CHECK(x.at("hepd_shard_datagrams_total", {{"shard", "1"}, {"kind", "sip"}}) > 0);
        CHECK(x.find("hepd_shard_datagrams_total").size() == 14);
        for (std::size_t shard = 0; shard < 2; ++shard) {
            const double mine = x.sum("hepd_shard_datagrams_total", {{"shard", std::to_string(shard)}});
            CHECK(mine == static_cast<double>(e.workers[shard]->stats().datagrams[0].value() +
                                              e.workers[shard]->stats().datagrams[1].value()));
        }
        // One SDP offer per call; per answered call the answer and the offer paired back with
        // it; every binding arrived.
        CHECK(x.at("hepd_shard_bindings_total", {{"direction", "sent"}}) == c.calls + 2 * c.completed);
        CHECK(x.at("hepd_shard_bindings_total", {{"direction", "received"}}) == c.calls + 2 * c.completed);
        CHECK(x.at("hepd_shard_queue_depth", {{"shard", "0"}}) == 0);
        CHECK(x.at("hepd_shard_queue_depth", {{"shard", "1"}}) == 0);
        CHECK(x.find("hepd_shard_queue_depth").size() == 2);
        CHECK(x.find("hepd_shard_wakeups_total").size() == 2);
        for (std::size_t shard = 0; shard < 2; ++shard)
            CHECK(x.at("hepd_shard_wakeups_total", {{"shard", std::to_string(shard)}}) ==
                  static_cast<double>(e.pipeline->wakeups(shard)));
        CHECK(x.at("hepd_shard_queue_dropped_datagrams_total") == 0);
        CHECK(x.at("hepd_shard_queue_dropped_bindings_total") == 0);
    }

    SECTION("HEP intake, TCP, kernel and snapshot figures as fed") {
        const auto& f = e.feed;
        auto d = [](std::uint64_t n) { return static_cast<double>(n); };
        CHECK(x.at("hepd_hep_received_packets_total", {{"transport", "udp"}, {"version", "3"}}) == d(f.udp_v3_packets));
        CHECK(f.udp_v3_packets == 8);  // 4 SIP, RTCP-JSON, log, truncated, rate-limited
        CHECK(x.at("hepd_hep_received_packets_total", {{"transport", "udp"}, {"version", "unknown"}}) ==
              d(f.udp_not_hep));
        CHECK(x.at("hepd_hep_received_packets_total", {{"transport", "tcp"}, {"version", "2"}}) == d(f.tcp_v2_packets));
        CHECK(x.at("hepd_hep_received_packets_total", {{"transport", "tcp"}, {"version", "1"}}) == d(f.tcp_v1_packets));
        CHECK(x.sum("hepd_hep_received_packets_total") == 13);
        CHECK(x.find("hepd_hep_received_packets_total").size() == 8);
        CHECK(x.at("hepd_hep_received_bytes_total", {{"transport", "udp"}, {"version", "3"}}) == d(f.udp_v3_bytes));
        CHECK(x.at("hepd_hep_received_bytes_total", {{"transport", "tcp"}, {"version", "2"}}) == d(f.tcp_v2_bytes));
        CHECK(x.at("hepd_hep_received_bytes_total", {{"transport", "tcp"}, {"version", "1"}}) == d(f.tcp_v1_bytes));
        CHECK(x.find("hepd_hep_received_bytes_total").size() == 6);

        CHECK(x.at("hepd_hep_dropped_packets_total", {{"reason", "rate_limit"}}) == 1);
        CHECK(x.at("hepd_hep_dropped_packets_total", {{"reason", "decode_error"}}) == 3);
        CHECK(x.at("hepd_hep_dropped_packets_total", {{"reason", "queue_full"}}) == 4);
        CHECK(x.at("hepd_hep_dropped_packets_total", {{"reason", "auth"}}) == 0);
        CHECK(x.at("hepd_hep_dropped_packets_total", {{"reason", "not_allowed"}}) == 0);
        CHECK(x.at("hepd_hep_decode_errors_total", {{"reason", "not_hep"}}) == 2);
        CHECK(x.at("hepd_hep_decode_errors_total", {{"reason", "truncated"}}) == 1);
        CHECK(x.sum("hepd_hep_decode_errors_total") == 3);
        CHECK(x.find("hepd_hep_decode_errors_total").size() == 11);
        CHECK(x.at("hepd_hep_timestamp_fixups_total", {{"kind", "zero"}}) == 1);
        CHECK(x.at("hepd_hep_timestamp_fixups_total", {{"kind", "missing"}}) == 1);
        CHECK(x.sum("hepd_hep_timestamp_fixups_total") == 2);
        CHECK(!x.value("hepd_hep_timestamp_fixups_total", {{"kind", "none"}}));
        CHECK(x.at("hepd_hep_clock_offset_exceeded_total", {{"agent", "other"}}) == d(f.clock_offset_exceeded[0]));
        CHECK(x.at("hepd_hep_clock_offset_exceeded_total", {{"agent", "kamailio"}}) == d(f.clock_offset_exceeded[1]));
        CHECK(x.at("hepd_hep_clock_offset_exceeded_total", {{"agent", "asterisk"}}) == d(f.clock_offset_exceeded[2]));
        CHECK(x.find("hepd_hep_clock_offset_exceeded_total").size() == 3);
        CHECK(x.sum("hepd_hep_clock_steps_total") == 0);
        CHECK(x.find("hepd_hep_clock_steps_total").size() == 3);

        CHECK(x.at("hepd_hep_packets_total", {{"payload_type", "sip"}, {"agent", "kamailio"}}) == 4);
        CHECK(x.at("hepd_hep_packets_total", {{"payload_type", "sip"}, {"agent", "other"}}) == 3);
        CHECK(x.at("hepd_hep_packets_total", {{"payload_type", "rtcp_json"}, {"agent", "asterisk"}}) == 1);
        CHECK(x.at("hepd_hep_packets_total", {{"payload_type", "log"}, {"agent", "other"}}) == 1);
        CHECK(x.sum("hepd_hep_packets_total") == 9);
        CHECK(x.find("hepd_hep_packets_total").size() == kPayloadClassCount * 3);  // every class x every named agent

        CHECK(x.at("hepd_tcp_connections") == 3);
        CHECK(x.at("hepd_tcp_connections_accepted_total") == 9);
        CHECK(x.at("hepd_tcp_accept_errors_total") == 1);
        CHECK(x.at("hepd_tcp_connections_closed_total", {{"reason", "peer_closed"}}) == 5);
        CHECK(x.at("hepd_tcp_connections_closed_total", {{"reason", "bad_frame"}}) == 1);
        CHECK(x.sum("hepd_tcp_connections_closed_total") == 6);
        CHECK(x.find("hepd_tcp_connections_closed_total").size() == ingest::kTcpCloseReasonCount);
        CHECK(x.at("hepd_tcp_frame_errors_total", {{"reason", "length_too_large"}}) == 1);
        CHECK(x.at("hepd_udp_kernel_drops_total") == static_cast<double>(test::kKernelDrops));

        CHECK(x.at("hepd_snapshot_duration_seconds") == 0.25);
        CHECK(x.at("hepd_snapshot_failures_total") == 2);
        CHECK(x.at("hepd_snapshot_last_success_timestamp_seconds") == 1'700'000'123.5);
        CHECK(x.at("hepd_snapshot_shard_pause_seconds") == 0.0625);
    }

    SECTION("histograms are cumulative and closed by +Inf == count") {
        // pdd, setup, duration, transaction delay (OPTIONS), jitter, mos, fraction lost, rtt; srd
        // (success, failure), sdd, rrd
        CHECK(test::check_histograms(x) == 18);
    }

    SECTION("labels come from closed sets only") { CHECK(test::check_label_hygiene(x, 2) > 200); }

    SECTION("scraping has no side effects: a second scrape reads the same") {
        const Exposition& again = s.second;
        CHECK(again.at("exposer_scrapes_total") > x.at("exposer_scrapes_total"));  // it was scraped anew
        std::size_t compared = 0;
        for (const auto& sample : x.samples) {
            if (sample.name.rfind("hepd_", 0) != 0) continue;
            INFO(sample.name);
            const auto v = again.value(sample.name, sample.labels);
            REQUIRE(v);
            CHECK(*v == sample.value);
            ++compared;
        }
        std::size_t hepd_samples = 0;
        for (const auto& sample : again.samples) hepd_samples += sample.name.rfind("hepd_", 0) == 0 ? 1 : 0;
        CHECK(hepd_samples == compared);
        CHECK(compared > 300);
    }
}

TEST_CASE("the exporter serves on the configured path only", "[export][http]") {
    auto collector = std::make_shared<metrics::Collector>();
    metrics::Exporter exporter(loopback("/hepd/metrics"), collector);
    const auto port = exporter.local_endpoint().port;
    CHECK(exporter.url() == "http://127.0.0.1:" + std::to_string(port) + "/hepd/metrics");
    const auto ok = http_get(port, "/hepd/metrics");
    CHECK(ok.status == 200);
    const Exposition x = parse_exposition(ok.body);
    CHECK(x.at("hepd_rtp_packets_total") == 0);
    CHECK(http_get(port, "/metrics").status == 404);
    // civetweb matches handlers by prefix and case-insensitive pattern: none of these is the path.
    for (const char* other : {"/hepd/metricsXYZ", "/hepd/metrics/more", "/HEPD/METRICS", "/hepd", "/"}) {
        INFO(other);
        CHECK(http_get(port, other).status == 404);
    }
    CHECK(http_get(port, "/hepd/metrics?x=1").status == 200);  // a query names the same resource
}

TEST_CASE("HEAD answers 200 as GET does but without a body", "[export][http]") {
    auto collector = std::make_shared<metrics::Collector>();
    metrics::Exporter exporter(loopback(), collector);
    const auto port = exporter.local_endpoint().port;
    const auto head = test::http_request(port, "HEAD", "/metrics");
    CHECK(head.status == 200);
    CHECK(head.body.empty());
    const auto get = http_get(port, "/metrics");
    CHECK(get.status == 200);
    CHECK(head.headers.at("content-type") == get.headers.at("content-type"));
    CHECK(test::http_request(port, "HEAD", "/metricsXYZ").status == 404);
}

TEST_CASE("an address in use is a clear start-up error", "[export][http]") {
    SECTION("a port another socket listens on") {
        const Squatter squatter;
        metrics::ExporterOptions o = loopback();
        o.listen.port = squatter.port();
        try {
            metrics::Exporter exporter(o, std::make_shared<metrics::Collector>());
            FAIL("started on a port in use");
        } catch (const metrics::ExporterError& error) {
            const std::string what = error.what();
            CHECK(what.find("127.0.0.1:" + std::to_string(squatter.port())) != std::string::npos);
            CHECK(what.find("in use") != std::string::npos);
        }
    }
    SECTION("a port another exporter serves on") {
        auto collector = std::make_shared<metrics::Collector>();
        metrics::Exporter first(loopback(), collector);
        metrics::ExporterOptions o = loopback();
        o.listen.port = first.local_endpoint().port;
        CHECK_THROWS_AS(metrics::Exporter(o, collector), std::runtime_error);
        CHECK(http_get(first.local_endpoint().port, "/metrics").status == 200);  // the first one is unharmed
    }
    SECTION("an address that is not this host's") {
        metrics::ExporterOptions o = loopback();
        o.listen.address = IpAddress::v4(0xc0000201U);  // 192.0.2.1, TEST-NET-1
        try {
            metrics::Exporter exporter(o, std::make_shared<metrics::Collector>());
            FAIL("started on a foreign address");
        } catch (const metrics::ExporterError& error) {
            CHECK(std::string(error.what()).find("192.0.2.1:0: Cannot assign requested address") != std::string::npos);
        }
    }
}

TEST_CASE("bad options are refused before anything listens", "[export][http]") {
    auto collector = std::make_shared<metrics::Collector>();
    for (const char* path : {"", "metrics", "/me trics", "/metrics?x=1", "/a#b", "/%2e"}) {
        INFO(path);
        CHECK_THROWS_AS(metrics::Exporter(loopback(path), collector), metrics::ExporterError);
    }
    metrics::ExporterOptions no_address = loopback();
    no_address.listen.address = IpAddress{};
    CHECK_THROWS_AS(metrics::Exporter(no_address, collector), metrics::ExporterError);
    CHECK_THROWS_AS(metrics::Exporter(loopback(), nullptr), metrics::ExporterError);
}

TEST_CASE("IPv6 either serves or says why it cannot", "[export][http]") {
    metrics::ExporterOptions o;
    o.listen = *parse_endpoint("[::1]:0");
    try {
        metrics::Exporter exporter(o, std::make_shared<metrics::Collector>());
        CHECK(exporter.local_endpoint().port != 0);
        CHECK(exporter.url().rfind("http://[::1]:", 0) == 0);
    } catch (const metrics::ExporterError& error) {
        // Debian 12's civetweb is built without IPv6.
        const std::string what = error.what();
        CHECK(what.find("[::1]:0") != std::string::npos);
        CHECK(what.find("without IPv6") != std::string::npos);
    }
}

TEST_CASE("listening_ports_spec speaks civetweb", "[export]") {
    CHECK(metrics::listening_ports_spec(*parse_endpoint("0.0.0.0:9469")) == "0.0.0.0:9469");
    CHECK(metrics::listening_ports_spec(*parse_endpoint("127.0.0.1:80")) == "127.0.0.1:80");
    CHECK(metrics::listening_ports_spec(*parse_endpoint("[::1]:9469")) == "[::1]:9469");
    CHECK(metrics::listening_ports_spec(*parse_endpoint("[fd00::2]:1")) == "[fd00::2]:1");
    // The IPv6 wildcard means both families, as for the HEP listeners.
    CHECK(metrics::listening_ports_spec(*parse_endpoint("[::]:9469")) == "+9469");
}

TEST_CASE("stop() ends serving; the sources may then go", "[export][http]") {
    auto collector = std::make_shared<metrics::Collector>();
    metrics::Exporter exporter(loopback(), collector);
    const auto port = exporter.local_endpoint().port;
    REQUIRE(http_get(port, "/metrics").status == 200);
    exporter.stop();
    exporter.stop();
    CHECK_THROWS_AS(http_get(port, "/metrics", std::chrono::milliseconds(500)), std::runtime_error);
}

TEST_CASE("scrapes during live traffic: counters never go backwards", "[export][http][live]") {
    std::vector<std::unique_ptr<shard::Worker>> owned;
    std::vector<shard::ShardWorker*> workers;
    for (int i = 0; i < 2; ++i) {
        auto w = std::make_unique<shard::ShardWorker>(shard::ShardConfig{});
        workers.push_back(w.get());
        owned.push_back(std::move(w));
    }
    shard::PipelineOptions po;
    po.shards = 2;
    po.lossless = true;
    po.queue_batches = 4;
    po.batch_datagrams = 32;
    shard::Pipeline pipeline(po, std::move(owned));
    auto collector = std::make_shared<metrics::Collector>();
    for (auto* w : workers) collector->add_shard(*w);
    collector->set_pipeline(pipeline);
    metrics::Exporter exporter(loopback(), collector);
    pipeline.start();

    gen::CorpusOptions o = corpus();
    o.calls = 200;
    std::atomic<bool> done{false};
    gen::Truth truth;
    Timestamp last{};
    std::thread traffic([&] {
        truth = gen::generate(o, [&](Timestamp t, const Endpoint& s, const Endpoint& d, ByteSpan p) {
            shard::Datagram dg;
            dg.time = t;
            dg.src = s;
            dg.dst = d;
            dg.kind = (s.port == 5060 || d.port == 5060) ? PayloadClass::sip : PayloadClass::rtp;
            dg.payload = p;
            pipeline.producer(0).push(dg);
            last = t;
        });
        pipeline.producer(0).flush();
        done = true;
    });

    Exposition previous;
    std::size_t scrapes = 0;
    std::size_t compared = 0;
    while (!done || scrapes < 3) {
        const Exposition x = parse_exposition(http_get(exporter.local_endpoint().port, "/metrics").body);
        ++scrapes;
        test::check_histograms(x);
        for (const auto& s : x.samples) {
            const std::string family = x.family_of(s.name);
            const bool monotonic =
                x.types.at(family) == "counter" || (x.types.at(family) == "histogram" && s.name != family + "_sum");
            if (!monotonic || s.name.rfind("hepd_", 0) != 0) continue;
            if (const auto before = previous.value(s.name, s.labels)) {
                INFO(s.name);
                CHECK(s.value >= *before);
                ++compared;
            }
        }
        previous = x;
    }
    traffic.join();
    pipeline.finish(last);
    const Exposition end = parse_exposition(http_get(exporter.local_endpoint().port, "/metrics").body);
    CHECK(end.at("hepd_rtp_packets_total") == static_cast<double>(truth.rtp_packets));
    CHECK(end.sum("hepd_shard_datagrams_total") == static_cast<double>(truth.rtp_packets + truth.sip_packets));
    CHECK(compared > 0);
    exporter.stop();
}
