#pragma once
// Statistics of one shard's dialog and transaction tables. Written by the shard thread when each
// event happens (never rebuilt from the tables), read by the exporter at scrape time; merge()
// sums shards for the report and the exporter. Labels are closed sets only: method, status class,
// agent index, state, outcome, cause, reason, result, final status code.
#include "core/packet_meta.hpp"
#include "core/stats.hpp"
#include "peer/peer_groups.hpp"
#include "sip/dialog.hpp"
#include "sip/message.hpp"
#include "sip/method.hpp"
#include "sip/sdp.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>

namespace hepd::sip {

// Seconds. PDD and setup: a healthy network answers in well under a second, an overloaded or
// badly routed one takes tens. Duration: from a mis-dial to the 4 h call cap.
inline constexpr std::array<double, 11> kPddBuckets{0.1, 0.25, 0.5, 1, 2, 3, 5, 8, 12, 20, 30};
inline constexpr std::array<double, 12> kSetupBuckets{0.25, 0.5, 1, 2, 3, 5, 10, 15, 20, 30, 60, 120};
inline constexpr std::array<double, 13> kDurationBuckets{1,   5,    10,   30,   60,   120,  300,
                                                         600, 1200, 1800, 3600, 7200, 14400};
// Request -> final response of non-INVITE transactions: LAN round trips up to Timer F.
inline constexpr std::array<double, 12> kTransactionDelayBuckets{0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                                 0.5,   1,    2,     4,    8,   32};

inline constexpr std::size_t kStatusClassCount = 6;  // 1xx..6xx
inline constexpr std::size_t kQ850Slots = 129;       // causes 0..127, then "other"

// 0 for 1xx ... 5 for 6xx; codes are 100..699 once parsed.
constexpr std::size_t status_class_index(std::uint16_t code) noexcept {
    const std::size_t c = code / 100;
    return c >= 1 && c <= 6 ? c - 1 : kStatusClassCount - 1;
}
// "1xx".."6xx"
std::string_view status_class_name(std::size_t index) noexcept;

using TransactionDelayHistogram = Histogram<kTransactionDelayBuckets.size()>;

// RFC 6076 figures (METRICS.md, "RFC 6076"). SRD buckets: a proxy's 404 comes back in
// milliseconds, a call that is never rung may take tens of seconds to be answered or refused.
inline constexpr std::array<double, 14> kSrdBuckets{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 8, 12, 20, 30};
using SrdHistogram = Histogram<kSrdBuckets.size()>;

// hepd_sip_srd_seconds{result}: what the status indicative response said (RFC 6076 4.3.1, 4.3.2).
enum class SetupResult : std::uint8_t { success, failure };
inline constexpr std::size_t kSetupResultCount = 2;
std::string_view to_string(SetupResult result) noexcept;

// hepd_sip_registrations_total{result}: registration attempts (a REGISTER and its retries after
// 401/407/423) by how they ended (RFC 6076 4.1, 4.2).
enum class RegistrationResult : std::uint8_t { success, failure, timeout };
inline constexpr std::size_t kRegistrationResultCount = 3;
std::string_view to_string(RegistrationResult result) noexcept;

// hepd_dialogs_final_status_total{code}: the codes RFC 6076 4.6-4.8 name, those operators ask
// about, "3xx" (redirects leave SER's denominator), "other", and "none" for dialogs that ended
// without a final response.
inline constexpr std::array<std::string_view, 19> kFinalStatusNames{"200", "3xx", "401", "403",   "404", "407", "408",
                                                                    "480", "486", "487", "488",   "500", "502", "503",
                                                                    "504", "600", "603", "other", "none"};
inline constexpr std::size_t kFinalStatusCount = kFinalStatusNames.size();
// Index into kFinalStatusNames; code 0 (no final response) is "none".
std::size_t final_status_index(std::uint16_t code) noexcept;

// The dialog figures labelled caller_peer and callee_peer (METRICS.md, "Peer groups"): one set per
// pair of groups a dialog had, in DialogStats::by_peers. Sums over the pairs equal the unlabelled
// figures of DialogStats.
struct PeerDialogFigures {
    std::array<Counter, kDialogOutcomeCount> finished{};
    std::array<Counter, kFinalStatusCount> final_status{};
    Histogram<kPddBuckets.size()> pdd{kPddBuckets};
    Histogram<kSetupBuckets.size()> setup{kSetupBuckets};
    Histogram<kDurationBuckets.size()> duration{kDurationBuckets};
    std::array<SrdHistogram, kSetupResultCount> srd{SrdHistogram{kSrdBuckets}, SrdHistogram{kSrdBuckets}};

