#include "shard/pipeline.hpp"

#include "shard/dispatch.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <span>
#include <string>

namespace hepd::shard {

// One direction between one producer (or shard) and one shard: full batches forward, empty
// ones back for reuse, so the steady state allocates nothing.
struct Pipeline::Link {
    Link(std::size_t queue_batches, std::size_t datagrams, std::size_t bytes, std::size_t bindings)
        : full(queue_batches), empty(queue_batches + 2), max_batches(full.capacity() + 2),
          batch_datagrams(datagrams), batch_bytes(bytes), batch_bindings(bindings) {}

    // A batch to fill: recycled, or new while under the cap; nullptr when all are in flight.
    Batch* acquire() {
        Batch* b = nullptr;
        if (empty.try_pop(b)) return b;
        if (owned.size() < max_batches) {
            owned.push_back(std::make_unique<Batch>(batch_datagrams, batch_bytes, batch_bindings));
            return owned.back().get();
        }
        return nullptr;
    }

    SpscQueue<Batch*> full;
    SpscQueue<Batch*> empty;
    std::vector<std::unique_ptr<Batch>> owned;  // touched by the producer side only
    std::size_t max_batches;
    std::size_t batch_datagrams;
    std::size_t batch_bytes;
    std::size_t batch_bindings;
    Batch* current = nullptr;  // producer side
    std::uint64_t first_sip = UINT64_MAX;  // producer side: of `current`, ordered mode
};

namespace {

void backoff(unsigned& spins) {
    if (++spins < 64) return;
    std::this_thread::sleep_for(std::chrono::microseconds(spins < 1024 ? 20 : 200));
}

} // namespace

// ---- the shard thread ----

class Pipeline::ShardThread final : public BindingSink {
public:
    ShardThread(Pipeline& p, std::size_t index) : pipeline_(p), index_(index) {}

    void start() { thread_ = std::thread([this] { run(); }); }
    void join() {
        if (thread_.joinable()) thread_.join();
    }

    // Links are created before start(); inbound from producers and from other shards.
    std::vector<std::unique_ptr<Link>> producer_links;  // owned here, written by producers
    std::vector<std::unique_ptr<Link>> shard_links;     // from shard j (null for j == self)
    std::vector<Link*> out_links;                       // to shard j (null for j == self)
    Timestamp end{};

    // A task posted by run_on_shards(): the shard runs it between batches and acknowledges.
    const std::function<void(std::size_t, Worker&)>* task = nullptr;
    std::atomic<std::uint64_t> task_posted{0};
    std::atomic<std::uint64_t> task_done{0};
    // Ordered mode: every SIP datagram of this shard with a lower order is processed and its
    // bindings are queued to their shards (only SIP makes bindings, and a batch's SIP is done
    // before its media, so a peer waits for this shard only when it is a batch behind).
    std::atomic<std::uint64_t> progress{0};
    Counter binding_drops;  // written by this shard's thread only

    std::size_t depth() const noexcept {
        std::size_t n = 0;
        for (const auto& l : producer_links) n += l->full.size();
        return n;
    }

    void send(const MediaBinding& binding) override {
        const std::size_t to = shard_of_media(binding.media, pipeline_.shards());
        MediaBinding b = binding;
        b.order = current_order_;
        if (to == index_) {
            // Ordered mode runs a batch's SIP ahead of its media: this shard's own bindings
            // wait their turn like everyone else's.
            if (pipeline_.ordered_) {
                waiting_[index_].push_back(HeldBinding{b, std::string(b.call_id)});
            } else {
                pipeline_.workers_[index_]->bind(b);
            }
            return;
        }
        Link& link = *out_links[to];
        if (link.current == nullptr) link.current = acquire_waiting(link);
        if (link.current == nullptr) {
            binding_drops.add();
            return;
        }
        if (!link.current->add(b)) {
            submit(link);
            link.current = acquire_waiting(link);
            if (link.current == nullptr || !link.current->add(b)) binding_drops.add();
        }
    }

private:
    Worker& worker() { return *pipeline_.workers_[index_]; }

