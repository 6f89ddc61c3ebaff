#pragma once
// Every HEP sender's capture times brought onto the receive clock: live the wall clock, offline
// (`hepd pcap`) the capture's frame times (the capturing host's one clock).
//
// The shards have one clock, the capture time of the datagrams (Datagram::time), and every timer
// runs on it (INVITE timeout, call cap, linger, stream idle, transaction timeout). Senders' clocks
// disagree (no NTP, timezone slips), and a sender one hour behind would have its calls expired by
// the others' packets at once, its streams cut into pieces: live, and offline in a capture of HEP
// from several agents, whose HEP headers carry each agent's own clock.
//
// Why a constant shift per sender rather than a second time on every datagram: the offset
// `receive time - capture time` is measured at a sender's first packet and held. While it is
// within the limit the capture times are used as sent; beyond it every time of that sender is
// shifted by the held offset. A constant shift keeps every interval within the sender exact (PDD,
// set-up, duration, jitter), lands its times on the receive clock that all other senders are on
// (so no sender's clock can expire another's calls), and needs no change in the shards or the
// snapshots.
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
// The receive time of a UDP datagram is the time its batch was read, which can be up to
// max_batch_age after it arrived (the receive thread reads in windows). An offset measured from
// it would carry that delay for good, and a sender's mirrored copies would then miss another
// agent's copies in the duplicate filter. So a shift measured from a batch's time is provisional:
// while any sender's is, the receive thread asks the kernel for each datagram's arrival time
// (SO_TIMESTAMPNS, about 12 % of the kernel's receive cost, hence only then), and the sender's
// next datagram with an exact time lowers the offset to its own, when that is lower (the read
// delay only ever adds). Only the datagrams before that one (one batch's worth) carry the delay.
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

// When a datagram was received, on the injected wall clock. `exact` when it is the datagram's
// own arrival (a kernel timestamp, a TCP read, a capture's frame time) rather than the time the
// batch it came in was read.
struct ReceiveTime {
    ReceiveTime(Timestamp time, bool is_exact = true) noexcept
        : at(time), exact(is_exact) {}  // NOLINT: a Timestamp is exact
    Timestamp at;
    bool exact;
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
    // timestamp fix-ups) and received at `received`. `agent` is the packet's agent index
    // (counters) and `agent_name` its label (log lines).
    Timestamp correct(const SenderKey& sender, Timestamp capture_time, ReceiveTime received, std::uint16_t agent,
                      std::string_view agent_name, SenderClockStats& stats);

    // Senders whose shift was measured from a batch's read time and waits for an exact receive
    // time: while there are any, the receive thread stamps arrivals.
    std::size_t provisional() const noexcept { return provisional_; }

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
        bool provisional = false;             // shifted, measured from a batch's read time
    };

    // The offset to apply for a sender measured at `raw_us`.
    std::int64_t offset_for(std::int64_t raw_us) const noexcept;
    void log_note(const SenderKey& sender, SenderClock& clock, Timestamp receive_time, std::string_view agent_name);
    // Measures `clock` from `raw_us` (receive - capture) taken at a time `exact` or not.
    void measure(SenderClock& clock, std::int64_t raw_us, bool exact) noexcept;

    SenderClockOptions options_;
    LruTable<SenderKey, SenderClock, SenderKeyHash> table_;
    Timestamp next_log_{};
    std::size_t provisional_ = 0;
    LogThrottle eviction_log_;
};

}  // namespace hepd::intake
