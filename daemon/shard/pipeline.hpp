#pragma once
// N shards, each a thread that owns a Worker (its dialog and stream tables), fed by producers
// (receive threads, the pcap reader) through bounded single-producer/single-consumer queues of
// batches. Shards share nothing: the only traffic between them is MediaBinding records on
// shard-to-shard links. With one shard there are no threads and no queues at all.
//
// Offline the result must not depend on the number of shards, and a binding decides which call
// a stream belongs to from the packet on. So there every datagram carries its input position
// (`order`), a binding the order of the SIP message it came from, and a shard applies every binding (its own too)
// exactly before its first media datagram that comes later in the input. Only SIP makes bindings and SIP needs none, so
// a shard processes the SIP of each batch as soon as it takes it and publishes how far its SIP is done; media wait only
// until every other shard's SIP (and the producer's queueing of SIP) has passed them. The shard furthest behind never
// waits. `hepd pcap` goes further (run_readers): no producer, every shard reads the input and keeps its own,
// under the same rules; there the end of a dialog's bindings when its linger runs out, which a
// single reader's clock brings at no message of its own, goes by time: before the first media
// datagram whose time (or an earlier one's) has reached it, media waiting below the peers'
// release floors (their earliest deadlines). Live, bindings apply as they arrive.
// Offline, a deadline a datagram's time has reached takes effect before that datagram: a call
// that ended keeps none of its media addresses past its linger, however long the input is quiet.
//
// Nobody polls: a thread with nothing to do (a shard, a lossless producer waiting for room, the
// caller of run_on_shards) sleeps on a Doorbell, and every event that can unblock it rings it.
#include "core/media_binding.hpp"
#include "core/stats.hpp"
#include "core/time.hpp"
#include "shard/batch.hpp"
#include "shard/datagram.hpp"
#include "shard/doorbell.hpp"
#include "shard/duplicate_filter.hpp"
#include "shard/spsc_queue.hpp"

#include <atomic>
#include <cstddef>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <thread>
#include <vector>

namespace hepd::shard {

class BindingSink {
public:
    virtual ~BindingSink() = default;
    virtual void send(const MediaBinding& binding) = 0;
};

// What runs on a shard. Called only from that shard's thread.
class Worker {
public:
    virtual ~Worker() = default;
    virtual void process(const Datagram& d, BindingSink& out) = 0;
    // A batch, in order. A worker may look ahead in it (prefetch what the next datagrams touch).
    virtual void process_batch(std::span<const Datagram> ds, BindingSink& out) {
        for (const Datagram& d : ds) process(d, out);
    }
    // What a worker works out of a datagram a step before it processes it (its duplicate-filter
    // key, the filter's buckets then on their way into the cache), and the processing with it:
    // a single shard fed directly looks one datagram ahead.
    using Lookahead = std::optional<DuplicateKey>;
    virtual Lookahead look_ahead(const Datagram& /*d*/) const noexcept { return std::nullopt; }
    virtual void process_ahead(const Datagram& d, const Lookahead& /*ahead*/, BindingSink& out) { process(d, out); }
    virtual void bind(const MediaBinding& binding) = 0;
    // The shard's packet-time clock moved (expiry runs here; a dialog that ends may send the
    // end of its bindings to `out`).
    virtual void advance(Timestamp now, BindingSink& out) = 0;
    // One side's timers only: the SIP side's (dialog expiry) or the media side's (stream
    // expiry). Offline each runs as a single reader's: the media side's to the newest input
    // time before its next datagram, the SIP side's through that datagram's own time (for media
    // when a dialog's deadline is due by then), however far the other side lags (media held
    // back for the peers); advance() moves both.
    virtual void advance_sip(Timestamp now, BindingSink& out) { advance(now, out); }
    virtual void advance_media(Timestamp now, BindingSink& out) { advance(now, out); }
    // No advance_sip() to a packet time before this one sends the end of a binding (a
    // MediaBinding with at_deadline): shards reading together let their media run up to it.
    virtual std::int64_t next_sip_deadline_us() const noexcept { return std::numeric_limits<std::int64_t>::max(); }
    // Nothing more will arrive (end of an offline run, or shutdown).
    virtual void finish(Timestamp end) = 0;
};

struct PipelineOptions {
    std::size_t shards = 1;
    std::size_t producers = 1;
    std::size_t queue_batches = 64;  // per producer-to-shard link
    std::size_t batch_datagrams = 256;
    std::size_t batch_bytes = std::size_t{128} * 1024;
    // Offline runs wait for room instead of dropping: a capture must be read in full.
    bool lossless = false;
    // Live mode: shard threads even for one shard (several receive threads produce at once),
    // and a shard that saw no traffic for a tick (every idle_tick_us on `clock`) advances its
    // packet clock by the time elapsed, so that expiry still happens when the estate goes
    // quiet. 0 = packet time only (offline).
    bool threaded = false;
    std::int64_t idle_tick_us = 0;
    // Times the idle ticks: an idle shard sleeps until its next tick on this clock (the sleep
    // itself is timed on the steady clock). Null: a SteadyClock. Must outlive the pipeline; it
    // is read from the shard threads.
    const Clock* clock = nullptr;
};

class Pipeline {
public:
    class Producer;

