// The hand-over to real shards: one Pipeline::Producer per receive path, queue_full drops
// counted through the sink, and every accepted datagram reaching a shard.
#include "ingest/producer_sink.hpp"

#include "hep_message.hpp"
#include "ingest_support.hpp"

#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

using namespace hepd;
using namespace hepd::ingest;

namespace {

class CountingWorker final : public shard::Worker {
public:
    void process(const shard::Datagram& d, shard::BindingSink&) override {
        ++processed;
        if (d.kind == PayloadClass::sip && d.agent == 1) ++from_agent;
    }
    void bind(const MediaBinding&) override {}
    void advance(Timestamp, shard::BindingSink&) override {}
    void finish(Timestamp) override {}
    std::uint64_t processed = 0;
    std::uint64_t from_agent = 0;
};

// Distinct Call-IDs spread the messages over the shards.
std::vector<std::vector<std::uint8_t>> calls(int n) {
    std::vector<std::vector<std::uint8_t>> out;
    for (int i = 0; i < n; ++i) {
        const std::string sip = "OPTIONS sip:b@y SIP/2.0\r\nVia: SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bK" +
                                std::to_string(i) + "\r\nCall-ID: call-" + std::to_string(i) +
                                "@x\r\nCSeq: 1 OPTIONS\r\nFrom: <sip:a@x>;tag=1\r\nTo: <sip:b@y>\r\n"
                                "Content-Length: 0\r\n\r\n";
        out.push_back(test::encode(test::sip_message(sip)));
    }
    return out;
}

}  // namespace

TEST_CASE("two receive paths feed two shards; full queues are counted as queue_full", "[ingest][shard]") {
    shard::PipelineOptions po;
    po.shards = 2;
    po.producers = 2;
    po.queue_batches = 2;
    po.batch_datagrams = 4;
    std::vector<std::unique_ptr<shard::Worker>> workers;
    std::vector<CountingWorker*> counting;
    for (int i = 0; i < 2; ++i) {
        auto w = std::make_unique<CountingWorker>();
        counting.push_back(w.get());
        workers.push_back(std::move(w));
    }
    shard::Pipeline pipeline(po, std::move(workers));

    ManualClock steady(Timestamp{0});
    ManualClock wall(Timestamp::from_parts(1'700'000'100, 0));
    IngestPolicy policy;
    policy.agents = intake::AgentMap({intake::AgentRule::by_capture_id("kamailio", 2001)});
    IngestControl control(std::move(policy), steady);
    ProducerSink sink0(pipeline.producer(0));
    ProducerSink sink1(pipeline.producer(1));
    IngestPath path0(control, sink0, wall);
    IngestPath path1(control, sink1, wall);

    // The shards are not started yet, so their queues fill and the rest is dropped.
    const auto messages = calls(200);
    std::vector<Packet> batch;
    for (const auto& m : messages) batch.push_back(Packet{m, Endpoint{IpAddress::v4(0x0a000001U), 9}});
    for (std::size_t i = 0; i < batch.size(); i += 25) {
        path0.process(std::span<const Packet>(batch).subspan(i, 25), intake::Carrier::udp);
        path1.process(std::span<const Packet>(batch).subspan(i, 25), intake::Carrier::tcp);
    }
    path0.flush();
    path1.flush();
    const auto& s0 = path0.stats();
    const auto& s1 = path1.stats();
    CHECK(s0.received() == 200);
    CHECK(s1.received() == 200);
    CHECK(s0.drops(intake::DropReason::queue_full) > 0);
    CHECK(s0.drops(intake::DropReason::queue_full) == pipeline.producer(0).dropped());
    CHECK(s1.drops(intake::DropReason::queue_full) == pipeline.producer(1).dropped());
    CHECK(s0.received() == s0.accepted() + s0.dropped_total());
    CHECK(s1.received() == s1.accepted() + s1.dropped_total());

    pipeline.start();
    pipeline.finish(wall.now());
    // Everything accepted reached a shard, and nothing else did.
    const std::uint64_t processed = counting[0]->processed + counting[1]->processed;
    CHECK(processed == s0.accepted() + s1.accepted());
    CHECK(counting[0]->from_agent + counting[1]->from_agent == processed);
    CHECK(counting[0]->processed > 0);
    CHECK(counting[1]->processed > 0);
}
