#pragma once
// What the TCP listeners count: plain single-writer statistics the exporter reads without
// knowing about sockets.
#include "core/stats.hpp"
#include "hep/framer.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace hepd::ingest {

enum class TcpCloseReason : std::uint8_t {
    peer_closed,   // the sender closed or reset the connection
    bad_frame,     // the stream lost HEP framing (see TcpStats::frame_errors)
    idle_timeout,  // nothing received for idle_timeout
    too_many,      // refused at accept: max_connections reached
    not_allowed,   // refused at accept: the peer is not on the allow list
    error,         // another socket error
    shutdown,      // the listener was closed
};
inline constexpr std::size_t kTcpCloseReasonCount = 7;
constexpr std::string_view to_string(TcpCloseReason r) noexcept {
    switch (r) {
    case TcpCloseReason::peer_closed: return "peer_closed";
    case TcpCloseReason::bad_frame: return "bad_frame";
    case TcpCloseReason::idle_timeout: return "idle_timeout";
    case TcpCloseReason::too_many: return "too_many";
    case TcpCloseReason::not_allowed: return "not_allowed";
    case TcpCloseReason::error: return "error";
    case TcpCloseReason::shutdown: return "shutdown";
    }
    return "unknown";
}

struct TcpStats {
    Gauge open_connections;                                  // hepd_tcp_connections
    StatCounter accepted_connections;                        // sessions started
    std::array<StatCounter, kTcpCloseReasonCount> closed{};  // hepd_tcp_connections_closed_total
    std::array<StatCounter, hep::framer_error_count> frame_errors{};
    StatCounter accept_errors;  // accept() failed (e.g. out of descriptors)
};

}  // namespace hepd::ingest