    Pipeline(PipelineOptions options, std::vector<std::unique_ptr<Worker>> workers);
    ~Pipeline();
    Pipeline(const Pipeline&) = delete;
    Pipeline& operator=(const Pipeline&) = delete;

    std::size_t shards() const noexcept { return workers_.size(); }
    Producer& producer(std::size_t i) noexcept { return *producers_[i]; }
    Worker& worker(std::size_t shard) noexcept { return *workers_[shard]; }

    // Live mode, before start(): shards that hold restored state but will see no packet for a
    // while start their packet clocks at `now` (wall time, which live packet times follow within
    // hep.clock_offset_limit), so that their idle ticks expire what they hold. A shard's first
    // packet otherwise starts its clock.
    void seed_clock(Timestamp now);
    // Starts the shard threads (none with a single shard).
    void start();
    // Ends the run once every producer has flushed and stopped: delivers everything queued
    // (datagrams, then bindings between shards), calls Worker::finish(end) on every shard and
    // joins the threads. Idempotent.
    void finish(Timestamp end);

    // Offline with several shards and no producers (options.producers = 0, lossless): every
    // shard's thread reads the input itself and keeps the datagrams it owns, so no single
    // reader thread bounds the run (pcap::SplitReader: the shards share the decoding and hand
    // each other the owners). `read(shard, feed)` runs once
    // on each shard's thread and must push every datagram of the input, in input order, to
    // feed.push() (each shard gets the same sequence: it numbers them). Replaces start() and
    // finish(): returns once every shard has finished (Worker::finish at its newest datagram
    // time). Order across shards is kept as with one producer (see the top of this file).
    // Media a shard must hold back are copied, unless they lie in the bytes the reader named
    // with Feed::stable_input(), which stay valid until Feed::end_input(). A reader that knows
    // which shard owns a datagram (shard_of() against `shard`) may say so: feed.push_own() for
    // its own, feed.pass() for a run of others' it then need not hand over.
    class Feed;
    void run_readers(const std::function<void(std::size_t shard, Feed& feed)>& read);

    // Runs `task` on every shard's own thread and waits for all of them (snapshots read the
    // tables this way, between two batches). Runs inline when there are no shard threads or they
    // have ended. Call from one thread at a time.
    void run_on_shards(const std::function<void(std::size_t shard, Worker& worker)>& task);

    // Live mode (threaded, idle_tick_us > 0): every shard evaluates its idle tick now instead of
    // at its next tick time: one that saw no datagram since its previous tick advances its clock
    // by the time elapsed since then on options.clock. Does not wait; a run_on_shards() called
    // after it sees the tick done. No effect in other modes.
    void tick();

    // Batches waiting for a shard (scraped as hepd_shard_queue_depth).
    std::size_t queue_depth(std::size_t shard) const noexcept;
    // Datagrams dropped because a shard's queue was full (live mode), over all producers.
    std::uint64_t queue_full_drops() const noexcept;
    // Bindings lost between shards because a shard-to-shard link was full (live mode only).
    std::uint64_t binding_drops() const noexcept;
    // Times the shard's thread woke up from a sleep (0 without shard threads).
    std::uint64_t wakeups(std::size_t shard) const noexcept;
    // CPU seconds each shard thread used, once finish() has joined them (empty without shard
    // threads: the producer's thread did the shards' work).
    std::vector<double> shard_cpu_seconds() const;
    // Ordered mode: the most bindings one shard held for its peers at once, once finish() has
    // joined the threads (they wait in input order until the media after them come).
    std::size_t bindings_waiting_peak() const noexcept;

private:
    struct Link;
    class ShardThread;
    friend class Producer;

