// Ground truth: generated calls with known answers go through the real shards (1, 2 and 4 of
// them) and must come out exactly as the generator says, identically for every shard count.
#include "generated_run.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

using namespace hepd;
using namespace hepd::test;

TEST_CASE("generated calls reconstruct exactly, with 1, 2 and 4 shards alike", "[shard][truth]") {
    gen::CorpusOptions o;
    o.calls = 300;
    o.media_seconds = 2.0;
    o.loss_percent = 3;
    o.duplicate_percent = 1;
    o.reorder_percent = 2;
    o.jitter_ms = 6;
    o.failed_percent = 10;
    o.cancelled_percent = 10;
    o.call_interval_us = 7000;

    gen::Truth truth;
    const Outcome one = run(o, 1, &truth);
    REQUIRE(one.queue_drops == 0);

    // Dialogs: every call, with its outcome, PDD, setup and duration to the microsecond.
    REQUIRE(one.dialogs.size() == truth.calls.size());
    for (const auto& call : truth.calls) {
        const auto it = one.dialogs.find({call.call_id, call.from_tag});
        REQUIRE(it != one.dialogs.end());
        const sip::Dialog& d = it->second;
        INFO(call.call_id);
        CHECK(d.pdd_us() == call.pdd_us);
        CHECK(d.final_status == call.final_code);
        switch (call.outcome) {
        case gen::CallOutcome::completed:
            CHECK(d.outcome() == sip::DialogOutcome::completed);
            CHECK(d.setup_us() == call.setup_us);
            CHECK(d.duration_us() == call.duration_us);
            break;
        case gen::CallOutcome::failed:
            CHECK(d.outcome() == sip::DialogOutcome::failed);
            CHECK(d.q850_cause == 17);
            break;
        case gen::CallOutcome::cancelled: CHECK(d.outcome() == sip::DialogOutcome::cancelled); break;
        }
    }

    // Streams: exact loss and duplicates, joined to their call, jitter within 1 % of RFC 3550.
    REQUIRE(one.streams.size() == truth.streams.size());
    for (const auto& st : truth.streams) {
        const StreamId id{st.src, st.dst, st.ssrc, st.first.us};
        const auto it = one.streams.find(id);
        REQUIRE(it != one.streams.end());
        INFO(st.call_id << " ssrc " << st.ssrc);
        const StreamRecord& r = it->second;
        CHECK(r.summary.lost == static_cast<std::int64_t>(st.lost) - static_cast<std::int64_t>(st.duplicates));
        CHECK(r.stream.duplicates == st.duplicates);
        CHECK(r.call_id == st.call_id);
        CHECK(r.summary.jitter_ms == Approx(st.jitter_ms).epsilon(0.01).margin(1e-6));
    }

    // The same input through 2 and 4 shards, each reading it all or fed by one producer:
    // identical records and identical statistics.
    for (const auto& [shards, intake] : {std::pair{2, Intake::reader_per_shard}, std::pair{4, Intake::reader_per_shard},
                                         std::pair{2, Intake::one_producer}, std::pair{4, Intake::one_producer}}) {
        const Outcome many = run(o, shards, nullptr, nullptr, intake);
        INFO("shards " << shards << (intake == Intake::one_producer ? ", one producer" : ", a reader each"));
        CHECK(many.queue_drops == 0);
        CHECK(many.dialogs == one.dialogs);
        CHECK(many.streams == one.streams);  // records include each stream's Call-ID
        CHECK(many.report == one.report);
        if (many.report != one.report) WARN(nlohmann::json::diff(one.report, many.report).dump(1));
    }
}

