// Bounds and degraded modes: the cap, garbage input, hostile bytes, gauges, snapshot round trip,
// merging shards' statistics.
#include "dialog_test_util.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

using namespace hepd;
using namespace hepd::sip;
using namespace hepd::sip::test;

namespace {

std::uint64_t anomaly(const Harness& h, DialogAnomaly a) { return h.stats().anomaly(a); }

// A full call (12 messages over a proxy, SDP in both INVITEs and both 200s) with this Call-ID.
std::vector<std::pair<Sip, std::pair<std::string_view, std::string_view>>> proxied_call(const std::string& call_id) {
    Sip a;
    a.call_id = call_id;
    a.body = "v=0\no=- 1 1 IN IP4 192.0.2.1\ns=-\nc=IN IP4 192.0.2.1\nt=0 0\nm=audio 4000 RTP/AVP 8\n";
    const Sip p = a.with_branch("z9hG4bK-p1");
    return {
        {a, {A, P}},
        {a.resp(100), {P, A}},
        {p, {P, B}},
        {p.with_to_tag("t").resp(180), {B, P}},
        {a.with_to_tag("t").resp(180), {P, A}},
        {p.with_to_tag("t").resp(200).with_body(a.body), {B, P}},
        {a.with_to_tag("t").resp(200).with_body(a.body), {P, A}},
        {a.with_to_tag("t").req("ACK", "z9hG4bK-a2", 1), {A, P}},
        {a.with_to_tag("t").req("BYE", "z9hG4bK-a3", 2), {A, P}},
        {p.with_to_tag("t").req("BYE", "z9hG4bK-p3", 2), {P, B}},
        {p.with_to_tag("t").req("BYE", "z9hG4bK-p3", 2).resp(200), {B, P}},
        {a.with_to_tag("t").req("BYE", "z9hG4bK-a3", 2).resp(200), {P, A}},
    };
}

}  // namespace

