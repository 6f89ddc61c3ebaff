#pragma once
// Shared by the ingest tests that feed real shards: a Worker that counts what it is given and a
// sink that counts hand-overs on the way to a shard::Pipeline::Producer.
#include "ingest/producer_sink.hpp"
#include "shard/pipeline.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

namespace hepd::test {

// Counts datagrams; readable from other threads.
class CountingWorker final : public shard::Worker {
public:
    void process(const shard::Datagram&, shard::BindingSink&) override {
        processed.fetch_add(1, std::memory_order_relaxed);
    }
    void bind(const MediaBinding&) override {}
    void advance(Timestamp, shard::BindingSink&) override {}
    void finish(Timestamp) override {}
    std::atomic<std::uint64_t> processed{0};
};

// A ProducerSink that counts pushes and hand-overs (flush calls), readable from other threads.
class CountingProducerSink : public ingest::DatagramSink {
public:
    explicit CountingProducerSink(shard::Pipeline::Producer& producer) : inner_(producer) {}
    void push(const shard::Datagram& d) override {
        inner_.push(d);
        pushes.store(pushes.load(std::memory_order_relaxed) + 1, std::memory_order_release);
    }
    void flush() override {
        inner_.flush();
        pushes_handed_over.store(pushes.load(std::memory_order_relaxed), std::memory_order_release);
        flushes.fetch_add(1, std::memory_order_release);
    }
    std::uint64_t dropped() const noexcept override { return inner_.dropped(); }

    std::atomic<std::uint64_t> pushes{0};
    std::atomic<std::uint64_t> pushes_handed_over{0};  // pushes before the latest flush
    std::atomic<std::uint64_t> flushes{0};

private:
    ingest::ProducerSink inner_;
};

// One threaded shard fed by `producers` producers (live mode: full queues drop).
struct ShardRig {
    explicit ShardRig(std::size_t producers = 1, std::size_t batch_datagrams = 256, std::size_t queue_batches = 64) {
        shard::PipelineOptions o;
        o.shards = 1;
        o.producers = producers;
        o.threaded = true;
        o.batch_datagrams = batch_datagrams;
        o.queue_batches = queue_batches;
        auto w = std::make_unique<CountingWorker>();
        worker = w.get();
        std::vector<std::unique_ptr<shard::Worker>> workers;
        workers.push_back(std::move(w));
        pipeline = std::make_unique<shard::Pipeline>(o, std::move(workers));
        pipeline->start();
    }
    ~ShardRig() { pipeline->finish(Timestamp{}); }

    CountingWorker* worker = nullptr;
    std::unique_ptr<shard::Pipeline> pipeline;
};

}  // namespace hepd::test
