// Call flows through the dialog table, written as SIP text with hand-picked packet times; every
// expected interval below is the difference of two of those times.
#include "dialog_test_util.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <memory>
#include <tuple>
#include <utility>
#include <vector>

using namespace hepd;
using namespace hepd::sip;
using namespace hepd::sip::test;

namespace {

const std::string kOffer = R"(v=0
o=alice 2890844526 2890844526 IN IP4 192.0.2.10
s=-
c=IN IP4 192.0.2.10
t=0 0
m=audio 49170 RTP/AVP 0 8 101
a=rtpmap:101 telephone-event/8000
)";

const std::string kAnswer = R"(v=0
o=bob 1 1 IN IP4 198.51.100.20
s=-
c=IN IP4 198.51.100.20
t=0 0
m=audio 3456 RTP/AVP 8
a=rtpmap:8 PCMA/8000
)";

constexpr std::int64_t kSecond = 1'000'000;

}  // namespace

TEST_CASE("dialog: a normal call, timed to the microsecond", "[sip][dialog]") {
    Harness h;
    const Sip invite = Sip{}.with_extra("User-Agent: TestPhone/1.0\r\n").with_body(kOffer);
    const Sip answered = invite.with_to_tag("callee-tag");

    CHECK(h.send(invite, A, B, ms(0)) == Disposition::dialog_created);
    CHECK(h.stats().in_state(DialogState::trying) == 1);
    CHECK(h.send(invite.resp(100), B, A, ms(40)) == Disposition::dialog_updated);
    CHECK(h.stats().in_state(DialogState::proceeding) == 1);
    CHECK(h.send(answered.resp(180), B, A, ms(1200)) == Disposition::dialog_updated);
    CHECK(h.stats().in_state(DialogState::early) == 1);
    CHECK(h.send(answered.resp(200).with_body(kAnswer), B, A, ms(6200)) == Disposition::dialog_updated);
    CHECK(h.stats().in_state(DialogState::confirmed) == 1);
    CHECK(h.table.active_count() == 1);
    CHECK(h.send(answered.req("ACK", "z9hG4bK-a2", 1), A, B, ms(6250)) == Disposition::dialog_updated);
    const Sip bye = answered.req("BYE", "z9hG4bK-a3", 2);
    CHECK(h.send(bye, A, B, ms(66200)) == Disposition::dialog_updated);
    CHECK(h.send(bye.resp(200), B, A, ms(66260)) == Disposition::dialog_updated);

    REQUIRE(h.table.size() == 1);
    const Dialog* d = h.dialog();
    REQUIRE(d != nullptr);
    CHECK(d->state == DialogState::terminated);
    CHECK(d->outcome() == DialogOutcome::completed);
    CHECK(d->invite_time() == ms(0));
    CHECK(d->time(DialogTime::trying) == ms(40));
    CHECK(d->time(DialogTime::ringing) == ms(1200));
    CHECK(d->time(DialogTime::answer) == ms(6200));
    CHECK(d->time(DialogTime::ack) == ms(6250));
    CHECK(d->time(DialogTime::cancel) == Timestamp{});
    CHECK(d->time(DialogTime::bye) == ms(66200));
    CHECK(d->time(DialogTime::bye_answer) == ms(66260));
    CHECK(d->time(DialogTime::end) == ms(66200));
    CHECK(d->time(DialogTime::last_activity) == ms(66260));
    CHECK(d->time(DialogTime::deadline) == ms(66200 + 32'000));  // the linger
    CHECK(d->pdd_us() == 1'200'000);
    CHECK(d->setup_us() == 6'200'000);
    CHECK(d->duration_us() == 60'000'000);
    CHECK(d->final_status == 200);
    CHECK(d->bye_status == 200);
    CHECK(d->pending_status == 0);
    CHECK(d->q850_cause == kNoCause);
    CHECK(d->hangup == Party::caller);
    CHECK(d->caller() == ep(A));
    CHECK(d->callee() == ep(B));
    CHECK(d->hop_count == 1);
    CHECK(d->fork_count == 1);
    CHECK(d->confirmed_tag == tag_id("callee-tag"));
    CHECK(d->retransmissions == 0);
    CHECK(d->reinvites == 0);
    CHECK(d->invite_cseq == 1);
    CHECK(d->agent == 1);
    CHECK_FALSE(d->cancel_seen);
    CHECK(h.table.caller_identity("call-1@example.net", "caller-tag").user_agent_view() == "TestPhone/1.0");

    const DialogStats& s = h.stats();
    CHECK(s.dialogs_created.value() == 1);
    CHECK(s.finished(DialogOutcome::completed) == 1);
    CHECK(s.finished(DialogOutcome::failed) == 0);
    CHECK(s.in_state(DialogState::terminated) == 1);
    CHECK(h.gauge_sum() == 1);
    CHECK(h.table.active_count() == 0);
    // PDD 1.2 s falls in the (1, 2] bucket (index 4), setup 6.2 s in (5, 10] (index 6), duration
    // 60 s in (30, 60] (index 4).
    CHECK(s.pdd.count() == 1);
    CHECK(s.pdd.bucket(4) == 1);
    CHECK(s.pdd.sum() == Approx(1.2));
    CHECK(s.setup.count() == 1);
    CHECK(s.setup.bucket(6) == 1);
    CHECK(s.setup.sum() == Approx(6.2));
    CHECK(s.duration.count() == 1);
    CHECK(s.duration.bucket(4) == 1);
    CHECK(s.duration.sum() == Approx(60.0));
    CHECK(requests(s, Method::invite) == 1);
    CHECK(requests(s, Method::ack) == 1);
    CHECK(requests(s, Method::bye) == 1);
    CHECK(responses(s, Method::invite, 1) == 2);
    CHECK(responses(s, Method::invite, 2) == 1);
    CHECK(responses(s, Method::bye, 2) == 1);
    CHECK(responses(s, Method::invite, 4) == 0);
    CHECK(requests(s, Method::invite, 0) == 0);  // counted under agent 1 only
    CHECK(s.media_bindings.value() == 3);        // offer, answer, and the offer paired with the answer
    for (const auto& c : s.anomalies) CHECK(c.value() == 0);

    SECTION("the record retires after the linger and every gauge returns to zero") {
        h.table.expire(ms(66200 + 31'000));
        CHECK(h.table.size() == 1);
        h.table.expire(ms(66200 + 32'000));
        CHECK(h.table.size() == 0);
        CHECK(h.all_gauges_zero());
        CHECK(s.finished(DialogOutcome::completed) == 1);  // retiring is not a second outcome
    }
    SECTION("a late BYE retransmission inside the linger is counted, not re-created") {
        CHECK(h.send(bye, A, B, ms(67000)) == Disposition::retransmission);
        CHECK(h.dialog()->retransmissions == 1);
        CHECK(retransmissions(s, Method::bye) == 1);
        CHECK(s.dialogs_created.value() == 1);
        CHECK(h.dialog()->time(DialogTime::bye) == ms(66200));
    }
}

TEST_CASE("dialog: a call relayed by a proxy is one dialog on two hops", "[sip][dialog]") {
    Harness h;
    const Sip inv_a = Sip{};                            // caller -> proxy
    const Sip inv_p = inv_a.with_branch("z9hG4bK-p1");  // proxy -> callee
    const Sip ok_a = inv_a.with_to_tag("tt");
    const Sip ok_p = inv_p.with_to_tag("tt");

    CHECK(h.send(inv_a, A, P, ms(0)) == Disposition::dialog_created);
    CHECK(h.send(inv_a.resp(100), P, A, ms(2)) == Disposition::dialog_updated);
    CHECK(h.send(inv_p, P, B, ms(3)) == Disposition::dialog_updated);    // relayed: not a retransmission
    CHECK(h.send(inv_a, A, P, ms(500)) == Disposition::retransmission);  // Timer A on the caller's hop
    CHECK(h.send(ok_p.resp(180), B, P, ms(900)) == Disposition::dialog_updated);
    CHECK(h.send(ok_a.resp(180), P, A, ms(901)) == Disposition::dialog_updated);
    CHECK(h.send(ok_p.resp(200), B, P, ms(5000)) == Disposition::dialog_updated);
    CHECK(h.send(ok_a.resp(200), P, A, ms(5001)) == Disposition::dialog_updated);
    CHECK(h.send(ok_a.req("ACK", "z9hG4bK-a2", 1), A, P, ms(5002)) == Disposition::dialog_updated);
    CHECK(h.send(ok_p.req("ACK", "z9hG4bK-p2", 1), P, B, ms(5003)) == Disposition::dialog_updated);
    CHECK(h.send(ok_p.resp(200), B, P, ms(5500)) == Disposition::retransmission);  // 2xx retransmitted
    // A re-INVITE relayed on both hops is one re-INVITE.
    CHECK(h.send(ok_a.req("INVITE", "z9hG4bK-a4", 2), A, P, ms(20000)) == Disposition::dialog_updated);
    CHECK(h.send(ok_p.req("INVITE", "z9hG4bK-p4", 2), P, B, ms(20001)) == Disposition::dialog_updated);
    CHECK(h.send(ok_a.req("BYE", "z9hG4bK-a3", 3), A, P, ms(35000)) == Disposition::dialog_updated);
    CHECK(h.send(ok_p.req("BYE", "z9hG4bK-p3", 3), P, B, ms(35001)) == Disposition::dialog_updated);
    CHECK(h.send(ok_p.req("BYE", "z9hG4bK-p3", 3).resp(200), B, P, ms(35002)) == Disposition::dialog_updated);
    CHECK(h.send(ok_a.req("BYE", "z9hG4bK-a3", 3).resp(200), P, A, ms(35003)) == Disposition::dialog_updated);

    REQUIRE(h.table.size() == 1);
    const Dialog* d = h.dialog();
    REQUIRE(d != nullptr);
    CHECK(d->state == DialogState::terminated);
    CHECK(d->hop_count == 2);
    CHECK(d->caller() == ep(A));
    CHECK(d->callee() == ep(P));  // the first hop
    CHECK(d->retransmissions == 2);
    CHECK(d->reinvites == 1);
    CHECK(d->pdd_us() == 900'000);
    CHECK(d->setup_us() == 5'000'000);
    CHECK(d->duration_us() == 30'000'000);
    CHECK(d->time(DialogTime::trying) == ms(2));
    CHECK(d->time(DialogTime::ack) == ms(5002));
    CHECK(d->time(DialogTime::bye_answer) == ms(35002));
    CHECK(d->fork_count == 1);
    CHECK(retransmissions(h.stats(), Method::invite) == 2);
    CHECK(retransmissions(h.stats(), Method::bye) == 0);
    CHECK(h.stats().reinvites.value() == 1);
    CHECK(h.stats().dialogs_created.value() == 1);
    CHECK(h.stats().finished(DialogOutcome::completed) == 1);
    CHECK(h.stats().pdd.count() == 1);
    CHECK(h.stats().setup.count() == 1);
    CHECK(requests(h.stats(), Method::invite) == 5);  // wire counts: retransmissions included
}

TEST_CASE("dialog: identical bytes are a retransmission only on the same hop and direction", "[sip][dialog]") {
    Harness h;
    const Sip invite;
    CHECK(h.send(invite, A, P, ms(0)) == Disposition::dialog_created);
    CHECK(h.send(invite, P, B, ms(1)) == Disposition::dialog_updated);  // mirrored on the next hop
    CHECK(h.send(invite, B, P, ms(2)) == Disposition::dialog_updated);  // same hop, other way
    CHECK(h.send(invite, P, B, ms(3)) == Disposition::retransmission);  // same hop, same way
    CHECK(h.send(invite, A, P, ms(4)) == Disposition::retransmission);
    CHECK(h.dialog()->hop_count == 2);
    CHECK(h.dialog()->retransmissions == 2);
    CHECK(h.dialog()->invite_time() == ms(0));
}

TEST_CASE("dialog: busy (486) with a Q.850 cause fails the call", "[sip][dialog]") {
    Harness h;
    const Sip invite;
    const Sip tagged = invite.with_to_tag("tt");
    h.send(invite, A, B, ms(0));
    h.send(invite.resp(100), B, A, ms(30));
    h.send(tagged.resp(180), B, A, ms(500));
    CHECK(h.send(tagged.resp(486).with_extra("Reason: Q.850;cause=17;text=\"User busy\"\r\n"), B, A, ms(3000)) ==
          Disposition::dialog_updated);
    const Sip ack = tagged.req("ACK", "z9hG4bK-a1", 1);  // ACK of a failure: the INVITE's branch
    CHECK(h.send(ack, A, B, ms(3010)) == Disposition::dialog_updated);
    CHECK(h.send(ack, A, B, ms(3510)) == Disposition::retransmission);

    const Dialog* d = h.dialog();
    REQUIRE(d != nullptr);
    CHECK(d->state == DialogState::failed);
    CHECK(d->outcome() == DialogOutcome::failed);
    CHECK(d->final_status == 486);
    CHECK(d->q850_cause == 17);
    CHECK(d->time(DialogTime::end) == ms(3000));
    CHECK(d->time(DialogTime::ack) == ms(3010));
    CHECK(d->pdd_us() == 500'000);
    CHECK(d->setup_us() == -1);
    CHECK(d->hangup == Party::unknown);
    const DialogStats& s = h.stats();
    CHECK(s.finished(DialogOutcome::failed) == 1);
    CHECK(s.q850_causes[17].value() == 1);
    CHECK(s.q850_causes[16].value() == 0);
    CHECK(s.setup.count() == 0);
    CHECK(s.pdd.count() == 1);
    CHECK(s.in_state(DialogState::failed) == 1);
    CHECK(responses(s, Method::invite, 4) == 1);
    CHECK(retransmissions(s, Method::ack) == 1);
}

TEST_CASE("dialog: CANCEL and 487 cancel the call", "[sip][dialog]") {
    Harness h;
    const Sip invite;
    const Sip tagged = invite.with_to_tag("tt");
    h.send(invite, A, B, ms(0));
    h.send(invite.resp(100), B, A, ms(20));
    h.send(tagged.resp(180), B, A, ms(1000));

    SECTION("CANCEL, 200/CANCEL, 487, ACK") {
        const Sip cancel = invite.req("CANCEL", "z9hG4bK-a1", 1).with_extra("Reason: Q.850;cause=16\r\n");
        CHECK(h.send(cancel, A, B, ms(4000)) == Disposition::dialog_updated);
        CHECK(h.dialog()->state == DialogState::early);  // the CANCEL may still lose to a 2xx
        CHECK(h.send(cancel.resp(200).with_to_tag("tt"), B, A, ms(4010)) == Disposition::dialog_updated);
        CHECK(h.send(tagged.resp(487), B, A, ms(4020)) == Disposition::dialog_updated);
        CHECK(h.send(tagged.req("ACK", "z9hG4bK-a1", 1), A, B, ms(4030)) == Disposition::dialog_updated);
        const Dialog* d = h.dialog();
        CHECK(d->state == DialogState::cancelled);
        CHECK(d->final_status == 487);
        CHECK(d->cancel_seen);
        CHECK(d->time(DialogTime::cancel) == ms(4000));
        CHECK(d->time(DialogTime::end) == ms(4020));
        CHECK(d->q850_cause == 16);
        CHECK(h.stats().finished(DialogOutcome::cancelled) == 1);
        CHECK(h.stats().finished(DialogOutcome::failed) == 0);
        CHECK(h.stats().q850_causes[16].value() == 1);
    }
    SECTION("487 without a captured CANCEL") {
        h.send(tagged.resp(487), B, A, ms(4020));
        CHECK(h.dialog()->state == DialogState::cancelled);
        CHECK_FALSE(h.dialog()->cancel_seen);
        CHECK(h.stats().finished(DialogOutcome::cancelled) == 1);
    }
    SECTION("CANCEL with no final answer captured: cancelled at Timer B after the CANCEL") {
        h.send(invite.req("CANCEL", "z9hG4bK-a1", 1), A, B, ms(4000));
        CHECK(h.dialog()->time(DialogTime::deadline) == ms(4000 + 32'000));
        h.table.expire(ms(35'000));
        CHECK(h.dialog()->state == DialogState::early);
        h.table.expire(ms(36'000));
        CHECK(h.dialog()->state == DialogState::cancelled);
        CHECK(h.dialog()->time(DialogTime::end) == ms(36'000));
        CHECK(h.dialog()->final_status == 0);
        CHECK(h.stats().finished(DialogOutcome::cancelled) == 1);
    }
    SECTION("a 2xx that wins the race against the CANCEL confirms the call") {
        h.send(invite.req("CANCEL", "z9hG4bK-a1", 1), A, B, ms(4000));
        h.send(tagged.resp(200), B, A, ms(4001));
        h.send(tagged.req("ACK", "z9hG4bK-a2", 1), A, B, ms(4002));
        CHECK(h.dialog()->state == DialogState::confirmed);
        CHECK(h.dialog()->time(DialogTime::deadline).us == ms(4001).us + 4LL * 3600 * kSecond);
        CHECK(h.stats().finished(DialogOutcome::cancelled) == 0);
    }
    SECTION("the caller ending the early dialog with BYE abandons the call") {
        h.send(tagged.req("BYE", "z9hG4bK-a5", 2), A, B, ms(3000));
        CHECK(h.dialog()->state == DialogState::cancelled);
        CHECK(h.dialog()->hangup == Party::caller);
        CHECK(h.stats().duration.count() == 0);
    }
}

TEST_CASE("dialog: no answer times out after Timer B", "[sip][dialog]") {
    Harness h;
    const Sip invite;
    h.send(invite, A, B, ms(0));

    SECTION("driven by expire()") {
        h.table.expire(ms(31'000));
        CHECK(h.dialog()->state == DialogState::trying);
        CHECK(h.stats().in_state(DialogState::trying) == 1);
        h.table.expire(ms(32'000));
        CHECK(h.dialog()->state == DialogState::timed_out);
        CHECK(h.dialog()->time(DialogTime::end) == ms(32'000));
        CHECK(h.stats().finished(DialogOutcome::timed_out) == 1);
        CHECK(h.stats().in_state(DialogState::timed_out) == 1);
        CHECK(h.stats().in_state(DialogState::trying) == 0);
        h.table.expire(ms(64'000));
        CHECK(h.table.size() == 0);
        CHECK(h.all_gauges_zero());
    }
    SECTION("a late answer after Timer B finds the call already timed out, without expire()") {
        CHECK(h.send(invite.with_to_tag("tt").resp(200), B, A, ms(33'000)) == Disposition::dialog_updated);
        CHECK(h.dialog()->state == DialogState::timed_out);
        CHECK(h.dialog()->time(DialogTime::end) == ms(32'000));
        CHECK(h.stats().setup.count() == 0);
        CHECK(h.stats().finished(DialogOutcome::timed_out) == 1);
    }
    SECTION("a retransmitted INVITE after the linger starts a new record") {
        CHECK(h.send(invite, A, B, ms(70'000)) == Disposition::dialog_created);
        CHECK(h.stats().dialogs_created.value() == 2);
        CHECK(h.stats().finished(DialogOutcome::timed_out) == 1);
        CHECK(h.table.size() == 1);
    }
}

TEST_CASE("dialog: after a 100 Trying the caller waits for Timer C, not Timer B", "[sip][dialog]") {
    // sngrep's aaa.pcap: INVITE, 100, CANCEL 34 s later, and the INVITE's 408 at 37 s.
    Harness h;
    const Sip invite;
    h.send(invite, A, B, ms(0));
    h.send(invite.resp(100), B, A, ms(2'200));
    h.table.expire(ms(40'000));
    CHECK(h.dialog()->state == DialogState::proceeding);
    CHECK(h.dialog()->time(DialogTime::deadline) == ms(2'200 + 180'000));

    SECTION("the late final answer is the outcome") {
        h.send(invite.req("CANCEL", "z9hG4bK-a1", 1), A, B, ms(34'100));
        CHECK(h.dialog()->time(DialogTime::deadline) == ms(34'100 + 32'000));
        CHECK(h.send(invite.with_to_tag("t").resp(408), B, A, ms(36'800)) == Disposition::dialog_updated);
        CHECK(h.dialog()->state == DialogState::failed);
        CHECK(h.dialog()->final_status == 408);
        CHECK(h.dialog()->time(DialogTime::end) == ms(36'800));
        CHECK(h.stats().finished(DialogOutcome::failed) == 1);
        CHECK(h.stats().finished(DialogOutcome::timed_out) == 0);
    }
    SECTION("nothing else: timed out at Timer C") {
        h.table.expire(ms(2'200 + 179'000));
        CHECK(h.dialog()->state == DialogState::proceeding);
        h.table.expire(ms(2'200 + 180'000));
        CHECK(h.dialog()->state == DialogState::timed_out);
        CHECK(h.dialog()->time(DialogTime::end) == ms(2'200 + 180'000));
    }
    SECTION("a CANCEL before the 100 still bounds the wait by Timer B after the CANCEL") {
        Harness c;
        c.send(invite, A, B, ms(0));
        c.send(invite.req("CANCEL", "z9hG4bK-a1", 1), A, B, ms(1'000));
        c.send(invite.resp(100), B, A, ms(1'100));
        CHECK(c.dialog()->time(DialogTime::deadline) == ms(1'000 + 32'000));
    }
}

TEST_CASE("dialog: ringing longer than Timer B is not a timeout", "[sip][dialog]") {
    Harness h;
    const Sip invite;
    h.send(invite, A, B, ms(0));
    h.send(invite.with_to_tag("tt").resp(180), B, A, ms(1000));
    h.table.expire(ms(40'000));
    CHECK(h.dialog()->state == DialogState::early);
    h.send(invite.with_to_tag("tt").resp(200), B, A, ms(50'000));
    CHECK(h.dialog()->state == DialogState::confirmed);
    CHECK(h.dialog()->setup_us() == 50 * kSecond);
    CHECK(h.stats().setup.bucket(10) == 1);  // 50 s in (30, 60]

    SECTION("but ringing past Timer C is") {
        Harness r;
        r.send(invite, A, B, ms(0));
        r.send(invite.with_to_tag("tt").resp(180), B, A, ms(1000));
        r.table.expire(ms(180'000));
        CHECK(r.dialog()->state == DialogState::early);
        r.table.expire(ms(181'000));
        CHECK(r.dialog()->state == DialogState::timed_out);
    }
}

TEST_CASE("dialog: an answered call without BYE times out at the call cap", "[sip][dialog]") {
    DialogConfig config;
    config.max_call_duration = std::chrono::hours(1);
    Harness h(config);
    const Sip invite;
    h.send(invite, A, B, ms(0));
    h.send(invite.with_to_tag("tt").resp(200), B, A, ms(1000));
    h.table.expire(ms(1000 + 3'599'000));
    CHECK(h.dialog()->state == DialogState::confirmed);
    h.table.expire(ms(1000 + 3'600'000));
    CHECK(h.dialog()->state == DialogState::timed_out);
    CHECK(h.dialog()->time(DialogTime::end) == ms(1000 + 3'600'000));
    CHECK(h.stats().duration.count() == 0);  // no BYE, no duration
    CHECK(h.stats().finished(DialogOutcome::timed_out) == 1);
}

TEST_CASE("dialog: a forked INVITE counts its forks and remembers the one that answered", "[sip][dialog]") {
    Harness h;
    const Sip inv_a;
    const Sip inv_b = inv_a.with_branch("z9hG4bK-p1");
    const Sip inv_c = inv_a.with_branch("z9hG4bK-p2");
    CHECK(h.send(inv_a, A, P, ms(0)) == Disposition::dialog_created);
    CHECK(h.send(inv_b, P, B, ms(5)) == Disposition::dialog_updated);
    CHECK(h.send(inv_c, P, C, ms(6)) == Disposition::dialog_updated);
    CHECK(h.send(inv_b.with_to_tag("tb").resp(180), B, P, ms(400)) == Disposition::dialog_updated);
    CHECK(h.send(inv_a.with_to_tag("tb").resp(180), P, A, ms(401)) == Disposition::dialog_updated);
    CHECK(h.send(inv_c.with_to_tag("tc").resp(180), C, P, ms(600)) == Disposition::dialog_updated);
    // Same branch, CSeq and code as the 180 at 401 ms, but another fork's tag: not a retransmission.
    CHECK(h.send(inv_a.with_to_tag("tc").resp(180), P, A, ms(601)) == Disposition::dialog_updated);
    CHECK(h.send(inv_c.with_to_tag("tc").resp(200), C, P, ms(3000)) == Disposition::dialog_updated);
    CHECK(h.send(inv_a.with_to_tag("tc").resp(200), P, A, ms(3001)) == Disposition::dialog_updated);
    // The proxy cancels the losing fork; its 487 does not touch the answered call.
    CHECK(h.send(inv_b.req("CANCEL", "z9hG4bK-p1", 1), P, B, ms(3002)) == Disposition::dialog_updated);
    CHECK(h.send(inv_b.with_to_tag("tb").resp(487), B, P, ms(3010)) == Disposition::dialog_updated);
    h.send(inv_a.with_to_tag("tc").req("ACK", "z9hG4bK-a2", 1), A, P, ms(3020));
    h.send(inv_a.with_to_tag("tc").req("BYE", "z9hG4bK-a3", 2), A, P, ms(13'020));

    REQUIRE(h.table.size() == 1);
    const Dialog* d = h.dialog();
    CHECK(d->fork_count == 2);
    CHECK(d->fork_tags[0] == tag_id("tb"));
    CHECK(d->fork_tags[1] == tag_id("tc"));
    CHECK(d->confirmed_tag == tag_id("tc"));
    CHECK(d->hop_count == 3);
    CHECK(d->retransmissions == 0);
    CHECK(d->state == DialogState::terminated);
    CHECK(d->final_status == 200);
    CHECK(d->cancel_seen);
    CHECK(d->pending_status == 0);
    CHECK(d->pdd_us() == 400'000);
    CHECK(d->duration_us() == 10'020'000);  // from the first 2xx, at 3000 ms
    CHECK(h.stats().forked_dialogs.value() == 1);
    CHECK(h.stats().finished(DialogOutcome::completed) == 1);
    CHECK(h.stats().finished(DialogOutcome::cancelled) == 0);
}

TEST_CASE("dialog: when two forks answer, the BYE to the one not kept leaves the call up", "[sip][dialog]") {
    // RFC 3261 13.2.2.4: the caller confirms every 2xx and ends the dialogs it does not keep.
    Harness h;
    const Sip inv;
    h.send(inv, A, P, ms(0));
    h.send(inv.with_to_tag("tb").resp(200), P, A, ms(3000));
    h.send(inv.with_to_tag("tc").resp(200), P, A, ms(3010));
    h.send(inv.with_to_tag("tc").req("ACK", "z9hG4bK-a2", 1), A, P, ms(3011));
    h.send(inv.with_to_tag("tb").req("ACK", "z9hG4bK-a3", 1), A, P, ms(3012));
    const Sip extra_bye = inv.with_to_tag("tc").req("BYE", "z9hG4bK-a4", 2);
    h.send(extra_bye, A, P, ms(3020));
    h.send(extra_bye.resp(200), P, A, ms(3030));
    const Dialog* d = h.dialog();
    REQUIRE(d != nullptr);
    CHECK(d->state == DialogState::confirmed);
    CHECK(d->time(DialogTime::ack) == ms(3012));  // the kept fork's ACK
    CHECK(d->bye_status == 0);

    // The kept call ends 60 s later, from the callee's side of it.
    const Sip bye = inv.with_to_tag("tb")
                        .from_callee("tb")
                        .req("BYE", "z9hG4bK-b1", 5)
                        .with_extra("Reason: Q.850;cause=16;text=\"Normal call clearing\"\r\n");
    h.send(bye, P, A, ms(63'000));
    h.send(bye.resp(200), A, P, ms(63'005));
    CHECK(d->state == DialogState::terminated);
    CHECK(d->hangup == Party::callee);
    CHECK(d->duration_us() == 60 * kSecond);
    CHECK(d->q850_cause == 16);
    CHECK(d->bye_status == 200);
    CHECK(h.stats().finished(DialogOutcome::completed) == 1);
}

TEST_CASE("dialog: a fork's 180 after the answer or the failure adds no PDD", "[sip][dialog]") {
    Harness h;
    const Sip inv;
    h.send(inv, A, P, ms(0));
    h.send(inv.with_to_tag("tb").resp(200), P, A, ms(3000));
    h.send(inv.with_to_tag("tc").resp(180), P, A, ms(3200));
    const Dialog* d = h.dialog();
    REQUIRE(d != nullptr);
    CHECK(d->pdd_us() < 0);
    CHECK(d->setup_us() == 3 * kSecond);
    CHECK(h.stats().pdd.count() == 0);

    const Sip busy = inv.with_extra("").req("INVITE", "z9hG4bK-x1", 1);
    Sip other = busy;
    other.call_id = "call-2@example.net";
    h.send(other, A, P, ms(0));
    h.send(other.with_to_tag("tb").resp(486), P, A, ms(1000));
    h.send(other.with_to_tag("tc").resp(183), P, A, ms(1100));
    const Dialog* failed = h.dialog("call-2@example.net");
    REQUIRE(failed != nullptr);
    CHECK(failed->state == DialogState::failed);
    CHECK(failed->pdd_us() < 0);
    CHECK(h.stats().pdd.count() == 0);
}

TEST_CASE("dialog: the INVITE a 3xx redirected is a new call", "[sip][dialog]") {
    // RFC 3261 8.1.3.4: same Call-ID and From tag, a higher CSeq. METRICS.md: a new request.
    Harness h;
    const Sip inv;
    CHECK(h.send(inv, A, P, ms(0)) == Disposition::dialog_created);
    h.send(inv.with_to_tag("tp").resp(302), P, A, ms(500));
    h.send(inv.with_to_tag("tp").req("ACK", "z9hG4bK-a1", 1), A, P, ms(510));
    REQUIRE(h.dialog() != nullptr);
    CHECK(h.dialog()->state == DialogState::failed);
    CHECK(h.dialog()->final_status == 302);

    const Sip again = inv.req("INVITE", "z9hG4bK-a2", 2);
    CHECK(h.send(again, A, C, ms(700)) == Disposition::dialog_created);
    // A late copy of the redirect and the first INVITE's retransmission do not touch the new call.
    h.send(inv.with_to_tag("tp").resp(302), P, A, ms(705));
    h.send(inv, A, P, ms(706));
    h.send(again.with_to_tag("tc").resp(180), C, A, ms(2000));
    h.send(again.with_to_tag("tc").resp(200), C, A, ms(5000));
    h.send(again.with_to_tag("tc").req("ACK", "z9hG4bK-a3", 2), A, C, ms(5010));
    h.send(again.with_to_tag("tc").req("BYE", "z9hG4bK-a4", 3), A, C, ms(65'000));

    REQUIRE(h.table.size() == 1);
    const Dialog* d = h.dialog();
    REQUIRE(d != nullptr);
    CHECK(d->state == DialogState::terminated);
    CHECK(d->final_status == 200);
    CHECK(d->invite_time() == ms(700));
    CHECK(d->pdd_us() == 1'300'000);
    CHECK(d->setup_us() == 4'300'000);
    CHECK(d->duration_us() == 60 * kSecond);
    CHECK(h.stats().dialogs_created.value() == 2);
    CHECK(h.stats().finished(DialogOutcome::failed) == 1);
    CHECK(h.stats().finished(DialogOutcome::completed) == 1);
    CHECK(h.stats().anomalies[static_cast<std::size_t>(DialogAnomaly::invite_after_end)].value() == 0);
    CHECK(h.gauge_sum() == 1);
}

TEST_CASE("dialog: a callee's second 183, now with SDP, is no retransmission", "[sip][dialog]") {
    // Gateways send 183 without SDP, then 183 with it (early media): same branch, code and tag.
    Harness h;
    const Sip inv;
    h.send(inv, A, B, ms(0));
    const Sip progress = inv.with_to_tag("tb").resp(183);
    CHECK(h.send(progress, B, A, ms(100)) == Disposition::dialog_updated);
    CHECK(h.send(progress.with_body("v=0\no=- 1 1 IN IP4 10.0.0.3\ns=-\nc=IN IP4 10.0.0.3\nt=0 0\n"
                                    "m=audio 30000 RTP/AVP 8\n"),
                 B, A, ms(200)) == Disposition::dialog_updated);
    CHECK(h.dialog()->retransmissions == 0);
    REQUIRE_FALSE(h.sink.got.empty());
    CHECK(h.sink.got.back().binding.media == ep("10.0.0.3:30000"));
    CHECK(h.send(progress, B, A, ms(300)) == Disposition::retransmission);  // the first one again
}

TEST_CASE("dialog: a 422 the caller got and did not retry ends the call at the 422", "[sip][dialog]") {
    Harness h;
    const Sip inv;
    h.send(inv, A, B, ms(0));
    h.send(inv.with_to_tag("t").resp(422), B, A, ms(500));
    h.table.expire(ms(500 + 32'000));
    const Dialog* d = h.dialog();
    REQUIRE(d != nullptr);
    CHECK(d->state == DialogState::failed);
    CHECK(d->final_status == 422);
    CHECK(d->time(DialogTime::end) == ms(500));
    CHECK(h.stats().srd[static_cast<std::size_t>(SetupResult::failure)].count() == 1);
}

TEST_CASE("dialog: a Q.850 cause beyond 16 bits still counts, as other", "[sip][dialog]") {
    Harness h;
    for (const auto& [call, cause] : {std::pair{"c-65535", "65535"}, std::pair{"c-70000", "70000"}}) {
        Sip inv;
        inv.call_id = call;
        h.send(inv, A, B, ms(0));
        h.send(inv.with_to_tag("t").resp(486).with_extra(std::string("Reason: Q.850;cause=") + cause + "\r\n"), B, A,
               ms(100));
        REQUIRE(h.dialog(call) != nullptr);
        CHECK(h.dialog(call)->q850_cause != kNoCause);
    }
    CHECK(h.stats().q850_causes[kQ850Slots - 1].value() == 2);  // "other"
}

TEST_CASE("dialog: an answer sent to the caller's Via port is the caller's answer", "[sip][dialog]") {
    // RFC 3261 18.2.2: without rport, responses go to the port in the Via, not the source port.
    Harness h;
    const Sip inv;
    h.send(inv, "10.0.0.1:40123", B, ms(0));
    h.send(inv.with_to_tag("tb").resp(486), B, A, ms(500));  // A is 10.0.0.1:5060
    const Dialog* d = h.dialog();
    REQUIRE(d != nullptr);
    CHECK(d->state == DialogState::failed);
    CHECK(d->final_status == 486);
    CHECK(d->hop_count == 1);
    CHECK(d->time(DialogTime::end) == ms(500));
    CHECK(h.stats().srd[static_cast<std::size_t>(SetupResult::failure)].count() == 1);
}

TEST_CASE("dialog: the callee hangs up (BYE with the callee's tag in From)", "[sip][dialog]") {
    Harness h;
    const Sip inv_a;
    const Sip inv_p = inv_a.with_branch("z9hG4bK-p1");
    h.send(inv_a, A, P, ms(0));
    h.send(inv_p, P, B, ms(1));
    h.send(inv_p.with_to_tag("tt").resp(200), B, P, ms(2000));
    h.send(inv_a.with_to_tag("tt").resp(200), P, A, ms(2001));
    h.send(inv_a.with_to_tag("tt").req("ACK", "z9hG4bK-a2", 1), A, P, ms(2002));

    // The callee numbers its own requests: CSeq 7.
    const Sip bye_b = inv_p.with_to_tag("tt")
                          .from_callee("tt")
                          .req("BYE", "z9hG4bK-b1", 7)
                          .with_extra("Reason: Q.850;cause=16;text=\"Normal call clearing\"\r\n");
    const Sip bye_p = bye_b.with_branch("z9hG4bK-p9");
    CHECK(bye_b.from_tag == "tt");
    CHECK(bye_b.to_tag == "caller-tag");
    CHECK(h.send(bye_b, B, P, ms(92'000)) == Disposition::dialog_updated);
    CHECK(h.send(bye_p, P, A, ms(92'001)) == Disposition::dialog_updated);
    CHECK(h.send(bye_p.resp(200), A, P, ms(92'010)) == Disposition::dialog_updated);
    CHECK(h.send(bye_b.resp(200), P, B, ms(92'011)) == Disposition::dialog_updated);

    REQUIRE(h.table.size() == 1);
    const Dialog* d = h.dialog();
    CHECK(d->hangup == Party::callee);
    CHECK(d->state == DialogState::terminated);
    CHECK(d->q850_cause == 16);
    CHECK(d->time(DialogTime::bye) == ms(92'000));
    CHECK(d->bye_status == 200);
    CHECK(d->time(DialogTime::bye_answer) == ms(92'010));
    CHECK(d->duration_us() == 90 * kSecond);
    CHECK(h.stats().q850_causes[16].value() == 1);
    CHECK(h.stats().duration.bucket(5) == 1);  // 90 s in (60, 120]
    CHECK(h.table.match("call-1@example.net", "tt", "caller-tag") == d);
    CHECK(h.table.find("call-1@example.net", "tt") == nullptr);
}

TEST_CASE("dialog: re-INVITEs are counted per transaction and side", "[sip][dialog]") {
    Harness h;
    const Sip invite;
    const Sip tagged = invite.with_to_tag("tt");
    h.send(invite.with_body(kOffer), A, B, ms(0));
    h.send(tagged.resp(200).with_body(kAnswer), B, A, ms(1000));
    h.send(tagged.req("ACK", "z9hG4bK-a2", 1), A, B, ms(1001));
    CHECK(h.stats().media_bindings.value() == 3);  // offer, answer, offer paired back

    // Caller's re-INVITE (hold/unhold, new SDP), CSeq 2.
    CHECK(h.send(tagged.req("INVITE", "z9hG4bK-a3", 2).with_body(kOffer), A, B, ms(10'000)) ==
          Disposition::dialog_updated);
    CHECK(h.send(tagged.req("INVITE", "z9hG4bK-a3", 2).resp(200).with_body(kAnswer), B, A, ms(10'050)) ==
          Disposition::dialog_updated);
    h.send(tagged.req("ACK", "z9hG4bK-a4", 2), A, B, ms(10'060));
    // Callee's session refresh: its CSeq space starts at 1, like the caller's initial INVITE.
    const Sip refresh = tagged.from_callee("tt").req("INVITE", "z9hG4bK-b1", 1);
    CHECK(h.send(refresh, B, A, ms(20'000)) == Disposition::dialog_updated);
    CHECK(h.send(refresh.resp(200), A, B, ms(20'020)) == Disposition::dialog_updated);
    CHECK(h.send(refresh.resp(491), A, B, ms(20'021)) == Disposition::dialog_updated);

    const Dialog* d = h.dialog();
    CHECK(d->reinvites == 2);
    CHECK(h.stats().reinvites.value() == 2);
    CHECK(d->state == DialogState::confirmed);
    CHECK(d->time(DialogTime::answer) == ms(1000));
    CHECK(d->final_status == 200);
    CHECK(d->pending_status == 0);
    CHECK(d->time(DialogTime::ack) == ms(1001));
    CHECK(h.stats().setup.count() == 1);
    CHECK(h.stats().media_bindings.value() == 7);  // the re-INVITE's and its 200's, each paired back
}

TEST_CASE("dialog: identities: Call-ID re-used with a new From-tag, B2BUA legs", "[sip][dialog]") {
    Harness h;
    const Sip first;
    h.send(first, A, B, ms(0));
    h.send(first.with_to_tag("t1").resp(486), B, A, ms(100));
    h.send(first.with_to_tag("t1").req("ACK", "z9hG4bK-a1", 1), A, B, ms(101));

    Sip second = first.with_branch("z9hG4bK-x9");
    second.from_tag = "new-tag";
    CHECK(h.send(second, A, B, ms(2000)) == Disposition::dialog_created);
    CHECK(h.table.size() == 2);
    CHECK(h.table.find("call-1@example.net", "caller-tag")->state == DialogState::failed);
    CHECK(h.table.find("call-1@example.net", "new-tag")->state == DialogState::trying);

    // A B2BUA's second leg carries a Call-ID of its own.
    Sip leg2 = first.with_branch("z9hG4bK-b2b");
    leg2.call_id = "b2bua-leg-2";
    leg2.from_tag = "b2b-tag";
    CHECK(h.send(leg2, P, C, ms(2001)) == Disposition::dialog_created);
    CHECK(h.table.size() == 3);
    CHECK(h.stats().dialogs_created.value() == 3);
}

TEST_CASE("dialog: an authentication challenge and the retried INVITE are one call", "[sip][dialog]") {
    Harness h;
    const Sip invite;
    h.send(invite, A, B, ms(0));
    h.send(invite.with_to_tag("auth").resp(407), B, A, ms(20));
    h.send(invite.with_to_tag("auth").req("ACK", "z9hG4bK-a1", 1), A, B, ms(21));
    CHECK(h.dialog()->state == DialogState::trying);
    CHECK(h.dialog()->pending_status == 407);

    SECTION("retried with credentials and answered") {
        const Sip retry = invite.req("INVITE", "z9hG4bK-a2", 2);
        CHECK(h.send(retry, A, B, ms(40)) == Disposition::dialog_updated);
        h.send(retry.resp(100), B, A, ms(45));
        h.send(retry.with_to_tag("tt").resp(180), B, A, ms(700));
        h.send(retry.with_to_tag("tt").resp(200), B, A, ms(2040));
        h.send(retry.with_to_tag("tt").req("ACK", "z9hG4bK-a3", 2), A, B, ms(2041));
        const Dialog* d = h.dialog();
        CHECK(d->state == DialogState::confirmed);
        CHECK(d->invite_cseq == 2);
        CHECK(d->pending_status == 0);
        CHECK(d->pdd_us() == 700'000);  // from the first INVITE: what the caller waited
        CHECK(d->setup_us() == 2'040'000);
        CHECK(d->time(DialogTime::ack) == ms(2041));
        CHECK(h.table.size() == 1);
    }
    SECTION("retried late (a person typing the password) and refused: the retry's answer is the outcome") {
        const Sip retry = invite.req("INVITE", "z9hG4bK-a2", 2);
        h.table.expire(ms(20 + 60'000));
        CHECK(h.dialog()->state == DialogState::trying);
        CHECK(h.send(retry, A, B, ms(20 + 61'000)) == Disposition::dialog_updated);
        CHECK(h.dialog()->invite_cseq == 2);
        CHECK(h.dialog()->pending_status == 0);
        h.send(retry.resp(100), B, A, ms(20 + 61'100));
        h.send(retry.with_to_tag("srv").resp(403), B, A, ms(20 + 61'120));
        h.send(retry.with_to_tag("srv").req("ACK", "z9hG4bK-a2", 2), A, B, ms(20 + 61'125));
        const Dialog* d = h.dialog();
        CHECK(d->state == DialogState::failed);
        CHECK(d->final_status == 403);
        CHECK(d->time(DialogTime::end) == ms(20 + 61'120));
        CHECK(h.table.size() == 1);
        CHECK(h.stats().dialogs_created.value() == 1);
        CHECK(h.stats().finished(DialogOutcome::failed) == 1);
        CHECK(h.stats().anomalies[static_cast<std::size_t>(DialogAnomaly::invite_after_end)].value() == 0);
    }
    SECTION("retried late and answered: the call completes") {
        const Sip retry = invite.req("INVITE", "z9hG4bK-a2", 2);
        h.send(retry, A, B, ms(20 + 90'000));
        h.send(retry.with_to_tag("tt").resp(200), B, A, ms(20 + 92'000));
        h.send(retry.with_to_tag("tt").req("BYE", "z9hG4bK-a4", 3), A, B, ms(20 + 100'000));
        CHECK(h.dialog()->state == DialogState::terminated);
        CHECK(h.dialog()->final_status == 200);
        CHECK(h.stats().finished(DialogOutcome::completed) == 1);
        CHECK(h.stats().finished(DialogOutcome::failed) == 0);
    }
    SECTION("never retried: failed with the challenge once challenge_timeout has passed, dated at the 407") {
        h.table.expire(ms(20 + 179'000));
        CHECK(h.dialog()->state == DialogState::trying);
        h.table.expire(ms(20 + 180'000));
        CHECK(h.dialog()->state == DialogState::failed);
        CHECK(h.dialog()->final_status == 407);
        CHECK(h.dialog()->time(DialogTime::end) == ms(20));
        CHECK(h.stats().finished(DialogOutcome::failed) == 1);
        // It lingers from the timer, then goes: memory is held for challenge_timeout + linger at most.
        h.table.expire(ms(20 + 180'000 + 32'000));
        CHECK(h.table.size() == 0);
        CHECK(h.all_gauges_zero());
    }
    SECTION("a retry after challenge_timeout starts a new record; the challenged one stays failed") {
        h.table.expire(ms(20 + 180'000 + 32'000));
        CHECK(h.send(invite.req("INVITE", "z9hG4bK-a2", 2), A, B, ms(20 + 300'000)) == Disposition::dialog_created);
        CHECK(h.stats().dialogs_created.value() == 2);
        CHECK(h.stats().finished(DialogOutcome::failed) == 1);
    }
}

TEST_CASE("dialog: the challenge wait is configurable and 422 is retried at once", "[sip][dialog]") {
    DialogConfig config;
    config.challenge_timeout = std::chrono::seconds(45);
    Harness h(config);
    const Sip invite;
    h.send(invite, A, B, ms(0));
    h.send(invite.with_to_tag("auth").resp(401), B, A, ms(20));
    CHECK(h.dialog()->time(DialogTime::deadline) == ms(20 + 45'000));
    h.table.expire(ms(20 + 45'000));
    CHECK(h.dialog()->state == DialogState::failed);
    CHECK(h.dialog()->final_status == 401);

    Sip other = invite;
    other.call_id = "call-2";
    h.send(other, A, B, ms(100'000));
    h.send(other.with_to_tag("t").resp(422), B, A, ms(100'020));
    CHECK(h.dialog("call-2")->pending_status == 422);
    CHECK(h.dialog("call-2")->time(DialogTime::deadline) ==
          ms(100'020 + 32'000));  // a UA re-sends after a 422 by itself
}

TEST_CASE("dialog: a failure on a downstream hop is not the caller's answer", "[sip][dialog]") {
    Harness h;
    const Sip inv_a;
    const Sip inv_b = inv_a.with_branch("z9hG4bK-p1");
    h.send(inv_a, A, P, ms(0));
    h.send(inv_b, P, B, ms(1));
    h.send(inv_b.with_to_tag("tb").resp(503).with_extra("Reason: Q.850;cause=34\r\n"), B, P, ms(50));
    CHECK(h.dialog()->state == DialogState::trying);
    CHECK(h.dialog()->pending_status == 503);

    SECTION("the proxy fails over and the second gateway answers") {
        const Sip inv_c = inv_a.with_branch("z9hG4bK-p2");
        h.send(inv_c, P, C, ms(60));
        h.send(inv_c.with_to_tag("tc").resp(180), C, P, ms(300));
        h.send(inv_a.with_to_tag("tc").resp(180), P, A, ms(301));
        h.send(inv_c.with_to_tag("tc").resp(200), C, P, ms(900));
        h.send(inv_a.with_to_tag("tc").resp(200), P, A, ms(901));
        h.send(inv_a.with_to_tag("tc").req("BYE", "z9hG4bK-a9", 2).with_extra("Reason: Q.850;cause=16\r\n"), A, P,
               ms(10'901));
        const Dialog* d = h.dialog();
        CHECK(d->state == DialogState::terminated);
        CHECK(d->final_status == 200);
        CHECK(d->q850_cause == 16);  // not the failed gateway's 34
        CHECK(h.stats().q850_causes[34].value() == 0);
        CHECK(h.stats().finished(DialogOutcome::completed) == 1);
    }
    SECTION("the caller's copy of the failure is authoritative (and inherits the relayed cause)") {
        h.send(inv_a.with_to_tag("tb").resp(503), P, A, ms(51));
        CHECK(h.dialog()->state == DialogState::failed);
        CHECK(h.dialog()->final_status == 503);
        CHECK(h.dialog()->time(DialogTime::end) == ms(51));
        CHECK(h.dialog()->q850_cause == 34);
        CHECK(h.stats().q850_causes[34].value() == 1);
    }
    SECTION("a different failure on the caller's hop does not inherit the cause") {
        h.send(inv_a.with_to_tag("tb").resp(500), P, A, ms(51));
        CHECK(h.dialog()->final_status == 500);
        CHECK(h.dialog()->q850_cause == kNoCause);
    }
    SECTION("nothing else captured: the downstream failure becomes the outcome at Timer B") {
        h.table.expire(ms(50 + 32'000));
        CHECK(h.dialog()->state == DialogState::failed);
        CHECK(h.dialog()->time(DialogTime::end) == ms(50 + 32'000));  // unlike a challenge: the proxy may have gone on
        CHECK(h.dialog()->final_status == 503);
        CHECK(h.dialog()->q850_cause == 34);
        CHECK(h.stats().q850_causes[34].value() == 1);
    }
}

TEST_CASE("dialog: results do not depend on how often expire() runs", "[sip][dialog]") {
    auto run = [](bool expire_often) {
        auto h = std::make_unique<Harness>();
        std::vector<std::pair<Sip, Timestamp>> flow;
        const Sip a;  // times out
        Sip b = a;    // answered, then BYE after its linger could have started
        b.call_id = "call-2";
        Sip c = a;  // failed, then a late ACK
        c.call_id = "call-3";
        const auto send = [&](const Sip& s, std::string_view src, std::string_view dst, Timestamp t) {
            if (expire_often) h->table.expire(t);
            h->send(s, src, dst, t);
        };
        send(a, A, B, ms(0));
        send(b, A, B, ms(100));
        send(c, A, B, ms(200));
        send(c.with_to_tag("t").resp(480), B, A, ms(300));
        send(b.with_to_tag("t").resp(200), B, A, ms(5000));
        send(a.with_to_tag("t").resp(200), B, A, ms(40'000));  // after Timer B of call 1
        send(b.with_to_tag("t").req("BYE", "z9hG4bK-bye", 2), A, B, ms(50'000));
        send(c.with_to_tag("t").req("ACK", "z9hG4bK-a1", 1), A, B, ms(60'000));  // after call 3's linger
        if (expire_often) h->table.expire(ms(60'001));
        std::vector<std::tuple<std::string, DialogState, Timestamp, std::uint16_t>> out;
        h->table.for_each([&](std::string_view id, std::string_view, const Dialog& d) {
            out.emplace_back(std::string(id), d.state, d.time(DialogTime::end), d.final_status);
        });
        std::sort(out.begin(), out.end());
        std::array<std::uint64_t, kDialogOutcomeCount> finished{};
        for (std::size_t i = 0; i < kDialogOutcomeCount; ++i) finished[i] = h->stats().dialogs_finished[i].value();
        return std::make_pair(out, finished);
    };
    const auto often = run(true);
    const auto never = run(false);
    CHECK(often.first == never.first);
    CHECK(often.second == never.second);
    REQUIRE(never.first.size() == 2);  // call 3 retired at 300 ms + 32 s; the late ACK is an orphan
    CHECK(std::get<0>(never.first[0]) == "call-1@example.net");
    CHECK(std::get<1>(never.first[0]) == DialogState::timed_out);
    CHECK(std::get<2>(never.first[0]) == ms(32'000));
    CHECK(std::get<1>(never.first[1]) == DialogState::terminated);
}
