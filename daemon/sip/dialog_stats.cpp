#include "sip/dialog_stats.hpp"

#include <type_traits>

namespace hepd::sip {

namespace {

template <class T, std::size_t N>
void add_all(std::array<T, N>& into, const std::array<T, N>& from) noexcept {
    for (std::size_t i = 0; i < N; ++i) {
        if constexpr (std::is_same_v<T, Counter> || std::is_same_v<T, Gauge>)
            into[i].add(from[i].value());
        else
            add_all(into[i], from[i]);
    }
}

}  // namespace

std::string_view status_class_name(std::size_t index) noexcept {
    static constexpr std::string_view kNames[kStatusClassCount] = {"1xx", "2xx", "3xx", "4xx", "5xx", "6xx"};
    return index < kStatusClassCount ? kNames[index] : std::string_view("6xx");
}

std::string_view to_string(SetupResult result) noexcept {
    return result == SetupResult::success ? "success" : "failure";
}

std::string_view to_string(RegistrationResult result) noexcept {
    switch (result) {
    case RegistrationResult::success: return "success";
    case RegistrationResult::failure: return "failure";
    case RegistrationResult::timeout: return "timeout";
    }
    return "unknown";
}

std::size_t final_status_index(std::uint16_t code) noexcept {
    // The numbers of kFinalStatusNames, in its order; 0 stands for "3xx", "other" and "none".
    static constexpr std::array<std::uint16_t, kFinalStatusCount> kCodes{
        200, 0, 401, 403, 404, 407, 408, 480, 486, 487, 488, 500, 502, 503, 504, 600, 603, 0, 0};
    static_assert(kFinalStatusNames[1] == "3xx" && kFinalStatusNames[kFinalStatusCount - 2] == "other" &&
                  kFinalStatusNames[kFinalStatusCount - 1] == "none");
    if (code == 0) return kFinalStatusCount - 1;
    if (code >= 300 && code < 400) return 1;
    for (std::size_t i = 0; i < kFinalStatusCount; ++i)
        if (kCodes[i] == code) return i;
    return kFinalStatusCount - 2;
}

void PeerDialogFigures::merge(const PeerDialogFigures& o) noexcept {
    add_all(finished, o.finished);
    add_all(final_status, o.final_status);
    pdd.merge(o.pdd);
    setup.merge(o.setup);
    duration.merge(o.duration);
    for (std::size_t r = 0; r < kSetupResultCount; ++r) srd[r].merge(o.srd[r]);
}

void DialogStats::merge(const DialogStats& o) noexcept {
    add_all(requests, o.requests);
    add_all(responses, o.responses);
    add_all(retransmissions, o.retransmissions);
    dialogs_created.add(o.dialogs_created.value());
    add_all(dialogs_by_state, o.dialogs_by_state);
    add_all(dialogs_finished, o.dialogs_finished);
    reinvites.add(o.reinvites.value());
    forked_dialogs.add(o.forked_dialogs.value());
    pdd.merge(o.pdd);
    setup.merge(o.setup);
    duration.merge(o.duration);
    add_all(q850_causes, o.q850_causes);
    for (std::size_t r = 0; r < kSetupResultCount; ++r) srd[r].merge(o.srd[r]);
    sdd.merge(o.sdd);
    add_all(final_status, o.final_status);
    rrd.merge(o.rrd);
    add_all(registrations, o.registrations);
    add_all(transactions_started, o.transactions_started);
    add_all(transactions_finished, o.transactions_finished);
    for (std::size_t i = 0; i < kMethodCount; ++i) transaction_delay[i].merge(o.transaction_delay[i]);
    transactions_pending.add(o.transactions_pending.value());
    transactions_lingering.add(o.transactions_lingering.value());
    add_all(dialog_evictions, o.dialog_evictions);
    transaction_evictions.add(o.transaction_evictions.value());
    add_all(anomalies, o.anomalies);
    add_all(parse_errors, o.parse_errors);
    add_all(defects, o.defects);
    add_all(sdp_errors, o.sdp_errors);
    media_bindings.add(o.media_bindings.value());
    by_peers.merge(o.by_peers);
}

}  // namespace hepd::sip
