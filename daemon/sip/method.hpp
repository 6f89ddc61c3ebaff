#pragma once
// SIP request methods. Method names are case-sensitive (RFC 3261 section 7.1): "invite" is an
// extension method, not INVITE, so it maps to Method::other and keeps its raw text beside it.
#include <cstdint>
#include <string_view>

namespace hepd::sip {

enum class Method : std::uint8_t {
    other = 0,
    invite,
    ack,
    bye,
    cancel,
    register_,
    options,
    subscribe,
    notify,
    publish,
    message,
    info,
    prack,
    update,
    refer,
};

inline constexpr std::size_t kMethodCount = 15;

// Exact, case-sensitive match of a method token; anything else is Method::other.
Method parse_method(std::string_view token) noexcept;

// "INVITE", "ACK", ... and "other": the wire names double as the `method` metric label.
std::string_view to_string(Method method) noexcept;

}  // namespace hepd::sip
