#include "report/collector.hpp"

#include <algorithm>
#include <tuple>

namespace hepd::report {

bool ShardCollector::worse(const StreamRow& a, const StreamRow& b) noexcept {
    if (a.loss_percent != b.loss_percent) return a.loss_percent > b.loss_percent;
    if (a.has_mos != b.has_mos) return a.has_mos;
    if (a.mos != b.mos) return a.mos < b.mos;
    if (a.max_jitter_ms != b.max_jitter_ms) return a.max_jitter_ms > b.max_jitter_ms;
    // Ties broken by identity so that the list never depends on arrival order (shard count).
    if (a.call_id != b.call_id) return a.call_id < b.call_id;
    if (a.src != b.src) return a.src < b.src;
    if (a.dst != b.dst) return a.dst < b.dst;
    if (a.ssrc != b.ssrc) return a.ssrc < b.ssrc;
    if (a.first != b.first) return a.first < b.first;  // several streams of one (src, dst, SSRC), one per call
    return std::tie(a.last, a.packets, a.expected, a.lost, a.codec) <
           std::tie(b.last, b.packets, b.expected, b.lost, b.codec);
}

void ShardCollector::on_stream_finished(const rtp::FinishedStream& f) {
    const auto& s = f.summary;
    if (s.has_quality) mos_.add(s.mos);
    StreamRow row;
    row.loss_percent = s.loss_percent;
    row.has_mos = s.has_quality;
    row.mos = s.mos;
    row.max_jitter_ms = s.max_jitter_ms;
    row.src = f.key.src;
    row.dst = f.key.dst;
    row.ssrc = f.key.ssrc;
    row.first = f.stream.first;
    if (f.binding != nullptr) row.call_id = f.binding->call_id;
    // Keep the list short: a candidate that cannot enter a full list is dropped at once.
    if (worst_.size() >= keep_ && !worse(row, worst_.back())) return;
    row.codec = std::string(rtp::to_string(s.codec));
    row.packets = f.stream.packets;
    row.expected = s.expected;
    row.lost = s.lost;
    row.last = f.stream.last;
    worst_.insert(std::upper_bound(worst_.begin(), worst_.end(), row, worse), std::move(row));
    if (worst_.size() > keep_) worst_.pop_back();
}

// Ties (one Call-ID in two captures at the same times) broken by the whole row, so that which rows
// are kept never depends on which shard saw them first.
bool ShardCollector::earlier(const CallRow& a, const CallRow& b) noexcept {
    return std::tie(a.invite, a.call_id, a.from_tag, a.outcome, a.final_status, a.q850_cause, a.pdd_seconds, a.caller,
                    a.callee) < std::tie(b.invite, b.call_id, b.from_tag, b.outcome, b.final_status, b.q850_cause,
                                         b.pdd_seconds, b.caller, b.callee);
}

bool ShardCollector::worse_reported(const ReportedRow& a, const ReportedRow& b) noexcept {
    if (a.loss_percent != b.loss_percent) return a.loss_percent > b.loss_percent;
    if (a.has_mos != b.has_mos) return a.has_mos;
    if (a.mos != b.mos) return a.mos < b.mos;
    if (a.max_jitter_ms != b.max_jitter_ms) return a.max_jitter_ms > b.max_jitter_ms;
    if (a.call_id != b.call_id) return a.call_id < b.call_id;
    if (a.ssrc != b.ssrc) return a.ssrc < b.ssrc;
    if (a.reporter != b.reporter) return a.reporter < b.reporter;  // two views of one SSRC
    return std::tie(a.first, a.last, a.reports, a.lost, a.codec) <
           std::tie(b.first, b.last, b.reports, b.lost, b.codec);
}

void ShardCollector::on_reported_stream_finished(const rtp::FinishedReported& finished) {
    const rtp::ReportedSummary& s = finished.summary;
    const rtp::ReportedKey& key = finished.key;
    const rtp::ReportedStream& stream = finished.stream;
    if (s.has_quality) reported_mos_.add(s.mos);
    ReportedRow row;
    row.loss_percent = s.loss_percent;
    row.has_mos = s.has_quality;
    row.mos = s.mos;
    row.max_jitter_ms = s.max_jitter_ms;
    row.call_id = key.call_id.view();
    row.ssrc = key.ssrc;
    row.first = stream.first;
    row.reporter = stream.reporter;
    if (worst_reported_.size() >= keep_ && !worse_reported(row, worst_reported_.back())) return;
    row.reports = s.reports;
    row.codec = std::string(rtp::to_string(s.codec));
    row.lost = s.lost;
    row.rtt_ms = s.has_rtt ? s.rtt_ms : -1;
    row.last = stream.last;
    worst_reported_.insert(std::upper_bound(worst_reported_.begin(), worst_reported_.end(), row, worse_reported),
                           std::move(row));
    if (worst_reported_.size() > keep_) worst_reported_.pop_back();
}

// Every call whose PDD, setup time or duration the dialog table measured (finished or not, as
// its histograms count them): the report's extremes and means describe the same calls as its
// percentiles.
void ShardCollector::measured_dialog(const sip::Dialog& d) {
    if (d.pdd_us() >= 0) pdd_.add(static_cast<double>(d.pdd_us()) / 1e6);
    if (d.setup_us() >= 0) setup_.add(static_cast<double>(d.setup_us()) / 1e6);
    if (d.duration_us() >= 0) duration_.add(static_cast<double>(d.duration_us()) / 1e6);
}

void ShardCollector::finished_dialog(std::string_view call_id, std::string_view from_tag, const sip::Dialog& d) {
    const auto outcome = d.outcome();
    if (outcome == sip::DialogOutcome::completed) return;
    ++failed_total_;
    CallRow row;
    row.invite = d.invite_time();
    row.call_id = std::string(call_id);
    row.from_tag = std::string(from_tag);
    row.caller = d.caller();
    row.callee = d.callee();
    row.outcome = std::string(sip::to_string(outcome));
    row.final_status = d.final_status;
    row.q850_cause = d.q850_cause == sip::kNoCause ? -1 : d.q850_cause;
    row.pdd_seconds = d.pdd_us() >= 0 ? static_cast<double>(d.pdd_us()) / 1e6 : -1;
    if (failed_.size() >= keep_ && !earlier(row, failed_.back())) return;
    failed_.insert(std::upper_bound(failed_.begin(), failed_.end(), row, earlier), std::move(row));
    if (failed_.size() > keep_) failed_.pop_back();
}

void ShardCollector::on_dialog_removed(std::string_view call_id, std::string_view from_tag, const sip::Dialog& d,
                                       const sip::CallerIdentity& /*caller*/, bool /*evicted*/) {
    measured_dialog(d);
    // An evicted unfinished record never finishes: the statistics count it as outcome evicted.
    if (d.finished()) finished_dialog(call_id, from_tag, d);
}

void ShardCollector::collect_remaining(const sip::DialogTable& table) {
    table.for_each([&](std::string_view call_id, std::string_view from_tag, const sip::Dialog& d) {
        measured_dialog(d);
        if (d.finished()) finished_dialog(call_id, from_tag, d);
    });
}

}  // namespace hepd::report
