#include "shard/dispatch.hpp"
#include "shard/pipeline.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <thread>

using namespace hepd;
using namespace hepd::shard;

namespace {

// Records what reached it; on a SIP datagram "bind:<port>" it announces media to that port.
class RecordingWorker final : public Worker {
public:
    void process(const Datagram& d, BindingSink& out) override {
        const std::string text(as_text(d.payload));
        seen.push_back(text);
        if (slow) std::this_thread::sleep_for(std::chrono::microseconds(200));
        if (text.rfind("bind:", 0) == 0) {
            MediaBinding b;
            b.media = Endpoint{IpAddress::v4(0x0a000063U), static_cast<std::uint16_t>(std::stoi(text.substr(5)))};
            b.call_id = std::string_view(text).substr(5);  // the port text doubles as the Call-ID
            out.send(b);
        }
    }
    void bind(const MediaBinding& b) override { bound.push_back({b.media.port, std::string(b.call_id)}); }
    void advance(Timestamp now) override {
        if (now < clock) backwards = true;
        clock = now;
    }
    void finish(Timestamp end) override {
        finished_at = end;
        ++finish_calls;
    }

    std::vector<std::string> seen;
    std::vector<std::pair<std::uint16_t, std::string>> bound;
    Timestamp clock{};
    Timestamp finished_at{};
    int finish_calls = 0;
    bool backwards = false;
    bool slow = false;
};

struct Run {
    std::vector<RecordingWorker*> workers;
    std::unique_ptr<Pipeline> pipeline;
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
    d.kind = PayloadKind::rtp;
    d.time = Timestamp{t};
    d.src = Endpoint{IpAddress::v4(0x0a000001U), 4000};
    d.dst = Endpoint{IpAddress::v4(0x0a000063U), port};
    d.payload = as_bytes(text);
    return d;
}

} // namespace

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
                REQUIRE(shard_of_media(Endpoint{IpAddress::v4(0x0a000063U),
                                                static_cast<std::uint16_t>(1000 + 2 * (i % 50))},
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
            d.kind = PayloadKind::sip;
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
    }
}

TEST_CASE("live mode drops and counts when a shard falls behind", "[shard][pipeline]") {
    PipelineOptions o;
    o.lossless = false;
    o.queue_batches = 2;
    o.batch_datagrams = 4;
    auto run = make(2, o);
    for (auto* w : run.workers) w->slow = true;
    run.pipeline->start();
    const std::string text = "x";
    constexpr int kSent = 5000;
    for (int i = 0; i < kSent; ++i) run.pipeline->producer(0).push(rtp_to(static_cast<std::uint16_t>(2 * (i % 8)), text, i));
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
        for (int i = 0; i < 1000; ++i) run.pipeline->producer(0).push(rtp_to(static_cast<std::uint16_t>(2 * (i % 9)), text, i));
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

TEST_CASE("an idle live shard advances its clock by wall time", "[shard][pipeline]") {
    PipelineOptions o;
    o.threaded = true;
    o.idle_tick_us = 20'000;
    auto run = make(1, o);
    run.pipeline->start();
    run.pipeline->producer(0).push(rtp_to(2, "x", 1'000'000));
    run.pipeline->producer(0).flush();
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    Timestamp clock{};
    run.pipeline->run_on_shards([&](std::size_t, Worker& w) { clock = static_cast<RecordingWorker&>(w).clock; });
    run.pipeline->finish(Timestamp{});
    CHECK(clock.us > 1'000'000 + 60'000);  // at least a few ticks of wall time went by
    CHECK(clock.us < 1'000'000 + 5'000'000);
}
