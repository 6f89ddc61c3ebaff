#include "report/run_report.hpp"

#include "core/version.hpp"
#include "rtp/stream_codec.hpp"
#include "shard/shard_worker.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace hepd::report {

using nlohmann::json;

namespace {

// Maps with only the non-zero entries: error sections stay readable.
template <class Array, class Name>
json nonzero(const Array& counts, Name name) {
    json j = json::object();
    for (std::size_t i = 0; i < counts.size(); ++i) {
        std::uint64_t v;
        if constexpr (std::is_integral_v<std::decay_t<decltype(counts[i])>>) {
            v = counts[i];
        } else {
            v = counts[i].value();
        }
        if (v != 0) j[std::string(name(i))] = v;
    }
    return j;
}

template <class H>
double quantile(const H& h, double q) {
    const auto n = h.count();
    if (n == 0) return 0;
    const auto target = static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(n)));
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < h.bounds().size(); ++i) {
        seen += h.bucket(i);
        if (seen >= target) return h.bounds()[i];
    }
    return std::numeric_limits<double>::infinity();
}

template <class H>
json summary(const Range& r, const H& h) {
    json j;
    j["count"] = r.count;
    j["mean"] = r.mean();
    j["min"] = r.count ? r.min : 0.0;
    j["max"] = r.max;
    // Bucket upper bounds of the histogram: an estimate, stated as such in the schema.
    j["p50_bucket"] = quantile(h, 0.5);
    j["p95_bucket"] = quantile(h, 0.95);
    return j;
}

// For figures no record keeps (so no exact min/max): count, mean from the histogram's sum, and
// bucket upper bounds.
template <class H>
json histogram_summary(const H& h) {
    json j;
    j["count"] = h.count();
    // Shards' sums add in any order; every value is whole microseconds, so rounding the sum there
    // gives the same mean for any number of shards.
    const auto sum_us = static_cast<double>(std::llround(h.sum() * 1e6));
    j["mean"] = h.count() ? sum_us / 1e6 / static_cast<double>(h.count()) : 0.0;
    j["p50_bucket"] = quantile(h, 0.5);
    j["p95_bucket"] = quantile(h, 0.95);
    return j;
}

// RFC 6076 figures (daemon/export/METRICS.md, "RFC 6076").
json rfc6076_section(const sip::DialogStats& ds) {
    json j;
    j["srd_seconds"] = {{"success", histogram_summary(ds.srd[static_cast<std::size_t>(sip::SetupResult::success)])},
                        {"failure", histogram_summary(ds.srd[static_cast<std::size_t>(sip::SetupResult::failure)])}};
    j["sdd_seconds"] = histogram_summary(ds.sdd);
    j["final_status"] = nonzero(ds.final_status, [](std::size_t i) { return sip::kFinalStatusNames[i]; });
    j["registrations"] = nonzero(ds.registrations,
                                 [](std::size_t i) { return sip::to_string(static_cast<sip::RegistrationResult>(i)); });
    j["rrd_seconds"] = histogram_summary(ds.rrd);
    return j;
}

template <class H>
json buckets(const H& h) {
    json j = json::array();
    for (std::size_t i = 0; i <= h.bounds().size(); ++i) {
        json b;
        b["le"] = i < h.bounds().size() ? json(h.bounds()[i]) : json("+Inf");
        b["count"] = h.bucket(i);
        j.push_back(b);
    }
    return j;
}

std::string iso(Timestamp t) { return t.us == 0 ? std::string() : format_iso8601(t); }

}  // namespace

static_assert(std::tuple_size_v<decltype(RunInfo::table_bytes)> == shard::kTableNames.size());