    void merge(const PeerDialogFigures& other) noexcept;
};

struct DialogStats {
    // hepd_sip_requests_total{method, agent}: every request seen, retransmissions included.
    std::array<std::array<Counter, kMaxAgents>, kMethodCount> requests{};
    // hepd_sip_responses_total{method (of the CSeq), status_class, agent}
    std::array<std::array<std::array<Counter, kMaxAgents>, kStatusClassCount>, kMethodCount> responses{};
    // hepd_sip_retransmissions_total{method}
    std::array<Counter, kMethodCount> retransmissions{};

    Counter dialogs_created;
    // hepd_dialogs_active{state}: records in each state, lingering terminal ones included, so
    // the sum equals the table size; every gauge is back at 0 once all records have retired.
    std::array<Gauge, kDialogStateCount> dialogs_by_state{};
    // hepd_dialogs_finished_total{outcome}
    std::array<Counter, kDialogOutcomeCount> dialogs_finished{};
    Counter reinvites;
    Counter forked_dialogs;  // dialogs that saw a second To-tag
    Histogram<kPddBuckets.size()> pdd{kPddBuckets};
    Histogram<kSetupBuckets.size()> setup{kSetupBuckets};
    Histogram<kDurationBuckets.size()> duration{kDurationBuckets};
    // hepd_sip_q850_causes_total{cause}: one per finished dialog that carried a cause.
    std::array<Counter, kQ850Slots> q850_causes{};

    // RFC 6076 figures. srd[SetupResult]: INVITE to the status indicative response.
    std::array<SrdHistogram, kSetupResultCount> srd{SrdHistogram{kSrdBuckets}, SrdHistogram{kSrdBuckets}};
    // BYE to its final response (RFC 6076 4.4).
    TransactionDelayHistogram sdd{kTransactionDelayBuckets};
    // One per dialog, when its set-up is decided: at the answer, at the failure, or at the end.
    std::array<Counter, kFinalStatusCount> final_status{};
    // First REGISTER of an attempt to its 2xx (RFC 6076 4.1).
    TransactionDelayHistogram rrd{kTransactionDelayBuckets};
    std::array<Counter, kRegistrationResultCount> registrations{};

    // Non-INVITE transactions outside dialogs, by method.
    std::array<Counter, kMethodCount> transactions_started{};
    std::array<std::array<Counter, kTransactionOutcomeCount>, kMethodCount> transactions_finished{};
    std::array<TransactionDelayHistogram, kMethodCount> transaction_delay =
        make_delay_histograms(std::make_index_sequence<kMethodCount>{});
    Gauge transactions_pending;
    Gauge transactions_lingering;

    // hepd_dialogs_evicted_total{state}: dialogs evicted at the cap, by the state they were in;
    // their sum is hepd_table_evictions_total{table="dialogs"} (dialog_evictions_total()).
    std::array<Counter, kDialogStateCount> dialog_evictions{};
    // hepd_table_evictions_total{table="transactions", reason="cap"}
    Counter transaction_evictions;

    std::array<Counter, kDialogAnomalyCount> anomalies{};
    std::array<Counter, kParseErrorCount> parse_errors{};  // SIP text that did not parse
    std::array<Counter, kMessageDefectCount> defects{};    // parsed and used, but defective
    std::array<Counter, kSdpErrorCount> sdp_errors{};
    Counter media_bindings;  // MediaBinding records emitted

    // Outcomes, final statuses, PDD, setup, duration and SRD again, by the dialog's peer groups.
    peer::PairTable<PeerDialogFigures> by_peers;

    void merge(const DialogStats& other) noexcept;

    std::uint64_t anomaly(DialogAnomaly a) const noexcept { return anomalies[static_cast<std::size_t>(a)].value(); }
    std::uint64_t finished(DialogOutcome o) const noexcept {
        return dialogs_finished[static_cast<std::size_t>(o)].value();
    }
    std::uint64_t dialog_evictions_total() const noexcept {
        std::uint64_t n = 0;
        for (const Counter& c : dialog_evictions) n += c.value();
        return n;
    }
    std::uint64_t evicted(DialogState s) const noexcept {
        return dialog_evictions[static_cast<std::size_t>(s)].value();
    }
    std::int64_t in_state(DialogState s) const noexcept {
        return dialogs_by_state[static_cast<std::size_t>(s)].value();
    }

private:
    template <std::size_t... I>
    static std::array<TransactionDelayHistogram, kMethodCount> make_delay_histograms(
        std::index_sequence<I...>) noexcept {
        return {((void)I, TransactionDelayHistogram{kTransactionDelayBuckets})...};
    }
};

}  // namespace hepd::sip