    // Lossless mode may wait for a peer shard, but keeps draining its own inbound bindings
    // meanwhile, so two shards waiting on each other still make progress.
    Batch* acquire_waiting(Link& link) {
        unsigned spins = 0;
        while (true) {
            if (Batch* b = link.acquire()) return b;
            if (!pipeline_.options_.lossless) return nullptr;
            drain_shard_links();
            backoff(spins);
        }
    }

    void submit(Link& link) {
        if (link.current == nullptr || link.current->empty()) return;
        unsigned spins = 0;
        while (!link.full.try_push(link.current)) {
            if (!pipeline_.options_.lossless) {
                binding_drops.add(link.current->bindings().size());
                link.current->clear();
                return;
            }
            drain_shard_links();
            backoff(spins);
        }
        link.current = nullptr;
    }

    void flush_out() {
        for (Link* l : out_links)
            if (l != nullptr) submit(*l);
    }

    // Takes every binding that has arrived: applied at once live; copied out (the batch goes
    // back to its sender at once, so a sender never waits for this shard to catch up) and
    // applied in input order by apply_bindings_before() in ordered mode.
    bool drain_shard_links() {
        bool any = false;
        for (std::size_t from = 0; from < shard_links.size(); ++from) {
            Link* l = shard_links[from].get();
            if (l == nullptr) continue;
            Batch* b = nullptr;
            while (l->full.try_pop(b)) {
                for (const auto& binding : b->bindings()) {
                    if (pipeline_.ordered_) {
                        waiting_[from].push_back(HeldBinding{binding, std::string(binding.call_id)});
                    } else {
                        worker().bind(binding);
                    }
                }
                b->clear();
                l->empty.try_push(b);
                any = true;
            }
        }
        return any;
    }

    // Ordered mode: the lowest order any other shard may still send a binding for.
    std::uint64_t peers_progress() const noexcept {
        std::uint64_t low = UINT64_MAX;
        for (std::size_t j = 0; j < pipeline_.threads_.size(); ++j)
            if (j != index_) low = std::min(low, pipeline_.threads_[j]->progress.load(std::memory_order_acquire));
        return low;
    }

    // Applies the bindings from other shards that come before `limit` in the input, in input
    // order (each link delivers in order; merge them). Every one of them has arrived once the
    // peers' progress has passed `limit` (read before the links were drained).
    void apply_bindings_before(std::uint64_t limit) {
        while (true) {
            std::size_t best = waiting_.size();
            for (std::size_t j = 0; j < waiting_.size(); ++j)
                if (!waiting_[j].empty() && waiting_[j].front().binding.order < limit &&
                    (best == waiting_.size() || waiting_[j].front().binding.order < waiting_[best].front().binding.order))
                    best = j;
            if (best == waiting_.size()) return;
            HeldBinding& h = waiting_[best].front();
            h.binding.call_id = h.call_id;
            worker().bind(h.binding);
            waiting_[best].pop_front();
        }
    }

    // Ordered mode. Every batch that has arrived has its SIP processed at once (SIP waits for
    // no binding), which publishes how far this shard's bindings go; its media follow in input
    // order, each after every binding that comes before it, from this shard or another. A media
    // datagram that a peer's SIP still holds back stays where it is until the next call.
    bool drain_ordered() {
        bool any = false;
        for (auto& l : producer_links) {
            Batch* b = nullptr;
            while (l->full.try_pop(b)) {
                for (const Datagram& d : b->datagrams()) {
                    if (d.kind != PayloadClass::sip) continue;
                    current_order_ = d.order;
                    worker().process(d, *this);
                }
                if (!b->datagrams().empty()) popped_end_ = b->datagrams().back().order + 1;
                held_.push_back(HeldBatch{l.get(), b, 0});
                any = true;
            }
        }
        // With nothing more queued here, this shard is as far as the producer has queued SIP.
        const std::uint64_t queued = pipeline_.published_.load(std::memory_order_acquire);
        bool queue_empty = true;
        for (const auto& l : producer_links) queue_empty = queue_empty && l->full.size() == 0;
        flush_out();
        const std::uint64_t reach = queue_empty ? std::max(popped_end_, queued) : popped_end_;
        if (reach > progress.load(std::memory_order_relaxed)) progress.store(reach, std::memory_order_release);

        while (!held_.empty()) {
            HeldBatch& h = held_.front();
            const std::span<const Datagram> ds = h.batch->datagrams();
            for (; h.next < ds.size(); ++h.next) {
                const Datagram& d = ds[h.next];
                if (d.kind == PayloadClass::sip) continue;
                if (horizon_ < d.order) {
                    horizon_ = peers_progress();
                    drain_shard_links();
                    if (horizon_ < d.order) return any;
                }
                apply_bindings_before(d.order);
                worker().process(d, *this);
                any = true;
            }
            if (h.batch->watermark > clock_) {
                clock_ = h.batch->watermark;
                worker().advance(clock_);
            }
            h.batch->clear();
            h.link->empty.try_push(h.batch);
            held_.pop_front();
        }
        return any;
    }

