#pragma once
// Live mode only: every sender's capture times brought onto the receive clock.
//
// The shards have one clock, the capture time of the datagrams (Datagram::time), and every timer
// runs on it (INVITE timeout, call cap, linger, stream idle, transaction timeout). Offline that is
// right: a capture is one clock. Live, senders' clocks disagree (no NTP, timezone slips), and a
// sender one hour behind would have its calls expired by the others' packets at once.
//
// Why a constant shift per sender rather than a second time on every datagram: the offset
// `receive time - capture time` is measured at a sender's first packet and held. While it is
// within the limit the capture times are used as sent; beyond it every time of that sender is
// shifted by the held offset. A constant shift keeps every interval within the sender exact (PDD,
// set-up, duration, jitter), lands its times on the receive clock that all other senders are on
// (so no sender's clock can expire another's calls), and needs no change in the shards, the
// snapshots or the offline mode (which does not use this class at all).
//
// The rule, per packet: the corrected time must stay within the limit of the receive time. When
// it does not (a clock step, or a delivery delayed by more than the limit) the offset is measured
// again from that packet and the step is counted. So a within-limit sender is never shifted, and
// no corrected time is ever more than the limit away from the receive time: the shard clock
// (the newest datagram time, moved on by wall time when idle) stays within the limit of wall time.
//
// Times the timestamp fix-ups already replaced by the receive time (missing, zero, outside
// [now - 10 years, now + 24 h]) never come here: they are on the receive clock already.
//
// A sender is its capture id (when it sends one) and the address it sends from. One table per
// receive thread (single writer, no locks); with SO_REUSEPORT a sender's packets reach one
// thread as long as its source port is fixed. The table is capped: the least recently active
// sender is evicted (counted) and measured again if it comes back.
#include "core/address.hpp"
#include "core/log.hpp"
#include "core/lru_table.hpp"
#include "core/packet_meta.hpp"
#include "core/time.hpp"
#include "intake/intake_stats.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace hepd::intake {

struct SenderKey {
    IpAddress address;  // where the HEP packet came from
    std::uint32_t capture_id = 0;
    bool has_capture_id = false;
    friend bool operator==(const SenderKey&, const SenderKey&) = default;
};
struct SenderKeyHash {
    std::uint64_t operator()(const SenderKey& key) const noexcept;
};

struct SenderClockOptions {
    std::int64_t offset_limit_us = 5'000'000;  // hep.clock_offset_limit
    std::size_t max_senders = 4096;
};

class SenderClocks {
public:
    // At most one log line per interval of receive time per table; senders whose line waits
    // write it with a later packet, so each still gets its line once.
    static constexpr std::int64_t kLogIntervalUs = 1'000'000;

    explicit SenderClocks(SenderClockOptions options = {});

    // The time the shards use for a packet from `sender` captured at `capture_time` (after the
    // timestamp fix-ups) and received at `receive_time` (the injected wall clock). `agent` is
    // the packet's agent index (counters) and `agent_name` its label (log lines).
    Timestamp correct(const SenderKey& sender, Timestamp capture_time, Timestamp receive_time, std::uint16_t agent,
                      std::string_view agent_name, SenderClockStats& stats);

    // The offset now added to `sender`'s times (0 while within the limit); nullopt when the
    // sender is not in the table.
    std::optional<std::int64_t> offset_us(const SenderKey& sender) const noexcept;

    std::size_t size() const noexcept { return table_.size(); }
    std::size_t capacity() const noexcept { return table_.capacity(); }
    std::int64_t offset_limit_us() const noexcept { return options_.offset_limit_us; }

private:
    enum class Note : std::uint8_t { none, shifted, stepped };

    struct SenderClock {
        std::int64_t offset_us = 0;           // applied: 0 while within the limit
        std::int64_t previous_offset_us = 0;  // before the last step (for its log line)
        std::int64_t measured_us = 0;         // receive - capture at the last measurement
        Note note = Note::none;               // a log line still to write
    };

    // The offset to apply for a sender measured at `raw_us`.
    std::int64_t offset_for(std::int64_t raw_us) const noexcept;
    void log_note(const SenderKey& sender, SenderClock& clock, Timestamp receive_time, std::string_view agent_name);

    SenderClockOptions options_;
    LruTable<SenderKey, SenderClock, SenderKeyHash> table_;
    Timestamp next_log_{};
    LogThrottle eviction_log_;
};

}  // namespace hepd::intake
