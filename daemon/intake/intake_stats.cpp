#include "intake/intake_stats.hpp"

#include <type_traits>

namespace hepd::intake {

void SenderClockStats::merge(const SenderClockStats& o) noexcept {
    for (std::size_t i = 0; i < offset_exceeded.size(); ++i) offset_exceeded[i].add(o.offset_exceeded[i].value());
    for (std::size_t i = 0; i < steps.size(); ++i) steps[i].add(o.steps[i].value());
    evictions.add(o.evictions.value());
}

std::string_view to_string(Carrier c) noexcept { return c == Carrier::udp ? "udp" : "tcp"; }

std::string_view to_string(DropReason r) noexcept {
    switch (r) {
    case DropReason::rate_limit: return "rate_limit";
    case DropReason::auth: return "auth";
    case DropReason::not_allowed: return "not_allowed";
    case DropReason::queue_full: return "queue_full";
    case DropReason::decode_error: return "decode_error";
    }
    return "unknown";
}

namespace {

template <class A>
void add_all(A& into, const A& from) noexcept {
    for (std::size_t i = 0; i < into.size(); ++i) {
        if constexpr (std::is_base_of_v<Counter, std::decay_t<decltype(into[i])>>) {
            into[i].add(from[i].value());
        } else {
            add_all(into[i], from[i]);
        }
    }
}

template <class A>
std::uint64_t sum_all(const A& a) noexcept {
    std::uint64_t n = 0;
    for (const auto& x : a) {
        if constexpr (std::is_base_of_v<Counter, std::decay_t<decltype(x)>>) {
            n += x.value();
        } else {
            n += sum_all(x);
        }
    }
    return n;
}

}  // namespace

void IntakeStats::merge(const IntakeStats& o) noexcept {
    add_all(packets, o.packets);
    add_all(bytes, o.bytes);
    add_all(undecodable_packets, o.undecodable_packets);
    add_all(decode_errors, o.decode_errors);
    add_all(timestamp_fixups, o.timestamp_fixups);
    add_all(by_type, o.by_type);
    add_all(dropped, o.dropped);
    clocks.merge(o.clocks);
}

std::uint64_t IntakeStats::received() const noexcept { return sum_all(packets) + sum_all(undecodable_packets); }

std::uint64_t IntakeStats::accepted() const noexcept {
    // Both are monotonic; a reader racing the writer could see the drop before the hand-over.
    const std::uint64_t handed = sum_all(by_type);
    const std::uint64_t lost = drops(DropReason::queue_full);
    return handed > lost ? handed - lost : 0;
}

std::uint64_t IntakeStats::dropped_total() const noexcept { return sum_all(dropped); }

std::uint64_t IntakeStats::by_class(PayloadClass c) const noexcept {
    return sum_all(by_type[static_cast<std::size_t>(c)]);
}

}  // namespace hepd::intake
