#include "shard/pipeline.hpp"

#include "core/thread_name.hpp"
#include "shard/dispatch.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>

namespace hepd::shard {

// One direction between one producer (or shard) and one shard: full batches forward, empty
// ones back for reuse. Every batch is made here (one filling, a full queue, one being read by
// the shard), so the steady state allocates nothing.
struct Pipeline::Link {
    Link(std::size_t queue_batches, std::size_t datagrams, std::size_t bytes, std::size_t bindings, Doorbell& to,
         const Clock& clock)
        : full(queue_batches),
          empty(full.capacity() + 2),
          pool(full.capacity() + 2, datagrams, bytes, bindings, clock),
          receiver(&to) {}

    // A batch to fill (see BatchPool for which); nullptr when all are in flight.
    Batch* acquire() noexcept {
        Batch* b = nullptr;
        while (empty.try_pop(b)) pool.put_back(b);
        return pool.acquire();
    }

    // Receiver side: hands a batch back and tells the sender there is room.
    void give_back(Batch* b) {
        b->clear();
        empty.try_push(b);  // cannot fail: it holds every batch
        sender->ring();
    }

    SpscQueue<Batch*> full;
    SpscQueue<Batch*> empty;
    BatchPool pool;                        // sender side
    Doorbell* receiver;                    // the shard this link feeds
    Doorbell* sender = nullptr;            // the producer or shard that fills it
    Batch* current = nullptr;              // sender side
    std::uint64_t first_sip = UINT64_MAX;  // sender side: of `current`, ordered mode
};

namespace {

const SteadyClock kSteadyClock;

std::chrono::microseconds micros(std::int64_t us) { return std::chrono::microseconds(us); }

}  // namespace

// ---- the shard thread ----

class Pipeline::ShardThread final : public BindingSink {
public:
    ShardThread(Pipeline& p, std::size_t index)
        : pipeline_(p), index_(index), live_ticks_(p.options_.threaded && p.options_.idle_tick_us > 0) {}

    void start() {
        thread_ = std::thread([this] {
            name_this_thread("hepd-shard-" + std::to_string(index_));
            read != nullptr ? run_reading() : run();
        });
    }
    void join() {
        if (thread_.joinable()) thread_.join();
    }
    // Before start(): Pipeline::seed_clock().
    void seed_clock(Timestamp now) noexcept {
        if (clock_.us == 0) clock_ = now;
    }

    // Links are created before start(); inbound from producers and from other shards.
    std::vector<std::unique_ptr<Link>> producer_links;  // owned here, written by producers
    std::vector<std::unique_ptr<Link>> shard_links;     // from shard j (null for j == self)
    std::vector<Link*> out_links;                       // to shard j (null for j == self)
    Timestamp end{};
    // Pipeline::run_readers: this shard reads the input itself.
    const std::function<void(std::size_t, Feed&)>* read = nullptr;

    // Rung by everything that gives this shard work: a batch from a producer or a peer, a task,
    // a tick, the end of the input, room on a link it waits for, and (ordered mode) a peer's
    // progress passing the order it waits for.
    Doorbell bell;
    // A task posted by run_on_shards(): the shard runs it between batches and acknowledges.
    const std::function<void(std::size_t, Worker&)>* task = nullptr;
    std::atomic<std::uint64_t> task_posted{0};
    std::atomic<std::uint64_t> task_done{0};
    std::atomic<bool> tick_requested{false};
    // Ordered mode: every SIP datagram of this shard with a lower order is processed and its
    // bindings are queued to their shards (only SIP makes bindings, and a batch's SIP is done
    // before its media, so a peer waits for this shard only when it is a batch behind).
    std::atomic<std::uint64_t> progress{0};
    // Ordered mode: the peers' progress this shard's held media wait for (none: UINT64_MAX).
    std::atomic<std::uint64_t> waits_for{UINT64_MAX};
    // run_readers: published with `progress`, a packet time before which this shard sends no
    // more ends of bindings (at_deadline): every one due before it is on its link.
    std::atomic<std::int64_t> release_floor{std::numeric_limits<std::int64_t>::max()};
    Counter binding_drops;         // written by this shard's thread only
    Counter wakeups;               // likewise
    double cpu_seconds = 0;        // the thread's own, written as it ends (read after join)
    std::size_t waiting_peak = 0;  // ordered mode: most bindings queued at once (read after join)

    std::size_t depth() const noexcept {
        std::size_t n = 0;
        for (const auto& l : producer_links) n += l->full.size();
        return n;
    }