    bool drain_producers() {
        if (pipeline_.ordered_) return drain_ordered();
        bool any = false;
        for (auto& l : producer_links) {
            Batch* b = nullptr;
            while (l->full.try_pop(b)) {
                for (const Datagram& d : b->datagrams()) worker().process(d, *this);
                if (b->watermark > clock_) {
                    clock_ = b->watermark;
                    worker().advance(clock_);
                }
                b->clear();
                l->empty.try_push(b);
                any = true;
            }
        }
        return any;
    }

    void run_task() {
        const std::uint64_t posted = task_posted.load(std::memory_order_acquire);
        if (posted == task_done.load(std::memory_order_relaxed)) return;
        (*task)(index_, worker());
        task_done.store(posted, std::memory_order_release);
    }

    // Live mode: with no traffic the packet clock stands still; move it on by wall time. This is
    // consistent with the datagram times because live intake keeps every sender's capture times
    // within hep.clock_offset_limit of the receive (wall) time (ingest/sender_clocks.hpp): the
    // newest datagram time plus the time elapsed since is wall time, give or take that limit.
    void idle_tick(bool any) {
        const std::int64_t tick = pipeline_.options_.idle_tick_us;
        if (tick <= 0) return;
        const auto now = std::chrono::steady_clock::now();
        if (any) {
            last_activity_ = now;
            return;
        }
        const auto idle = std::chrono::duration_cast<std::chrono::microseconds>(now - last_activity_).count();
        if (idle < tick) return;
        last_activity_ = now;
        if (clock_.us == 0) return;  // no packet yet: nothing can expire
        clock_.us += idle;
        worker().advance(clock_);
    }

    void run() {
        unsigned spins = 0;
        waiting_.resize(shard_links.size());
        last_activity_ = std::chrono::steady_clock::now();
        // Phase 1: datagrams until every producer is done and its queue is empty.
        while (true) {
            const bool done = pipeline_.producers_done_.load(std::memory_order_acquire);
            bool any = drain_producers();
            flush_out();
            any = drain_shard_links() || any;
            run_task();
            idle_tick(any);
            if (done && !any && held_.empty()) {
                // One more pass: a batch pushed just before `done` was read must be seen.
                if (!drain_producers()) break;
                flush_out();
            }
            if (any) {
                spins = 0;
            } else if (pipeline_.ordered_ && !held_.empty()) {
                std::this_thread::yield();  // a peer is about to let the held media through
            } else {
                backoff(spins);
            }
        }
        flush_out();
        progress.store(UINT64_MAX, std::memory_order_release);
        // Phase 2: every shard has sent all its bindings once all have arrived here.
        pipeline_.shards_drained_.fetch_add(1, std::memory_order_acq_rel);
        while (pipeline_.shards_drained_.load(std::memory_order_acquire) < pipeline_.shards()) {
            run_task();
            // The peers' progress before draining: every binding below it is drained then.
            const std::uint64_t limit = pipeline_.ordered_ ? peers_progress() : 0;
            const bool any = drain_shard_links();
            if (pipeline_.ordered_) apply_bindings_before(limit);
            if (!any) backoff(spins);
        }
        drain_shard_links();
        apply_bindings_before(UINT64_MAX);
        run_task();
        worker().finish(end);
    }