TEST_CASE("limits: a flood of 100k unique Call-IDs keeps memory flat and counts every eviction",
          "[sip][dialog][limits]") {
    DialogConfig config;
    config.max_dialogs = 1000;
    Harness h(config);
    Sip invite;
    std::size_t memory_at_10k = 0;
    for (int i = 0; i < 100'000; ++i) {
        invite.call_id = "flood-" + std::to_string(1'000'000 + i) + "@198.51.100.9";
        REQUIRE(h.send(invite, A, B, ms(i / 10)) == Disposition::dialog_created);
        if (i == 9'999) memory_at_10k = h.table.memory_bytes();
    }
    CHECK(h.table.size() == 1000);
    CHECK(h.stats().dialogs_created.value() == 100'000);
    CHECK(h.stats().dialog_evictions_total() == 99'000);
    CHECK(h.stats().evicted(DialogState::trying) == 99'000);
    CHECK(h.stats().finished(DialogOutcome::evicted) == 99'000);
    CHECK(h.stats().in_state(DialogState::trying) == 1000);
    CHECK(h.gauge_sum() == 1000);
    CHECK(h.table.memory_bytes() == memory_at_10k);
    // Least recently active first: the last 1000 are kept.
    CHECK(h.table.find("flood-1099999@198.51.100.9", "caller-tag") != nullptr);
    CHECK(h.table.find("flood-1099000@198.51.100.9", "caller-tag") != nullptr);
    CHECK(h.table.find("flood-1098999@198.51.100.9", "caller-tag") == nullptr);

    // Everything left times out, then retires: every gauge returns to zero.
    h.table.expire(ms(9'999 + 32'000));
    CHECK(h.stats().finished(DialogOutcome::timed_out) == 1000);
    CHECK(h.stats().in_state(DialogState::timed_out) == 1000);
    h.table.expire(ms(9'999 + 64'000));
    CHECK(h.table.size() == 0);
    CHECK(h.all_gauges_zero());
    CHECK(h.stats().finished(DialogOutcome::evicted) == 99'000);
}

TEST_CASE("limits: IPv6 parties' endpoints are held out of line, counted, and given back", "[sip][dialog][limits]") {
    DialogConfig config;
    config.max_dialogs = 100;
    Harness v4(config);
    Harness v6(config);
    constexpr std::string_view kCaller6 = "[2001:db8::1]:5060";
    constexpr std::string_view kCallee6 = "[2001:db8::2]:5062";
    Sip invite;
    std::size_t v6_at_200 = 0;
    for (int i = 0; i < 1000; ++i) {
        invite.call_id = "v6-" + std::to_string(10'000 + i);
        REQUIRE(v4.send(invite, A, B, ms(i)) == Disposition::dialog_created);
        REQUIRE(v6.send(invite, kCaller6, kCallee6, ms(i)) == Disposition::dialog_created);
        if (i == 199) v6_at_200 = v6.table.memory_bytes();
    }
    const Dialog* d = v6.table.find("v6-10999", "caller-tag");
    REQUIRE(d != nullptr);
    CHECK(d->caller() == ep(kCaller6));
    CHECK(d->callee() == ep(kCallee6));
    CHECK(d->callee_side() == ep(kCallee6));
    // The same dialogs over IPv4 hold none of it; evictions give it back.
    CHECK(v6.table.memory_bytes() - v4.table.memory_bytes() == 100 * d->endpoint_heap_bytes());
    CHECK(d->endpoint_heap_bytes() > 0);
    CHECK(v6.table.memory_bytes() == v6_at_200);

    for (Harness* h : {&v4, &v6}) h->table.expire(ms(999 + 64'000));
    CHECK(v6.table.size() == 0);
    CHECK(v6.table.memory_bytes() == v4.table.memory_bytes());
}

TEST_CASE("limits: eviction takes an ended dialog before an open one, and finished records count once",
          "[sip][dialog][limits]") {
    DialogConfig config;
    config.max_dialogs = 2;
    Harness h(config);
    Sip one;
    one.call_id = "one";
    Sip two = one;
    two.call_id = "two";
    Sip three = one;
    three.call_id = "three";
    h.send(one, A, B, ms(0));
    h.send(two, A, B, ms(1));
    h.send(one.with_to_tag("t").resp(486), B, A, ms(2));  // "one" finished, and now the most recent
    h.send(three, A, B, ms(3));  // evicts "one" (finished, lingering: an eviction, not a second outcome)
    CHECK(h.table.find("one", "caller-tag") == nullptr);
    CHECK(h.table.find("two", "caller-tag") != nullptr);
    CHECK(h.stats().finished(DialogOutcome::evicted) == 0);
    Sip four = one;
    four.call_id = "four";
    h.send(four, A, B, ms(4));  // evicts "two", the least recently active open one
    CHECK(h.table.find("two", "caller-tag") == nullptr);
    CHECK(h.table.find("three", "caller-tag") != nullptr);
    CHECK(h.stats().dialog_evictions_total() == 2);
    CHECK(h.stats().evicted(DialogState::failed) == 1);
    CHECK(h.stats().evicted(DialogState::trying) == 1);
    CHECK(h.stats().finished(DialogOutcome::evicted) == 1);
    CHECK(h.stats().finished(DialogOutcome::failed) == 1);
    CHECK(h.stats().in_state(DialogState::failed) == 0);
    CHECK(h.stats().in_state(DialogState::trying) == 2);
}

namespace {

// A call answered and acknowledged at `t` ms: confirmed, then silent until its BYE.
void confirmed_call(Harness& h, const std::string& call_id, std::int64_t t) {
    Sip invite;
    invite.call_id = call_id;
    REQUIRE(h.send(invite, A, B, ms(t)) == Disposition::dialog_created);
    h.send(invite.with_to_tag("t").resp(200), B, A, ms(t + 1));
    h.send(invite.with_to_tag("t").req("ACK", "z9hG4bK-ack", 1), A, B, ms(t + 2));
    REQUIRE(h.dialog(call_id) != nullptr);
    REQUIRE(h.dialog(call_id)->state == DialogState::confirmed);
}

// One unique INVITE nobody answers, as a SIP scanner sends them.
void scan(Harness& h, int i, std::int64_t t) {
    Sip invite;
    invite.call_id = "scan-" + std::to_string(i) + "@203.0.113.7";
    invite.from_tag = "s" + std::to_string(i);
    REQUIRE(h.send(invite, "203.0.113.7:5070", B, ms(t)) == Disposition::dialog_created);
}

}  // namespace

TEST_CASE("catalogue: a flood of unanswered INVITEs evicts ended and unanswered dialogs, not confirmed calls",
          "[sip][dialog][limits][catalogue]") {
    DialogConfig config;
    config.max_dialogs = 100;
    Harness h(config);
    // 40 calls up, and 10 refused calls lingering after their end.
    for (std::int64_t c = 0; c < 40; ++c) confirmed_call(h, "call-" + std::to_string(c), c * 10);
    for (int c = 0; c < 10; ++c) {
        Sip refused;
        refused.call_id = "refused-" + std::to_string(c);
        h.send(refused, A, B, ms(500 + c));
        h.send(refused.with_to_tag("r").resp(486), B, A, ms(501 + c));
    }
    REQUIRE(h.stats().in_state(DialogState::failed) == 10);

    // A scanner's flood, a hundred times the table, within the INVITE timeout: the confirmed
    // calls are the least recently active records of the table all along.
    constexpr int kFlood = 10'000;
    for (int i = 0; i < kFlood; ++i) scan(h, i, 1'000 + i / 1'000);
    CHECK(h.table.size() == 100);
    CHECK(h.stats().in_state(DialogState::confirmed) == 40);
    CHECK(h.stats().in_state(DialogState::trying) == 60);
    CHECK(h.stats().evicted(DialogState::failed) == 10);  // the lingering went first
    CHECK(h.stats().evicted(DialogState::trying) == kFlood - 60);
    CHECK(h.stats().evicted(DialogState::confirmed) == 0);
    CHECK(h.stats().dialog_evictions_total() == kFlood - 50);
    CHECK(h.stats().finished(DialogOutcome::evicted) == kFlood - 60);
    // The newest unanswered ones stay, oldest first out.
    CHECK(h.table.find("scan-9999@203.0.113.7", "s9999") != nullptr);
    CHECK(h.table.find("scan-9940@203.0.113.7", "s9940") != nullptr);
    CHECK(h.table.find("scan-9939@203.0.113.7", "s9939") == nullptr);

    // The oldest call's BYE finds it: the call completes with its duration.
    Sip bye;
    bye.call_id = "call-0";
    CHECK(h.send(bye.with_to_tag("t").req("BYE", "z9hG4bK-bye", 2), A, B, ms(60'000)) == Disposition::dialog_updated);
    CHECK(h.stats().anomaly(DialogAnomaly::bye_unknown_dialog) == 0);
    CHECK(h.stats().finished(DialogOutcome::completed) == 1);
    REQUIRE(h.dialog("call-0") != nullptr);
    CHECK(h.dialog("call-0")->state == DialogState::terminated);
    CHECK(h.dialog("call-0")->duration_us() == std::int64_t{60'000 - 1} * 1'000);
    CHECK(h.stats().duration.count() == 1);

    // Ended, it goes before the unanswered: the next INVITE evicts it, not a scan.
    scan(h, kFlood, 60'001);
    CHECK(h.dialog("call-0") == nullptr);
    CHECK(h.stats().evicted(DialogState::terminated) == 1);
    CHECK(h.table.find("scan-9940@203.0.113.7", "s9940") != nullptr);

    // A table of confirmed calls only still takes new INVITEs: the oldest call goes (bounded).
    h.table.expire(ms(60'001 + 31'000));  // the scans time out and linger; their linger ends
    h.table.expire(ms(60'001 + 64'000));
    REQUIRE(h.stats().in_state(DialogState::trying) == 0);
    REQUIRE(h.table.size() == 39);
    for (std::int64_t c = 40; c < 101; ++c) confirmed_call(h, "call-" + std::to_string(c), 130'000 + c * 10);
    CHECK(h.table.size() == 100);
    CHECK(h.stats().evicted(DialogState::confirmed) == 0);
    scan(h, kFlood + 1, 140'000);
    CHECK(h.table.size() == 100);
    CHECK(h.stats().evicted(DialogState::confirmed) == 1);
    CHECK(h.dialog("call-1") == nullptr);  // the least recently active call
    CHECK(h.dialog("call-2") != nullptr);
    CHECK(h.stats().finished(DialogOutcome::evicted) == kFlood - 60 + 1);
}

TEST_CASE("limits: a call ringing outlives a flood of INVITEs a proxy answers with 100 Trying",
          "[sip][dialog][limits]") {
    DialogConfig config;
    config.max_dialogs = 50;
    Harness h(config);
    const auto ringing_call = [&](const std::string& call_id, std::int64_t t) {
        Sip invite;
        invite.call_id = call_id;
        REQUIRE(h.send(invite, A, B, ms(t)) == Disposition::dialog_created);
        h.send(invite.resp(100), B, A, ms(t + 1));
        h.send(invite.with_to_tag("t").resp(180), B, A, ms(t + 2));
        REQUIRE(h.dialog(call_id)->state == DialogState::early);
    };
    for (std::int64_t c = 0; c < 10; ++c) confirmed_call(h, "call-" + std::to_string(c), c * 10);
    for (std::int64_t c = 0; c < 10; ++c) ringing_call("ringing-" + std::to_string(c), 200 + c * 10);
    // The scanner's INVITEs reach a proxy, which sends each its 100 Trying: hop by hop, not a
    // phone ringing.
    constexpr int kFlood = 5'000;
    for (int i = 0; i < kFlood; ++i) {
        scan(h, i, 1'000 + i / 100);
        Sip invite;
        invite.call_id = "scan-" + std::to_string(i) + "@203.0.113.7";
        invite.from_tag = "s" + std::to_string(i);
        h.send(invite.resp(100), B, "203.0.113.7:5070", ms(1'000 + i / 100));
    }
    CHECK(h.table.size() == 50);
    CHECK(h.stats().in_state(DialogState::early) == 10);
    CHECK(h.stats().in_state(DialogState::confirmed) == 10);
    CHECK(h.stats().evicted(DialogState::proceeding) == kFlood - 30);
    CHECK(h.stats().evicted(DialogState::early) == 0);
    // Answered, each ringing call goes on with its setup time measured.
    for (int c = 0; c < 10; ++c) {
        Sip invite;
        invite.call_id = "ringing-" + std::to_string(c);
        CHECK(h.send(invite.with_to_tag("t").resp(200), B, A, ms(2'000)) == Disposition::dialog_updated);
        REQUIRE(h.dialog(invite.call_id) != nullptr);
        CHECK(h.dialog(invite.call_id)->state == DialogState::confirmed);
    }
    CHECK(h.stats().in_state(DialogState::confirmed) == 20);

    // With no dialog unanswered left, a ringing call goes before a confirmed one.
    // The scans time out (after a 100, Timer C's three minutes) and linger; their linger ends.
    h.table.expire(ms(200'000));
    h.table.expire(ms(240'000));
    REQUIRE(h.table.size() == 20);
    for (std::int64_t c = 10; c < 40; ++c) ringing_call("ringing-" + std::to_string(c), 250'000 + c * 10);
    REQUIRE(h.table.size() == 50);
    scan(h, kFlood, 260'000);
    CHECK(h.stats().evicted(DialogState::early) == 1);
    CHECK(h.stats().evicted(DialogState::confirmed) == 0);
    CHECK(h.dialog("ringing-10") == nullptr);  // the least recently active ringing call
    CHECK(h.dialog("ringing-11") != nullptr);
}

TEST_CASE("limits: restored dialogs keep their eviction class", "[sip][dialog][limits]") {
    DialogConfig config;
    config.max_dialogs = 20;
    Harness h(config);
    for (std::int64_t c = 0; c < 5; ++c) confirmed_call(h, "call-" + std::to_string(c), c * 10);
    for (int i = 0; i < 15; ++i) scan(h, i, 100 + i);
    // A snapshot walks them in eviction order and a restore inserts them in that order.
    Harness restored(config);
    h.table.for_each_in_full(
        [&](std::string_view call_id, std::string_view from_tag, const Dialog& d, const SdpSides& sides,
            const CallerIdentity& caller) { REQUIRE(restored.table.restore(call_id, from_tag, d, sides, caller)); });
    std::vector<std::string> order;
    restored.table.for_each(
        [&](std::string_view call_id, std::string_view, const Dialog&) { order.emplace_back(call_id); });
    REQUIRE(order.size() == 20);
    CHECK(order.front() == "scan-0@203.0.113.7");
    CHECK(order[14] == "scan-14@203.0.113.7");
    CHECK(order[15] == "call-0");
    CHECK(order.back() == "call-4");
    for (int i = 15; i < 40; ++i) scan(restored, i, 200 + i);
    CHECK(restored.stats().in_state(DialogState::confirmed) == 5);
    CHECK(restored.stats().evicted(DialogState::confirmed) == 0);
    CHECK(restored.table.find("scan-24@203.0.113.7", "s24") == nullptr);
    CHECK(restored.table.find("scan-25@203.0.113.7", "s25") != nullptr);
}

TEST_CASE("limits: garbage is counted by reason and stored nowhere", "[sip][dialog][limits]") {
    Harness h;
    const Sip invite;
    const Sip tagged = invite.with_to_tag("tt");

    Sip no_tag = invite;
    no_tag.from_tag.clear();
    CHECK(h.send(no_tag, A, B, ms(0)) == Disposition::anomaly);
    CHECK(anomaly(h, DialogAnomaly::invite_without_from_tag) == 1);

    CHECK(h.send(tagged.req("BYE", "z9hG4bK-1", 2), A, B, ms(1)) == Disposition::anomaly);
    CHECK(anomaly(h, DialogAnomaly::bye_unknown_dialog) == 1);
    CHECK(h.send(tagged.req("ACK", "z9hG4bK-2", 1), A, B, ms(2)) == Disposition::anomaly);
    CHECK(anomaly(h, DialogAnomaly::ack_unknown_dialog) == 1);
    CHECK(h.send(invite.req("CANCEL", "z9hG4bK-3", 1), A, B, ms(3)) == Disposition::anomaly);
    CHECK(anomaly(h, DialogAnomaly::cancel_unknown_dialog) == 1);
    CHECK(h.send(tagged.req("PRACK", "z9hG4bK-4", 2), A, B, ms(4)) == Disposition::anomaly);
    CHECK(h.send(tagged.req("UPDATE", "z9hG4bK-5", 3), A, B, ms(5)) == Disposition::anomaly);
    CHECK(anomaly(h, DialogAnomaly::in_dialog_unknown_dialog) == 2);
    CHECK(h.send(tagged.req("INVITE", "z9hG4bK-6", 4), A, B, ms(6)) == Disposition::anomaly);
    CHECK(anomaly(h, DialogAnomaly::reinvite_unknown_dialog) == 1);
    CHECK(h.send(tagged.resp(200), B, A, ms(7)) == Disposition::anomaly);
    CHECK(h.send(tagged.req("BYE", "z9hG4bK-1", 2).resp(200), B, A, ms(8)) == Disposition::anomaly);
    CHECK(anomaly(h, DialogAnomaly::response_unknown_dialog) == 2);
    CHECK(h.send(tagged.req("OPTIONS", "z9hG4bK-7", 9).resp(200), B, A, ms(9)) == Disposition::anomaly);
    CHECK(anomaly(h, DialogAnomaly::response_unknown_transaction) == 1);

    Sip long_id = invite;
    long_id.call_id = std::string(kMaxCallIdSize + 1, 'x');
    CHECK(h.send(long_id, A, B, ms(10)) == Disposition::anomaly);
    Sip long_tag = invite;
    long_tag.from_tag = std::string(kMaxTagSize + 1, 'y');
    CHECK(h.send(long_tag, A, B, ms(11)) == Disposition::anomaly);
    CHECK(anomaly(h, DialogAnomaly::key_too_long) == 2);
    // At the limits exactly, accepted.
    Sip max_key = invite;
    max_key.call_id = std::string(kMaxCallIdSize, 'x');
    max_key.from_tag = std::string(kMaxTagSize, 'y');
    CHECK(h.send(max_key, A, B, ms(12)) == Disposition::dialog_created);
    CHECK(h.table.find(max_key.call_id, max_key.from_tag) != nullptr);

    CHECK(h.table.size() == 1);
    CHECK(h.table.transactions().size() == 0);
    CHECK(h.stats().dialogs_created.value() == 1);

    CHECK(h.table.process(std::string_view("not sip at all\r\n\r\n"), PacketMeta{}) == Disposition::parse_error);
    CHECK(h.table.process(std::string_view(""), PacketMeta{}) == Disposition::parse_error);
    CHECK(h.stats().parse_errors[static_cast<std::size_t>(ParseError::bad_start_line)].value() == 1);
    CHECK(h.stats().parse_errors[static_cast<std::size_t>(ParseError::empty)].value() == 1);

    // An out-of-range agent index is counted as agent 0 ("other").
    PacketMeta meta;
    meta.agent = 999;
    meta.time = ms(20);
    CHECK(h.table.process(tagged.req("OPTIONS", "z9hG4bK-8", 10).text(), meta) == Disposition::transaction_created);
    CHECK(requests(h.stats(), Method::options, 0) == 1);
}

TEST_CASE("limits: a new INVITE attempt after the end is counted, not applied", "[sip][dialog][limits]") {
    Harness h;
    const Sip invite;
    h.send(invite, A, B, ms(0));
    h.send(invite.with_to_tag("t").resp(404), B, A, ms(10));
    CHECK(h.send(invite.req("INVITE", "z9hG4bK-x", 2), A, B, ms(20)) == Disposition::dialog_updated);
    CHECK(anomaly(h, DialogAnomaly::invite_after_end) == 1);
    CHECK(h.dialog()->state == DialogState::failed);
    CHECK(h.dialog()->invite_cseq == 1);
}

TEST_CASE("limits: agents' clocks disagreeing give 0, counted, never a negative interval", "[sip][dialog][limits]") {
    Harness h;
    const Sip invite;
    h.send(invite, A, B, ms(1000));
    h.send(invite.with_to_tag("t").resp(180), B, A, ms(900));  // stamped by an agent 100 ms behind
    CHECK(h.stats().pdd.count() == 1);
    CHECK(h.stats().pdd.sum() == 0.0);
    CHECK(anomaly(h, DialogAnomaly::clock_skew) == 1);
}

TEST_CASE("limits: hostile bytes: every truncation and random corruption of a real call", "[sip][dialog][limits]") {
    DialogConfig config;
    config.max_dialogs = 64;
    config.max_transactions = 64;
    Harness h(config);
    std::mt19937 rng(12345);
    const auto call = proxied_call("hostile-call@example.net");
    std::int64_t t = 0;
    std::size_t parsed = 0;
    for (const auto& [sip, hop] : call) {
        const std::string text = sip.text();
        PacketMeta meta;
        meta.src = ep(hop.first);
        meta.dst = ep(hop.second);
        for (std::size_t n = 0; n <= text.size(); ++n) {
            meta.time = ms(++t);
            // A copy sized exactly n, so that ASan sees any read past the end.
            const std::string cut = text.substr(0, n);
            if (h.table.process(cut, meta) != Disposition::parse_error) ++parsed;
        }
        for (int k = 0; k < 300; ++k) {
            std::string bad = text;
            const int flips = 1 + static_cast<int>(rng() % 8);
            for (int f = 0; f < flips; ++f) {
                const std::size_t at = rng() % bad.size();
                bad[at] = static_cast<char>(rng() % 256);
            }
            meta.time = ms(++t);
            (void)h.table.process(bad, meta);
        }
        if (t % 1000 == 0) h.table.expire(ms(t));
    }
    CHECK(parsed > 0);
    CHECK(h.table.size() <= 64);
    CHECK(h.table.transactions().size() <= 64);
    CHECK(h.gauge_sum() == static_cast<std::int64_t>(h.table.size()));
    h.table.expire(ms(t + 10LL * 3600 * 1000));
    h.table.expire(ms(t + 20LL * 3600 * 1000));
    CHECK(h.table.size() == 0);
    CHECK(h.table.transactions().size() == 0);
    CHECK(h.all_gauges_zero());
}

TEST_CASE("limits: gauges are exact through a mix of outcomes and return to zero", "[sip][dialog][limits]") {
    Harness h;
    for (int i = 0; i < 20; ++i) {
        const auto call = proxied_call("mix-" + std::to_string(i));
        // Calls 0-4 complete, 5-9 stop after the 180 (time out), 10-14 are rejected, 15-19 stay
        // answered until the call cap.
        const std::size_t steps = i < 5 ? call.size() : i < 10 ? 5 : i < 15 ? 3 : 8;
        for (std::size_t k = 0; k < steps; ++k)
            h.send(call[k].first, call[k].second.first, call[k].second.second, ms(i * 100 + static_cast<int>(k)));
        if (i >= 10 && i < 15) {
            Sip a = call[0].first;
            h.send(a.with_to_tag("t").resp(500), P, A, ms(i * 100 + 10));
        }
        CHECK(h.gauge_sum() == static_cast<std::int64_t>(h.table.size()));
    }
    CHECK(h.stats().in_state(DialogState::terminated) == 5);
    CHECK(h.stats().in_state(DialogState::early) == 5);
    CHECK(h.stats().in_state(DialogState::failed) == 5);
    CHECK(h.stats().in_state(DialogState::confirmed) == 5);
    CHECK(h.table.active_count() == 10);
    std::size_t active = 0;
    h.table.for_each_active([&](std::string_view, std::string_view, const Dialog& d) {
        CHECK_FALSE(d.finished());
        ++active;
    });
    CHECK(active == 10);

    h.table.expire(ms(3 * 60'000 + 2000));  // Timer C of the ringing ones; the lingers are over too
    CHECK(h.stats().in_state(DialogState::early) == 0);
    CHECK(h.stats().in_state(DialogState::timed_out) == 5);
    CHECK(h.stats().in_state(DialogState::terminated) == 0);
    CHECK(h.stats().in_state(DialogState::confirmed) == 5);
    h.table.expire(ms(5LL * 3600 * 1000));
    h.table.expire(ms(6LL * 3600 * 1000));
    CHECK(h.table.size() == 0);
    CHECK(h.all_gauges_zero());
    CHECK(h.stats().finished(DialogOutcome::completed) == 5);
    CHECK(h.stats().finished(DialogOutcome::failed) == 5);
    CHECK(h.stats().finished(DialogOutcome::timed_out) == 10);
    CHECK(h.stats().dialogs_created.value() == 20);
}

TEST_CASE("limits: records survive a snapshot round trip through for_each and restore", "[sip][dialog][limits]") {
    Harness h;
    for (int i = 0; i < 3; ++i) {
        const auto call = proxied_call("snap-" + std::to_string(i));
        for (std::size_t k = 0; k < 7 + static_cast<std::size_t>(i); ++k)
            h.send(call[k].first, call[k].second.first, call[k].second.second, ms(i * 100 + static_cast<int>(k)));
    }
    Sip options;
    options.method = "OPTIONS";
    options.call_id = "snap-options";
    h.send(options, A, P, ms(400));

    Harness restored;
    h.table.for_each([&](std::string_view call_id, std::string_view from_tag, const Dialog& d) {
        CHECK(restored.table.restore(call_id, from_tag, d));
        CHECK_FALSE(restored.table.restore(call_id, from_tag, d));  // present already
    });
    h.table.transactions().for_each(
        [&](const TransactionKey& key, const Transaction& t) { CHECK(restored.table.transactions().restore(key, t)); });
    CHECK(restored.table.size() == 3);
    CHECK(restored.table.transactions().size() == 1);
    CHECK(restored.stats().dialogs_created.value() == 0);
    for (std::size_t s = 0; s < kDialogStateCount; ++s)
        CHECK(restored.stats().dialogs_by_state[s].value() == h.stats().dialogs_by_state[s].value());
    CHECK(restored.stats().transactions_pending.value() == 1);
    const Dialog* a = h.table.find("snap-2", "caller-tag");
    const Dialog* b = restored.table.find("snap-2", "caller-tag");
    REQUIRE(a != nullptr);
    REQUIRE(b != nullptr);
    CHECK(*a == *b);
    CHECK(b->state == DialogState::terminated);
    CHECK(b->hop_count == 2);
    const Transaction* ta = h.table.transactions().find("snap-options", 1, Method::options);
    const Transaction* tb = restored.table.transactions().find("snap-options", 1, Method::options);
    REQUIRE(ta != nullptr);
    REQUIRE(tb != nullptr);
    CHECK(*ta == *tb);

    // The restored table carries on: the retransmission memory came along.
    const auto call = proxied_call("snap-2");
    CHECK(restored.send(call[8].first, A, P, ms(500)) == Disposition::retransmission);  // the BYE again
    CHECK(restored.send(call[9].first, P, B, ms(600)) == Disposition::dialog_updated);  // relayed BYE
    CHECK(restored.table.find("snap-2", "caller-tag")->retransmissions == 1);
    CHECK(restored.stats().finished(DialogOutcome::completed) == 0);  // it finished before the snapshot

    CHECK_FALSE(restored.table.restore(std::string(kMaxCallIdSize + 1, 'x'), "t", Dialog{}));
    CHECK_FALSE(restored.table.restore("x", "", Dialog{}));
}

TEST_CASE("limits: shard statistics merge by addition", "[sip][dialog][limits]") {
    Harness one;
    Harness two;
    for (const auto& [sip, hop] : proxied_call("m-1")) one.send(sip, hop.first, hop.second, ms(0));
    for (const auto& [sip, hop] : proxied_call("m-2")) two.send(sip, hop.first, hop.second, ms(0));
    two.send(Sip{}.with_branch("z9hG4bK-solo"), A, B, ms(1));  // call-1, still open

    DialogStats total;
    total.merge(one.stats());
    total.merge(two.stats());
    CHECK(total.dialogs_created.value() == 3);
    CHECK(total.finished(DialogOutcome::completed) == 2);
    CHECK(total.in_state(DialogState::terminated) == 2);
    CHECK(total.in_state(DialogState::trying) == 1);
    CHECK(requests(total, Method::invite) == 5);
    CHECK(responses(total, Method::invite, 2) == 4);
    CHECK(total.pdd.count() == 2);
    CHECK(total.setup.count() == 2);
    CHECK(total.duration.count() == 2);
    CHECK(total.media_bindings.value() == 2 * 6);  // two INVITEs, two 200s each paired back, per call
    CHECK(total.pdd.bounds() == kPddBuckets);
}

TEST_CASE("limits: a dialog key holds its Call-ID and From-tag exactly, clamped to the limits",
          "[sip][dialog][limits]") {
    const DialogKey key("a84b4c76e66710@pc33.atlanta.example.com", "1928301774");
    CHECK(key.call_id() == "a84b4c76e66710@pc33.atlanta.example.com");
    CHECK(key.from_tag() == "1928301774");
    CHECK(key.heap_bytes() == 39 + 10);
    CHECK(sizeof(DialogKey) <= 16);

    DialogKey copy = key;  // the same block: the text never changes
    CHECK(copy.call_id() == key.call_id());
    CHECK(copy.from_tag() == key.from_tag());
    CHECK(copy.call_id_text().shares(key.call_id_text()));
    // The Call-ID alone, as the call's bindings hold it: the From-tag stays out of its view.
    const CompactText call_id = key.call_id_text();
    CHECK(call_id.view() == "a84b4c76e66710@pc33.atlanta.example.com");
    CHECK(call_id.heap_bytes() == 39);
    // The table places the key by the home it keeps (its hash's high half), copies included.
    const auto home_of = [](const DialogKey& k) { return static_cast<std::uint32_t>(DialogKeyHash{}(k) >> 32); };
    CHECK(key.home() == home_of(key));
    CHECK(copy.home() == key.home());
    CHECK(DialogKey(key.call_id(), "other-tag").home() != key.home());
    const DialogKey moved = std::move(copy);
    CHECK(moved.from_tag() == "1928301774");
    CHECK(moved.home() == key.home());

    const std::string long_call_id(kMaxCallIdSize + 10, 'c');
    const std::string long_tag(kMaxTagSize + 10, 't');
    const DialogKey clamped(long_call_id, long_tag);
    CHECK(clamped.call_id() == std::string_view(long_call_id).substr(0, kMaxCallIdSize));
    CHECK(clamped.from_tag() == std::string_view(long_tag).substr(0, kMaxTagSize));
    CHECK(clamped.home() == static_cast<std::uint32_t>(DialogKeyHash{}(clamped) >> 32));

    const DialogKey empty;
    CHECK(empty.call_id().empty());
    CHECK(empty.from_tag().empty());
    CHECK(empty.heap_bytes() == 0);
}

TEST_CASE("limits: a dialog's times read back exactly in whatever order they were set", "[sip][dialog][limits]") {
    const Timestamp invite{1'700'000'000'000'001};
    const Timestamp ringing{invite.us + 1'200'000};
    const Timestamp deadline{invite.us + 4LL * 3600 * 1'000'000};
    Dialog in_order;
    in_order.set_invite_time(invite);
    in_order.set_time(DialogTime::ringing, ringing);
    in_order.set_time(DialogTime::deadline, deadline);
    // Times before the INVITE's (a snapshot's fields), and the INVITE moved earlier (another hop).
    Dialog out_of_order;
    out_of_order.set_time(DialogTime::deadline, deadline);
    out_of_order.set_time(DialogTime::ringing, ringing);
    out_of_order.set_invite_time(Timestamp{invite.us + 5});
    out_of_order.set_invite_time(invite);
    for (const Dialog& d : {in_order, out_of_order}) {
        CHECK(d.invite_time() == invite);
        CHECK(d.time(DialogTime::ringing) == ringing);
        CHECK(d.time(DialogTime::deadline) == deadline);
        CHECK(d.time(DialogTime::answer) == Timestamp{});
        CHECK(d.pdd_us() == 1'200'000);
    }
    CHECK(in_order == out_of_order);
    out_of_order.set_time(DialogTime::ringing, Timestamp{});
    CHECK(out_of_order.time(DialogTime::ringing) == Timestamp{});
    CHECK_FALSE(in_order == out_of_order);
}

TEST_CASE("limits: a time more than 2^39 us from the INVITE's is clamped, never lost", "[sip][dialog][limits]") {
    constexpr std::int64_t kMaxOffset = (std::int64_t{1} << 39) - 1;  // about 6.36 days
    const Timestamp invite{1'700'000'000'000'001};
    Dialog d;
    d.set_invite_time(invite);
    d.set_time(DialogTime::trying, Timestamp{invite.us + kMaxOffset});
    d.set_time(DialogTime::ack, Timestamp{invite.us - kMaxOffset});
    d.set_time(DialogTime::bye, Timestamp{invite.us + 7LL * 24 * 3600 * 1'000'000});
    d.set_time(DialogTime::cancel, Timestamp{invite.us - 7LL * 24 * 3600 * 1'000'000});
    CHECK(d.time(DialogTime::trying).us == invite.us + kMaxOffset);
    CHECK(d.time(DialogTime::ack).us == invite.us - kMaxOffset);
    CHECK(d.time(DialogTime::bye).us == invite.us + kMaxOffset);
    CHECK(d.time(DialogTime::cancel).us == invite.us - kMaxOffset);
}
