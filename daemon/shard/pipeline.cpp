#include "shard/pipeline.hpp"

#include "shard/dispatch.hpp"

#include <algorithm>
#include <chrono>

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

    std::size_t depth() const noexcept {
        std::size_t n = 0;
        for (const auto& l : producer_links) n += l->full.size();
        return n;
    }

    void send(const MediaBinding& b) override {
        const std::size_t to = shard_of_media(b.media, pipeline_.shards());
        if (to == index_) {
            pipeline_.workers_[index_]->bind(b);
            return;
        }
        Link& link = *out_links[to];
        if (link.current == nullptr) link.current = acquire_waiting(link);
        if (link.current == nullptr) {
            pipeline_.binding_drops_.add();
            return;
        }
        if (!link.current->add(b)) {
            submit(link);
            link.current = acquire_waiting(link);
            if (link.current == nullptr || !link.current->add(b)) pipeline_.binding_drops_.add();
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
                pipeline_.binding_drops_.add(link.current->bindings().size());
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

    bool drain_shard_links() {
        bool any = false;
        for (auto& l : shard_links) {
            if (!l) continue;
            Batch* b = nullptr;
            while (l->full.try_pop(b)) {
                for (const auto& binding : b->bindings()) worker().bind(binding);
                b->clear();
                l->empty.try_push(b);
                any = true;
            }
        }
        return any;
    }

    bool drain_producers() {
        bool any = false;
        for (auto& l : producer_links) {
            Batch* b = nullptr;
            while (l->full.try_pop(b)) {
                for (const auto& d : b->datagrams()) worker().process(d, *this);
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
        last_activity_ = std::chrono::steady_clock::now();
        // Phase 1: datagrams until every producer is done and its queue is empty.
        while (true) {
            const bool done = pipeline_.producers_done_.load(std::memory_order_acquire);
            bool any = drain_producers();
            flush_out();
            any = drain_shard_links() || any;
            run_task();
            idle_tick(any);
            if (done && !any) {
                // One more pass: a batch pushed just before `done` was read must be seen.
                if (!drain_producers()) break;
                flush_out();
            }
            if (any) spins = 0; else backoff(spins);
        }
        flush_out();
        // Phase 2: every shard has sent all its bindings once all have arrived here.
        pipeline_.shards_drained_.fetch_add(1, std::memory_order_acq_rel);
        while (pipeline_.shards_drained_.load(std::memory_order_acquire) < pipeline_.shards()) {
            run_task();
            if (!drain_shard_links()) backoff(spins);
        }
        drain_shard_links();
        run_task();
        worker().finish(end);
    }

    Pipeline& pipeline_;
    std::size_t index_;
    std::thread thread_;
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

void Pipeline::Producer::push(const Datagram& d) {
    if (direct_) {
        Worker& w = *pipeline_.workers_[0];
        w.process(d, *direct_);
        if (d.time > watermark_) {
            watermark_ = d.time;
            w.advance(watermark_);
        }
        return;
    }
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
                backoff(spins);
                continue;
            }
        }
        if (link.current->add(d)) {
            link.current->watermark = watermark_;
            return;
        }
        if (link.current->empty()) {  // larger than a whole batch: cannot ever be queued
            dropped_.add();
            return;
        }
        // Full: send it and start another.
        if (!link.full.try_push(link.current)) {
            if (!lossless) {
                dropped_.add(link.current->size());
                link.current->clear();
                continue;
            }
            backoff(spins);
            continue;
        }
        link.current = nullptr;
    }
}

void Pipeline::Producer::flush() {
    const bool lossless = pipeline_.options_.lossless;
    for (Link* link : links_) {
        if (link->current == nullptr || link->current->empty()) continue;
        unsigned spins = 0;
        while (true) {
            if (link->full.try_push(link->current)) {
                link->current = nullptr;
                break;
            }
            if (!lossless) {  // keep the (now empty) batch for the next datagrams
                dropped_.add(link->current->size());
                link->current->clear();
                break;
            }
            backoff(spins);
        }
    }
}

// ---- pipeline ----

Pipeline::Pipeline(PipelineOptions options, std::vector<std::unique_ptr<Worker>> workers)
    : options_(options), workers_(std::move(workers)) {
    const std::size_t n = workers_.size();
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
    producers_done_.store(true, std::memory_order_release);
    for (auto& t : threads_) t->join();
}

std::size_t Pipeline::queue_depth(std::size_t shard) const noexcept {
    return threads_.empty() ? 0 : threads_[shard]->depth();
}

std::uint64_t Pipeline::queue_full_drops() const noexcept {
    std::uint64_t n = 0;
    for (const auto& p : producers_) n += p->dropped();
    return n;
}

} // namespace hepd::shard
