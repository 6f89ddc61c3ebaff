#include "shard/pipeline.hpp"

#include "shard/dispatch.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

using namespace hepd;
using namespace hepd::shard;

namespace {

// Records what reached it; on a SIP datagram "bind:<port>" it announces media to that port.
class RecordingWorker final : public Worker {
public:
    void process(const Datagram& d, BindingSink& out) override {
        const std::string text(as_text(d.payload));
        seen.push_back(text);
        processed.fetch_add(1, std::memory_order_release);
        if (slow) std::this_thread::sleep_for(std::chrono::microseconds(200));
        while (held.load(std::memory_order_acquire)) std::this_thread::sleep_for(std::chrono::microseconds(100));
        if (text.rfind("bind:", 0) == 0) {
            // The port text doubles as the Call-ID, in a block like a dialog key's.
            keys.push_back(CompactText::with_tail(std::string_view(text).substr(5), "from-tag"));
            MediaBinding b;
            b.media = Endpoint{IpAddress::v4(0x0a000063U), static_cast<std::uint16_t>(std::stoi(text.substr(5)))};
            b.call_id = keys.back().view();
            b.call_id_text = &keys.back();
            out.send(b);
        }
    }
    void bind(const MediaBinding& b) override {
        bound.push_back({b.media.port, std::string(b.call_id)});
        if (b.call_id_text != nullptr) blocks.push_back(*b.call_id_text);  // kept alive to compare after the run
    }
    // Bindings applied here that carried a block made by `maker`.
    std::size_t blocks_of(const RecordingWorker& maker) const {
        return static_cast<std::size_t>(std::count_if(blocks.begin(), blocks.end(), [&](const CompactText& b) {
            return std::any_of(maker.keys.begin(), maker.keys.end(), [&](const CompactText& k) { return k.shares(b); });
        }));
    }
    void advance(Timestamp now, shard::BindingSink&) override {
        if (now < clock) backwards = true;
        clock = now;
    }
    void finish(Timestamp end) override {
        finished_at = end;
        ++finish_calls;
    }

    std::vector<std::string> seen;
    std::atomic<std::size_t> processed{0};  // seen.size(), readable from the test's thread
    std::vector<std::pair<std::uint16_t, std::string>> bound;
    std::deque<CompactText> keys;     // the blocks of the bindings it made
    std::vector<CompactText> blocks;  // the blocks the bindings applied here carried
    Timestamp clock{};
    Timestamp finished_at{};
    int finish_calls = 0;
    bool backwards = false;
    bool slow = false;
    std::atomic<bool> held{false};  // process() does not return while set: a stalled shard
};

struct Run {
    std::vector<RecordingWorker*> workers;
    std::unique_ptr<Pipeline> pipeline;
};

// One lossless shard whose worker is a W, started: the single-shard mode, which delivers in place.
template <class W>
struct OneShard {
    W* worker = nullptr;
    std::unique_ptr<Pipeline> pipeline;

    OneShard() {
        PipelineOptions o;
        o.lossless = true;
        auto owned = std::make_unique<W>();
        worker = owned.get();
        std::vector<std::unique_ptr<Worker>> ws;
        ws.push_back(std::move(owned));
        pipeline = std::make_unique<Pipeline>(o, std::move(ws));
        pipeline->start();
    }
};

Run make(std::size_t shards, PipelineOptions options) {
    options.shards = shards;
    std::vector<std::unique_ptr<Worker>> ws;
    Run r;
    for (std::size_t i = 0; i < shards; ++i) {
        auto w = std::make_unique<RecordingWorker>();
        r.workers.push_back(w.get());
        ws.push_back(std::move(w));
    }
    r.pipeline = std::make_unique<Pipeline>(options, std::move(ws));
    return r;
}

Datagram rtp_to(std::uint16_t port, const std::string& text, std::int64_t t) {
    Datagram d;
    d.kind = PayloadClass::rtp;
    d.time = Timestamp{t};
    d.src = Endpoint{IpAddress::v4(0x0a000001U), 4000};
    d.dst = Endpoint{IpAddress::v4(0x0a000063U), port};
    d.payload = as_bytes(text);
    return d;
}

// Waits (with a generous deadline) until `done()` holds.
template <class Done>
bool eventually(Done done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!done()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
}

// Aborts the test run when the scope is not left in time: a lost wake-up hangs, it does not fail.
class Watchdog {
public:
    explicit Watchdog(const char* what)
        : thread_([this, what] {
              std::unique_lock lock(mutex_);
              if (!cv_.wait_for(lock, std::chrono::seconds(60), [this] { return done_; })) {
                  std::fprintf(stderr, "pipeline hangs: %s\n", what);
                  std::abort();
              }
          }) {}
    ~Watchdog() {
        {
            std::lock_guard lock(mutex_);
            done_ = true;
        }
        cv_.notify_one();
        thread_.join();
    }

private:
    std::mutex mutex_;
    std::condition_variable cv_;
    bool done_ = false;
    std::thread thread_;
};

std::uint16_t port_of_shard(std::size_t shard, std::size_t shards) {
    for (std::uint16_t port = 2;; port += 2)
        if (shard_of(rtp_to(port, "", 0), shards) == shard) return port;
}

}  // namespace