json build_report(const RunInfo& info, const RunInputs& in) {
    const auto& cap = *in.capture;
    const auto& ds = *in.dialogs;
    const auto& ss = *in.streams;
    json r;
    r["hepd_version"] = kVersion;
    r["files"] = info.files;
    r["shards"] = info.shards;
    if (!info.error.empty()) r["error"] = info.error;

    json run;
    run["wall_seconds"] = info.wall_seconds;
    run["cpu_seconds"] = info.cpu_seconds;
    run["frames_per_second"] = info.wall_seconds > 0 ? static_cast<double>(cap.frames) / info.wall_seconds : 0.0;
    run["peak_rss_bytes"] = info.peak_rss_bytes;
    run["rss_anon_bytes"] = info.rss_anon_bytes;
    run["reader_cpu_seconds"] = info.reader_cpu_seconds;
    run["shard_cpu_seconds"] = info.shard_cpu_seconds;
    run["bindings_waiting_peak"] = info.bindings_waiting_peak;
    json tables = json::object();
    for (std::size_t t = 0; t < shard::kTableNames.size(); ++t)
        tables[std::string(shard::kTableNames[t])] = info.table_bytes[t];
    run["table_bytes"] = tables;
    r["run"] = run;

    json c;
    c["files"] = cap.files;
    c["frames"] = cap.frames;
    c["bytes"] = cap.bytes;
    c["datagrams"] = cap.datagrams;
    c["datagrams_by_kind"] =
        nonzero(cap.datagrams_by_kind, [](std::size_t i) { return hepd::to_string(static_cast<PayloadClass>(i)); });
    c["packets_by_class"] =
        nonzero(cap.packets, [](std::size_t i) { return pcap::to_string(static_cast<pcap::PacketClass>(i)); });
    c["frames_by_link"] = nonzero(cap.frames_by_link, [](std::size_t i) { return pcap::link_type_slot_name(i); });
    c["decode_errors"] =
        nonzero(cap.decode_errors, [](std::size_t i) { return pcap::to_string(static_cast<pcap::DecodeError>(i)); });
    c["tunnelled"] =
        nonzero(cap.tunnelled, [](std::size_t i) { return pcap::to_string(static_cast<pcap::TunnelKind>(i)); });
    c["file_errors"] =
        nonzero(cap.file_errors, [](std::size_t i) { return pcap::to_string(static_cast<pcap::FileError>(i)); });
    c["fragments"] = {{"fragments", cap.fragments.fragments},
                      {"reassembled", cap.fragments.reassembled},
                      {"dropped", nonzero(cap.fragments.dropped, [](std::size_t i) {
                           return pcap::to_string(static_cast<pcap::FragmentDrop>(i));
                       })}};
    c["tcp"] = {{"segments", cap.tcp.segments},
                {"messages", cap.tcp.messages},
                {"streams_opened", cap.tcp.streams_opened},
                {"streams_evicted", cap.tcp.streams_evicted},
                {"gaps_skipped", cap.tcp.gaps_skipped},
                {"resync_bytes_dropped", cap.tcp.resync_bytes_dropped},
                {"websocket",
                 {{"upgrades", cap.tcp.websocket_upgrades},
                  {"frames", cap.tcp.websocket_frames},
                  {"control_frames", cap.tcp.websocket_control_frames},
                  {"messages", cap.tcp.websocket_messages},
                  {"keepalives", cap.tcp.websocket_keepalives},
                  {"errors", nonzero(cap.tcp.websocket_errors, [](std::size_t i) {
                       return pcap::to_string(static_cast<pcap::WebSocketError>(i));
                   })}}}};
    c["hep"] = {
        {"received", cap.hep.received()},
        {"accepted", cap.hep.accepted()},
        {"decode_errors", nonzero(cap.hep.decode_errors,
                                  [](std::size_t i) { return hep::to_string(static_cast<hep::DecodeError>(i)); })},
        {"timestamp_fixups", nonzero(cap.hep.timestamp_fixups, [](std::size_t i) {
             return hep::to_string(static_cast<hep::TimestampFixup>(i));
         })}};
    r["capture"] = c;

    const shard::DuplicateStats no_duplicates;
    const auto& dups = in.duplicates != nullptr ? *in.duplicates : no_duplicates;
    r["duplicates"] = {
        {"by_kind",
         nonzero(dups.duplicates, [](std::size_t i) { return hepd::to_string(static_cast<PayloadClass>(i)); })},
        {"evictions", dups.evictions.value()}};

    json sip;
    json requests = json::object();
    json responses = json::object();
    for (std::size_t m = 0; m < sip::kMethodCount; ++m) {
        std::uint64_t n = 0;
        for (const auto& a : ds.requests[m]) n += a.value();
        const std::string name(sip::to_string(static_cast<sip::Method>(m)));
        if (n) requests[name] = n;
        json by_class = json::object();
        for (std::size_t k = 0; k < sip::kStatusClassCount; ++k) {
            std::uint64_t v = 0;
            for (const auto& a : ds.responses[m][k]) v += a.value();
            if (v) by_class[std::string(sip::status_class_name(k))] = v;
        }
        if (!by_class.empty()) responses[name] = by_class;
    }
    sip["requests"] = requests;
    sip["responses"] = responses;
    sip["retransmissions"] =
        nonzero(ds.retransmissions, [](std::size_t i) { return sip::to_string(static_cast<sip::Method>(i)); });
    sip["parse_errors"] =
        nonzero(ds.parse_errors, [](std::size_t i) { return sip::to_string(static_cast<sip::ParseError>(i)); });
    sip["sdp_errors"] =
        nonzero(ds.sdp_errors, [](std::size_t i) { return sip::to_string(static_cast<sip::SdpError>(i)); });
    sip["anomalies"] =
        nonzero(ds.anomalies, [](std::size_t i) { return sip::to_string(static_cast<sip::DialogAnomaly>(i)); });
    sip["defects"] =
        nonzero(ds.defects, [](std::size_t i) { return sip::to_string(static_cast<sip::MessageDefect>(i)); });
    r["sip"] = sip;

    Range pdd, setup, duration, mos, reported_mos;
    std::vector<CallRow> failed;
    std::vector<StreamRow> worst;
    std::vector<ReportedRow> worst_reported;
    std::uint64_t failed_total = 0;
    for (const auto* col : in.collectors) {
        pdd.merge(col->pdd());
        setup.merge(col->setup());
        duration.merge(col->duration());
        mos.merge(col->mos());
        failed_total += col->failed_total();
        failed.insert(failed.end(), col->failed_calls().begin(), col->failed_calls().end());
        worst.insert(worst.end(), col->worst_streams().begin(), col->worst_streams().end());
        reported_mos.merge(col->reported_mos());
        worst_reported.insert(worst_reported.end(), col->worst_reported().begin(), col->worst_reported().end());
    }
    std::sort(worst_reported.begin(), worst_reported.end(), ShardCollector::worse_reported);
    if (worst_reported.size() > in.keep) worst_reported.resize(in.keep);
    std::sort(failed.begin(), failed.end(), ShardCollector::earlier);
    if (failed.size() > in.keep) failed.resize(in.keep);
    std::sort(worst.begin(), worst.end(), ShardCollector::worse);
    if (worst.size() > in.keep) worst.resize(in.keep);

    json d;
    d["created"] = ds.dialogs_created.value();
    d["finished"] =
        nonzero(ds.dialogs_finished, [](std::size_t i) { return sip::to_string(static_cast<sip::DialogOutcome>(i)); });
    json active = json::object();
    for (std::size_t s = 0; s < sip::kDialogStateCount; ++s) {
        const auto state = static_cast<sip::DialogState>(s);
        if (!sip::is_finished(state) && ds.dialogs_by_state[s].value() != 0)
            active[std::string(sip::to_string(state))] = ds.dialogs_by_state[s].value();
    }
    d["active_at_end"] = active;
    d["reinvites"] = ds.reinvites.value();
    d["forked"] = ds.forked_dialogs.value();
    d["evictions"] = ds.dialog_evictions_total();
    d["evicted_by_state"] =
        nonzero(ds.dialog_evictions, [](std::size_t i) { return sip::to_string(static_cast<sip::DialogState>(i)); });
    d["pdd_seconds"] = summary(pdd, ds.pdd);
    d["setup_seconds"] = summary(setup, ds.setup);
    d["duration_seconds"] = summary(duration, ds.duration);
    d["q850_causes"] = nonzero(ds.q850_causes, [](std::size_t i) {
        return i + 1 < sip::kQ850Slots ? std::to_string(i) : std::string("other");
    });
    d["failed_total"] = failed_total;
    json fl = json::array();
    for (const auto& f : failed) {
        fl.push_back({{"call_id", f.call_id},
                      {"from_tag", f.from_tag},
                      {"invite_time", iso(f.invite)},
                      {"caller", f.caller.to_string()},
                      {"callee", f.callee.to_string()},
                      {"outcome", f.outcome},
                      {"final_status", f.final_status},
                      {"q850_cause", f.q850_cause},
                      {"pdd_seconds", f.pdd_seconds}});
    }
    d["failed_calls"] = fl;
    r["dialogs"] = d;

    json t = json::object();
    for (std::size_t m = 0; m < sip::kMethodCount; ++m) {
        if (ds.transactions_started[m].value() == 0) continue;
        t[std::string(sip::to_string(static_cast<sip::Method>(m)))] = {
            {"started", ds.transactions_started[m].value()},
            {"finished", nonzero(ds.transactions_finished[m], [](std::size_t i) {
                 return sip::to_string(static_cast<sip::TransactionOutcome>(i));
             })}};
    }
    r["transactions"] = t;
    r["rfc6076"] = rfc6076_section(ds);

    json s;
    s["started"] = ss.streams_started.value();
    s["finished"] =
        nonzero(ss.streams_finished, [](std::size_t i) { return rtp::to_string(static_cast<rtp::FinishReason>(i)); });
    s["rtp_packets"] = ss.rtp_packets.value();
    s["lost_packets"] = ss.lost_packets.value();
    s["duplicate_packets"] = ss.duplicate_packets.value();
    s["out_of_order_packets"] = ss.out_of_order_packets.value();
    s["event_packets"] = ss.event_packets.value();
    s["unvalidated"] = ss.unvalidated_streams.value();
    s["by_codec"] = nonzero(ss.finished_streams_by_codec,
                            [](std::size_t i) { return rtp::to_string(static_cast<rtp::CodecLabel>(i)); });
    s["jitter_seconds"] = buckets(ss.jitter_seconds);
    json m = summary(mos, ss.mos);
    m["buckets"] = buckets(ss.mos);
    s["mos"] = m;
    s["rtcp_reports"] =
        nonzero(ss.rtcp_reports, [](std::size_t i) { return rtp::to_string(static_cast<rtp::ReportSource>(i)); });
    s["evictions"] =
        nonzero(ss.evictions, [](std::size_t i) { return rtp::to_string(static_cast<rtp::StreamTableKind>(i)); });
    s["rtp_errors"] =
        nonzero(ss.rtp_errors, [](std::size_t i) { return rtp::to_string(static_cast<rtp::RtpError>(i)); });
    s["rtcp_errors"] =
        nonzero(ss.rtcp_errors, [](std::size_t i) { return rtp::to_string(static_cast<rtp::RtcpError>(i)); });
    json wl = json::array();
    for (const auto& w : worst) {
        wl.push_back({{"call_id", w.call_id},
                      {"src", w.src.to_string()},
                      {"dst", w.dst.to_string()},
                      {"ssrc", w.ssrc},
                      {"codec", w.codec},
                      {"packets", w.packets},
                      {"expected", w.expected},
                      {"lost", w.lost},
                      {"loss_percent", w.loss_percent},
                      {"max_jitter_ms", w.max_jitter_ms},
                      {"mos", w.has_mos ? json(w.mos) : json(nullptr)},
                      {"first", iso(w.first)},
                      {"last", iso(w.last)}});
    }
    s["worst"] = wl;
    s["loss_ratio"] = buckets(ss.loss_ratio);
    s["rtt_seconds"] = buckets(ss.rtt_seconds);

    // Streams known only from their receivers' RTCP-JSON reports (source="rtcp").
    const rtp::ReportedStreamStats& rs = ss.reported;
    json rep;
    rep["finished"] =
        nonzero(rs.finished, [](std::size_t i) { return rtp::to_string(static_cast<rtp::FinishReason>(i)); });
    rep["lost_packets"] = rs.lost_packets.value();
    rep["by_codec"] =
        nonzero(rs.by_codec, [](std::size_t i) { return rtp::to_string(static_cast<rtp::CodecLabel>(i)); });
    rep["jitter_seconds"] = buckets(rs.jitter_seconds);
    rep["loss_ratio"] = buckets(rs.loss_ratio);
    rep["rtt_seconds"] = buckets(rs.rtt_seconds);
    json rm = summary(reported_mos, rs.mos);
    rm["buckets"] = buckets(rs.mos);
    rep["mos"] = rm;
    json rl = json::array();
    for (const auto& w : worst_reported) {
        rl.push_back({{"call_id", w.call_id},
                      {"ssrc", w.ssrc},
                      {"reporter", w.reporter.to_string()},
                      {"reports", w.reports},
                      {"codec", w.codec},
                      {"lost", w.lost},
                      {"loss_percent", w.loss_percent},
                      {"max_jitter_ms", w.max_jitter_ms},
                      {"rtt_ms", w.rtt_ms >= 0 ? json(w.rtt_ms) : json(nullptr)},
                      {"mos", w.has_mos ? json(w.mos) : json(nullptr)},
                      {"first", iso(w.first)},
                      {"last", iso(w.last)}});
    }
    rep["worst"] = rl;
    s["reported"] = rep;
    r["streams"] = s;
    return r;
}