    PipelineOptions options_;
    std::vector<std::unique_ptr<Worker>> workers_;
    std::vector<std::unique_ptr<Producer>> producers_;
    std::vector<std::unique_ptr<ShardThread>> threads_;
    std::atomic<bool> producers_done_{false};
    std::atomic<std::size_t> shards_drained_{0};
    // Ordered delivery (lossless, several shards, one producer): every datagram with an order
    // below this has been queued to its shard.
    std::atomic<std::uint64_t> published_{0};
    // The caller of run_on_shards() sleeps here until every shard has run the task.
    Doorbell tasks_done_;
    const Clock* clock_;
    bool ordered_ = false;
    bool started_ = false;
    bool finished_ = false;
};

// Datagrams of other shards in a row, as a reader that knows their owners hands them on: how
// many, the newest time among them, and where the last SIP among them is.
struct PassedRun {
    std::uint32_t count = 0;
    std::uint32_t sip_end = 0;  // 1 + the position of the last SIP in the run; 0: none
    Timestamp newest{};

    void add(Timestamp time, bool sip) noexcept {
        ++count;
        if (sip) sip_end = count;
        if (time > newest) newest = time;
    }
};

class Pipeline::Feed {
public:
    void push(const Datagram& d);
    // One this shard owns: as push(), without finding out again.
    void push_own(const Datagram& d);
    // Other shards' datagrams, in their place in the input: they count for the order and the
    // shard's clock as push() would (their SIP is what this shard's later media may wait for),
    // and nothing else.
    void pass(const PassedRun& run);
    // Readers that hand work to each other (pcap::SplitReader): sleeps until `ready()`, telling
    // the peers first how far this shard has read and taking their bindings meanwhile, so that
    // no two shards wait on each other. `ready` must read only what wake_peers() announces.
    void wait_until(const std::function<bool()>& ready);
    // Something the peers may be waiting for in wait_until() was published.
    void wake_peers();
    // The bytes of the input being read (a mapped or inflated capture): datagrams whose payload
    // and correlation id lie inside are held without copying until end_input().
    void stable_input(ByteSpan bytes) noexcept;
    // Those bytes are about to go: every datagram held from them is processed first (waiting
    // for the peers as needed).
    void end_input();

private:
    friend class Pipeline;
    explicit Feed(ShardThread& shard) : shard_(shard) {}
    ShardThread& shard_;
};

class Pipeline::Producer {
public:
    Producer(Pipeline& pipeline, std::size_t index);
    ~Producer();
    // Routes the datagram to its shard (copying its bytes). Never blocks in live mode: when the
    // shard's queue is full the datagram is dropped and counted.
    void push(const Datagram& d);
    // Sends partially filled batches now (call when the input goes idle, and at the end).
    void flush();
    // Single-shard mode: the bytes of the input being read (a mapped or inflated capture). A
    // capture agent's datagram whose payload and correlation id lie inside may be processed when
    // the next one comes (the worker looks ahead at that one first); end_input() (and flush())
    // processes it before those bytes go.
    void stable_input(ByteSpan bytes) noexcept { stable_ = bytes; }
    void end_input();
    std::uint64_t dropped() const noexcept { return dropped_.value(); }

private:
    friend class Pipeline;
    // Ordered mode: queues what it can without waiting and publishes how far the input is
    // queued, so that shards waiting for each other never wait for a batch still being filled.
    void publish(bool send_partial);
    // Lossless: sleeps until `ready()` (a shard makes room), queueing meanwhile (ordered mode)
    // what peers may be waiting for.
    template <class Ready>
    void wait_for_room(Ready&& ready);

    Pipeline& pipeline_;
    std::vector<Link*> links_;  // one per shard
    Timestamp watermark_{};
    std::uint64_t next_order_ = 0;
    std::uint64_t published_last_ = 0;
    Counter dropped_;
    Doorbell room_;  // rung by the shards when they take a batch or hand one back
    // Single-shard mode: delivered in place.
    class DirectSink;
    std::unique_ptr<DirectSink> direct_;
    ByteSpan stable_;               // stable_input()
    std::optional<Datagram> held_;  // single-shard mode: the datagram before the one at hand
    Worker::Lookahead held_ahead_;  // and what the worker looked up for it
    // Single-shard mode: a datagram (what the worker looked up for it, if anything) between its
    // timers.
    [[gnu::always_inline]] inline void process_direct(const Datagram& d, const Worker::Lookahead* ahead);
    void process_held();
    // Single-shard mode: a lower bound of the worker's next SIP deadline (refreshed after SIP).
    std::int64_t sip_due_us_ = std::numeric_limits<std::int64_t>::min();
};

}  // namespace hepd::shard