TEST_CASE("a shard publishes how many records each of its tables holds", "[shard][memory]") {
    // The daemon makes its snapshot images ready for these figures (the first snapshot after a
    // start has no earlier capture to go by); finish() publishes them before any end-of-run flush.
    shard::ShardConfig config;
    config.flush_at_end = false;
    gen::CorpusOptions o;
    o.calls = 400;
    o.media_seconds = 0.5;
    o.call_interval_us = 2000;
    std::vector<std::unique_ptr<shard::Worker>> owned;
    auto w = std::make_unique<shard::ShardWorker>(config);
    auto* worker = w.get();
    owned.push_back(std::move(w));
    shard::Pipeline pipeline({}, std::move(owned));
    Timestamp last{};
    gen::generate(o, [&](Timestamp t, const Endpoint& s, const Endpoint& d, ByteSpan p) {
        shard::Datagram dg;
        dg.time = last = t;
        dg.src = s;
        dg.dst = d;
        dg.kind = (d.port == 5060 || s.port == 5060) ? PayloadClass::sip : PayloadClass::rtp;
        dg.payload = p;
        pipeline.producer(0).push(dg);
    });
    // Calls still in progress at the end of a truncated run: every table holds records.
    pipeline.finish(last);
    const auto& published = worker->stats();
    const auto held = [](std::size_t n) { return static_cast<std::int64_t>(n); };
    CHECK(published.dialog_records.value() == held(worker->dialogs().size()));
    CHECK(published.transaction_records.value() == held(worker->dialogs().transactions().size()));
    CHECK(published.stream_records.value() == held(worker->streams().size()));
    CHECK(published.binding_records.value() == held(worker->streams().bindings_size()));
    CHECK(published.reported_stream_records.value() == held(worker->streams().reported_size()));
    CHECK(published.dialog_records.value() > 0);
    CHECK(published.stream_records.value() > 0);
    CHECK(published.binding_records.value() > 0);
}

TEST_CASE("a flood of unique calls beyond the caps keeps memory flat and counts evictions", "[shard][limits]") {
    shard::ShardConfig config;
    config.dialogs.max_dialogs = 200;
    config.streams.max_streams = 300;
    config.streams.max_pending_media = 300;
    gen::CorpusOptions o;
    o.calls = 3000;
    o.media_seconds = 0.2;
    o.call_interval_us = 1000;  // ~1,500 calls overlap: far beyond the caps

    std::size_t memory_small = 0;
    std::size_t memory_large = 0;
    for (std::uint32_t calls : {1500U, 3000U}) {
        o.calls = calls;
        std::vector<std::unique_ptr<shard::Worker>> owned;
        auto w = std::make_unique<shard::ShardWorker>(config);
        auto* worker = w.get();
        owned.push_back(std::move(w));
        shard::Pipeline pipeline({}, std::move(owned));
        std::size_t peak = 0;
        std::uint64_t n = 0;
        gen::generate(o, [&](Timestamp t, const Endpoint& s, const Endpoint& d, ByteSpan p) {
            shard::Datagram dg;
            dg.time = t;
            dg.src = s;
            dg.dst = d;
            dg.kind = (d.port == 5060 || s.port == 5060) ? PayloadClass::sip : PayloadClass::rtp;
            dg.payload = p;
            pipeline.producer(0).push(dg);
            if (++n % 1000 == 0)
                peak = std::max(peak, worker->dialogs().memory_bytes() + worker->streams().memory_bytes());
            REQUIRE(worker->dialogs().size() <= 200);
            REQUIRE(worker->streams().size() <= 300);
        });
        const auto& ds = worker->dialogs().stats();
        const auto& ss = worker->streams().stats();
        // What hepd_table_memory_bytes serves, refreshed as packet time passed: the capped tables'
        // figures, never above what they can hold.
        const auto& published = worker->stats();
        CHECK(published.dialog_table_bytes.value() > 0);
        CHECK(published.stream_table_bytes.value() > 0);
        CHECK(static_cast<std::size_t>(published.dialog_table_bytes.value() + published.stream_table_bytes.value()) <=
              2 * peak);
        CHECK(ds.dialog_evictions_total() > 0);
        CHECK(ds.finished(sip::DialogOutcome::evicted) > 0);
        CHECK(ss.evictions[static_cast<std::size_t>(rtp::StreamTableKind::streams)].value() > 0);
        // Every dialog created was counted finished once (with its outcome, or as evicted before
        // it finished) or is still unfinished in the table: none lost from the accounting.
        std::uint64_t finished = 0;
        for (const auto& c : ds.dialogs_finished) finished += c.value();
        std::uint64_t unfinished = 0;
        worker->dialogs().for_each([&](std::string_view, std::string_view, const sip::Dialog& d) {
            if (!d.finished()) ++unfinished;
        });
        CHECK(ds.dialogs_created.value() >= calls);
        CHECK(finished + unfinished == ds.dialogs_created.value());
        (calls == 1500 ? memory_small : memory_large) = peak;
    }
    // Twice the calls, same memory: the tables are capped, not growing.
    CHECK(memory_large <= memory_small + memory_small / 10);
}
