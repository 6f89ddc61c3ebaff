// The offline report's text and one-line summary, rendered from a small input whose every
// figure is known: statistics set by hand, two dialogs fed to a collector as the dialog table
// would remove them. The expected text is written out here from the input, not copied from a
// run of the renderer.
#include "report/run_report.hpp"

#include "core/version.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace hepd;
using namespace hepd::report;

namespace {

struct Input {
    pcap::CaptureStats capture;
    sip::DialogStats dialogs;
    rtp::StreamStats streams;
    ShardCollector collector;
    RunInfo info;

    Input() {
        info.files = {"calls.pcap"};
        info.shards = 2;
        info.wall_seconds = 2.0;
        info.cpu_seconds = 1.5;
        info.peak_rss_bytes = 8 * 1024 * 1024;
        info.rss_anon_bytes = 3 * 1024 * 1024;
        capture.frames = 3'000'000;  // over 2 s of wall time: 1.5 M frames/s
        capture.bytes = 123'456'789;
        capture.datagrams = 2'999'990;

        // Two calls: one answered, one refused with 486 (Q.850 17), PDD 0.5 s and 1.25 s.
        dialogs.dialogs_created.add(2);
        dialogs.dialogs_finished[static_cast<std::size_t>(sip::DialogOutcome::completed)].add();
        dialogs.dialogs_finished[static_cast<std::size_t>(sip::DialogOutcome::failed)].add();
        dialogs.pdd.observe(0.5);   // bucket le 0.5
        dialogs.pdd.observe(1.25);  // bucket le 2
        // RFC 6076: both rang, so both SRDs are successes; the BYE answered in 40 ms; one
        // registration accepted 80 ms after its first REGISTER, one refused.
        dialogs.srd[static_cast<std::size_t>(sip::SetupResult::success)].observe(0.5);
        dialogs.srd[static_cast<std::size_t>(sip::SetupResult::success)].observe(1.25);
        dialogs.sdd.observe(0.04);
        dialogs.final_status[sip::final_status_index(200)].add();
        dialogs.final_status[sip::final_status_index(486)].add();
        dialogs.rrd.observe(0.08);
        dialogs.registrations[static_cast<std::size_t>(sip::RegistrationResult::success)].add();
        dialogs.registrations[static_cast<std::size_t>(sip::RegistrationResult::failure)].add();
        const Timestamp t0 = Timestamp::from_parts(1796013063, 512829);  // 2026-11-30T04:31:03.512829Z
        sip::Dialog answered;
        answered.state = sip::DialogState::terminated;
        answered.set_invite_time(t0);
        answered.set_time(sip::DialogTime::ringing, Timestamp{t0.us + 500'000});
        answered.set_time(sip::DialogTime::answer, Timestamp{t0.us + 2'000'000});
        answered.set_time(sip::DialogTime::bye, Timestamp{t0.us + 62'000'000});
        collector.on_dialog_removed("ok-1@test", "tag-ok", answered, {}, false);
        sip::Dialog refused;
        refused.state = sip::DialogState::failed;
        refused.set_invite_time(Timestamp{t0.us + 1'000'000});
        refused.set_time(sip::DialogTime::ringing, Timestamp{t0.us + 2'250'000});
        refused.final_status = 486;
        refused.q850_cause = 17;
        refused.set_caller(Endpoint{IpAddress::v4(0x0a000001U), 5060});
        refused.set_callee(Endpoint{IpAddress::v4(0x0a000002U), 5062});
        collector.on_dialog_removed("busy-1@test", "tag-busy", refused, {}, false);

        streams.streams_started.add(4);
        streams.streams_finished[static_cast<std::size_t>(rtp::FinishReason::idle)].add(3);
        streams.streams_finished[static_cast<std::size_t>(rtp::FinishReason::flushed)].add(1);
        streams.rtp_packets.add(12'000);
        streams.lost_packets.add(37);
        streams.duplicate_packets.add(2);
    }

    nlohmann::json report() const {
        RunInputs in;
        in.capture = &capture;
        in.dialogs = &dialogs;
        in.streams = &streams;
        in.collectors = {&collector};
        return build_report(info, in);
    }
};

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("summary: one line with the run's figures", "[report]") {
    const Input input;
    CHECK(render_summary(input.report()) ==
          "3000000 frames in 2.000 s (1.50 M/s, 2 shard(s)); dialogs 2 (completed 1, failed 1); streams 4, "
          "RTP packets 12000, lost 37");
}

TEST_CASE("text report: every section shows its figures", "[report]") {
    const Input input;
    const std::string text = render_text(input.report());
    INFO(text);
    CHECK(text.rfind(std::string("hepd ") + kVersion + " offline report\n  file calls.pcap\n\nRun\n", 0) == 0);
    CHECK_FALSE(contains(text, "STOPPED EARLY"));
    // 8 MiB and 3 MiB in KiB; 3,000,000 frames / 2 s.
    CHECK(contains(text,
                   "\nRun\n  shards 2, wall 2.000 s, cpu 1.500 s, 1500000 frames/s, peak RSS 8192 KiB "
                   "(anonymous 3072 KiB)\n"));
    CHECK_FALSE(contains(text, "cpu by thread"));  // one thread did everything: nothing to split
    CHECK(contains(text, "\nCapture\n  frames 3000000, bytes 123456789, datagrams 2999990\n  by kind: none\n"));
    // PDD: n 2, mean (0.5 + 1.25) / 2 = 0.875; p50 is the bucket of the 1st of 2 (le 0.5), p95
    // that of the 2nd (ceil(1.9) = 2: le 2). Setup: the answered call only, 2 s; duration 60 s.
    CHECK(contains(text,
                   "\nDialogs\n  created 2, finished: completed 1, failed 1\n  still active at the end: none\n"
                   "  PDD: n=2 mean 0.875 s, min 0.500, max 1.250, p50<=0.50, p95<=2.00\n"));
    CHECK(contains(text, "  setup: n=1 mean 2.000 s, min 2.000, max 2.000"));
    CHECK(contains(text, "  duration: n=1 mean 60.000 s, min 60.000, max 60.000"));
    // The refused call, and only it, in the failed list; its INVITE 1 s after t0.
    CHECK(contains(text,
                   "  failed calls (1, earliest 1):\n"
                   "    2026-11-30T04:31:04.512829Z  failed 486 q850 17  10.0.0.1:5060 -> 10.0.0.2:5062"
                   "  busy-1@test\n"));
    CHECK_FALSE(contains(text, "ok-1@test"));
    // Histogram-only figures: no min/max. SRD as PDD above; SDD 0.04 s and RRD 0.08 s in the
    // buckets le 0.05 and le 0.1.
    CHECK(contains(text,
                   "\nRFC 6076\n  SRD success: n=2 mean 0.875 s, p50<=0.50, p95<=2.00\n  SRD failure: n/a\n"
                   "  SDD: n=1 mean 0.040 s, p50<=0.05, p95<=0.05\n  final status: 200 1, 486 1\n"
                   "  registrations: failure 1, success 1\n  RRD: n=1 mean 0.080 s, p50<=0.10, p95<=0.10\n"));
    CHECK(contains(text,
                   "\nStreams\n  started 4, finished: flushed 1, idle 3\n  RTP packets 12000, lost 37, "
                   "duplicates 2, out of order 0, events 0\n"));
    CHECK(contains(text, "  MOS: n/a\n"));  // no stream reported a quality estimate
    CHECK_FALSE(contains(text, "worst streams"));
}

TEST_CASE("report: CPU time by thread, the reader's and each shard's", "[report]") {
    Input input;
    input.info.reader_cpu_seconds = 0.5;
    input.info.shard_cpu_seconds = {0.25, 0.75};
    const auto json = input.report();
    CHECK(json["run"]["reader_cpu_seconds"] == 0.5);
    CHECK(json["run"]["shard_cpu_seconds"] == nlohmann::json::array({0.25, 0.75}));
    const std::string text = render_text(json);
    INFO(text);
    CHECK(contains(text, "(anonymous 3072 KiB)\n  cpu by thread: reader 0.500 s, shards 0.250 0.750 s\n"));
}

TEST_CASE("report: what the tables held at the end of the input, by table", "[report]") {
    Input input;
    input.info.table_bytes = {3 * 1024 * 1024, 2048, 5 * 1024 * 1024, 0};
    const auto json = input.report();
    CHECK(json["run"]["table_bytes"] ==
          nlohmann::json{
              {"dialogs", 3 * 1024 * 1024}, {"transactions", 2048}, {"streams", 5 * 1024 * 1024}, {"duplicates", 0}});
    const std::string text = render_text(json);
    INFO(text);
    CHECK(contains(text,
                   "\n  tables at the end of the input: dialogs 3072 KiB, transactions 2 KiB, streams 5120 KiB, "
                   "duplicates 0 KiB\n"));
}

TEST_CASE("text report: a run that stopped early says where", "[report]") {
    Input input;
    input.info.error = "calls.pcap: record at offset 4096 runs past the end of the file";
    const std::string text = render_text(input.report());
    CHECK(contains(text,
                   "  file calls.pcap\n  STOPPED EARLY: calls.pcap: record at offset 4096 runs past the end "
                   "of the file\n\nRun\n"));
}

TEST_CASE("report: copies dropped by the duplicate filter, by kind", "[report]") {
    Input input;
    CHECK(input.report()["duplicates"] == nlohmann::json{{"by_kind", nlohmann::json::object()}, {"evictions", 0}});
    shard::DuplicateStats dups;
    dups.duplicates[static_cast<std::size_t>(PayloadClass::sip)].add(7);
    dups.duplicates[static_cast<std::size_t>(PayloadClass::rtp)].add(500);
    dups.evictions.add(2);
    RunInputs in;
    in.capture = &input.capture;
    in.dialogs = &input.dialogs;
    in.streams = &input.streams;
    in.duplicates = &dups;
    const auto json = build_report(input.info, in);
    CHECK(json["duplicates"]["by_kind"] == nlohmann::json{{"sip", 7}, {"rtp", 500}});
    CHECK(json["duplicates"]["evictions"] == 2);
    const std::string text = render_text(json);
    INFO(text);
    CHECK(contains(text, "\n  duplicates (copies from another agent, dropped): rtp 500, sip 7, evicted early 2\n"));
}

TEST_CASE("report: streams known only from RTCP-JSON, each under its call with its figures", "[report][rtcp_json]") {
    Input input;
    ShardCollector rtcp(20);
    // rtpengine's view of one stream of a call: 4 reports of 25 % lost on average, the last
    // cumulative count 20, jitter up to 160 units at PCMA's 8 kHz (20 ms), RTT 120 ms.
    rtp::ReportedStream s;
    s.reporter = Endpoint{IpAddress::v4(0x0a000009U), 20000};
    s.first = Timestamp::from_parts(1796013063, 0);
    s.last = Timestamp::from_parts(1796013068, 0);
    s.view.reports = 4;
    s.view.cumulative_lost = 20;
    s.view.rtt_us = 120'000;
    s.fraction_lost_sum = 4 * 64;
    s.max_jitter = 160;
    s.codec = rtp::Codec::pcma;
    s.clock_rate = 8000;
    const rtp::ReportedSummary sum = rtp::summarize_reported(s, rtp::QualityOptions{});
    rtcp.on_reported_stream_finished(
        {rtp::ReportedKey{CompactText("engine-1@test"), 0xE}, s, sum, rtp::FinishReason::idle});
    REQUIRE(sum.has_quality);
    input.streams.reported.finished[static_cast<std::size_t>(rtp::FinishReason::idle)].add();
    input.streams.reported.lost_packets.add(20);
    input.streams.reported.mos.observe(sum.mos);

    RunInputs in;
    in.capture = &input.capture;
    in.dialogs = &input.dialogs;
    in.streams = &input.streams;
    in.collectors = {&input.collector, &rtcp};
    const nlohmann::json r = build_report(input.info, in);
    const auto& rep = r["streams"]["reported"];
    CHECK(rep["finished"] == nlohmann::json{{"idle", 1}});
    CHECK(rep["lost_packets"] == 20);
    CHECK(rep["mos"]["count"] == 1);
    CHECK(rep["mos"]["min"].get<double>() == Approx(sum.mos));
    REQUIRE(rep["worst"].size() == 1);
    const auto& w = rep["worst"][0];
    CHECK(w["call_id"] == "engine-1@test");
    CHECK(w["ssrc"] == 0xE);
    CHECK(w["reporter"] == "10.0.0.9:20000");
    CHECK(w["reports"] == 4);
    CHECK(w["codec"] == "pcma");
    CHECK(w["lost"] == 20);
    CHECK(w["loss_percent"].get<double>() == Approx(25.0));
    CHECK(w["max_jitter_ms"].get<double>() == Approx(20.0));
    CHECK(w["rtt_ms"].get<double>() == Approx(120.0));
    CHECK(w["mos"].get<double>() == Approx(sum.mos));

    const std::string text = render_text(r);
    INFO(text);
    CHECK(contains(text, "  RTCP-reported streams (no RTP captured): finished: idle 1, lost 20\n"));
    CHECK(contains(text,
                   "    worst reported streams:\n      loss 25.00% (lost 20)  jitter 20.00 ms  RTT 120.0 ms  MOS "));
    CHECK(contains(text, "  pcma  4 reports from 10.0.0.9:20000  engine-1@test\n"));
}

TEST_CASE("report: PDD and setup extremes cover the calls still ringing or up at the end, as the percentiles do",
          "[report]") {
    // The dialog table observes PDD at the 18x and setup at the 2xx, finished call or not: the
    // report's count, min, max and mean are of the same calls as its bucket percentiles.
    const Timestamp t0 = Timestamp::from_parts(1796013063, 0);
    ShardCollector collector;
    sip::Dialog done;
    done.state = sip::DialogState::terminated;
    done.set_invite_time(t0);
    done.set_time(sip::DialogTime::ringing, Timestamp{t0.us + 2'000'000});
    done.set_time(sip::DialogTime::answer, Timestamp{t0.us + 3'000'000});
    done.set_time(sip::DialogTime::bye, Timestamp{t0.us + 63'000'000});
    collector.on_dialog_removed("done@test", "t1", done, {}, false);
    sip::Dialog evicted;  // evicted while ringing: it never finished, its PDD was measured
    evicted.state = sip::DialogState::early;
    evicted.set_invite_time(t0);
    evicted.set_time(sip::DialogTime::ringing, Timestamp{t0.us + 7'000'000});
    collector.on_dialog_removed("evicted@test", "t2", evicted, {}, true);

    sip::DialogTable table(sip::DialogConfig{}, nullptr);
    sip::Dialog ringing;  // still ringing at the end of the input
    ringing.state = sip::DialogState::early;
    ringing.set_invite_time(t0);
    ringing.set_time(sip::DialogTime::ringing, Timestamp{t0.us + 10'000'000});
    REQUIRE(table.restore("ringing@test", "t3", ringing, {}, {}));
    sip::Dialog up;  // answered, no BYE yet
    up.state = sip::DialogState::confirmed;
    up.set_invite_time(t0);
    up.set_time(sip::DialogTime::answer, Timestamp{t0.us + 5'000'000});
    REQUIRE(table.restore("up@test", "t4", up, {}, {}));
    collector.collect_remaining(table);

    CHECK(collector.pdd().count == 3);
    CHECK(collector.pdd().min == 2.0);
    CHECK(collector.pdd().max == 10.0);
    CHECK(collector.setup().count == 2);
    CHECK(collector.setup().max == 5.0);
    CHECK(collector.duration().count == 1);
    CHECK(collector.failed_total() == 0);  // unfinished calls are not failed ones
}

TEST_CASE("report: worst streams that tie on every figure but one still have one order", "[report]") {
    // One stream counted twice (overlapping captures merged), once with its codec known.
    StreamRow a;
    a.call_id = "c1";
    a.ssrc = 5;
    a.codec = "pcma";
    StreamRow b = a;
    b.codec = "unknown";
    CHECK(ShardCollector::worse(a, b) != ShardCollector::worse(b, a));
    ReportedRow r;
    r.call_id = "c1";
    r.ssrc = 5;
    r.last = Timestamp{2'000'000};
    r.codec = "pcma";
    ReportedRow q = r;
    q.codec = "unknown";
    CHECK(ShardCollector::worse_reported(r, q) != ShardCollector::worse_reported(q, r));
    q = r;
    q.last = Timestamp{3'000'000};
    CHECK(ShardCollector::worse_reported(r, q) != ShardCollector::worse_reported(q, r));
}

TEST_CASE("report: the JSON text replaces packet bytes that are not UTF-8", "[report]") {
    // Call-IDs and tags are whatever the packets held; the report must still be written.
    Input in;
    sip::Dialog refused;
    refused.state = sip::DialogState::failed;
    refused.set_invite_time(Timestamp::from_parts(1796013063, 0));
    refused.final_status = 486;
    in.collector.on_dialog_removed("bad\xff\xfe-id@test", "tag\xc3", refused, {}, false);
    std::string text;
    REQUIRE_NOTHROW(text = render_json(in.report()));
    CHECK(contains(text, "bad\xef\xbf\xbd\xef\xbf\xbd-id@test"));  // U+FFFD for each byte
    CHECK(nlohmann::json::parse(text)["dialogs"]["failed_total"] == 2);
}
