// Senders' clocks against the receive clock, driven by a ManualClock: every offset, shift and
// count below is worked out by hand.
#include "intake/sender_clocks.hpp"

#include "hep_message.hpp"
#include "ingest/ingest_path.hpp"
#include "ingest_support.hpp"
#include "support/captured_log.hpp"

#include <catch2/catch.hpp>
#include <spdlog/spdlog.h>

#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

using namespace hepd;
using namespace hepd::intake;
using namespace hepd::ingest;
using hepd::test::CapturedLog;
using hepd::test::CollectingSink;
using hepd::test::ip;

namespace {

constexpr std::int64_t kSecond = 1'000'000;
constexpr std::int64_t kHour = 3600 * kSecond;
const Timestamp kStart = Timestamp::from_parts(1'700'000'000, 0);

SenderKey sender(const char* address, std::uint32_t capture_id) { return SenderKey{ip(address), capture_id, true}; }

std::uint64_t sum(const std::array<StatCounter, kMaxAgents>& a) {
    std::uint64_t n = 0;
    for (const auto& c : a) n += c.value();
    return n;
}

}  // namespace

TEST_CASE("a sender within the limit keeps its capture times as sent", "[ingest][clock]") {
    ManualClock wall(kStart);
    SenderClocks clocks({5 * kSecond, 16});
    SenderClockStats stats;
    const auto a = sender("10.0.0.1", 1);

    // 4.9 s behind, then 4.9 s ahead (jitter, drift): never shifted, never counted.
    CHECK(clocks.correct(a, Timestamp{wall.now().us - 4'900'000}, wall.now(), 1, "a", stats).us ==
          wall.now().us - 4'900'000);
    wall.advance_us(10 * kSecond);
    CHECK(clocks.correct(a, Timestamp{wall.now().us + 4'900'000}, wall.now(), 1, "a", stats).us ==
          wall.now().us + 4'900'000);
    // Exactly at the limit is still within.
    CHECK(clocks.correct(a, Timestamp{wall.now().us - 5 * kSecond}, wall.now(), 1, "a", stats).us ==
          wall.now().us - 5 * kSecond);
    CHECK(clocks.offset_us(a) == 0);
    CHECK(sum(stats.offset_exceeded) == 0);
    CHECK(sum(stats.steps) == 0);
    CHECK(clocks.size() == 1);
}

TEST_CASE("a sender beyond the limit is shifted by its first offset, intervals exact", "[ingest][clock]") {
    ManualClock wall(kStart);
    SenderClocks clocks({5 * kSecond, 16});
    SenderClockStats stats;
    const auto b = sender("10.0.0.2", 2);
    CapturedLog log;

    // B's clock is one hour behind; its first packet takes 2 ms to arrive.
    const std::int64_t skew = kHour;
    const Timestamp invite{kStart.us - skew};
    wall.advance_us(2'000);
    const Timestamp t0 = clocks.correct(b, invite, wall.now(), 2, "agent-b", stats);
    CHECK(t0 == wall.now());  // measured at this packet: lands on the receive time
    CHECK(clocks.offset_us(b) == skew + 2'000);

    // Ringing 1.25 s, answer 4 s and BYE 63.5 s after the INVITE by B's clock; delivery delays
    // vary (0.2 ms to 40 ms): the corrected intervals are B's own, to the microsecond.
    const std::vector<std::pair<std::int64_t, std::int64_t>> later{
        {1'250'000, 200}, {4 * kSecond, 40'000}, {63'500'000, 3'000}};
    for (const auto& [after, delay] : later) {
        wall.set(Timestamp{kStart.us + after + delay});
        const Timestamp t = clocks.correct(b, Timestamp{invite.us + after}, wall.now(), 2, "agent-b", stats);
        CHECK(t.us - t0.us == after);
        CHECK(std::llabs(t.us - wall.now().us) <= 5 * kSecond);  // on the receive clock
    }
    CHECK(stats.offset_exceeded[2].value() == 1);
    CHECK(sum(stats.offset_exceeded) == 1);
    CHECK(sum(stats.steps) == 0);

    // Logged once, naming the sender, its agent and the offset.
    const auto lines = log.lines();
    REQUIRE(lines.size() == 1);
    CHECK(lines[0].find("10.0.0.2 capture id 2") != std::string::npos);
    CHECK(lines[0].find("agent agent-b") != std::string::npos);
    CHECK(lines[0].find("3600.002 s behind") != std::string::npos);
    CHECK(lines[0].find("+3600.002000 s") != std::string::npos);
}

TEST_CASE("a clock ahead of the receive time is shifted back", "[ingest][clock]") {
    ManualClock wall(kStart);
    SenderClocks clocks({5 * kSecond, 16});
    SenderClockStats stats;
    const auto c = sender("10.0.0.3", 3);
    const Timestamp first{kStart.us + 23 * kHour};  // still inside the fix-ups' window (+24 h)
    CHECK(clocks.correct(c, first, wall.now(), 0, "other", stats) == wall.now());
    CHECK(clocks.offset_us(c) == -23 * kHour);
    CHECK(clocks.correct(c, Timestamp{first.us + 777}, wall.now(), 0, "other", stats).us == kStart.us + 777);
    CHECK(stats.offset_exceeded[0].value() == 1);
}

TEST_CASE("a clock step is measured again and counted", "[ingest][clock]") {
    ManualClock wall(kStart);
    SenderClocks clocks({5 * kSecond, 16});
    SenderClockStats stats;
    const auto b = sender("10.0.0.2", 2);
    CapturedLog log;

    // One hour behind: shifted.
    CHECK(clocks.correct(b, Timestamp{kStart.us - kHour}, wall.now(), 2, "b", stats) == wall.now());
    // Drift of 4 s against the held offset: within the limit, the offset is kept (intervals stay
    // B's own even though B's clock runs slow).
    wall.advance_us(100 * kSecond);
    CHECK(clocks.correct(b, Timestamp{kStart.us - kHour + 96 * kSecond}, wall.now(), 2, "b", stats).us ==
          kStart.us + 96 * kSecond);
    CHECK(sum(stats.steps) == 0);

    // B's clock steps two hours back (DST slip): its corrected time would be 2 h off the receive
    // time, so the offset is measured again from this packet.
    wall.advance_us(kSecond);
    const Timestamp stepped{wall.now().us - 3 * kHour};
    CHECK(clocks.correct(b, stepped, wall.now(), 2, "b", stats) == wall.now());
    CHECK(clocks.offset_us(b) == 3 * kHour);
    CHECK(stats.steps[2].value() == 1);
    CHECK(stats.offset_exceeded[2].value() == 2);  // the first measurement and this one

    // NTP fixes B: back within the limit, times used as sent; a step, not an exceedance.
    wall.advance_us(2 * kSecond);  // past the log interval
    const Timestamp fixed{wall.now().us - 300'000};
    CHECK(clocks.correct(b, fixed, wall.now(), 2, "b", stats) == fixed);
    CHECK(clocks.offset_us(b) == 0);
    CHECK(stats.steps[2].value() == 2);
    CHECK(stats.offset_exceeded[2].value() == 2);

    // One line per event (each more than the log interval after the previous one).
    const auto lines = log.lines();
    REQUIRE(lines.size() == 3);
    CHECK(lines[0].find("shifted by +3600.000000 s") != std::string::npos);
    CHECK(lines[1].find("clock stepped, now 10800.000 s behind") != std::string::npos);
    CHECK(lines[2].find("back within hep.clock_offset_limit") != std::string::npos);
}

TEST_CASE("log lines are rate-limited, and every sender still gets its own once", "[ingest][clock]") {
    ManualClock wall(kStart);
    SenderClocks clocks({5 * kSecond, 64});
    SenderClockStats stats;
    CapturedLog log;
    // Ten senders an hour behind, all at once: one line now.
    for (std::uint32_t id = 1; id <= 10; ++id)
        clocks.correct(sender("10.0.0.9", id), Timestamp{kStart.us - kHour}, wall.now(), 0, "other", stats);
    CHECK(log.lines().size() == 1);
    CHECK(stats.offset_exceeded[0].value() == 10);
    // Each next second, the next sender's packet writes its line; repeats write nothing.
    for (int s = 1; s <= 12; ++s) {
        wall.advance_us(kSecond);
        for (std::uint32_t id = 1; id <= 10; ++id)
            clocks.correct(sender("10.0.0.9", id), Timestamp{wall.now().us - kHour}, wall.now(), 0, "other", stats);
    }
    const auto lines = log.lines();
    CHECK(lines.size() == 10);
    for (std::uint32_t id = 1; id <= 10; ++id) {
        INFO(id);
        std::size_t n = 0;
        for (const auto& l : lines) n += l.find("capture id " + std::to_string(id) + " ") != std::string::npos;
        CHECK(n == 1);
    }
    CHECK(stats.offset_exceeded[0].value() == 10);
    CHECK(sum(stats.steps) == 0);
}

TEST_CASE("senders are told apart by capture id and address; the table is capped", "[ingest][clock]") {
    ManualClock wall(kStart);
    SenderClocks clocks({5 * kSecond, 3});
    SenderClockStats stats;
    CapturedLog log;
    const auto a = sender("10.0.0.1", 7);
    const auto same_id_elsewhere = sender("10.0.0.2", 7);
    const SenderKey no_id{ip("10.0.0.1"), 0, false};
    const auto id_zero = sender("10.0.0.1", 0);

    clocks.correct(a, Timestamp{kStart.us - kHour}, wall.now(), 0, "other", stats);
    clocks.correct(same_id_elsewhere, Timestamp{kStart.us}, wall.now(), 0, "other", stats);
    clocks.correct(no_id, Timestamp{kStart.us + 2 * kHour}, wall.now(), 0, "other", stats);
    CHECK(clocks.offset_us(a) == kHour);
    CHECK(clocks.offset_us(same_id_elsewhere) == 0);
    CHECK(clocks.offset_us(no_id) == -2 * kHour);
    CHECK(clocks.size() == 3);
    CHECK(stats.evictions.value() == 0);

    // `a` is touched, so the least recently active is `same_id_elsewhere`: evicted for a fourth.
    clocks.correct(a, Timestamp{kStart.us - kHour}, wall.now(), 0, "other", stats);
    clocks.correct(no_id, Timestamp{kStart.us + 2 * kHour}, wall.now(), 0, "other", stats);
    clocks.correct(id_zero, Timestamp{kStart.us}, wall.now(), 0, "other", stats);
    CHECK(clocks.size() == 3);
    CHECK(clocks.capacity() == 3);
    CHECK(stats.evictions.value() == 1);
    CHECK_FALSE(clocks.offset_us(same_id_elsewhere).has_value());
    CHECK(clocks.offset_us(a) == kHour);
    CHECK(clocks.offset_us(id_zero) == 0);

    // An evicted sender that comes back is measured again (a new first packet).
    wall.advance_us(10 * kSecond);
    clocks.correct(same_id_elsewhere, Timestamp{wall.now().us - kHour}, wall.now(), 0, "other", stats);
    CHECK(clocks.offset_us(same_id_elsewhere) == kHour);
    CHECK(stats.evictions.value() == 2);
    CHECK(sum(stats.steps) == 0);
    CHECK(stats.offset_exceeded[0].value() == 3);  // a, no_id, same_id_elsewhere (second life)

    // Each eviction logged (rate-limited: these two are 10 s apart).
    std::size_t eviction_lines = 0;
    for (const auto& l : log.lines()) eviction_lines += l.find("table full (3 senders)") != std::string::npos;
    CHECK(eviction_lines == 2);
}

TEST_CASE("a shift measured from a batch's read time is provisional until an exact arrival", "[ingest][clock]") {
    ManualClock wall(kStart);
    SenderClocks clocks({5 * kSecond, 2});
    SenderClockStats stats;
    const auto b = sender("10.0.0.2", 2);
    const std::int64_t t = kStart.us;

    // B is an hour behind. Its first datagram arrived at t but its batch was read 80 ms later:
    // the shift includes those 80 ms, and the whole batch carries them.
    CHECK(clocks.correct(b, Timestamp{t - kHour}, ReceiveTime(Timestamp{t + 80'000}, false), 0, "b", stats).us ==
          t + 80'000);
    CHECK(
        clocks.correct(b, Timestamp{t + 10'000 - kHour}, ReceiveTime(Timestamp{t + 80'000}, false), 0, "b", stats).us ==
        t + 90'000);
    CHECK(clocks.provisional() == 1);
    CHECK(clocks.offset_us(b) == kHour + 80'000);

    // Its next datagram's arrival is exact (stamped at t + 200 ms, 40 µs on the wire): the
    // shift is lowered to it, without counting a step or a new offset.
    CHECK(clocks.correct(b, Timestamp{t + 200'000 - kHour}, ReceiveTime(Timestamp{t + 200'040}, true), 0, "b", stats)
              .us == t + 200'040);
    CHECK(clocks.provisional() == 0);
    CHECK(clocks.offset_us(b) == kHour + 40);
    // From then on the shift holds, whatever the batches' read times.
    CHECK(clocks.correct(b, Timestamp{t + 300'000 - kHour}, ReceiveTime(Timestamp{t + 390'000}, false), 0, "b", stats)
              .us == t + 300'040);
    CHECK(clocks.provisional() == 0);
    CHECK(stats.offset_exceeded[0].value() == 1);
    CHECK(sum(stats.steps) == 0);

    // An exact arrival can only lower a provisional shift: a datagram delivered late (here 2 s
    // on the wire) leaves it as it is, and ends the wait all the same.
    const auto late = sender("10.0.0.9", 9);
    clocks.correct(late, Timestamp{t - kHour}, ReceiveTime(Timestamp{t + 5'000}, false), 0, "late", stats);
    CHECK(clocks.provisional() == 1);
    CHECK(clocks
              .correct(late, Timestamp{t + 100'000 - kHour}, ReceiveTime(Timestamp{t + 2'100'000}, true), 0, "late",
                       stats)
              .us == t + 105'000);
    CHECK(clocks.offset_us(late) == kHour + 5'000);
    CHECK(clocks.provisional() == 0);
    clocks.correct(b, Timestamp{t + 400'000 - kHour}, ReceiveTime(Timestamp{t + 400'040}, false), 0, "b",
                   stats);  // b the most recently active again: `late` goes first below

    // A sender within the limit is never shifted, so never provisional.
    const auto a = sender("10.0.0.1", 1);
    clocks.correct(a, Timestamp{t}, ReceiveTime(Timestamp{t + 90'000}, false), 0, "a", stats);
    CHECK(clocks.provisional() == 0);

    // A step measured from a batch's read time is provisional again.
    wall.advance_us(kHour);
    clocks.correct(b, Timestamp{t - 2 * kHour}, ReceiveTime(Timestamp{t + 50'000}, false), 0, "b", stats);
    CHECK(sum(stats.steps) == 1);
    CHECK(clocks.provisional() == 1);

    // An evicted provisional sender no longer waits (capacity 2: a, b; c evicts the older, a;
    // d evicts b).
    clocks.correct(sender("10.0.0.3", 3), Timestamp{t - kHour}, ReceiveTime(Timestamp{t}, false), 0, "c", stats);
    CHECK(clocks.provisional() == 2);
    clocks.correct(sender("10.0.0.4", 4), Timestamp{t}, ReceiveTime(Timestamp{t}, false), 0, "d", stats);
    CHECK_FALSE(clocks.offset_us(b).has_value());
    CHECK(clocks.provisional() == 1);
}

TEST_CASE("stats merge adds the clock counters", "[ingest][clock]") {
    SenderClockStats x;
    SenderClockStats y;
    x.offset_exceeded[1].add(2);
    y.offset_exceeded[1].add(3);
    y.steps[4].add();
    x.evictions.add(5);
    IntakeStats total;
    IntakeStats one;
    one.clocks = x;
    total.merge(one);
    one.clocks = y;
    total.merge(one);
    CHECK(total.clocks.offset_exceeded[1].value() == 5);
    CHECK(total.clocks.steps[4].value() == 1);
    CHECK(total.clocks.evictions.value() == 5);
}

// ---------------------------------------------------------------------------------------------
// Through the live ingest path: receive time from the injected wall clock.

namespace {

IntakeOptions live_options(std::int64_t limit_us = 5 * kSecond) {
    IntakeOptions o;
    o.sender_clocks = SenderClockOptions{limit_us, 64};
    return o;
}

std::vector<std::uint8_t> options_at(std::int64_t capture_us, std::uint32_t capture_id) {
    auto m = test::sip_message(test::kOptions, static_cast<std::uint32_t>(capture_us / kSecond));
    m.micros = static_cast<std::uint32_t>(capture_us % kSecond);
    m.capture_id = capture_id;
    return test::encode(m);
}

// A live ingest path with the sender clocks, on hand-driven clocks from kStart.
struct LivePath {
    ManualClock steady{Timestamp{0}};
    ManualClock wall{kStart};
    IngestControl control{IngestPolicy{}, steady};
    CollectingSink sink;
    IngestPath path{control, sink, wall, path_options()};

    static IngestPathOptions path_options() {
        IngestPathOptions options;
        options.intake = live_options();
        return options;
    }
    std::tuple<ManualClock&, ManualClock&, CollectingSink&, IngestPath&> parts() { return {steady, wall, sink, path}; }
};

}  // namespace

TEST_CASE("live path: two agents, one an hour behind, end up on one clock", "[ingest][clock]") {
    LivePath live;
    auto [steady, wall, sink, path] = live.parts();  // references into `live`
    const Endpoint agent_a{ip("10.0.0.1"), 9060};
    const Endpoint agent_b{ip("10.0.0.2"), 9060};

    // Batches 0.5 s apart; A's clock is right, B's one hour behind and 2 ms late on the wire.
    for (int i = 0; i < 10; ++i) {
        const auto a = options_at(wall.now().us, 1);
        const auto b = options_at(kStart.us - kHour - 2'000 + i * 500'000, 2);
        const std::vector<Packet> batch{{a, agent_a}, {b, agent_b}};
        path.process(batch, Carrier::udp);
        wall.advance_us(500'000);
        steady.advance_us(500'000);
    }
    REQUIRE(sink.got.size() == 20);
    for (std::size_t i = 0; i < sink.got.size(); i += 2) {
        const auto& a = sink.got[i];
        const auto& b = sink.got[i + 1];
        CHECK(a.capture_id == 1);
        CHECK(b.capture_id == 2);
        CHECK(b.time.us - sink.got[1].time.us == static_cast<std::int64_t>(i / 2) * 500'000);  // B's intervals
        CHECK(std::llabs(b.time.us - a.time.us) <= 5 * kSecond);                               // one clock
    }
    CHECK(sink.got[1].time == kStart);                           // measured at B's first packet: its receive time
    CHECK(path.stats().clocks.offset_exceeded[0].value() == 1);  // B (agent "other")
    CHECK(sum(path.stats().clocks.steps) == 0);
}

TEST_CASE("live path: a datagram's stamped wait makes its receive time exact", "[ingest][clock]") {
    LivePath live;
    auto [steady, wall, sink, path] = live.parts();  // references into `live`
    const Endpoint agent_b{ip("10.0.0.2"), 9060};
    CHECK_FALSE(path.wants_arrival_times());

    // B, an hour behind, first in an unstamped batch read 70 ms after it arrived: shifted by
    // 1 h + 70 ms for now, and the path asks for stamps.
    path.process(std::vector<Packet>{{options_at(kStart.us - kHour - 70'000, 2), agent_b}}, Carrier::udp);
    CHECK(sink.got.back().time == kStart);
    CHECK(path.wants_arrival_times());

    // Its next datagram stamped: it waited 60 ms of a batch read at kStart + 1 s.
    wall.advance_us(kSecond);
    const std::int64_t arrived = wall.now().us - 60'000;
    path.process(std::vector<Packet>{{options_at(arrived - kHour, 2), agent_b, 60'000}}, Carrier::udp);
    CHECK(sink.got.back().time.us == arrived);
    CHECK_FALSE(path.wants_arrival_times());
    // And every later one lands on its own arrival, stamped or not.
    wall.advance_us(kSecond);
    path.process(std::vector<Packet>{{options_at(wall.now().us - 90'000 - kHour, 2), agent_b}}, Carrier::udp);
    CHECK(sink.got.back().time.us == wall.now().us - 90'000);
    CHECK(sum(path.stats().clocks.steps) == 0);

    // TCP reads follow the data's arrival: exact without stamps.
    const Endpoint agent_c{ip("10.0.0.3"), 9060};
    path.process(std::vector<Packet>{{options_at(wall.now().us - 2 * kHour, 3), agent_c}}, Carrier::tcp);
    CHECK_FALSE(path.wants_arrival_times());
}

TEST_CASE("live path: times the fix-ups replaced never reach the sender clocks", "[ingest][clock]") {
    LivePath live;
    auto [steady, wall, sink, path] = live.parts();  // references into `live`
    const Endpoint years_off{ip("10.0.0.5"), 9060};

    // Eleven years behind: outside [now - 10 y, now + 24 h], replaced by the receive time, which
    // is on the receive clock already. Neither shifted nor counted as a clock offset, every time.
    for (int i = 0; i < 3; ++i) {
        const auto bytes = options_at(wall.now().us - 11LL * 365 * 24 * kHour + i * 100'000, 5);
        path.process(std::vector<Packet>{{bytes, years_off}}, Carrier::udp);
        CHECK(sink.got.back().time == wall.now());
        wall.advance_us(700'000);
    }
    // So do zero and NTP-epoch times: zero is replaced; NTP is corrected to the sender's clock
    // (here right) and then checked like any other.
    path.process(std::vector<Packet>{{test::encode(test::sip_message(test::kOptions, 0)), years_off}}, Carrier::udp);
    CHECK(sink.got.back().time == wall.now());
    const std::int64_t ntp_capture = wall.now().us - 250'000;
    path.process(std::vector<Packet>{{options_at(ntp_capture + 2'208'988'800LL * kSecond, 6), years_off}},
                 Carrier::udp);
    CHECK(sink.got.back().time.us == ntp_capture);

    const auto& s = path.stats();
    CHECK(s.timestamp_fixups[static_cast<std::size_t>(hep::TimestampFixup::out_of_range)].value() == 3);
    CHECK(s.timestamp_fixups[static_cast<std::size_t>(hep::TimestampFixup::zero)].value() == 1);
    CHECK(s.timestamp_fixups[static_cast<std::size_t>(hep::TimestampFixup::ntp_epoch)].value() == 1);
    CHECK(sum(s.clocks.offset_exceeded) == 0);
    CHECK(sum(s.clocks.steps) == 0);
}

TEST_CASE("offline intake (no sender clocks): capture time is the clock, untouched", "[ingest][clock]") {
    HepIntake intake({});
    CHECK(intake.sender_clocks() == nullptr);
    shard::Datagram d;
    const Timestamp hour_later{kStart.us + kHour};
    REQUIRE(intake.accept(options_at(kStart.us, 2), Carrier::udp, hour_later, d, ip("10.0.0.2")));
    CHECK(d.time == kStart);
    CHECK(sum(intake.stats().clocks.offset_exceeded) == 0);

    HepIntake live(live_options());
    REQUIRE(live.sender_clocks() != nullptr);
    REQUIRE(live.accept(options_at(kStart.us, 2), Carrier::udp, hour_later, d, ip("10.0.0.2")));
    CHECK(d.time == hour_later);
    CHECK(live.sender_clocks()->offset_limit_us() == 5 * kSecond);
}
