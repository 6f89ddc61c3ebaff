#pragma once
// What one relay destination counts: plain single-writer statistics the exporter reads without
// knowing about sockets. queue_full drops are counted by each receive thread (the producer side);
// everything else by the destination's sender thread.
#include "core/stats.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace hepd::relay {

enum class DropReason : std::uint8_t {
    queue_full,     // the receive thread found the destination's queue full (sender behind or stalled)
    send_error,     // the socket refused the message (UDP: e.g. ICMP port unreachable, reported on the
                    // next send; TCP: the connection broke while sending it)
    not_connected,  // no connection (TCP down, or the address does not resolve): dropped, not held
    unframable,     // TCP only: a message a stream receiver cannot frame (a HEPv1/v2 one that does not
                    // re-encode as HEPv3, e.g. over 65,535 bytes as v3); sent, it would break the stream
    shutdown,       // still queued when the final drain at stop() ran out of time (Relay::kStopDrain)
};
inline constexpr std::size_t kDropReasonCount = 5;
constexpr std::string_view to_string(DropReason r) noexcept {
    switch (r) {
    case DropReason::queue_full: return "queue_full";
    case DropReason::send_error: return "send_error";
    case DropReason::not_connected: return "not_connected";
    case DropReason::unframable: return "unframable";
    case DropReason::shutdown: return "shutdown";
    }
    return "unknown";
}

// Written by the sender thread.
struct SenderStats {
    StatCounter messages;                                 // handed to the kernel whole (UDP: and not refused)
    StatCounter bytes;                                    // their bytes
    std::array<StatCounter, kDropReasonCount> dropped{};  // all but queue_full (that one stays 0)
    Gauge connected;                                      // 1 while connected (UDP: the address resolved)
    StatCounter reconnects;                               // connections made again after one was lost
    StatCounter connect_failures;                         // connection attempts that failed
};

// The sum over a destination's producers and its sender, read at scrape time.
struct RelayFigures {
    std::uint64_t messages = 0;
    std::uint64_t bytes = 0;
    std::array<std::uint64_t, kDropReasonCount> dropped{};
    std::int64_t connected = 0;
    std::uint64_t reconnects = 0;
    std::uint64_t connect_failures = 0;
    std::uint64_t queued_bytes = 0;
};

}  // namespace hepd::relay
