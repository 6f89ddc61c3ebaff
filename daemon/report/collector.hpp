#pragma once
// Per-shard collection for the offline report: what the statistics cannot say (which calls
// failed, which streams were worst, exact minimum and maximum of PDD/setup/duration). One
// collector per shard, fed by that shard's thread through the tables' sinks; bounded.
#include "core/address.hpp"
#include "core/time.hpp"
#include "rtp/stream_table.hpp"
#include "sip/dialog_table.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace hepd::report {

// Count, mean, min and max. The sum is kept in millionths as an integer so that the mean does
// not depend on the order of addition (that is, on the number of shards).
struct Range {
    std::uint64_t count = 0;
    std::int64_t sum_micro = 0;
    double min = std::numeric_limits<double>::infinity();
    double max = 0;

    void add(double v) noexcept {
        ++count;
        sum_micro += std::llround(v * 1e6);
        if (v < min) min = v;
        if (v > max) max = v;
    }
    void merge(const Range& o) noexcept {
        count += o.count;
        sum_micro += o.sum_micro;
        if (o.min < min) min = o.min;
        if (o.max > max) max = o.max;
    }
    double mean() const noexcept {
        return count ? static_cast<double>(sum_micro) / 1e6 / static_cast<double>(count) : 0.0;
    }
};

struct StreamRow {
    std::string call_id;
    Endpoint src;
    Endpoint dst;
    std::uint32_t ssrc = 0;
    std::string codec;
    std::uint64_t packets = 0;
    std::int64_t expected = 0;
    std::int64_t lost = 0;
    double loss_percent = 0;
    double max_jitter_ms = 0;
    bool has_mos = false;
    double mos = 0;
    Timestamp first;
    Timestamp last;
};

// A stream known only from its receiver's RTCP-JSON reports (rtp/reported_stream.hpp), under
// the call its reports named.
struct ReportedRow {
    std::string call_id;
    std::uint32_t ssrc = 0;
    Endpoint reporter;
    std::uint32_t reports = 0;
    std::string codec;
    std::int64_t lost = 0;    // last cumulative number lost
    double loss_percent = 0;  // mean reported fraction lost
    double max_jitter_ms = 0;
    double rtt_ms = -1;  // -1: none reported
    bool has_mos = false;
    double mos = 0;
    Timestamp first;
    Timestamp last;
};

struct CallRow {
    std::string call_id;
    std::string from_tag;
    Endpoint caller;
    Endpoint callee;
    Timestamp invite;
    std::string outcome;
    std::uint16_t final_status = 0;
    int q850_cause = -1;
    double pdd_seconds = -1;
};

class ShardCollector final : public rtp::StreamSink, public sip::DialogSink {
public:
    explicit ShardCollector(std::size_t keep = 20) : keep_(keep) {}

    void on_stream_finished(const rtp::FinishedStream& finished) override;
    void on_reported_stream_finished(const rtp::FinishedReported& finished) override;
    void on_dialog_removed(std::string_view call_id, std::string_view from_tag, const sip::Dialog& dialog,
                           const sip::CallerIdentity& caller, bool evicted) override;
    // End of the run: dialogs still in the table (lingering finished ones are counted here).
    void collect_remaining(const sip::DialogTable& table);

    const std::vector<StreamRow>& worst_streams() const noexcept { return worst_; }
    // The worst reported streams (RTCP-JSON only), and the MOS of all of them.
    const std::vector<ReportedRow>& worst_reported() const noexcept { return worst_reported_; }
    const Range& reported_mos() const noexcept { return reported_mos_; }
    const std::vector<CallRow>& failed_calls() const noexcept { return failed_; }
    const Range& pdd() const noexcept { return pdd_; }
    const Range& setup() const noexcept { return setup_; }
    const Range& duration() const noexcept { return duration_; }
    const Range& mos() const noexcept { return mos_; }
    std::uint64_t failed_total() const noexcept { return failed_total_; }

    // Orders used for "worst" and for the failed-call list (earliest first).
    static bool worse(const StreamRow& a, const StreamRow& b) noexcept;
    static bool worse_reported(const ReportedRow& a, const ReportedRow& b) noexcept;
    static bool earlier(const CallRow& a, const CallRow& b) noexcept;

private:
    void measured_dialog(const sip::Dialog& d);
    void finished_dialog(std::string_view call_id, std::string_view from_tag, const sip::Dialog& d);

    std::size_t keep_;
    std::vector<StreamRow> worst_;
    std::vector<ReportedRow> worst_reported_;
    Range reported_mos_;
    std::vector<CallRow> failed_;
    std::uint64_t failed_total_ = 0;
    Range pdd_, setup_, duration_, mos_;
};

}  // namespace hepd::report