    struct HeldBinding {
        MediaBinding binding;
        std::string call_id;  // binding.call_id points here when it is applied
    };
    struct HeldBatch {  // ordered mode: SIP done, media from `next` on still to do
        Link* link;
        Batch* batch;
        std::size_t next;
    };

    Pipeline& pipeline_;
    std::size_t index_;
    std::thread thread_;
    std::uint64_t current_order_ = 0;
    std::uint64_t horizon_ = 0;     // peers' progress as last read (ordered mode)
    std::uint64_t popped_end_ = 0;  // order after the last datagram taken off the queues
    std::deque<HeldBatch> held_;
    std::vector<std::deque<HeldBinding>> waiting_;  // by sending shard (ordered mode)
    Timestamp clock_{};
    std::chrono::steady_clock::time_point last_activity_{};
};

// ---- producers ----

class Pipeline::Producer::DirectSink final : public BindingSink {
public:
    explicit DirectSink(Worker& w) : worker_(w) {}
    void send(const MediaBinding& b) override { worker_.bind(b); }

private:
    Worker& worker_;
};

Pipeline::Producer::Producer(Pipeline& pipeline, std::size_t index) : pipeline_(pipeline) {
    if (pipeline.threads_.empty()) {
        direct_ = std::make_unique<DirectSink>(*pipeline.workers_[0]);
        return;
    }
    for (auto& t : pipeline.threads_) links_.push_back(t->producer_links[index].get());
}

Pipeline::Producer::~Producer() = default;

void Pipeline::Producer::push(const Datagram& in) {
    if (direct_) {
        Worker& w = *pipeline_.workers_[0];
        w.process(in, *direct_);
        if (in.time > watermark_) {
            watermark_ = in.time;
            w.advance(watermark_);
        }
        return;
    }
    Datagram d = in;
    d.order = next_order_;  // counted once queued: publish() must not claim it before
    if (d.time > watermark_) watermark_ = d.time;
    Link& link = *links_[shard_of(d, links_.size())];
    const bool lossless = pipeline_.options_.lossless;
    unsigned spins = 0;
    while (true) {
        if (link.current == nullptr) {
            link.current = link.acquire();
            if (link.current == nullptr) {
                if (!lossless) {
                    dropped_.add();
                    return;
                }
                if (pipeline_.ordered_) publish(true);
                backoff(spins);
                continue;
            }
        }
        if (link.current->add(d)) {
            link.current->watermark = watermark_;
            ++next_order_;
            if (d.kind == PayloadClass::sip && link.first_sip == UINT64_MAX) link.first_sip = d.order;
            if (pipeline_.ordered_ && (next_order_ & 127U) == 0) publish(false);
            return;
        }
        if (link.current->empty()) {  // larger than a whole batch: cannot ever be queued
            dropped_.add();
            ++next_order_;
            return;
        }
        // Full: send it and start another.
        if (!link.full.try_push(link.current)) {
            if (!lossless) {
                dropped_.add(link.current->size());
                link.current->clear();
                continue;
            }
            // A shard waiting for another may be waiting for a batch still being filled here.
            if (pipeline_.ordered_) publish(true);
            backoff(spins);
            continue;
        }
        link.current = nullptr;
        link.first_sip = UINT64_MAX;
        if (pipeline_.ordered_) publish(false);
    }
}

// Publishes how far SIP is queued: every SIP datagram before it is in a batch a shard can take.
// Media still being batched holds nobody back; SIP far behind the input (or any, when the
// producer itself has to wait) is sent in a partly filled batch.
void Pipeline::Producer::publish(bool send_partial) {
    const std::uint64_t stale = pipeline_.options_.batch_datagrams * links_.size();
    std::uint64_t queued = next_order_;
    for (Link* link : links_) {
        if (link->first_sip == UINT64_MAX) continue;
        if ((send_partial || link->first_sip + stale < next_order_) && link->full.try_push(link->current)) {
            link->current = nullptr;
            link->first_sip = UINT64_MAX;
            continue;
        }
        queued = std::min(queued, link->first_sip);
    }
    pipeline_.published_.store(queued, std::memory_order_release);
}

void Pipeline::Producer::flush() {
    const bool lossless = pipeline_.options_.lossless;
    for (Link* link : links_) {
        if (link->current == nullptr || link->current->empty()) continue;
        unsigned spins = 0;
        while (true) {
            if (link->full.try_push(link->current)) {
                link->current = nullptr;
                link->first_sip = UINT64_MAX;
                break;
            }
            if (!lossless) {  // keep the (now empty) batch for the next datagrams
                dropped_.add(link->current->size());
                link->current->clear();
                break;
            }
            // Ordered: this shard may be waiting for the SIP in another shard's batch still
            // here (a later link): queue what can be queued, or nobody moves again.
            if (pipeline_.ordered_) {
                publish(true);
                if (link->current == nullptr) break;
            }
            backoff(spins);
        }
    }
    if (pipeline_.ordered_) pipeline_.published_.store(next_order_, std::memory_order_release);
}

// ---- pipeline ----

Pipeline::Pipeline(PipelineOptions options, std::vector<std::unique_ptr<Worker>> workers)
    : options_(options), workers_(std::move(workers)) {
    const std::size_t n = workers_.size();
    ordered_ = options_.lossless && n > 1 && options_.producers == 1;
    if (n > 1 || options_.threaded) {
        for (std::size_t s = 0; s < n; ++s) threads_.push_back(std::make_unique<ShardThread>(*this, s));
        for (std::size_t s = 0; s < n; ++s) {
            auto& t = *threads_[s];
            for (std::size_t p = 0; p < options_.producers; ++p)
                t.producer_links.push_back(std::make_unique<Link>(options_.queue_batches, options_.batch_datagrams,
                                                                  options_.batch_bytes, 0));
            t.shard_links.resize(n);
            for (std::size_t from = 0; from < n; ++from)
                if (from != s) t.shard_links[from] = std::make_unique<Link>(256, 0, 16 * 1024, 128);
        }
        for (std::size_t s = 0; s < n; ++s) {
            threads_[s]->out_links.resize(n, nullptr);
            for (std::size_t to = 0; to < n; ++to)
                if (to != s) threads_[s]->out_links[to] = threads_[to]->shard_links[s].get();
        }
    }
    for (std::size_t p = 0; p < options_.producers; ++p) producers_.push_back(std::make_unique<Producer>(*this, p));
}

Pipeline::~Pipeline() {
    if (!finished_) {
        producers_done_.store(true, std::memory_order_release);
        for (auto& t : threads_) t->join();
    }
}

void Pipeline::start() {
    started_ = true;
    for (auto& t : threads_) t->start();
}

void Pipeline::run_on_shards(const std::function<void(std::size_t, Worker&)>& task) {
    if (threads_.empty() || !started_ || finished_) {
        for (std::size_t i = 0; i < workers_.size(); ++i) task(i, *workers_[i]);
        return;
    }
    for (auto& t : threads_) {
        t->task = &task;
        t->task_posted.fetch_add(1, std::memory_order_acq_rel);
    }
    for (auto& t : threads_) {
        unsigned spins = 0;
        while (t->task_done.load(std::memory_order_acquire) != t->task_posted.load(std::memory_order_relaxed))
            backoff(spins);
    }
}

void Pipeline::finish(Timestamp end) {
    if (finished_) return;
    finished_ = true;
    if (threads_.empty()) {
        workers_[0]->finish(end);
        return;
    }
    for (auto& t : threads_) t->end = end;
    published_.store(UINT64_MAX, std::memory_order_release);
    producers_done_.store(true, std::memory_order_release);
    for (auto& t : threads_) t->join();
}

std::size_t Pipeline::queue_depth(std::size_t shard) const noexcept {
    return threads_.empty() ? 0 : threads_[shard]->depth();
}

std::uint64_t Pipeline::binding_drops() const noexcept {
    std::uint64_t n = 0;
    for (const auto& t : threads_) n += t->binding_drops.value();
    return n;
}

std::uint64_t Pipeline::queue_full_drops() const noexcept {
    std::uint64_t n = 0;
    for (const auto& p : producers_) n += p->dropped();
    return n;
}

} // namespace hepd::shard