namespace {
std::string kv_line(const json& obj) {
    if (!obj.is_object() || obj.empty()) return "none";
    std::string out;
    for (auto it = obj.begin(); it != obj.end(); ++it) {
        if (!out.empty()) out += ", ";
        out += it.key() + " " + it->dump();
    }
    return out;
}
std::string fixed(double v, int digits = 3) {
    std::ostringstream o;
    o.setf(std::ios::fixed);
    o.precision(digits);
    o << v;
    return o.str();
}
std::string span(const json& s, const char* unit = " s") {
    if (s["count"].get<std::uint64_t>() == 0) return "n/a";
    return "n=" + s["count"].dump() + " mean " + fixed(s["mean"].get<double>()) + unit + ", min " +
           fixed(s["min"].get<double>()) + ", max " + fixed(s["max"].get<double>()) +
           ", p50<=" + fixed(s["p50_bucket"].get<double>(), 2) + ", p95<=" + fixed(s["p95_bucket"].get<double>(), 2);
}
std::string histogram_span(const json& s) {
    if (s["count"].get<std::uint64_t>() == 0) return "n/a";
    return "n=" + s["count"].dump() + " mean " + fixed(s["mean"].get<double>()) +
           " s, p50<=" + fixed(s["p50_bucket"].get<double>(), 2) + ", p95<=" + fixed(s["p95_bucket"].get<double>(), 2);
}
}  // namespace

