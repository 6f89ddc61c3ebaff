// Real captures through the real shards: every RTP stream belongs to the call whose SDP named
// both of its ends. The sipp fixture is the hard case: sipp's UAS answers every call with the
// same media address (127.0.0.1:26000) and every call replays the same two SSRCs, so neither an
// address nor an SSRC tells the calls apart; only the offer/answer pairs do.
//
// The expected call of each stream is read from the capture's own SDP by this test (c= and m=
// per Call-ID, one text scan), not from hepd's parsers.
#include "pcap/capture_source.hpp"
#include "report/collector.hpp"
#include "shard/pipeline.hpp"
#include "shard/shard_worker.hpp"
#include "support/fixtures.hpp"

#include <catch2/catch.hpp>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

using namespace hepd;

namespace {

using StreamId = std::tuple<std::string, std::string, std::uint32_t, std::int64_t>;  // src, dst, SSRC, first

struct Attributed {
    std::map<StreamId, std::string> call_of;  // finished streams and the Call-ID hepd gave them
    std::map<StreamId, std::int64_t> lost;
};

class Recorder final : public rtp::StreamSink {
public:
    void on_stream_finished(const rtp::FinishedStream& f) override {
        const StreamId id{f.key.src.to_string(), f.key.dst.to_string(), f.key.ssrc, f.stream.first.us};
        got.call_of[id] = f.binding != nullptr ? std::string(f.binding->call_id.view()) : std::string();
        got.lost[id] = f.summary.lost;
    }
    Attributed got;
};

Attributed run(const std::string& path, std::size_t shards) {
    std::vector<std::unique_ptr<Recorder>> recorders;
    std::vector<std::unique_ptr<shard::Worker>> workers;
    for (std::size_t i = 0; i < shards; ++i) {
        recorders.push_back(std::make_unique<Recorder>());
        workers.push_back(std::make_unique<shard::ShardWorker>(shard::ShardConfig{}, recorders.back().get()));
    }
    shard::PipelineOptions po;
    po.shards = shards;
    po.lossless = true;
    po.queue_batches = 4;
    po.batch_datagrams = 16;  // small batches: many hand-overs between shards
    shard::Pipeline pipeline(po, std::move(workers));
    pipeline.start();
    pcap::CaptureSource source;
    Timestamp last{};
    auto sink = [&](const shard::Datagram& d) {
        last = std::max(last, d.time);
        pipeline.producer(0).push(d);
    };
    REQUIRE(source.read_file(path, sink) == pcap::FileError::none);
    source.finish();
    pipeline.producer(0).flush();
    pipeline.finish(last);
    Attributed all;
    for (const auto& r : recorders) {
        all.call_of.insert(r->got.call_of.begin(), r->got.call_of.end());
        all.lost.insert(r->got.lost.begin(), r->got.lost.end());
    }
    return all;
}

// "address:port" of every SDP media line, per Call-ID, from the capture's SIP text.
std::map<std::string, std::set<std::string>> sdp_media_by_call(const std::string& path) {
    std::map<std::string, std::set<std::string>> media;
    pcap::CaptureSource source;
    auto sink = [&](const shard::Datagram& d) {
        if (d.kind != PayloadClass::sip) return;
        const std::string text(as_text(d.payload));
        auto header = [&](const std::string& name) {
            const auto at = text.find("\r\n" + name + ":");
            if (at == std::string::npos) return std::string();
            const auto begin = text.find_first_not_of(' ', at + name.size() + 3);
            return text.substr(begin, text.find("\r\n", begin) - begin);
        };
        const std::string call = header("Call-ID");
        const auto c = text.find("\r\nc=IN IP4 ");
        const auto m = text.find("\r\nm=audio ");
        if (call.empty() || c == std::string::npos || m == std::string::npos) return;
        const std::string address = text.substr(c + 11, text.find("\r\n", c + 11) - (c + 11));
        const std::string port = text.substr(m + 10, text.find(' ', m + 10) - (m + 10));
        media[call].insert(address + ":" + port);
    };
    REQUIRE(source.read_file(path, sink) == pcap::FileError::none);
    return media;
}

}  // namespace

TEST_CASE("sipp through Kamailio: every stream is attributed to the call whose SDP named both ends",
          "[shard][truth][fixture]") {
    const std::string path = test::fixture_path("sipp-10-calls-g711-via-kamailio.pcap");
    const auto media = sdp_media_by_call(path);
    REQUIRE(media.size() == 10);

    const Attributed one = run(path, 1);
    // tshark -z rtp,streams: 40 streams (10 calls x 2 directions x G.711 and telephone-event).
    REQUIRE(one.call_of.size() == 40);
    std::set<std::string> calls_seen;
    for (const auto& [id, call] : one.call_of) {
        const auto& [src, dst, ssrc, first] = id;
        INFO(src << " -> " << dst << " ssrc " << ssrc << ": hepd says [" << call << "]");
        REQUIRE(media.count(call) == 1);
        // RTP and RFC 2833 events leave from the media port itself (symmetric RTP).
        CHECK(media.at(call).count(src) == 1);
        CHECK(media.at(call).count(dst) == 1);
        calls_seen.insert(call);
    }
    CHECK(calls_seen.size() == 10);
    for (const std::size_t shards : {2U, 4U}) {
        INFO(shards << " shards");
        const Attributed many = run(path, shards);
        CHECK(many.call_of == one.call_of);
        CHECK(many.lost == one.lost);
    }
}