    void send(const MediaBinding& binding) override {
        const std::size_t to = shard_of_media(binding.media, pipeline_.shards());
        MediaBinding b = binding;
        b.order = current_order_;
        // An end at a deadline came with a step of the SIP side's clock from expiring_from_: a
        // single reader applied it at the first step past that which reached its deadline (a
        // deadline already behind the clock, times having gone back, at the next step).
        b.input_clock = b.at_deadline ? Timestamp{std::max(b.time.us, expiring_from_.us + 1)} : current_clock_;
        b.media_clock = current_before_;
        // Only shards reading together place an end by its time; the producer's ordered mode
        // places it where it was sent.
        if (read == nullptr) b.at_deadline = false;
        if (to == index_) {
            // Ordered mode runs a batch's SIP ahead of its media: this shard's own bindings
            // wait their turn like everyone else's.
            if (pipeline_.ordered_) {
                hold_binding(index_, b);
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

    bool inbound_bindings() const noexcept {
        for (const auto& l : shard_links)
            if (l != nullptr && l->full.size() != 0) return true;
        return false;
    }

    template <class Ready>
    void sleep_unless(Ready&& ready, std::chrono::microseconds timeout = Doorbell::kForever) {
        if (bell.sleep_unless(ready, timeout)) wakeups.add();
    }

    // Lossless mode may wait for a peer shard, but keeps draining its own inbound bindings
    // meanwhile, so two shards waiting on each other still make progress.
    Batch* acquire_waiting(Link& link) {
        while (true) {
            if (Batch* b = link.acquire()) return b;
            if (!pipeline_.options_.lossless) return nullptr;
            if (drain_shard_links()) continue;
            sleep_unless([&] { return link.empty.size() != 0 || inbound_bindings(); });
        }
    }

    void submit(Link& link) {
        if (link.current == nullptr || link.current->empty()) return;
        while (!link.full.try_push(link.current)) {
            if (!pipeline_.options_.lossless) {
                binding_drops.add(link.current->bindings().size());
                link.current->clear();
                return;
            }
            if (drain_shard_links()) continue;
            sleep_unless([&] { return link.full.size() < link.full.capacity() || inbound_bindings(); });
        }
        link.current = nullptr;
        link.receiver->ring();
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
                        hold_binding(from, binding);
                    } else {
                        worker().bind(binding);
                    }
                }
                l->give_back(b);
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
    // run_readers: the packet time before which no other shard may still send an end of bindings
    // (read after peers_progress(): it is at least as new as the progress read).
    std::int64_t peers_release_floor() const noexcept {
        std::int64_t low = std::numeric_limits<std::int64_t>::max();
        for (std::size_t j = 0; j < pipeline_.threads_.size(); ++j)
            if (j != index_) low = std::min(low, pipeline_.threads_[j]->release_floor.load(std::memory_order_acquire));
        return low;
    }

    // Ordered mode: publishes this shard's progress and wakes the peers it lets through (the
    // fence pairs with the sleeper's, as in Doorbell, for waits_for).
    void advance_progress(std::uint64_t reach) {
        progress.store(reach, std::memory_order_release);
        std::atomic_thread_fence(std::memory_order_seq_cst);
        for (std::size_t j = 0; j < pipeline_.threads_.size(); ++j) {
            ShardThread& peer = *pipeline_.threads_[j];
            if (j != index_ && peer.waits_for.load(std::memory_order_relaxed) <= reach) peer.bell.ring();
        }
    }

    // Applies the bindings from other shards that come before `limit` in the input, and the ends
    // due by `before` (the newest input time up to it), in input order (each link delivers in
    // order; merge them). Every one of them has arrived once the peers' progress has passed
    // `limit` and their release floor `before` (read before the links were drained).
    // Per media datagram: nearly always nothing waits from before it (two compares).
    // run_readers: `media_cap` is the newest input time before the media datagram they come
    // before (where its media side's timers go next).
    void apply_bindings_before(std::uint64_t limit,
                               Timestamp before = Timestamp{std::numeric_limits<std::int64_t>::max()},
                               Timestamp media_cap = Timestamp{std::numeric_limits<std::int64_t>::max()}) {
        if (limit > waiting_first_ || before.us >= waiting_first_time_) apply_waiting_before(limit, before, media_cap);
    }

    // Which of two queued messages a single reader applied first. A binding sits just after its
    // SIP message; an end due at a time just before the first datagram that brought the newest
    // input time there: it comes first when that time is no later than the binding's input clock.
    static bool comes_first(const MediaBinding& x, const MediaBinding& y) noexcept {
        if (x.at_deadline != y.at_deadline)
            return x.at_deadline ? x.input_clock <= y.input_clock : x.input_clock < y.input_clock;
        return x.at_deadline ? x.input_clock < y.input_clock : x.order < y.order;
    }

    // The earliest of the queues' fronts goes while it is due; the fronts left give the new lower
    // bounds (a queue delivers in the order its sender applied them, so what is due is at a front).
    void apply_waiting_before(std::uint64_t limit, Timestamp before, Timestamp media_cap) {
        while (true) {
            std::size_t best = waiting_.size();
            waiting_first_ = UINT64_MAX;
            waiting_first_time_ = std::numeric_limits<std::int64_t>::max();
            for (std::size_t j = 0; j < waiting_.size(); ++j) {
                if (waiting_[j].empty()) continue;
                const MediaBinding& front = waiting_[j].front().binding;
                if (front.at_deadline) {
                    waiting_first_time_ = std::min(waiting_first_time_, front.input_clock.us);
                } else {
                    waiting_first_ = std::min(waiting_first_, front.order);
                }
                if (best == waiting_.size() || comes_first(front, waiting_[best].front().binding)) best = j;
            }
            if (best == waiting_.size()) return;
            HeldBinding& h = waiting_[best].front();
            if (h.binding.at_deadline ? h.binding.input_clock > before : h.binding.order >= limit) return;
            h.binding.call_id = h.call_id.view();
            h.binding.call_id_text = &h.call_id;
            // The stream table as a single reader's meets it: its expiry run to where that
            // reader's media side stood, for a binding the newest time before its SIP message.
            // An end a deadline set behind the clock brought (input times gone back) came at the
            // step from the time just below its input clock. Another end is due before that
            // reader's newest time reached it, and what expires between meets it alike (a stream
            // of its binding ends idle either way, its reported streams are idle by its time).
            if (read != nullptr) {
                const MediaBinding& b = h.binding;
                if (!b.at_deadline) {
                    media_to(b.media_clock);
                } else if (b.input_clock > b.time) {
                    media_to(std::min(Timestamp{b.input_clock.us - 1}, media_cap));
                }
            }
            worker().bind(h.binding);
            waiting_[best].pop_front();
            --waiting_count_;
        }
    }

    void hold_binding(std::size_t from, const MediaBinding& binding) {
        std::deque<HeldBinding>& q = waiting_[from];
        q.push_back(HeldBinding::of(binding));
        // One step of the sender's SIP side may send the ends it brought in another order than
        // their deadlines (its dialog table's): each goes where a single reader applied it, so
        // that what is due is at the front.
        for (auto it = q.end() - 1; it != q.begin() && comes_first(it->binding, (it - 1)->binding); --it)
            std::iter_swap(it, it - 1);
        waiting_peak = std::max(waiting_peak, ++waiting_count_);
        if (binding.at_deadline) {
            waiting_first_time_ = std::min(waiting_first_time_, binding.input_clock.us);
        } else {
            waiting_first_ = std::min(waiting_first_, binding.order);
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
            bool took = false;
            while (l->full.try_pop(b)) {
                for (const Datagram& d : b->datagrams()) {
                    if (d.kind != PayloadClass::sip) continue;
                    current_order_ = d.order;
                    worker().process(d, *this);
                }
                if (!b->datagrams().empty()) popped_end_ = b->datagrams().back().order + 1;
                held_.push_back(HeldBatch{l.get(), b, 0});
                took = true;
            }
            if (took) l->sender->ring();  // room in the queue
            any = any || took;
        }
        saw_traffic_ = saw_traffic_ || any;
        // With nothing more queued here, this shard is as far as the producer has queued SIP.
        const std::uint64_t queued = pipeline_.published_.load(std::memory_order_acquire);
        published_seen_ = queued;
        bool queue_empty = true;
        for (const auto& l : producer_links) queue_empty = queue_empty && l->full.size() == 0;
        flush_out();
        const std::uint64_t reach = queue_empty ? std::max(popped_end_, queued) : popped_end_;
        if (reach > progress.load(std::memory_order_relaxed)) advance_progress(reach);

        while (!held_.empty()) {
            HeldBatch& h = held_.front();
            const std::span<const Datagram> ds = h.batch->datagrams();
            for (; h.next < ds.size(); ++h.next) {
                const Datagram& d = ds[h.next];
                if (d.kind == PayloadClass::sip) continue;
                if (horizon_ < d.order) {
                    horizon_ = peers_progress();
                    drain_shard_links();
                    if (horizon_ < d.order) {
                        waits_for.store(d.order, std::memory_order_relaxed);
                        return any;
                    }
                }
                apply_bindings_before(d.order);
                worker().process(d, *this);
                any = true;
            }
            if (h.batch->watermark > clock_) {
                clock_ = h.batch->watermark;
                worker().advance(clock_, *this);
            }
            h.link->give_back(h.batch);
            held_.pop_front();
        }
        waits_for.store(UINT64_MAX, std::memory_order_relaxed);
        return any;
    }

    bool drain_producers() {
        if (pipeline_.ordered_) return drain_ordered();
        bool any = false;
        for (auto& l : producer_links) {
            Batch* b = nullptr;
            while (l->full.try_pop(b)) {
                worker().process_batch(b->datagrams(), *this);
                if (b->watermark > clock_) {
                    clock_ = b->watermark;
                    worker().advance(clock_, *this);
                }
                l->give_back(b);
                any = true;
            }
        }
        saw_traffic_ = saw_traffic_ || any;
        return any;
    }

    bool task_pending() const noexcept {
        return task_posted.load(std::memory_order_acquire) != task_done.load(std::memory_order_relaxed);
    }

    void run_task() {
        const std::uint64_t posted = task_posted.load(std::memory_order_acquire);
        if (posted == task_done.load(std::memory_order_relaxed)) return;
        tick_if_requested();  // a tick() before run_on_shards() is seen by the task
        (*task)(index_, worker());
        task_done.store(posted, std::memory_order_release);
        pipeline_.tasks_done_.ring();
    }

    // Live mode: with no traffic the packet clock stands still; move it on by the time elapsed.
    // This is consistent with the datagram times because live intake keeps every sender's
    // capture times within hep.clock_offset_limit of the receive (wall) time
    // (ingest/sender_clocks.hpp): the newest datagram time plus the time elapsed since is wall
    // time, give or take that limit. Returns how long until the next tick.
    std::chrono::microseconds tick(bool now_anyway) {
        const std::int64_t period = pipeline_.options_.idle_tick_us;
        const Timestamp now = pipeline_.clock_->now();
        const std::int64_t elapsed = now.us - last_tick_.us;
        if (!now_anyway && elapsed >= 0 && elapsed < period) return micros(period - elapsed);
        last_tick_ = now;
        const bool idle = !saw_traffic_;
        saw_traffic_ = false;
        // No packet yet (and no restored state: seed_clock()): nothing can expire. A clock stepped
        // back: start again from here.
        if (idle && clock_.us != 0 && elapsed > 0) {
            clock_.us += elapsed;
            worker().advance(clock_, *this);
        }
        return micros(period);
    }

    void tick_if_requested() {
        if (live_ticks_ && tick_requested.load(std::memory_order_relaxed) &&
            tick_requested.exchange(false, std::memory_order_acquire))
            tick(true);
    }

    // Whether the shard loop has something to do; read after announcing sleep (see Doorbell).
    bool has_work(bool done_seen) const noexcept {
        for (const auto& l : producer_links)
            if (l->full.size() != 0) return true;
        if (inbound_bindings() || task_pending()) return true;
        if (tick_requested.load(std::memory_order_relaxed)) return true;
        if (pipeline_.producers_done_.load(std::memory_order_acquire) != done_seen) return true;
        if (pipeline_.ordered_) {
            // Held media a peer's progress now lets through, or the producer queued more SIP
            // (this shard's progress moves on, and peers may wait for it).
            if (!held_.empty() && peers_progress() >= waits_for.load(std::memory_order_relaxed)) return true;
            if (pipeline_.published_.load(std::memory_order_acquire) != published_seen_) return true;
        }
        return false;
    }

    void run() {
        waiting_.resize(shard_links.size());
        if (live_ticks_) last_tick_ = pipeline_.clock_->now();
        // Phase 1: datagrams until every producer is done and its queue is empty.
        while (true) {
            const bool done = pipeline_.producers_done_.load(std::memory_order_acquire);
            tick_if_requested();
            bool any = drain_producers();
            flush_out();
            any = drain_shard_links() || any;
            run_task();
            if (done && !any && held_.empty()) {
                // One more pass: a batch pushed just before `done` was read must be seen.
                if (!drain_producers()) break;
                flush_out();
                continue;
            }
            if (any) continue;
            const auto timeout = live_ticks_ ? tick(false) : Doorbell::kForever;
            sleep_unless([&] { return has_work(done); }, timeout);
        }
        finish_run();
    }

    // Phase 2: every shard has sent all its bindings once all have arrived here.
    void finish_run() {
        flush_out();
        release_floor.store(std::numeric_limits<std::int64_t>::max(), std::memory_order_release);
        advance_progress(UINT64_MAX);
        pipeline_.shards_drained_.fetch_add(1, std::memory_order_acq_rel);
        for (auto& t : pipeline_.threads_)
            if (t.get() != this) t->bell.ring();
        while (true) {
            const std::size_t drained = pipeline_.shards_drained_.load(std::memory_order_acquire);
            if (drained >= pipeline_.shards()) break;
            run_task();
            // The peers' progress before draining: every binding below it is drained then.
            const std::uint64_t limit = pipeline_.ordered_ ? peers_progress() : 0;
            const bool any = drain_shard_links();
            if (pipeline_.ordered_) apply_bindings_before(limit);
            if (any) continue;
            sleep_unless([&] {
                return inbound_bindings() || task_pending() ||
                       pipeline_.shards_drained_.load(std::memory_order_acquire) != drained;
            });
        }
        drain_shard_links();
        apply_bindings_before(UINT64_MAX);
        run_task();
        if (read != nullptr) media_to(end);  // a single reader's media side ends at the newest time
        worker().finish(end);
        cpu_seconds = thread_cpu_seconds();
    }

    // ---- Pipeline::run_readers: the shard reads the input itself and keeps what it owns ----

public:
    // Every datagram of the input, in input order. The shard's own SIP is processed at once (it
    // waits for no binding); its media wait, in order, until every peer has processed the SIP
    // before them (so has sent its bindings), as in drain_ordered(). A reader sees its peers'
    // SIP go by, so it waits only for the last of those, not for the peers to read as far.
    // `own`: shard_of(in) == index_, when the reader knows it already.
    void take(const Datagram& in, std::optional<bool> own = std::nullopt) {
        const std::uint64_t order = next_order_++;
        const Timestamp before = watermark_;  // the newest time before this datagram
        if (in.time > watermark_) watermark_ = in.time;
        if (!(own ? *own : shard_of(in, pipeline_.shards()) == index_)) {  // not value_or: it would hash anyway
            if (in.kind == PayloadClass::sip) peer_sip_end_ = order + 1;
        } else {
            Datagram d = in;  // only the own ones are copied, to carry their order
            d.order = order;
            if (d.kind == PayloadClass::sip) {
                current_order_ = d.order;
                current_clock_ = watermark_;
                current_before_ = before;
                // Each side's timers run as with a single reader, whatever media are held back:
                // when a message meets a dialog, or a packet its stream, must not depend on how
                // far the peers are. The SIP side's run through the message's own time.
                sip_to(watermark_);
                worker().process(d, *this);
                sip_due_us_ = worker().next_sip_deadline_us();
                if (held_.empty()) catch_up_clock();
                // The peers reading beside this shard have just seen this SIP go by: their
                // media after it wait for this, not for the next regular publication.
                publish_reading();
            } else if (held_.empty() && media_may_go(d.order, watermark_)) {
                ready_for_media(d, before, watermark_);
                worker().process(d, *this);
                catch_up_clock();
            } else {
                hold_own(d, before);
            }
        }
        if (next_order_ % kPublishEvery == 0) publish_and_catch_up();
    }

    // Peers' datagrams, known as such by the reader: as take() with each of them (the peers
    // hear how far this shard has read once per kPublishEvery, as there).
    void pass(const PassedRun& run) {
        if (run.sip_end != 0) peer_sip_end_ = next_order_ + run.sip_end;
        const std::uint64_t before = next_order_;
        next_order_ += run.count;
        if (run.newest > watermark_) watermark_ = run.newest;
        if (next_order_ / kPublishEvery != before / kPublishEvery) publish_and_catch_up();
    }

    void wait_until(const std::function<bool()>& ready) {
        while (!ready()) {
            publish_reading();
            sleep_unless([&] { return ready() || inbound_bindings(); });
            drain_shard_links();
        }
    }

    void wake_peers() {
        for (auto& t : pipeline_.threads_)
            if (t.get() != this) t->bell.ring();
    }

    void stable_input(ByteSpan bytes) noexcept { stable_ = bytes; }

    void end_input() {
        publish_reading();
        drain_own_held(true);
        stable_ = {};
    }

private:
    // How often (in datagrams read) a reading shard tells its peers how far it has read.
    static constexpr std::uint64_t kPublishEvery = 64;
    // Bindings a reading shard with no media held lets wait for its peers before it waits too.
    static constexpr std::size_t kMaxWaitingBindings = 4096;

    void run_reading() {
        waiting_.resize(shard_links.size());
        const PipelineOptions& o = pipeline_.options_;
        own_pool_ =
            std::make_unique<BatchPool>(o.queue_batches, o.batch_datagrams, o.batch_bytes, 0, *pipeline_.clock_);
        Feed feed(*this);
        (*read)(index_, feed);
        // All read: what is still held waits only for peers still reading.
        publish_reading();
        drain_own_held(true);
        catch_up_clock();
        end = watermark_;
        finish_run();
    }

    // Bindings before `order` from every shard are all here (in waiting_): the peers have
    // passed `order`, or every peer SIP read so far.
    // And every end of bindings due by `through` (the newest input time up to it, its own
    // included) is here: no peer has a dialog whose linger may run out by then unfinished.
    bool media_may_go(std::uint64_t order, Timestamp through) {
        const std::uint64_t needed = std::min(order, peer_sip_end_);
        if (horizon_ >= needed && through.us < release_horizon_) return true;
        horizon_ = peers_progress();
        release_horizon_ = peers_release_floor();
        drain_shard_links();
        return horizon_ >= needed && through.us < release_horizon_;
    }

    // Where a single reader stood before this media datagram (`before`: the newest input time
    // before it; `through`: the newest up to it, its own included): its SIP side's timers, on
    // through the datagram's own time when a deadline is due by then (this shard's own ends of
    // bindings due by then), every binding and end before it applied, then its media side's timers.
    [[gnu::always_inline]] void ready_for_media(const Datagram& d, Timestamp before, Timestamp through) {
        sip_to(before);
        sip_due_to(through);
        apply_bindings_before(d.order, through, before);
        media_to(before);
    }

    // The shard's SIP side follows the input while none of its media is held back. Its media side
    // does not: a peer's binding from before here may still come, and must meet streams a single
    // reader had not expired yet. It runs before each own media datagram, each binding and end
    // (to where a single reader's stood then) and at the end.
    void catch_up_clock() {
        if (watermark_ <= clock_) return;
        clock_ = watermark_;
        sip_to(clock_);
    }

    // One side's timers, up to `t` (never back).
    void sip_to(Timestamp t) {
        if (t <= sip_clock_) return;
        expiring_from_ = sip_clock_;
        sip_clock_ = t;
        worker().advance_sip(t, *this);
    }
    // The SIP side's timers up to `t` when a dialog's deadline may be due by then; one compare
    // a datagram otherwise (sip_due_us_ is a lower bound of the table's deadlines: only SIP
    // brings earlier ones).
    void sip_due_to(Timestamp t) {
        if (t.us < sip_due_us_ || t <= sip_clock_) return;
        sip_to(t);
        sip_due_us_ = worker().next_sip_deadline_us();
    }
    void media_to(Timestamp t) {
        if (t <= media_clock_) return;
        media_clock_ = t;
        worker().advance_media(t, *this);
    }

    // Every own SIP datagram read so far is processed, its SIP side's timers are where a single
    // reader's would be here (the newest time read: SIP is never held back), and what both sent
    // is on the links; then the release floor, then the progress.
    void publish_reading() {
        sip_to(watermark_);
        flush_out();
        // The ends still to come are due at a deadline not passed yet, or, times having gone
        // back, at the clock's next step.
        release_floor.store(std::max(worker().next_sip_deadline_us(), sip_clock_.us + 1), std::memory_order_release);
        if (next_order_ > progress.load(std::memory_order_relaxed)) advance_progress(next_order_);
    }

    // Every kPublishEvery datagrams read: the peers hear how far, and the shard catches up.
    void publish_and_catch_up() {
        publish_reading();
        if (held_.empty()) {
            apply_settled_bindings();
            catch_up_clock();
        } else {
            drain_own_held(false);
        }
    }

    // With no own media held, the bindings and ends that every later own media datagram comes
    // after are applied now, not before the next such datagram: a shard that gets no media
    // (a SIP-only capture) would otherwise queue every SDP offer of the run (~700 bytes each).
    // They go in the order they would have gone then; only the ones all peers have sent by
    // now go (bindings before their progress, ends due before their release floor).
    // And a peer far behind (descheduled, or slow) holds back what this shard queued: past
    // kMaxWaitingBindings the shard waits for it rather than read on and queue without bound.
    void apply_settled_bindings() {
        while (true) {
            horizon_ = peers_progress();
            release_horizon_ = peers_release_floor();
            drain_shard_links();
            const std::uint64_t limit = horizon_ >= std::min(next_order_, peer_sip_end_) ? next_order_ : horizon_;
            const std::int64_t due_by = std::min(watermark_.us, release_horizon_ - 1);
            apply_bindings_before(limit, Timestamp{due_by});
            if (waiting_count_ <= kMaxWaitingBindings) return;
            wait_for_peers(next_order_, watermark_);
        }
    }

    // Bytes of the input (stable_input) are held where they are; others are copied.
    // `before`: the newest time in the input before it.
    void hold_own(const Datagram& d, Timestamp before) {
        const bool in_place = within(stable_, d.payload) && within(stable_, as_bytes(d.correlation_id));
        if (!in_place && d.payload.size() + d.correlation_id.size() > pipeline_.options_.batch_bytes) {
            // Fits no batch: everything before it goes first, then it, in order.
            drain_own_held(true);
            const Timestamp through = std::max(before, d.time);
            while (!media_may_go(d.order, through)) wait_for_peers(d.order, through);
            ready_for_media(d, before, through);
            worker().process(d, *this);
            catch_up_clock();
            return;
        }
        held_before_.push_back(before);
        while (held_.empty() || !(in_place ? held_.back().batch->add_in_place(d) : held_.back().batch->add(d))) {
            Batch* b = own_pool_->acquire();
            if (b == nullptr) {
                drain_own_held(true);
                continue;
            }
            held_.push_back(HeldBatch{nullptr, b, 0});
        }
    }

    // Processes held media in order as far as the peers allow; with `wait`, all of it. True when
    // none is left.
    bool drain_own_held(bool wait) {
        while (!held_.empty()) {
            HeldBatch& h = held_.front();
            const std::span<const Datagram> ds = h.batch->datagrams();
            while (h.next < ds.size()) {
                const Datagram& d = ds[h.next];
                const Timestamp before = held_before_.front();
                const Timestamp through = std::max(before, d.time);
                if (!media_may_go(d.order, through)) {
                    if (!wait) return false;
                    wait_for_peers(d.order, through);
                    continue;
                }
                ready_for_media(d, before, through);
                held_before_.pop_front();
                worker().process(d, *this);
                ++h.next;
            }
            h.batch->clear();
            own_pool_->put_back(h.batch);
            held_.pop_front();
        }
        catch_up_clock();
        return true;
    }

    // Sleeps until the peers have read past `order` and their release floor `through`, taking
    // their bindings meanwhile (a peer may wait for room on its link to this shard). A peer rings
    // at every publication once its progress is past `order`.
    void wait_for_peers(std::uint64_t order, Timestamp through) {
        publish_reading();
        waits_for.store(order, std::memory_order_relaxed);
        sleep_unless(
            [&] { return (peers_progress() >= order && peers_release_floor() > through.us) || inbound_bindings(); });
        waits_for.store(UINT64_MAX, std::memory_order_relaxed);
        drain_shard_links();
    }

    struct HeldBinding {
        MediaBinding binding;
        CompactText call_id;  // binding.call_id points here when it is applied
        // This shard's own bindings keep their dialog's block; those from a link copy the text.
        static HeldBinding of(const MediaBinding& b) {
            const CompactText* block = b.call_id_block();
            HeldBinding h{b, block != nullptr ? *block : CompactText(b.call_id)};
            h.binding.call_id_text = nullptr;
            return h;
        }
    };
    struct HeldBatch {  // ordered mode: SIP done, media from `next` on still to do
        Link* link;
        Batch* batch;
        std::size_t next;
    };

    Pipeline& pipeline_;
    std::size_t index_;
    const bool live_ticks_;
    std::thread thread_;
    std::uint64_t current_order_ = 0;
    Timestamp current_clock_{};         // run_readers: the newest input time up to that SIP datagram
    Timestamp current_before_{};        // run_readers: and the newest before it
    std::uint64_t horizon_ = 0;         // peers' progress as last read (ordered mode)
    std::uint64_t popped_end_ = 0;      // order after the last datagram taken off the queues
    std::uint64_t published_seen_ = 0;  // the producer's published_ as last read (ordered mode)
    std::deque<HeldBatch> held_;
    // Pipeline::run_readers: the reading position, the newest time read, held media's batches.
    std::uint64_t next_order_ = 0;
    std::uint64_t peer_sip_end_ = 0;
    Timestamp watermark_{};
    ByteSpan stable_;  // Feed::stable_input()
    std::unique_ptr<BatchPool> own_pool_;
    std::vector<std::deque<HeldBinding>> waiting_;  // by sending shard (ordered mode)
    std::size_t waiting_count_ = 0;                 // bindings in waiting_
    std::uint64_t waiting_first_ = UINT64_MAX;      // at most the lowest order waiting there
    std::int64_t waiting_first_time_ = std::numeric_limits<std::int64_t>::max();  // and time of an end waiting
    std::int64_t release_horizon_ = std::numeric_limits<std::int64_t>::min();     // peers' release floor as last read
    Timestamp clock_{};
    // run_readers: each side's own clock (sip_to, media_to), and per held media datagram the
    // newest time in the input before it.
    Timestamp sip_clock_{};
    Timestamp media_clock_{};
    Timestamp expiring_from_{};  // the SIP side's clock before its current step (ends sent in it)
    // run_readers: a lower bound of the worker's next SIP deadline (refreshed after own SIP).
    std::int64_t sip_due_us_ = std::numeric_limits<std::int64_t>::min();
    std::deque<Timestamp> held_before_;
    Timestamp last_tick_{};     // on pipeline_.clock_ (live mode)
    bool saw_traffic_ = false;  // since the last tick
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
    for (auto& t : pipeline.threads_) {
        links_.push_back(t->producer_links[index].get());
        links_.back()->sender = &room_;
    }
}

Pipeline::Producer::~Producer() = default;

// A deadline the datagram's time has reached takes effect before it (the end of an ended call's
// bindings before media that come after it): the SIP side's timers run through its time first,
// for SIP always, for the rest when a dialog's deadline may be due by then (one compare). The
// side not run yet runs after it. Each side steps once per newest time, as in shards reading
// together: a deadline a message sets behind the clock (input times gone back) is due at the
// next step, not at once.
inline void Pipeline::Producer::process_direct(const Datagram& d, const Worker::Lookahead* ahead) {
    Worker& worker = *pipeline_.workers_[0];
    const bool sip = d.kind == PayloadClass::sip;
    const bool newest = d.time > watermark_;
    const bool sip_first = newest && (sip || d.time.us >= sip_due_us_);
    if (sip_first) {
        worker.advance_sip(d.time, *direct_);
        sip_due_us_ = worker.next_sip_deadline_us();
    }
    if (ahead != nullptr) {
        worker.process_ahead(d, *ahead, *direct_);
    } else {
        worker.process(d, *direct_);
    }
    if (sip) sip_due_us_ = worker.next_sip_deadline_us();  // only SIP brings earlier deadlines
    if (!newest) return;
    watermark_ = d.time;
    if (sip_first) {
        worker.advance_media(watermark_, *direct_);
    } else {
        worker.advance(watermark_, *direct_);
    }
}

void Pipeline::Producer::process_held() {
    if (!held_) return;
    process_direct(*held_, &held_ahead_);
    held_.reset();
}

void Pipeline::Producer::end_input() {
    process_held();
    stable_ = {};
}

template <class Ready>
void Pipeline::Producer::wait_for_room(Ready&& ready) {
    // Ordered: a shard that has to make room may be waiting for SIP still batched here. Queued
    // again after announcing the sleep, as room on another link may have come before it.
    room_.sleep_unless([&] {
        if (pipeline_.ordered_) publish(true);
        return ready();
    });
}

void Pipeline::Producer::push(const Datagram& in) {
    if (direct_) {
        // A capture agent's copy meets the duplicate filter, whose buckets the worker fetches
        // while the datagram before it is processed: one whose bytes are the input's (they
        // outlive this call) waits for the next. Raw packets and the rest go straight through.
        if (!in.from_agent || !within(stable_, in.payload) || !within(stable_, as_bytes(in.correlation_id))) {
            process_held();
            process_direct(in, nullptr);
            return;
        }
        const Worker::Lookahead ahead = pipeline_.workers_[0]->look_ahead(in);
        process_held();
        held_ = in;
        held_ahead_ = ahead;
        return;
    }
    Datagram d = in;
    d.order = next_order_;  // counted once queued: publish() must not claim it before
    if (d.time > watermark_) watermark_ = d.time;
    Link& link = *links_[shard_of(d, links_.size())];
    const bool lossless = pipeline_.options_.lossless;
    while (true) {
        if (link.current == nullptr) {
            link.current = link.acquire();
            if (link.current == nullptr) {
                if (!lossless) {
                    dropped_.add();
                    return;
                }
                wait_for_room([&] { return link.empty.size() != 0; });
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
            // publish(true) may have queued it meanwhile.
            wait_for_room([&] { return link.current == nullptr || link.full.size() < link.full.capacity(); });
            continue;
        }
        link.current = nullptr;
        link.first_sip = UINT64_MAX;
        link.receiver->ring();
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
            link->receiver->ring();
            continue;
        }
        queued = std::min(queued, link->first_sip);
    }
    if (queued == published_last_) return;
    published_last_ = queued;
    pipeline_.published_.store(queued, std::memory_order_release);
    // A shard with nothing queued moves its progress up to here, which its peers may wait for.
    for (auto& t : pipeline_.threads_) t->bell.ring();
}

void Pipeline::Producer::flush() {
    process_held();
    const bool lossless = pipeline_.options_.lossless;
    for (Link* link : links_) {
        if (link->current == nullptr || link->current->empty()) continue;
        while (true) {
            if (link->full.try_push(link->current)) {
                link->current = nullptr;
                link->first_sip = UINT64_MAX;
                link->receiver->ring();
                break;
            }
            if (!lossless) {  // keep the (now empty) batch for the next datagrams
                dropped_.add(link->current->size());
                link->current->clear();
                break;
            }
            // Ordered: this shard may be waiting for the SIP in another shard's batch still
            // here (a later link): wait_for_room() queues what can be queued meanwhile.
            wait_for_room([&] { return link->current == nullptr || link->full.size() < link->full.capacity(); });
            if (link->current == nullptr) break;
        }
    }
    if (pipeline_.ordered_) {
        published_last_ = next_order_;
        pipeline_.published_.store(next_order_, std::memory_order_release);
        for (auto& t : pipeline_.threads_) t->bell.ring();
    }
}

// ---- pipeline ----

Pipeline::Pipeline(PipelineOptions options, std::vector<std::unique_ptr<Worker>> workers)
    : options_(options), workers_(std::move(workers)), clock_(options.clock ? options.clock : &kSteadyClock) {
    const std::size_t n = workers_.size();
    ordered_ = options_.lossless && n > 1 && options_.producers <= 1;
    if (n > 1 || options_.threaded) {
        for (std::size_t s = 0; s < n; ++s) threads_.push_back(std::make_unique<ShardThread>(*this, s));
        for (std::size_t s = 0; s < n; ++s) {
            auto& t = *threads_[s];
            for (std::size_t p = 0; p < options_.producers; ++p)
                t.producer_links.push_back(std::make_unique<Link>(options_.queue_batches, options_.batch_datagrams,
                                                                  options_.batch_bytes, 0, t.bell, *clock_));
            t.shard_links.resize(n);
            for (std::size_t from = 0; from < n; ++from)
                if (from != s) t.shard_links[from] = std::make_unique<Link>(256, 0, 16 * 1024, 128, t.bell, *clock_);
        }
        for (std::size_t s = 0; s < n; ++s) {
            threads_[s]->out_links.resize(n, nullptr);
            for (std::size_t to = 0; to < n; ++to) {
                if (to == s) continue;
                threads_[s]->out_links[to] = threads_[to]->shard_links[s].get();
                threads_[s]->out_links[to]->sender = &threads_[s]->bell;
            }
        }
    }
    for (std::size_t p = 0; p < options_.producers; ++p) producers_.push_back(std::make_unique<Producer>(*this, p));
}

Pipeline::~Pipeline() {
    if (!finished_) {
        // As finish() does: a shard holding media for a peer's SIP must not wait for SIP that a
        // producer abandoned (unwinding from an exception) in a partial batch.
        published_.store(UINT64_MAX, std::memory_order_release);
        producers_done_.store(true, std::memory_order_release);
        for (auto& t : threads_) t->bell.ring();
        for (auto& t : threads_) t->join();
    }
}

void Pipeline::seed_clock(Timestamp now) {
    for (auto& t : threads_) t->seed_clock(now);
}

void Pipeline::start() {
    started_ = true;
    for (auto& t : threads_) t->start();
}

void Pipeline::Feed::push(const Datagram& d) { shard_.take(d); }
void Pipeline::Feed::push_own(const Datagram& d) { shard_.take(d, true); }
void Pipeline::Feed::pass(const PassedRun& run) { shard_.pass(run); }
void Pipeline::Feed::wait_until(const std::function<bool()>& ready) { shard_.wait_until(ready); }
void Pipeline::Feed::wake_peers() { shard_.wake_peers(); }
void Pipeline::Feed::stable_input(ByteSpan bytes) noexcept { shard_.stable_input(bytes); }
void Pipeline::Feed::end_input() { shard_.end_input(); }

void Pipeline::run_readers(const std::function<void(std::size_t, Feed&)>& read) {
    if (threads_.size() < 2 || !producers_.empty() || !options_.lossless || started_)
        throw std::logic_error("Pipeline::run_readers needs several shards, no producers and lossless mode");
    started_ = true;
    for (auto& t : threads_) {
        t->read = &read;
        t->start();
    }
    for (auto& t : threads_) t->join();
    finished_ = true;
}

void Pipeline::run_on_shards(const std::function<void(std::size_t, Worker&)>& task) {
    if (threads_.empty() || !started_ || finished_) {
        for (std::size_t i = 0; i < workers_.size(); ++i) task(i, *workers_[i]);
        return;
    }
    for (auto& t : threads_) {
        t->task = &task;
        t->task_posted.fetch_add(1, std::memory_order_acq_rel);
        t->bell.ring();
    }
    const auto all_done = [this] {
        for (auto& t : threads_)
            if (t->task_done.load(std::memory_order_acquire) != t->task_posted.load(std::memory_order_relaxed))
                return false;
        return true;
    };
    while (!all_done()) tasks_done_.sleep_unless(all_done);
}

void Pipeline::tick() {
    if (!options_.threaded || options_.idle_tick_us <= 0) return;
    for (auto& t : threads_) {
        t->tick_requested.store(true, std::memory_order_release);
        t->bell.ring();
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
    for (auto& t : threads_) t->bell.ring();
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

std::uint64_t Pipeline::wakeups(std::size_t shard) const noexcept {
    return threads_.empty() ? 0 : threads_[shard]->wakeups.value();
}

std::size_t Pipeline::bindings_waiting_peak() const noexcept {
    std::size_t n = 0;
    for (const auto& t : threads_) n = std::max(n, t->waiting_peak);
    return n;
}

std::vector<double> Pipeline::shard_cpu_seconds() const {
    std::vector<double> out;
    for (const auto& t : threads_) out.push_back(t->cpu_seconds);
    return out;
}

std::uint64_t Pipeline::queue_full_drops() const noexcept {
    std::uint64_t n = 0;
    for (const auto& p : producers_) n += p->dropped();
    return n;
}

}  // namespace hepd::shard
