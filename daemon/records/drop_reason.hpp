#pragma once
// Why a dialog or stream did not reach the call-record file (hepd_records_dropped_total{reason}).
// Its own header: the exporter names the reasons without depending on the writer.
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace hepd::records {

enum class DropReason : std::uint8_t {
    queue_full,     // a shard's queue to the writer was full: the event was dropped
    media_cap,      // a finished stream waited for its dialog beyond max_waiting_media
    media_expired,  // a finished stream waited longer than the longest call for its dialog
    write_error,    // the line was built but the write failed (disk full, ...)
    shutdown,       // a stream still waiting for its dialog when the daemon stopped
    in_progress,    // a call still in progress at a clean stop without a final snapshot
};
inline constexpr std::size_t kDropReasonCount = 6;

constexpr std::string_view to_string(DropReason reason) noexcept {
    switch (reason) {
    case DropReason::queue_full: return "queue_full";
    case DropReason::media_cap: return "media_cap";
    case DropReason::media_expired: return "media_expired";
    case DropReason::write_error: return "write_error";
    case DropReason::shutdown: return "shutdown";
    case DropReason::in_progress: return "in_progress";
    }
    return "unknown";
}

}  // namespace hepd::records
