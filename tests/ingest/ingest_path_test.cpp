// The admission and hand-over path without sockets: clocks are ManualClocks, so every count is
// exact and worked out by hand.
#include "ingest/ingest_path.hpp"

#include "hep_message.hpp"
#include "ingest_support.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace hepd;
using namespace hepd::ingest;
using hepd::test::CollectingSink;
using hepd::test::ip;

namespace {

const Timestamp kWall = Timestamp::from_parts(1'700'000'100, 0);

std::vector<std::uint8_t> sip_bytes() { return test::encode(test::sip_message(test::kOptions)); }

// A batch of `n` copies of `bytes` from `from`.
void append(std::vector<Packet>& batch, const std::vector<std::uint8_t>& bytes, const Endpoint& from, int n) {
    for (int i = 0; i < n; ++i) batch.push_back(Packet{bytes, from});
}

void check_invariant(const intake::IntakeStats& s) {
    INFO("received " << s.received() << " accepted " << s.accepted() << " dropped " << s.dropped_total());
    CHECK(s.received() == s.accepted() + s.dropped_total());
}

IngestPolicy limits(std::uint64_t rate, std::uint64_t burst, std::uint64_t per_agent_rate = 0,
                    std::uint64_t per_agent_burst = 0) {
    IngestPolicy p;
    p.limits = RateLimits{rate, burst, per_agent_rate, per_agent_burst};
    return p;
}

}  // namespace

TEST_CASE("global rate limit at a fixed offered load: within 5 %, drops = offered - allowed", "[ingest][rate]") {
    ManualClock steady(Timestamp{0});
    ManualClock wall(kWall);
    IngestControl control(limits(1000, 100), steady);
    CollectingSink sink;
    IngestPath path(control, sink, wall);
    const auto bytes = sip_bytes();
    const Endpoint from{ip("10.0.0.1"), 5000};

    // 5,000 packets/s offered (50 every 10 ms) for 10 s against 1,000/s with a burst of 100.
    // By hand: at 10 ms the bucket is full (100; the 10 earned are capped) and 50 pass; at
    // 20 ms 50 + 10 = 60 tokens, 50 pass; at 30 ms 10 + 10 = 20 pass; from then on 10 per step
    // (997 steps). Allowed = 50 + 50 + 20 + 9,970 = 10,090.
    std::vector<Packet> batch;
    append(batch, bytes, from, 50);
    for (int step = 0; step < 1000; ++step) {
        steady.advance_us(10'000);
        wall.advance_us(10'000);
        path.process(batch, intake::Carrier::udp);
    }
    const auto& s = path.stats();
    const std::uint64_t offered = 50'000;
    CHECK(s.received() == offered);
    CHECK(s.accepted() == 10'090);
    CHECK(sink.got.size() == 10'090);
    CHECK(s.drops(intake::DropReason::rate_limit) == offered - 10'090);
    const double achieved = static_cast<double>(s.accepted()) / 10.0;
    CHECK(achieved == Approx(1000.0).epsilon(0.05));
    CHECK(sink.flushes == 0);  // partial batches wait for the flush timer (FlushTimer)
    CHECK(path.holds_partial());
    path.flush();
    CHECK(sink.flushes == 1);
    CHECK_FALSE(path.holds_partial());
    check_invariant(s);
}

TEST_CASE("per-sender limit isolates a noisy sender", "[ingest][rate]") {
    ManualClock steady(Timestamp{0});
    ManualClock wall(kWall);
    const auto bytes = sip_bytes();
    const Endpoint quiet{ip("10.0.0.1"), 5060};
    const Endpoint noisy{ip("10.0.0.9"), 5060};
    std::vector<Packet> batch;  // noisy first: without isolation it would take every token
    append(batch, bytes, noisy, 100);
    append(batch, bytes, quiet, 5);

    auto run = [&](IngestPolicy policy) {
        IngestPolicy named = std::move(policy);
        named.agents = intake::AgentMap({intake::AgentRule::by_source("quiet", *Cidr::parse("10.0.0.1")),
                                         intake::AgentRule::by_source("noisy", *Cidr::parse("10.0.0.9"))});
        IngestControl control(std::move(named), steady);
        CollectingSink sink;
        IngestPath path(control, sink, wall);
        // 10 s in steps of 100 ms: the quiet sender offers 50/s, the noisy one 1,000/s.
        for (int step = 0; step < 100; ++step) {
            steady.advance_us(100'000);
            path.process(batch, intake::Carrier::udp);
        }
        check_invariant(path.stats());
        const auto sip = static_cast<std::size_t>(PayloadClass::sip);
        return std::pair<std::uint64_t, std::uint64_t>{path.stats().by_type[sip][1], path.stats().by_type[sip][2]};
    };

    SECTION("global limit alone: the noisy sender starves the quiet one") {
        // 200/s, burst 20: 20 tokens per step, all taken by the 100 noisy packets ahead.
        const auto [quiet_ok, noisy_ok] = run(limits(200, 20));
        CHECK(quiet_ok == 0);
        CHECK(noisy_ok == 20 * 100);
    }
    SECTION("per-sender limits first: the quiet sender gets everything through") {
        // Noisy: its bucket (100/s, burst 10) is created full at the first step and earns 10
        // per step after: 10 + 99 x 10 = 1,000. Quiet: 5 per step, under its own 10 per step.
        // Global: 15 candidates per step against 20 earned: all pass.
        const auto [quiet_ok, noisy_ok] = run(limits(200, 20, 100, 10));
        CHECK(quiet_ok == 500);
        CHECK(noisy_ok == 1000);
    }
}

TEST_CASE("per-sender table is capped and evicts the least recently active sender", "[ingest][rate]") {
    ManualClock steady(Timestamp{0});
    ManualClock wall(kWall);
    IngestControl control(limits(0, 0, 1, 2), steady);
    CollectingSink sink;
    IngestPathOptions options;
    options.max_sources = 3;
    IngestPath path(control, sink, wall, options);
    const auto bytes = sip_bytes();
    std::vector<Packet> batch;
    // Four senders, three packets each, clock frozen: each new bucket holds 2 tokens.
    for (std::uint32_t host = 1; host <= 4; ++host)
        append(batch, bytes, Endpoint{IpAddress::v4(0x0a000000U + host), 1}, 3);
    path.process(batch, intake::Carrier::udp);
    CHECK(path.stats().accepted() == 8);
    CHECK(path.stats().drops(intake::DropReason::rate_limit) == 4);
    CHECK(path.source_stats().evictions == 1);  // sender 1 made room for sender 4
    CHECK(path.source_stats().tracked_sources.value() == 3);

    // Sender 1 was evicted, so it comes back with a fresh bucket (and evicts sender 2); sender 4
    // is still tracked and has no token left.
    batch.clear();
    append(batch, bytes, Endpoint{ip("10.0.0.1"), 1}, 1);
    append(batch, bytes, Endpoint{ip("10.0.0.4"), 1}, 1);
    path.process(batch, intake::Carrier::udp);
    CHECK(path.stats().accepted() == 9);
    CHECK(path.stats().drops(intake::DropReason::rate_limit) == 5);
    CHECK(path.source_stats().evictions == 2);
    check_invariant(path.stats());
}

TEST_CASE("allow list refuses other senders before decoding", "[ingest][allow]") {
    ManualClock steady(Timestamp{0});
    ManualClock wall(kWall);
    IngestPolicy policy;
    policy.allow = AllowList({*Cidr::parse("10.0.0.0/8")});
    IngestControl control(std::move(policy), steady);
    CollectingSink sink;
    IngestPath path(control, sink, wall);
    const auto bytes = sip_bytes();
    const std::vector<std::uint8_t> garbage{'x', 'y', 'z'};
    std::vector<Packet> batch;
    append(batch, bytes, Endpoint{ip("10.1.1.1"), 9}, 3);
    append(batch, bytes, Endpoint{ip("192.0.2.1"), 9}, 2);
    append(batch, garbage, Endpoint{ip("192.0.2.1"), 9}, 1);  // refused before it could fail decoding
    path.process(batch, intake::Carrier::udp);
    const auto& s = path.stats();
    CHECK(s.accepted() == 3);
    CHECK(s.drops(intake::DropReason::not_allowed) == 3);
    CHECK(s.drops(intake::DropReason::decode_error) == 0);
    CHECK(s.undecodable_packets[0] == 1);
    CHECK(path.allows(ip("10.200.0.1")));
    CHECK_FALSE(path.allows(ip("192.0.2.1")));
    check_invariant(s);
}

TEST_CASE("live reconfiguration reaches the path at its next batch", "[ingest][reload]") {
    ManualClock steady(Timestamp{0});
    ManualClock wall(kWall);
    IngestPolicy first;
    first.auth_key = "one";
    first.allow = AllowList({*Cidr::parse("10.0.0.0/8")});
    IngestControl control(std::move(first), steady);
    CollectingSink sink;
    IngestPath path(control, sink, wall);
    const auto epoch = path.epoch();

    auto keyed = test::sip_message(test::kOptions);
    keyed.auth_key = as_bytes("two");
    keyed.mark(hep::Field::auth_key);
    const auto bytes = test::encode(keyed);  // capture id 2001
    std::vector<Packet> batch;
    append(batch, bytes, Endpoint{ip("10.0.0.1"), 9}, 2);
    append(batch, bytes, Endpoint{ip("172.16.0.1"), 9}, 2);

    path.process(batch, intake::Carrier::udp);
    CHECK(path.stats().drops(intake::DropReason::auth) == 2);
    CHECK(path.stats().drops(intake::DropReason::not_allowed) == 2);
    CHECK(path.stats().accepted() == 0);

    IngestPolicy second;
    second.auth_key = "two";
    second.limits = RateLimits{0, 0, 1, 1};  // one packet per sender, clock frozen
    second.agents = intake::AgentMap({intake::AgentRule::by_capture_id("kamailio", 2001)});
    control.update(std::move(second));
    CHECK(control.epoch() != epoch);
    path.process(batch, intake::Carrier::udp);
    CHECK(path.epoch() == control.epoch());
    CHECK(path.stats().accepted() == 2);  // one per sender
    CHECK(path.stats().drops(intake::DropReason::rate_limit) == 2);
    REQUIRE(sink.got.size() == 2);
    CHECK(sink.got[0].agent == 1);

    // Limits off again: the per-sender table is emptied.
    control.update(IngestPolicy{});
    path.process(batch, intake::Carrier::udp);
    CHECK(path.source_stats().tracked_sources.value() == 0);
    CHECK(path.stats().drops(intake::DropReason::auth) == 2);  // no key required any more
    CHECK(path.stats().accepted() == 6);
    check_invariant(path.stats());
}

TEST_CASE("received = accepted + drops per path and merged, with every kind of refusal", "[ingest]") {
    ManualClock steady(Timestamp{0});
    ManualClock wall(kWall);
    IngestPolicy policy = limits(0, 0, 1, 4);
    policy.auth_key = "k";
    policy.allow = AllowList({*Cidr::parse("10.0.0.0/8")});
    IngestControl control(std::move(policy), steady);
    CollectingSink sink_a(3);  // every third hand-over lost to a "full queue"
    CollectingSink sink_b;
    IngestPath a(control, sink_a, wall);
    IngestPath b(control, sink_b, wall);

    auto keyed = test::sip_message(test::kOptions);
    keyed.auth_key = as_bytes("k");
    keyed.mark(hep::Field::auth_key);
    const auto good = test::encode(keyed);
    const auto unkeyed = sip_bytes();
    auto truncated = good;
    truncated.resize(truncated.size() - 1);

    std::vector<Packet> batch;
    for (std::uint32_t host = 1; host <= 5; ++host)
        append(batch, good, Endpoint{IpAddress::v4(0x0a000000U + host), 1}, 3);
    append(batch, unkeyed, Endpoint{ip("10.1.0.1"), 1}, 2);
    append(batch, truncated, Endpoint{ip("10.1.0.2"), 1}, 2);
    append(batch, good, Endpoint{ip("192.0.2.1"), 1}, 2);
    append(batch, good, Endpoint{ip("10.0.0.1"), 1}, 3);  // host 1 again: its bucket (4) runs out
    for (int round = 0; round < 2; ++round) {
        a.process(batch, intake::Carrier::udp);
        b.process(batch, intake::Carrier::tcp);
    }
    // The sink reports its losses when the partial batches are handed over.
    CHECK(a.stats().drops(intake::DropReason::queue_full) == 0);
    a.flush();
    b.flush();
    // Per round and path: 24 packets, so 48 in all. Every sender has 4 tokens for both rounds
    // (clock frozen): host 1 offers 12 (4 pass), hosts 2..5 offer 6 each (4 pass each).
    for (const IngestPath* p : {&a, &b}) {
        const auto& s = p->stats();
        CHECK(s.received() == 48);
        CHECK(s.drops(intake::DropReason::not_allowed) == 4);
        CHECK(s.drops(intake::DropReason::auth) == 4);
        CHECK(s.drops(intake::DropReason::decode_error) == 4);
        // Keyed packets from allowed hosts: 2 x (15 + 3) = 36 against 5 x 4 = 20 tokens. The
        // unkeyed and truncated senders (10.1.0.x) offer 4 each against their own 4 tokens.
        CHECK(s.drops(intake::DropReason::rate_limit) == 16);
        check_invariant(s);
    }
    CHECK(b.stats().accepted() == 20);
    CHECK(b.stats().drops(intake::DropReason::queue_full) == 0);
    // a: 20 handed over, every third lost (pushes 3, 6, ..., 18).
    CHECK(a.stats().drops(intake::DropReason::queue_full) == 6);
    CHECK(a.stats().accepted() == 14);
    CHECK(sink_a.got.size() == 14);

    intake::IntakeStats merged;
    merged.merge(a.stats());
    merged.merge(b.stats());
    CHECK(merged.received() == 96);
    check_invariant(merged);
}

TEST_CASE("the global limit is shared by every path", "[ingest][rate]") {
    ManualClock steady(Timestamp{0});
    ManualClock wall(kWall);
    IngestControl control(limits(1, 150), steady);
    CollectingSink sink_a;
    CollectingSink sink_b;
    IngestPath a(control, sink_a, wall);
    IngestPath b(control, sink_b, wall);
    const auto bytes = sip_bytes();
    std::vector<Packet> batch;
    append(batch, bytes, Endpoint{ip("10.0.0.1"), 1}, 100);
    a.process(batch, intake::Carrier::udp);
    b.process(batch, intake::Carrier::udp);
    CHECK(a.stats().accepted() == 100);
    CHECK(b.stats().accepted() == 50);
    CHECK(a.stats().accepted() + b.stats().accepted() == 150);
    CHECK(b.stats().drops(intake::DropReason::rate_limit) == 50);
}

TEST_CASE("max_batch_age 0 hands over after every batch; otherwise only flush() does", "[ingest]") {
    ManualClock steady(Timestamp{0});
    ManualClock wall(kWall);
    IngestControl control(IngestPolicy{}, steady);
    const auto bytes = sip_bytes();
    std::vector<Packet> batch;
    append(batch, bytes, Endpoint{ip("10.0.0.1"), 1}, 3);
    const std::vector<std::uint8_t> not_hep{'x'};
    std::vector<Packet> refused;
    append(refused, not_hep, Endpoint{ip("10.0.0.1"), 1}, 2);

    CollectingSink at_once(2);  // every second push lost to a "full queue"
    IngestPathOptions immediate;
    immediate.max_batch_age = std::chrono::microseconds(0);
    IngestPath a(control, at_once, wall, immediate);
    for (int i = 0; i < 4; ++i) a.process(batch, intake::Carrier::udp);
    CHECK(at_once.flushes == 4);
    CHECK_FALSE(a.holds_partial());
    CHECK(a.stats().drops(intake::DropReason::queue_full) == 6);
    a.process(refused, intake::Carrier::udp);  // nothing pushed: nothing to hand over
    CHECK(at_once.flushes == 4);

    CollectingSink later;
    IngestPath b(control, later, wall);
    CHECK(b.max_batch_age() == IngestPathOptions::kDefaultMaxBatchAge);
    b.process(refused, intake::Carrier::udp);
    CHECK_FALSE(b.holds_partial());
    for (int i = 0; i < 4; ++i) b.process(batch, intake::Carrier::udp);
    CHECK(later.flushes == 0);
    CHECK(later.got.size() == 12);
    CHECK(b.holds_partial());
    b.flush();
    CHECK(later.flushes == 1);
    CHECK_FALSE(b.holds_partial());
}

TEST_CASE("ingest path: a receive thread reads within the time a rate limit's bucket refills its burst",
          "[ingest][rate]") {
    // A batch meets the buckets at one clock reading: a sender under its rate whose packets wait
    // longer than burst/rate in the kernel would find the bucket capped at its burst.
    using std::chrono::microseconds;
    ManualClock steady(Timestamp{0});
    ManualClock wall(kWall);
    CollectingSink sink;
    const auto window = [&](IngestPolicy policy) {
        IngestControl control(std::move(policy), steady);
        IngestPath path(control, sink, wall);
        return path.read_window();
    };
    CHECK(window(limits(0, 0)) == IngestPathOptions::kDefaultMaxBatchAge);     // no limit: max_batch_age
    CHECK(window(limits(1000, 0)) == IngestPathOptions::kDefaultMaxBatchAge);  // burst 0: a second's worth
    CHECK(window(limits(1000, 10)) == microseconds(10'000));                   // 10 tokens at 1,000/s
    CHECK(window(limits(0, 0, 1000, 50)) == microseconds(50'000));             // per agent
    CHECK(window(limits(100'000, 1'000, 1000, 50)) == microseconds(10'000));   // the tighter of the two
}