std::string render_json(const nlohmann::json& report) {
    return report.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string render_summary(const json& r) {
    const auto& run = r["run"];
    return r["capture"]["frames"].dump() + " frames in " + fixed(run["wall_seconds"].get<double>()) + " s (" +
           fixed(run["frames_per_second"].get<double>() / 1e6, 2) + " M/s, " + r["shards"].dump() +
           " shard(s)); dialogs " + r["dialogs"]["created"].dump() + " (" + kv_line(r["dialogs"]["finished"]) +
           "); streams " + r["streams"]["started"].dump() + ", RTP packets " + r["streams"]["rtp_packets"].dump() +
           ", lost " + r["streams"]["lost_packets"].dump();
}

std::string render_text(const json& r) {
    std::ostringstream o;
    const auto& run = r["run"];
    const auto& c = r["capture"];
    o << "hepd " << r["hepd_version"].get<std::string>() << " offline report\n";
    for (const auto& f : r["files"]) o << "  file " << f.get<std::string>() << "\n";
    if (r.contains("error")) o << "  STOPPED EARLY: " << r["error"].get<std::string>() << "\n";
    o << "\nRun\n  shards " << r["shards"] << ", wall " << fixed(run["wall_seconds"].get<double>()) << " s, cpu "
      << fixed(run["cpu_seconds"].get<double>()) << " s, " << fixed(run["frames_per_second"].get<double>(), 0)
      << " frames/s, peak RSS " << run["peak_rss_bytes"].get<std::uint64_t>() / 1024 << " KiB (anonymous "
      << run["rss_anon_bytes"].get<std::uint64_t>() / 1024 << " KiB)\n";
    if (!run["shard_cpu_seconds"].empty()) {
        o << "  cpu by thread: reader " << fixed(run["reader_cpu_seconds"].get<double>()) << " s, shards";
        for (const auto& s : run["shard_cpu_seconds"]) o << " " << fixed(s.get<double>());
        o << " s\n";
    }
    if (run.contains("table_bytes")) {
        o << "  tables at the end of the input:";
        const char* sep = " ";
        for (const std::string_view name : shard::kTableNames) {
            o << sep << name << " " << run["table_bytes"].value(name, std::int64_t{0}) / 1024 << " KiB";
            sep = ", ";
        }
        o << "\n";
    }
    o << "\nCapture\n  frames " << c["frames"] << ", bytes " << c["bytes"] << ", datagrams " << c["datagrams"] << "\n"
      << "  by kind: " << kv_line(c["datagrams_by_kind"]) << "\n"
      << "  by class: " << kv_line(c["packets_by_class"]) << "\n"
      << "  link types: " << kv_line(c["frames_by_link"]) << "\n"
      << "  decode errors: " << kv_line(c["decode_errors"]) << "\n"
      << "  out of tunnels: " << kv_line(c["tunnelled"]) << "\n"
      << "  file errors: " << kv_line(c["file_errors"]) << "\n"
      << "  HEP: received " << c["hep"]["received"] << ", accepted " << c["hep"]["accepted"] << ", errors "
      << kv_line(c["hep"]["decode_errors"]) << ", timestamp fix-ups " << kv_line(c["hep"]["timestamp_fixups"])
      << "\n  IP fragments " << c["fragments"]["fragments"] << " (reassembled " << c["fragments"]["reassembled"]
      << ", dropped " << kv_line(c["fragments"]["dropped"]) << "); TCP segments " << c["tcp"]["segments"]
      << ", messages " << c["tcp"]["messages"] << " (over WebSocket " << c["tcp"]["websocket"]["messages"]
      << ", errors " << kv_line(c["tcp"]["websocket"]["errors"]) << ")\n";
    const auto& dup = r["duplicates"];
    o << "  duplicates (copies from another agent, dropped): " << kv_line(dup["by_kind"]) << ", evicted early "
      << dup["evictions"] << "\n";
    const auto& s = r["sip"];
    o << "\nSIP\n  requests: " << kv_line(s["requests"]) << "\n  responses: " << kv_line(s["responses"])
      << "\n  retransmissions: " << kv_line(s["retransmissions"]) << "\n  parse errors: " << kv_line(s["parse_errors"])
      << "\n  anomalies: " << kv_line(s["anomalies"]) << "\n  defects: " << kv_line(s["defects"]) << "\n";
    const auto& d = r["dialogs"];
    o << "\nDialogs\n  created " << d["created"] << ", finished: " << kv_line(d["finished"])
      << "\n  still active at the end: " << kv_line(d["active_at_end"]) << "\n  PDD: " << span(d["pdd_seconds"])
      << "\n  setup: " << span(d["setup_seconds"]) << "\n  duration: " << span(d["duration_seconds"])
      << "\n  Q.850 causes: " << kv_line(d["q850_causes"]) << "\n  evictions " << d["evictions"]
      << " (by state: " << kv_line(d["evicted_by_state"]) << ")\n";
    if (!d["failed_calls"].empty()) {
        o << "  failed calls (" << d["failed_total"] << ", earliest " << d["failed_calls"].size() << "):\n";
        for (const auto& f : d["failed_calls"])
            o << "    " << f["invite_time"].get<std::string>() << "  " << f["outcome"].get<std::string>() << " "
              << f["final_status"] << " q850 "
              << (f["q850_cause"].get<int>() < 0 ? std::string("-") : f["q850_cause"].dump()) << "  "
              << f["caller"].get<std::string>() << " -> " << f["callee"].get<std::string>() << "  "
              << f["call_id"].get<std::string>() << "\n";
    }
    const auto& q = r["rfc6076"];
    o << "\nRFC 6076\n  SRD success: " << histogram_span(q["srd_seconds"]["success"])
      << "\n  SRD failure: " << histogram_span(q["srd_seconds"]["failure"])
      << "\n  SDD: " << histogram_span(q["sdd_seconds"]) << "\n  final status: " << kv_line(q["final_status"])
      << "\n  registrations: " << kv_line(q["registrations"]) << "\n  RRD: " << histogram_span(q["rrd_seconds"])
      << "\n";
    const auto& t = r["streams"];
    o << "\nStreams\n  started " << t["started"] << ", finished: " << kv_line(t["finished"]) << "\n  RTP packets "
      << t["rtp_packets"] << ", lost " << t["lost_packets"] << ", duplicates " << t["duplicate_packets"]
      << ", out of order " << t["out_of_order_packets"] << ", events " << t["event_packets"]
      << "\n  never validated (no loss or MOS): " << t["unvalidated"] << "\n  codecs: " << kv_line(t["by_codec"])
      << "\n  MOS: " << span(t["mos"], "") << "\n  RTCP reports: " << kv_line(t["rtcp_reports"])
      << "\n  RTP errors: " << kv_line(t["rtp_errors"]) << "\n";
    if (!t["worst"].empty()) {
        o << "  worst streams:\n";
        for (const auto& w : t["worst"])
            o << "    loss " << fixed(w["loss_percent"].get<double>(), 2) << "% (" << w["lost"] << "/" << w["expected"]
              << ")  jitter " << fixed(w["max_jitter_ms"].get<double>(), 2) << " ms  MOS "
              << (w["mos"].is_null() ? std::string("-") : fixed(w["mos"].get<double>(), 2)) << "  "
              << w["codec"].get<std::string>() << "  " << w["src"].get<std::string>() << " -> "
              << w["dst"].get<std::string>() << "  " << w["call_id"].get<std::string>() << "\n";
    }
    const auto& rep = t["reported"];
    o << "  RTCP-reported streams (no RTP captured): finished: " << kv_line(rep["finished"]) << ", lost "
      << rep["lost_packets"] << "\n    MOS: " << span(rep["mos"], "") << "\n";
    if (!rep["worst"].empty()) {
        o << "    worst reported streams:\n";
        for (const auto& w : rep["worst"])
            o << "      loss " << fixed(w["loss_percent"].get<double>(), 2) << "% (lost " << w["lost"] << ")  jitter "
              << fixed(w["max_jitter_ms"].get<double>(), 2) << " ms  RTT "
              << (w["rtt_ms"].is_null() ? std::string("-") : fixed(w["rtt_ms"].get<double>(), 1) + " ms") << "  MOS "
              << (w["mos"].is_null() ? std::string("-") : fixed(w["mos"].get<double>(), 2)) << "  "
              << w["codec"].get<std::string>() << "  " << w["reports"] << " reports from "
              << w["reporter"].get<std::string>() << "  " << w["call_id"].get<std::string>() << "\n";
    }
    return o.str();
}

}  // namespace hepd::report