TEST_CASE("every datagram reaches exactly its shard, in order, with 1..4 shards", "[shard][pipeline]") {
    for (std::size_t shards : {1, 2, 3, 4}) {
        PipelineOptions o;
        o.lossless = true;
        o.queue_batches = 2;  // tiny queues: the producer must wait, never drop
        o.batch_datagrams = 7;
        auto run = make(shards, o);
        run.pipeline->start();
        std::vector<std::string> texts;
        for (int i = 0; i < 20'000; ++i) texts.push_back("p" + std::to_string(i));
        for (int i = 0; i < 20'000; ++i)
            run.pipeline->producer(0).push(rtp_to(static_cast<std::uint16_t>(1000 + 2 * (i % 50)), texts[i], i));
        run.pipeline->producer(0).flush();
        run.pipeline->finish(Timestamp{123});

        INFO("shards " << shards);
        std::size_t total = 0;
        for (std::size_t s = 0; s < shards; ++s) {
            const auto& seen = run.workers[s]->seen;
            total += seen.size();
            int last = -1;
            for (const auto& t : seen) {
                const int i = std::stoi(t.substr(1));
                REQUIRE(i > last);  // per-shard order is the producer's order
                last = i;
                REQUIRE(shard_of_media(
                            Endpoint{IpAddress::v4(0x0a000063U), static_cast<std::uint16_t>(1000 + 2 * (i % 50))},
                            shards) == s);
            }
            CHECK(run.workers[s]->finish_calls == 1);
            CHECK(run.workers[s]->finished_at == Timestamp{123});
            CHECK_FALSE(run.workers[s]->backwards);
        }
        CHECK(total == 20'000);
        CHECK(run.pipeline->queue_full_drops() == 0);
    }
}

TEST_CASE("bindings cross to the shard that owns the media address", "[shard][pipeline]") {
    for (std::size_t shards : {1, 2, 4}) {
        PipelineOptions o;
        o.lossless = true;
        auto run = make(shards, o);
        run.pipeline->start();
        std::vector<std::string> texts;
        for (int port = 2000; port < 2400; port += 2) texts.push_back("bind:" + std::to_string(port));
        for (const auto& t : texts) {
            Datagram d;
            d.kind = PayloadClass::sip;
            d.payload = as_bytes(t);
            run.pipeline->producer(0).push(d);
        }
        run.pipeline->producer(0).flush();
        run.pipeline->finish(Timestamp{1});

        std::size_t total = 0;
        for (std::size_t s = 0; s < shards; ++s) {
            for (const auto& [port, call] : run.workers[s]->bound) {
                CHECK(shard_of_media(Endpoint{IpAddress::v4(0x0a000063U), port}, shards) == s);
                CHECK(call == std::to_string(port));
                ++total;
            }
        }
        INFO("shards " << shards);
        CHECK(total == texts.size());
        CHECK(run.pipeline->binding_drops() == 0);
        // A binding that stays on its shard keeps its dialog's block; one that crosses is copied
        // (another thread's block never arrives).
        std::size_t own = 0;
        for (std::size_t s = 0; s < shards; ++s) {
            own += run.workers[s]->blocks_of(*run.workers[s]);
            for (std::size_t maker = 0; maker < shards; ++maker)
                if (maker != s) CHECK(run.workers[s]->blocks_of(*run.workers[maker]) == 0);
        }
        if (shards == 1) CHECK(own == texts.size());
        CHECK(own > 0);
    }
}

TEST_CASE("live mode drops and counts when a shard falls behind", "[shard][pipeline]") {
    PipelineOptions o;
    o.lossless = false;
    o.queue_batches = 2;
    o.batch_datagrams = 4;
    auto run = make(2, o);
    // Both shards stall on their first datagram until everything is pushed: their queues (2
    // batches of 4) fill whatever the machine's speed, and the rest must be dropped.
    for (auto* w : run.workers) w->held = true;
    run.pipeline->start();
    const std::string text = "x";
    constexpr int kSent = 5000;
    for (int i = 0; i < kSent; ++i)
        run.pipeline->producer(0).push(rtp_to(static_cast<std::uint16_t>(2 * (i % 8)), text, i));
    for (auto* w : run.workers) w->held = false;
    run.pipeline->producer(0).flush();
    run.pipeline->finish(Timestamp{kSent});
    const std::size_t processed = run.workers[0]->seen.size() + run.workers[1]->seen.size();
    const auto dropped = run.pipeline->queue_full_drops();
    CHECK(dropped > 0);
    CHECK(processed + dropped == kSent);  // nothing lost silently
}

TEST_CASE("a datagram larger than a whole batch is dropped and counted", "[shard][pipeline]") {
    PipelineOptions o;
    o.batch_bytes = 64;
    auto run = make(2, o);
    run.pipeline->start();
    const std::string big(100, 'x');
    const std::string small = "ok";
    run.pipeline->producer(0).push(rtp_to(2, big, 1));
    run.pipeline->producer(0).push(rtp_to(2, small, 2));
    run.pipeline->producer(0).flush();
    run.pipeline->finish(Timestamp{2});
    CHECK(run.pipeline->queue_full_drops() == 1);
    CHECK(run.workers[0]->seen.size() + run.workers[1]->seen.size() == 1);
}

TEST_CASE("tasks run on each shard's own thread, between batches", "[shard][pipeline]") {
    PipelineOptions o;
    o.threaded = true;  // live mode: threads even for one shard
    for (std::size_t shards : {1, 3}) {
        auto run = make(shards, o);
        run.pipeline->start();
        const std::string text = "x";
        for (int i = 0; i < 1000; ++i)
            run.pipeline->producer(0).push(rtp_to(static_cast<std::uint16_t>(2 * (i % 9)), text, i));
        run.pipeline->producer(0).flush();
        std::vector<std::thread::id> ids(shards);
        std::vector<std::size_t> seen(shards);
        run.pipeline->run_on_shards([&](std::size_t s, Worker& w) {
            ids[s] = std::this_thread::get_id();
            seen[s] = static_cast<RecordingWorker&>(w).seen.size();
        });
        for (std::size_t s = 0; s < shards; ++s) CHECK(ids[s] != std::this_thread::get_id());
        run.pipeline->finish(Timestamp{1000});
        std::size_t total = 0;
        for (auto* w : run.workers) total += w->seen.size();
        CHECK(total == 1000);
    }
}

TEST_CASE("an idle live shard advances its clock by wall time, on its own tick", "[shard][pipeline]") {
    // No tick(): the shard's own timer ticks. The wall clock is a ManualClock that moves only in
    // whole periods, so every advance the shard makes is a whole number of periods of it (a
    // shard timing its ticks on the steady clock instead would show some other amount).
    constexpr std::int64_t kPeriod = 20'000;
    ManualClock wall(Timestamp{1'700'000'000'000'000});
    PipelineOptions o;
    o.threaded = true;
    o.idle_tick_us = kPeriod;
    o.clock = &wall;
    auto run = make(1, o);
    run.pipeline->start();
    run.pipeline->producer(0).push(rtp_to(2, "x", 1'000'000));
    run.pipeline->producer(0).flush();
    REQUIRE(eventually([&] { return run.workers[0]->processed.load(std::memory_order_acquire) == 1; }));
    auto clock = [&] {
        Timestamp t{};
        run.pipeline->run_on_shards([&](std::size_t, Worker& w) { t = static_cast<RecordingWorker&>(w).clock; });
        return t;
    };
    // The first tick after the datagram does not advance (traffic came), a later idle one does.
    std::int64_t advanced = 0;
    CHECK(eventually([&] {
        wall.advance_us(kPeriod);
        advanced += kPeriod;
        return clock().us != 1'000'000;
    }));
    const std::int64_t moved = clock().us - 1'000'000;
    run.pipeline->finish(Timestamp{});
    CHECK(moved > 0);
    CHECK(moved % kPeriod == 0);
    CHECK(moved <= advanced - kPeriod);  // the first period went to the tick that saw the datagram
    CHECK_FALSE(run.workers[0]->backwards);
}

TEST_CASE("an idle live pipeline sleeps, and a datagram wakes its shard", "[shard][pipeline]") {
    SECTION("idle: no wake-up before its next tick") {
        // The wall clock stands still, so the next tick is an hour away: an idle shard has no
        // reason to wake. The pause gives a sleep-poller time to show itself (it woke thousands
        // of times); it is no bound on anything, and a slow machine cannot make the test fail.
        ManualClock wall(Timestamp{1'700'000'000'000'000});
        PipelineOptions o;
        o.threaded = true;
        o.idle_tick_us = 3'600'000'000;
        o.clock = &wall;
        auto run = make(2, o);
        run.pipeline->start();
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        for (std::size_t s = 0; s < 2; ++s) {
            INFO("shard " << s);
            CHECK(run.pipeline->wakeups(s) <= 1);
        }
        run.pipeline->finish(Timestamp{});
    }
    SECTION("a datagram wakes its shard") {
        PipelineOptions o;
        o.threaded = true;  // no tick: nothing but the producer's ring can wake the shard
        auto run = make(2, o);
        run.pipeline->start();
        // The shard may still be awake when a datagram comes (then it finds it without a ring);
        // its wake-up count tells. Send until one found it asleep: that one must be processed,
        // and only a ring can have woken it.
        std::size_t sent = 0;
        bool woken = false;
        while (!woken && sent < 1000) {
            const auto before = run.pipeline->wakeups(1);
            run.pipeline->producer(0).push(rtp_to(port_of_shard(1, 2), "x", 1'000'000));
            run.pipeline->producer(0).flush();
            ++sent;
            REQUIRE(eventually([&] { return run.workers[1]->processed.load(std::memory_order_acquire) == sent; }));
            woken = run.pipeline->wakeups(1) > before;
        }
        CHECK(woken);
        run.pipeline->finish(Timestamp{});
        CHECK(run.workers[1]->seen == std::vector<std::string>(sent, "x"));
        CHECK(run.workers[0]->seen.empty());
    }
}

TEST_CASE("tick() advances an idle shard's clock by the time elapsed on the injected clock, not after traffic",
          "[shard][pipeline]") {
    ManualClock wall(Timestamp{1'700'000'000'000'000});
    PipelineOptions o;
    o.threaded = true;
    o.idle_tick_us = 3'600'000'000;  // never due by itself here: only tick() ticks
    o.clock = &wall;
    auto run = make(2, o);
    run.pipeline->start();
    auto clocks = [&] {
        std::vector<Timestamp> out(2);
        run.pipeline->run_on_shards([&](std::size_t s, Worker& w) { out[s] = static_cast<RecordingWorker&>(w).clock; });
        return out;
    };
    // Shard 0 gets traffic, shard 1 none (its clock stands at 0: nothing can expire).
    run.pipeline->producer(0).push(rtp_to(port_of_shard(0, 2), "x", 1'000'000));
    run.pipeline->producer(0).flush();
    REQUIRE(eventually([&] { return run.workers[0]->processed.load(std::memory_order_acquire) == 1; }));

    wall.advance_us(2'000'000);
    run.pipeline->tick();
    CHECK(clocks() == std::vector<Timestamp>{Timestamp{1'000'000}, Timestamp{}});  // traffic came: no advance

    wall.advance_us(5'000'000);
    run.pipeline->tick();
    CHECK(clocks() == std::vector<Timestamp>{Timestamp{6'000'000}, Timestamp{}});  // idle: 5 s on the clock

    run.pipeline->tick();  // no time elapsed
    CHECK(clocks() == std::vector<Timestamp>{Timestamp{6'000'000}, Timestamp{}});

    // Traffic again: the next tick does not advance, the one after does.
    run.pipeline->producer(0).push(rtp_to(port_of_shard(0, 2), "y", 6'500'000));
    run.pipeline->producer(0).flush();
    REQUIRE(eventually([&] { return run.workers[0]->processed.load(std::memory_order_acquire) == 2; }));
    wall.advance_us(1'000'000);
    run.pipeline->tick();
    CHECK(clocks()[0] == Timestamp{6'500'000});
    wall.advance_us(3'000'000);
    run.pipeline->tick();
    CHECK(clocks()[0] == Timestamp{9'500'000});
    run.pipeline->finish(Timestamp{});
    CHECK_FALSE(run.workers[0]->backwards);
}

TEST_CASE("a shard restored from a snapshot ticks from the seeded time before any packet", "[shard][pipeline]") {
    // Restored calls and streams must expire on a shard no packet reaches after the restart.
    ManualClock wall(Timestamp{1'700'000'000'000'000});
    PipelineOptions o;
    o.threaded = true;
    o.idle_tick_us = 3'600'000'000;  // only tick() ticks
    o.clock = &wall;
    auto run = make(2, o);
    run.pipeline->seed_clock(Timestamp{1'700'000'000'000'000});
    run.pipeline->start();
    run.pipeline->run_on_shards([](std::size_t, Worker&) {});  // both threads run: their ticks count from here
    wall.advance_us(4'000'000);
    run.pipeline->tick();
    std::vector<Timestamp> clocks(2);
    run.pipeline->run_on_shards([&](std::size_t s, Worker& w) { clocks[s] = static_cast<RecordingWorker&>(w).clock; });
    CHECK(clocks == std::vector<Timestamp>(2, Timestamp{1'700'000'004'000'000}));
    run.pipeline->finish(Timestamp{});
}

TEST_CASE("run_on_shards wakes sleeping shards and runs on each one's own thread", "[shard][pipeline]") {
    PipelineOptions o;
    o.threaded = true;  // no idle tick: a lost wake-up would hang, not be rescued by a timeout
    auto run = make(3, o);
    run.pipeline->start();
    Watchdog watchdog("run_on_shards");
    for (int round = 0; round < 50; ++round) {
        if (round % 10 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));  // all asleep
        std::vector<std::thread::id> ids(3);
        run.pipeline->run_on_shards([&](std::size_t s, Worker&) { ids[s] = std::this_thread::get_id(); });
        INFO("round " << round);
        REQUIRE(std::set<std::thread::id>(ids.begin(), ids.end()).size() == 3);
        REQUIRE(std::find(ids.begin(), ids.end(), std::this_thread::get_id()) == ids.end());
    }
    run.pipeline->finish(Timestamp{});
}

TEST_CASE("a lossless producer waits for room on tiny queues of slow shards and loses nothing", "[shard][pipeline]") {
    for (std::size_t shards : {1, 2}) {
        for (std::size_t queue : {1, 2}) {
            PipelineOptions o;
            o.lossless = true;
            o.threaded = true;  // a shard thread even for one shard
            o.queue_batches = queue;
            o.batch_datagrams = 2;
            auto run = make(shards, o);
            for (auto* w : run.workers) w->slow = true;
            run.pipeline->start();
            Watchdog watchdog("lossless producer");
            constexpr int kSent = 1000;
            std::vector<std::string> texts;
            for (int i = 0; i < kSent; ++i) texts.push_back("p" + std::to_string(i));
            for (int i = 0; i < kSent; ++i)
                run.pipeline->producer(0).push(rtp_to(static_cast<std::uint16_t>(2 * (i % 7)), texts[i], i));
            run.pipeline->producer(0).flush();
            run.pipeline->finish(Timestamp{kSent});

            INFO("shards " << shards << ", queue " << queue);
            std::size_t total = 0;
            for (auto* w : run.workers) {
                int last = -1;
                for (const auto& t : w->seen) {
                    const int i = std::stoi(t.substr(1));
                    REQUIRE(i > last);
                    last = i;
                }
                total += w->seen.size();
            }
            CHECK(total == kSent);
            CHECK(run.pipeline->queue_full_drops() == 0);
        }
    }
}

namespace {

// Logs the input position of every media datagram it processes and of every binding applied to
// it (SIP may run ahead of the media: it depends on no binding).
class OrderWorker final : public Worker {
public:
    void process(const Datagram& d, BindingSink& out) override {
        if (d.kind == PayloadClass::sip) {
            ++sip;
        } else {
            log.push_back({d.order, false});
        }
        const std::string_view text = as_text(d.payload);
        if (text.find('#') != std::string_view::npos) ++scribbled;
        if (text.rfind("bind:", 0) == 0) {
            MediaBinding b;
            b.media = Endpoint{IpAddress::v4(0x0a000063U),
                               static_cast<std::uint16_t>(std::stoi(std::string(text.substr(5))))};
            b.call_id = text;
            b.order = d.order;  // the pipeline sets it on bindings to other shards, not on those it keeps
            out.send(b);
        }
        for (int i = 0; i < spin; ++i) sink = sink + static_cast<std::uint64_t>(i);
    }
    void bind(const MediaBinding& b) override { log.push_back({b.order, true}); }
    void advance(Timestamp, shard::BindingSink&) override {}
    void finish(Timestamp) override {}

    std::vector<std::pair<std::uint64_t, bool>> log;  // (order, is a binding)
    std::size_t sip = 0;
    std::size_t scribbled = 0;  // payloads read after their bytes were overwritten
    int spin = 0;
    volatile std::uint64_t sink = 0;  // keeps the spin loop
};

// Every shard saw its media and bindings in input order (a binding between the media before
// and after it), every datagram once and every binding applied.
void check_in_input_order(const std::vector<OrderWorker*>& workers, std::size_t datagrams_sent,
                          std::size_t bindings_sent) {
    std::size_t datagrams = 0, applied = 0;
    for (std::size_t s = 0; s < workers.size(); ++s) {
        const auto& log = workers[s]->log;
        for (std::size_t k = 1; k < log.size(); ++k) {
            INFO("shard " << s << ": " << (log[k - 1].second ? "binding " : "datagram ") << log[k - 1].first << " then "
                          << (log[k].second ? "binding " : "datagram ") << log[k].first);
            REQUIRE(log[k - 1].first <= log[k].first);
        }
        for (const auto& [order, binding] : log) (binding ? applied : datagrams)++;
        datagrams += workers[s]->sip;
        CHECK(workers[s]->scribbled == 0);
    }
    CHECK(datagrams == datagrams_sent);
    CHECK(applied == bindings_sent);
}

}  // namespace

TEST_CASE("ordered mode applies every binding where one shard would: between the media before and after it",
          "[shard][pipeline]") {
    // Tiny queues and uneven shards: the producer waits on a full queue while other shards go
    // idle, and shards finish their own datagrams while peers still send them bindings.
    for (int round = 0; round < 5; ++round) {
        for (std::size_t shards : {2, 3, 4}) {
            PipelineOptions o;
            o.shards = shards;
            o.lossless = true;
            o.queue_batches = 2;
            o.batch_datagrams = 3;
            std::vector<OrderWorker*> workers;
            std::vector<std::unique_ptr<Worker>> owned;
            for (std::size_t s = 0; s < shards; ++s) {
                auto w = std::make_unique<OrderWorker>();
                w->spin = s == 0 ? 20'000 : 0;
                workers.push_back(w.get());
                owned.push_back(std::move(w));
            }
            Pipeline pipeline(o, std::move(owned));
            pipeline.start();
            std::vector<std::string> texts;
            constexpr int kDatagrams = 2000;
            for (int i = 0; i < kDatagrams; ++i)
                texts.push_back(i % 3 == 0 ? "bind:" + std::to_string(2 * (i % 61)) : "rtp");
            std::size_t bindings = 0;
            for (int i = 0; i < kDatagrams; ++i) {
                Datagram d = rtp_to(static_cast<std::uint16_t>(2 * (i % 61)), texts[i], i);
                if (i % 3 == 0) {
                    d.kind = PayloadClass::sip;
                    d.src = Endpoint{IpAddress::v4(0x0a000001U), static_cast<std::uint16_t>(5000 + (i * 7919) % 1000)};
                    ++bindings;
                }
                pipeline.producer(0).push(d);
            }
            pipeline.producer(0).flush();
            pipeline.finish(Timestamp{kDatagrams});

            INFO("round " << round << ", shards " << shards);
            check_in_input_order(workers, kDatagrams, bindings);
        }
    }
}

TEST_CASE("shards that each read the whole input apply every binding where one shard would", "[shard][pipeline]") {
    // Pipeline::run_readers: every shard reads the same input and keeps its own. One shard is
    // slow, so the others run ahead and hold their media on a tiny pool of batches; some media
    // fit no batch at all and must still come in order. In odd rounds each reader names its input
    // as stable (Feed::stable_input), so held media stay in it, and overwrites it once
    // end_input() returns: every one of them must have been processed by then. Every 7th
    // datagram has bytes of its own, overwritten as soon as it is pushed: those are copied.
    for (int round = 0; round < 6; ++round) {
        const bool in_place = round % 2 == 1;
        for (std::size_t shards : {2, 3, 4}) {
            PipelineOptions o;
            o.shards = shards;
            o.producers = 0;
            o.lossless = true;
            o.queue_batches = 2;
            o.batch_datagrams = 3;
            o.batch_bytes = 256;
            std::vector<OrderWorker*> workers;
            std::vector<std::unique_ptr<Worker>> owned;
            for (std::size_t s = 0; s < shards; ++s) {
                auto w = std::make_unique<OrderWorker>();
                w->spin = s == 0 ? 20'000 : 0;
                workers.push_back(w.get());
                owned.push_back(std::move(w));
            }
            Pipeline pipeline(o, std::move(owned));
            constexpr int kDatagrams = 2000;
            std::vector<std::string> texts;
            std::size_t bindings = 0;
            for (int i = 0; i < kDatagrams; ++i) {
                texts.push_back(i % 3 == 0 ? "bind:" + std::to_string(2 * (i % 61))
                                           : (i % 50 == 1 ? std::string(400, 'x') : "rtp"));
                if (i % 3 == 0) ++bindings;
            }
            pipeline.run_readers([&](std::size_t, Pipeline::Feed& feed) {
                std::string input;  // this reader's own copy of the input
                std::vector<std::size_t> offsets;
                for (const std::string& t : texts) {
                    offsets.push_back(input.size());
                    input += t;
                }
                if (in_place) feed.stable_input(as_bytes(input));
                std::string own;
                for (int i = 0; i < kDatagrams; ++i) {
                    Datagram d = rtp_to(static_cast<std::uint16_t>(2 * (i % 61)), texts[i], i);
                    if (i % 7 == 0) {
                        own = texts[i];
                        d.payload = as_bytes(own);
                    } else {
                        d.payload = as_bytes(input).subspan(offsets[i], texts[i].size());
                    }
                    if (i % 3 == 0) {
                        d.kind = PayloadClass::sip;
                        d.src =
                            Endpoint{IpAddress::v4(0x0a000001U), static_cast<std::uint16_t>(5000 + (i * 7919) % 1000)};
                    }
                    feed.push(d);
                    own.assign(own.size(), '#');
                }
                if (in_place) {
                    feed.end_input();
                    input.assign(input.size(), '#');
                }
            });

            INFO("round " << round << ", shards " << shards << (in_place ? ", held in place" : ""));
            check_in_input_order(workers, kDatagrams, bindings);
        }
    }
}

TEST_CASE("ordered mode: the final flush does not wait on a shard that waits for a batch still unsent",
          "[shard][pipeline]") {
    // Datagram 0 goes to shard 1 (its batch stays unsent: not full, not yet stale), 1..10 to
    // shard 0. Shard 0 takes its first batch and waits for shard 1 to pass order 1; the next two
    // batches fill shard 0's queue, so the flush cannot queue the last one and must queue shard
    // 1's meanwhile, or nobody moves again.
    PipelineOptions o;
    o.shards = 4;
    o.lossless = true;
    o.queue_batches = 2;
    o.batch_datagrams = 3;
    auto run = make(4, o);
    const std::uint16_t to0 = port_of_shard(0, 4), to1 = port_of_shard(1, 4);
    const std::string text = "x";
    run.pipeline->start();
    auto& producer = run.pipeline->producer(0);
    producer.push(rtp_to(to1, text, 0));
    for (int i = 1; i <= 4; ++i) producer.push(rtp_to(to0, text, i));        // the 4th sends [1, 2, 3]
    REQUIRE(eventually([&] { return run.pipeline->queue_depth(0) == 0; }));  // shard 0 took it (and waits)
    for (int i = 5; i <= 10; ++i) producer.push(rtp_to(to0, text, i));
    {
        Watchdog watchdog("ordered pipeline: flush()");
        producer.flush();
        run.pipeline->finish(Timestamp{10});
    }
    CHECK(run.workers[0]->seen.size() == 10);
    CHECK(run.workers[1]->seen.size() == 1);
}

namespace {

// Logs, in order, what a single shard fed directly is asked: "process:<text>", and
// "advance:<time>" (both sides' timers), or "sip:<time>" and "media:<time>" (one side's).
class LoggingWorker : public Worker {
public:
    void process(const Datagram& d, BindingSink& /*out*/) override {
        log.push_back("process:" + std::string(as_text(d.payload)));
    }
    void bind(const MediaBinding& /*binding*/) override {}
    void advance(Timestamp now, BindingSink& /*out*/) override { log.push_back("advance:" + std::to_string(now.us)); }
    void advance_sip(Timestamp now, BindingSink& /*out*/) override { log.push_back("sip:" + std::to_string(now.us)); }
    void advance_media(Timestamp now, BindingSink& /*out*/) override {
        log.push_back("media:" + std::to_string(now.us));
    }
    void finish(Timestamp /*end*/) override {}

    mutable std::vector<std::string> log;
};

// Also logs "look:<text>", and the key each datagram processed with lookahead was looked up with
// ("+key <hash>").
class LookaheadWorker final : public LoggingWorker {
public:
    Lookahead look_ahead(const Datagram& d) const noexcept override {
        log.push_back("look:" + std::string(as_text(d.payload)));
        return DuplicateKey{d.payload.size(), 0, d.kind};
    }
    void process_ahead(const Datagram& d, const Lookahead& ahead, BindingSink& /*out*/) override {
        log.push_back("process:" + std::string(as_text(d.payload)) + " +key " +
                      (ahead ? std::to_string(ahead->hash) : std::string("none")));
    }
};

}  // namespace

TEST_CASE("a single shard looks one agent datagram ahead in the stable input, and holds nothing past it",
          "[shard][pipeline]") {
    OneShard<LookaheadWorker> one;
    LookaheadWorker& w = *one.worker;
    Pipeline& pipeline = *one.pipeline;
    auto& producer = pipeline.producer(0);

    const std::string input = "aabbbcccc";  // the "capture": three payloads of 2, 3 and 4 bytes
    const auto agent = [&](std::size_t at, std::size_t n, std::int64_t t) {
        Datagram d;
        d.kind = PayloadClass::sip;
        d.from_agent = true;
        d.time = Timestamp{t};
        d.payload = as_bytes(std::string_view(input).substr(at, n));
        return d;
    };
    producer.stable_input(as_bytes(input));
    producer.push(agent(0, 2, 10));
    CHECK(w.log == std::vector<std::string>{"look:aa"});  // held until the next one is looked at
    producer.push(agent(2, 3, 20));
    // A raw packet (no agent's copy) is not held; what is held goes first.
    const std::string raw_text = "raw";
    producer.push(rtp_to(4000, raw_text, 30));
    // Nor is an agent's datagram whose bytes are not the input's (a decompressed payload).
    const std::string elsewhere = "zz";
    Datagram copy = agent(0, 2, 40);
    copy.payload = as_bytes(elsewhere);
    producer.push(copy);
    producer.push(agent(5, 4, 35));
    producer.end_input();  // processes the held one before the bytes go
    // A SIP datagram's SIP-side timers run through its time before it, the media side's after it.
    const std::vector<std::string> expected{
        "look:aa", "look:bbb",           "sip:10",   "process:aa +key 2", "media:10",
        "sip:20",  "process:bbb +key 3", "media:20", "process:raw",       "advance:30",
        "sip:40",  "process:zz",         "media:40", "look:cccc",         "process:cccc +key 4",
    };
    CHECK(w.log == expected);  // 35 < 40: the clock does not go back

    // After end_input() nothing is held: the bytes may be gone.
    w.log.clear();
    producer.push(agent(0, 2, 50));
    CHECK(w.log == std::vector<std::string>{"sip:50", "process:aa", "media:50"});
    producer.flush();
    pipeline.finish(Timestamp{50});
}

namespace {

// A single shard's SIP deadline: "end" processed sets it to the time in `end_at`, a SIP-side step
// that reaches it clears it. Logs what LoggingWorker logs.
class DeadlineWorker final : public LoggingWorker {
public:
    void process(const Datagram& d, BindingSink& out) override {
        LoggingWorker::process(d, out);
        if (as_text(d.payload) == "end") deadline_us = end_at;
    }
    void advance(Timestamp now, BindingSink& out) override {
        LoggingWorker::advance(now, out);
        expire(now);
    }
    void advance_sip(Timestamp now, BindingSink& out) override {
        LoggingWorker::advance_sip(now, out);
        expire(now);
    }
    std::int64_t next_sip_deadline_us() const noexcept override { return deadline_us; }

    std::int64_t deadline_us = std::numeric_limits<std::int64_t>::max();
    std::int64_t end_at = 0;

private:
    void expire(Timestamp now) {
        if (now.us >= deadline_us) deadline_us = std::numeric_limits<std::int64_t>::max();
    }
};

}  // namespace

// A call's end at its deadline must come before a datagram at or past it, not after it: the
// media that reach its addresses then are no longer its own (hepd pcap, one shard).
TEST_CASE("a single shard runs the SIP side's timers before a datagram whose time reached a deadline",
          "[shard][pipeline]") {
    OneShard<DeadlineWorker> one;
    DeadlineWorker& w = *one.worker;
    Pipeline& pipeline = *one.pipeline;
    auto& producer = pipeline.producer(0);
    const std::string media = "rtp";
    const std::string end = "end";
    const auto sip = [&](std::int64_t t) {
        Datagram d = rtp_to(5060, end, t);
        d.kind = PayloadClass::sip;
        return d;
    };

    w.end_at = 100;
    producer.push(sip(10));  // sets the deadline at 100
    producer.push(rtp_to(4000, media, 50));
    producer.push(rtp_to(4000, media, 100));  // at the deadline: the SIP side first
    producer.push(rtp_to(4000, media, 200));  // nothing due: one step, after it
    CHECK(w.log == std::vector<std::string>{"sip:10", "process:end", "media:10", "process:rtp", "advance:50", "sip:100",
                                            "process:rtp", "media:100", "process:rtp", "advance:200"});

    // A deadline set behind the clock (input times gone back) is due at the clock's next step,
    // before the datagram that brings it, and not before one that does not move the clock.
    w.log.clear();
    w.end_at = 150;
    producer.push(sip(120));
    producer.push(rtp_to(4000, media, 180));
    producer.push(rtp_to(4000, media, 201));
    CHECK(w.log == std::vector<std::string>{"process:end", "process:rtp", "sip:201", "process:rtp", "media:201"});
    CHECK(w.deadline_us == std::numeric_limits<std::int64_t>::max());
    producer.flush();
    pipeline.finish(Timestamp{201});
}
