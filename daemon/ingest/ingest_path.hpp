#pragma once
// The per-packet path of one receive thread (a UDP receive thread, or the thread running the TCP
// listeners): admission before decoding (allow list, per-sender buckets, the global bucket), then
// HepIntake, then the hand-over to the shards through a DatagramSink. It owns everything it
// writes (counters, per-sender buckets, decode buffers): nothing is shared on the packet path
// except one atomic take from the global bucket per batch and one atomic load of the policy
// epoch per batch.
#include "core/address.hpp"
#include "core/bytes.hpp"
#include "core/time.hpp"
#include "ingest/ingest_control.hpp"
#include "ingest/source_limiter.hpp"
#include "intake/hep_intake.hpp"
#include "shard/datagram.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace hepd::ingest {

// One received HEP message and the address it came from.
struct Packet {
    static constexpr std::int64_t kNotStamped = -1;
    ByteSpan bytes;
    Endpoint from;
    // How long it waited in the socket before the read that returned it (from the kernel's
    // arrival stamp, when the socket stamps arrivals); kNotStamped otherwise.
    std::int64_t waited_us = kNotStamped;
};

// Where accepted datagrams go: one sink per receive thread, called only from that thread. For
// the daemon this is a ProducerSink around the thread's shard::Pipeline::Producer.
class DatagramSink {
public:
    virtual ~DatagramSink() = default;
    // The datagram's views are valid during the call only (copy what must outlive it). Full
    // batches go to the shards on their own; partial ones wait for flush().
    virtual void push(const shard::Datagram& d) = 0;
    // The HEP message the next push() was decoded from, exactly as received (auth checked,
    // decoded), for sinks that pass accepted messages on unchanged (the daemon's relay). Valid
    // during the call only; must not block. Ignored by default.
    virtual void accepted_message(ByteSpan message) noexcept { (void)message; }
    // Hand partial batches over now (their oldest datagram reached the age bound, or shutdown).
    virtual void flush() = 0;
    // Datagrams pushed here and later dropped (full shard queues), cumulative.
    virtual std::uint64_t dropped() const noexcept = 0;
};

struct IngestPathOptions {
    // Payload types and the decompression cap. Its auth_key and agents are not used: they come
    // from the IngestControl's policy, which SIGHUP can change.
    intake::IntakeOptions intake;
    std::size_t max_sources = SourceLimiter::kDefaultCapacity;  // per-sender bucket table cap
    // How long an accepted datagram may wait in a partial batch before it is handed to the shards
    // (FlushTimer; the daemon takes it from shards.max_batch_age). Every hand-over costs a queue
    // operation and may wake a shard, and a wake-up costs 10-30 µs of CPU on a VM: flushing after
    // every receive call makes that one per packet or two at moderate rates. A collector needs no
    // millisecond latency (its figures are scraped every few seconds). Measured at 20k packets/s
    // (bench/daemon_load.py): 2 ms gave 1,500 context switches/s and 5.8 µs/packet, 10 ms 320/s
    // and 4.2 µs; paired runs of a later build gave 3.3 µs at 10 ms, 2.75 at 50 and 2.4 at
    // 100 ms. 0 hands over after every process() call.
    static constexpr std::chrono::microseconds kDefaultMaxBatchAge{100000};
    std::chrono::microseconds max_batch_age = kDefaultMaxBatchAge;
};

class IngestPath {
public:
    // `control`, `sink` and `wall` (receive time for HEP timestamp fix-ups) must outlive the path.
    IngestPath(IngestControl& control, DatagramSink& sink, const Clock& wall, IngestPathOptions options = {});

    // Admits, decodes and pushes one batch to the sink, and counts what the sink dropped since
    // the last call. Partial batches stay in the sink (holds_partial()) until flush(), except
    // with max_batch_age 0. Reads the clocks once and adopts a new policy first.
    void process(std::span<const Packet> batch, intake::Carrier carrier);

    // Datagrams were pushed since the last flush (some may sit in a partial batch).
    bool holds_partial() const noexcept { return holds_partial_; }
    // Hands the partial batches over (sink flush) and counts what the sink dropped.
    void flush();
    std::chrono::microseconds max_batch_age() const noexcept { return max_batch_age_; }
    // How long a receive thread may leave datagrams in the kernel and read them at once: at most
    // max_batch_age, and, with rate limits, the time a bucket takes to refill its burst. A batch
    // meets the buckets at one clock reading, so a window any longer would refuse the part of
    // a sender's traffic under its rate that the burst cannot hold.
    std::chrono::microseconds read_window() const noexcept;

    // Whether the receive thread should stamp arrivals (a sender's clock offset waits for an
    // exact receive time: intake/sender_clocks.hpp).
    bool wants_arrival_times() const noexcept { return intake_.wants_arrival_times(); }

    // Whether `peer` passes the allow list now (TCP asks when a connection is accepted).
    bool allows(const IpAddress& peer);

    const intake::IntakeStats& stats() const noexcept { return intake_.stats(); }
    const SourceLimiterStats& source_stats() const noexcept { return sources_.stats(); }
    // The policy epoch this path last adopted.
    std::uint64_t epoch() const noexcept { return epoch_; }

private:
    enum class Verdict : std::uint8_t { pass, not_allowed, rate_limit };

    void refresh(Timestamp steady_now);
    void count_sink_drops() noexcept;

    IngestControl& control_;
    DatagramSink& sink_;
    const Clock& wall_;
    intake::HepIntake intake_;
    SourceLimiter sources_;
    std::shared_ptr<const IngestPolicy> policy_;
    std::uint64_t epoch_ = 0;
    std::uint64_t sink_dropped_seen_ = 0;
    std::chrono::microseconds max_batch_age_;
    bool holds_partial_ = false;
    std::vector<Verdict> verdicts_;
    shard::Datagram datagram_;
};

}  // namespace hepd::ingest
