// Two capture agents mirroring the same packets (both ends of every hop): through the real shards
// each SIP message, RTP packet and RTCP report counts once, exactly as if one agent had sent
// them: no retransmissions, no extra RTP duplicates or packets, the same dialogs and streams.
#include "generated_run.hpp"

#include <catch2/catch.hpp>

using namespace hepd;
using namespace hepd::test;

namespace {

gen::CorpusOptions corpus() {
    gen::CorpusOptions o;
    o.calls = 120;
    o.media_seconds = 1.0;
    o.loss_percent = 2;
    o.duplicate_percent = 2;  // network duplicates: the first agent sees them 500 us apart
    o.reorder_percent = 1;
    o.failed_percent = 10;
    o.cancelled_percent = 10;
    o.call_interval_us = 7000;
    o.rtcp = true;
    o.rtcp_json = true;
    return o;
}

std::uint64_t dropped(const Outcome& out, PayloadClass kind) {
    return out.duplicates.duplicates[static_cast<std::size_t>(kind)].value();
}

nlohmann::json without_duplicates(nlohmann::json report) {
    report.erase("duplicates");
    return report;
}

}  // namespace

TEST_CASE("a second agent's copies are dropped: dialogs, streams and report as with one agent, 1 and 2 shards",
          "[shard][duplicates][truth]") {
    const gen::CorpusOptions o = corpus();
    gen::Truth truth;
    const Outcome single = run(o, 1, &truth);
    REQUIRE(truth.sip_packets > 0);
    REQUIRE(truth.rtcp_packets > 0);
    REQUIRE(truth.rtcp_json_packets > 0);
    REQUIRE(single.dialogs.size() == truth.calls.size());
    CHECK(single.report["sip"]["retransmissions"].empty());
    CHECK(single.report["streams"]["duplicate_packets"] > 0);  // the network's, kept
    CHECK(single.duplicates.evictions.value() == 0);

    const Mirror mirror;
    for (std::size_t shards : {1, 2}) {
        INFO("shards " << shards);
        const Outcome both = run(o, shards, nullptr, &mirror);
        CHECK(both.queue_drops == 0);
        CHECK(both.dialogs == single.dialogs);  // hops, retransmissions, times to the microsecond
        CHECK(both.streams == single.streams);  // packets, loss, duplicates, jitter, Call-ID
        CHECK(without_duplicates(both.report) == without_duplicates(single.report));
        if (without_duplicates(both.report) != without_duplicates(single.report))
            WARN(nlohmann::json::diff(without_duplicates(single.report), without_duplicates(both.report)).dump(1));
        // Every copy of the second agent, the copies of the network's duplicates included.
        CHECK(dropped(both, PayloadClass::sip) == truth.sip_packets);
        CHECK(dropped(both, PayloadClass::rtp) == truth.rtp_packets);
        CHECK(dropped(both, PayloadClass::rtcp) == truth.rtcp_packets);
        CHECK(dropped(both, PayloadClass::rtcp_json) == truth.rtcp_json_packets);
        CHECK(both.duplicates.evictions.value() == 0);
        CHECK(both.report["duplicates"]["by_kind"]["sip"] == truth.sip_packets);
    }
}

TEST_CASE("without the filter a second agent's copies count as retransmissions and RTP duplicates",
          "[shard][duplicates]") {
    // What the filter is for: the same run with window 0.
    const gen::CorpusOptions o = corpus();
    const Outcome single = run(o, 1);
    Mirror off;
    off.window_us = 0;
    const Outcome both = run(o, 2, nullptr, &off);
    CHECK(dropped(both, PayloadClass::sip) == 0);
    CHECK_FALSE(both.report["sip"]["retransmissions"].empty());
    CHECK(both.report["streams"]["duplicate_packets"].get<std::uint64_t>() >
          single.report["streams"]["duplicate_packets"].get<std::uint64_t>());
    CHECK(both.dialogs != single.dialogs);
}

TEST_CASE("copies further apart than the window are not dropped", "[shard][duplicates]") {
    gen::CorpusOptions o = corpus();
    o.calls = 20;
    Mirror late;
    late.delay_us = 60'000;  // beyond the 50 ms window
    const Outcome both = run(o, 2, nullptr, &late);
    for (std::size_t k = 0; k < kPayloadClassCount; ++k) CHECK(both.duplicates.duplicates[k].value() == 0);
    CHECK_FALSE(both.report["sip"]["retransmissions"].empty());
}
