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
    add_all(transactions_started, o.transactions_started);
    add_all(transactions_finished, o.transactions_finished);
    for (std::size_t i = 0; i < kMethodCount; ++i) transaction_delay[i].merge(o.transaction_delay[i]);
    transactions_pending.add(o.transactions_pending.value());
    transactions_lingering.add(o.transactions_lingering.value());
    dialog_evictions.add(o.dialog_evictions.value());
    transaction_evictions.add(o.transaction_evictions.value());
    add_all(anomalies, o.anomalies);
    add_all(parse_errors, o.parse_errors);
    add_all(defects, o.defects);
    add_all(sdp_errors, o.sdp_errors);
    media_bindings.add(o.media_bindings.value());
}

}  // namespace hepd::sip
