// RFC 6076 figures kept by the dialog and transaction tables: SRD (4.3), SDD (4.4), RRD (4.1),
// registration attempts (4.2) and the final status of each dialog (4.6-4.9). Every expected
// interval is the difference of two packet times below.
#include "dialog_test_util.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace hepd;
using namespace hepd::sip;
using namespace hepd::sip::test;

namespace {

const SrdHistogram& srd(const DialogStats& s, SetupResult r) { return s.srd[static_cast<std::size_t>(r)]; }

std::uint64_t final_status(const DialogStats& s, std::string_view code) {
    for (std::size_t i = 0; i < kFinalStatusCount; ++i)
        if (kFinalStatusNames[i] == code) return s.final_status[i].value();
    FAIL("no final status label " << code);
    return 0;
}

std::uint64_t final_status_total(const DialogStats& s) {
    std::uint64_t n = 0;
    for (const auto& c : s.final_status) n += c.value();
    return n;
}

std::uint64_t registrations(const DialogStats& s, RegistrationResult r) {
    return s.registrations[static_cast<std::size_t>(r)].value();
}

Sip registration(std::uint32_t cseq) {
    Sip s;
    s.method = "REGISTER";
    s.call_id = "reg-1@10.0.0.1";
    s.from_tag = "reg-tag";
    s.branch = "z9hG4bK-r" + std::to_string(cseq);
    s.cseq = cseq;
    return s;
}

}  // namespace

TEST_CASE("rfc6076: final status labels form a closed set", "[sip][dialog][rfc6076]") {
    auto name = [](std::uint16_t code) { return kFinalStatusNames[final_status_index(code)]; };
    CHECK(name(200) == "200");
    CHECK(name(202) == "other");  // RFC 6076 4.6 counts 200 itself
    CHECK(name(300) == "3xx");
    CHECK(name(301) == "3xx");
    CHECK(name(399) == "3xx");
    CHECK(name(401) == "401");
    CHECK(name(404) == "404");
    CHECK(name(408) == "408");
    CHECK(name(486) == "486");
    CHECK(name(487) == "487");
    CHECK(name(499) == "other");
    CHECK(name(503) == "503");
    CHECK(name(504) == "504");
    CHECK(name(580) == "other");
    CHECK(name(600) == "600");
    CHECK(name(603) == "603");
    CHECK(name(604) == "other");
    CHECK(name(0) == "none");
}

TEST_CASE("rfc6076: a ringing call: SRD to the 180, SDD from BYE to its 200", "[sip][dialog][rfc6076]") {
    Harness h;
    const Sip invite;
    const Sip answered = invite.with_to_tag("callee-tag");
    h.send(invite, A, B, ms(0));
    h.send(invite.resp(100), B, A, ms(40));  // 100 Trying says nothing about the call
    h.send(answered.resp(180), B, A, ms(1200));
    h.send(answered.resp(183), B, A, ms(1500));
    CHECK(final_status_total(h.stats()) == 0);  // not decided while it rings
    h.send(answered.resp(200), B, A, ms(6200));
    h.send(answered.req("ACK", "z9hG4bK-a2", 1), A, B, ms(6250));
    const Sip bye = answered.req("BYE", "z9hG4bK-a3", 2);
    h.send(bye, A, B, ms(66200));
    h.send(bye.resp(200), B, A, ms(66260));
    h.send(bye.resp(200).with_branch("z9hG4bK-a3"), B, A, ms(66300));  // retransmission

    const DialogStats& s = h.stats();
    CHECK(h.dialog()->time(DialogTime::indicative) == ms(1200));
    CHECK(srd(s, SetupResult::success).count() == 1);
    CHECK(srd(s, SetupResult::success).sum() == Approx(1.2));
    CHECK(srd(s, SetupResult::success).bucket(7) == 1);  // (1, 2]
    CHECK(srd(s, SetupResult::failure).count() == 0);
    CHECK(s.pdd.sum() == Approx(1.2));
    CHECK(s.sdd.count() == 1);
    CHECK(s.sdd.sum() == Approx(0.06));
    CHECK(s.sdd.bucket(4) == 1);  // (0.05, 0.1]
    CHECK(final_status(s, "200") == 1);
    CHECK(final_status_total(s) == 1);
}

TEST_CASE("rfc6076: SRD ends at the first provisional other than 100, where PDD waits for 180/183",
          "[sip][dialog][rfc6076]") {
    Harness h;
    const Sip invite;
    const Sip answered = invite.with_to_tag("callee-tag");
    h.send(invite, A, B, ms(0));
    h.send(answered.resp(181), B, A, ms(200));  // Call Is Being Forwarded
    h.send(answered.resp(180), B, A, ms(900));
    const DialogStats& s = h.stats();
    CHECK(srd(s, SetupResult::success).sum() == Approx(0.2));
    CHECK(s.pdd.sum() == Approx(0.9));
}

TEST_CASE("rfc6076: a call answered without ringing: SRD and set-up both end at the 200", "[sip][dialog][rfc6076]") {
    Harness h;
    const Sip invite;
    const Sip answered = invite.with_to_tag("callee-tag");
    h.send(invite, A, B, ms(0));
    h.send(invite.resp(100), B, A, ms(10));
    h.send(answered.resp(200), B, A, ms(800));
    const DialogStats& s = h.stats();
    CHECK(s.pdd.count() == 0);
    CHECK(srd(s, SetupResult::success).count() == 1);
    CHECK(srd(s, SetupResult::success).sum() == Approx(0.8));
    CHECK(s.setup.sum() == Approx(0.8));
    CHECK(final_status(s, "200") == 1);  // decided at the answer, before the call ends
    CHECK(s.finished(DialogOutcome::completed) == 0);
}

TEST_CASE("rfc6076: failed set-ups", "[sip][dialog][rfc6076]") {
    Harness h;
    const Sip invite;
    const Sip refused = invite.with_to_tag("callee-tag");
    const DialogStats& s = h.stats();

    SECTION("486 without ringing: a failure SRD") {
        h.send(invite, A, B, ms(0));
        h.send(invite.resp(100), B, A, ms(10));
        h.send(refused.resp(486), B, A, ms(300));
        CHECK(srd(s, SetupResult::failure).count() == 1);
        CHECK(srd(s, SetupResult::failure).sum() == Approx(0.3));
        CHECK(srd(s, SetupResult::success).count() == 0);
        CHECK(final_status(s, "486") == 1);
        CHECK(h.dialog()->time(DialogTime::indicative) == ms(300));
    }
    SECTION("486 after ringing: the 180 was the status indicative response") {
        h.send(invite, A, B, ms(0));
        h.send(refused.resp(180), B, A, ms(500));
        h.send(refused.resp(486), B, A, ms(3000));
        CHECK(srd(s, SetupResult::success).count() == 1);
        CHECK(srd(s, SetupResult::success).sum() == Approx(0.5));
        CHECK(srd(s, SetupResult::failure).count() == 0);
        CHECK(final_status(s, "486") == 1);
    }
    SECTION("a redirect is counted as 3xx and has no SRD") {
        h.send(invite, A, B, ms(0));
        h.send(refused.resp(301), B, A, ms(40));
        CHECK(final_status(s, "3xx") == 1);
        CHECK(srd(s, SetupResult::failure).count() == 0);
        CHECK(srd(s, SetupResult::success).count() == 0);
    }
    SECTION("an unlisted code is other") {
        h.send(invite, A, B, ms(0));
        h.send(refused.resp(499), B, A, ms(70));
        CHECK(final_status(s, "other") == 1);
        CHECK(srd(s, SetupResult::failure).sum() == Approx(0.07));
    }
    SECTION("no final response at all is none") {
        h.send(invite, A, B, ms(0));
        h.table.expire(ms(40'000));  // Timer B
        CHECK(s.finished(DialogOutcome::timed_out) == 1);
        CHECK(final_status(s, "none") == 1);
        CHECK(srd(s, SetupResult::failure).count() == 0);
    }
    SECTION("a challenge answered by a new INVITE: one status, SRD from the first INVITE") {
        h.send(invite, A, B, ms(0));
        h.send(refused.resp(407), B, A, ms(20));
        h.send(refused.req("ACK", "z9hG4bK-a1", 1), A, B, ms(25));
        const Sip retry = invite.req("INVITE", "z9hG4bK-a2", 2);
        h.send(retry, A, B, ms(50));
        h.send(retry.with_to_tag("callee-tag-2").resp(180), B, A, ms(300));
        h.send(retry.with_to_tag("callee-tag-2").resp(200), B, A, ms(900));
        CHECK(srd(s, SetupResult::success).count() == 1);
        CHECK(srd(s, SetupResult::success).sum() == Approx(0.3));
        CHECK(final_status(s, "407") == 0);
        CHECK(final_status(s, "200") == 1);
    }
    SECTION("a challenge nobody answers: the call failed with it, at the challenge") {
        h.send(invite, A, B, ms(0));
        h.send(refused.resp(401), B, A, ms(20));
        h.table.expire(ms(200'000));  // the wait for a retry is over
        CHECK(s.finished(DialogOutcome::failed) == 1);
        CHECK(final_status(s, "401") == 1);
        CHECK(srd(s, SetupResult::failure).count() == 1);
        CHECK(srd(s, SetupResult::failure).sum() == Approx(0.02));
    }
    // Every dialog has exactly one status once its set-up is decided.
    h.table.expire(ms(600'000));
    CHECK(final_status_total(s) == 1);
    CHECK(s.dialogs_created.value() == 1);
}

TEST_CASE("rfc6076: RRD spans the 401 challenge, from the first REGISTER to the 200", "[sip][dialog][rfc6076]") {
    Harness h;
    const Sip r1 = registration(1);
    const Sip r2 = registration(2);
    const DialogStats& s = h.stats();
    h.send(r1, A, P, ms(0));
    h.send(r1.with_to_tag("reg-srv").resp(401), P, A, ms(20));
    CHECK(registrations(s, RegistrationResult::failure) == 0);  // the UA may still retry
    h.send(r2, A, P, ms(50));
    h.send(r2.with_to_tag("reg-srv").resp(200), P, A, ms(80));

    const Transaction* first = h.table.transactions().find("reg-1@10.0.0.1", 1, Method::register_);
    const Transaction* retry = h.table.transactions().find("reg-1@10.0.0.1", 2, Method::register_);
    REQUIRE(first != nullptr);
    REQUIRE(retry != nullptr);
    CHECK(first->retried);
    CHECK(retry->attempt_time == ms(0));
    CHECK(s.rrd.count() == 1);
    CHECK(s.rrd.sum() == Approx(0.08));
    CHECK(s.rrd.bucket(4) == 1);  // (0.05, 0.1]
    CHECK(registrations(s, RegistrationResult::success) == 1);

    SECTION("the challenge that was answered is no failure when it retires") {
        h.table.expire(ms(60'000));
        CHECK(h.table.transactions().size() == 0);
        CHECK(registrations(s, RegistrationResult::failure) == 0);
        CHECK(registrations(s, RegistrationResult::success) == 1);
    }
    SECTION("a refresh with the next CSeq after the 200 is an attempt of its own") {
        const Sip r3 = registration(3);
        h.send(r3, A, P, ms(3000));
        h.send(r3.with_to_tag("reg-srv").resp(200), P, A, ms(3010));
        CHECK(s.rrd.count() == 2);
        CHECK(s.rrd.sum() == Approx(0.09));
        CHECK(registrations(s, RegistrationResult::success) == 2);
    }
}

TEST_CASE("rfc6076: ineffective registration attempts", "[sip][dialog][rfc6076]") {
    Harness h;
    const Sip r1 = registration(1);
    const DialogStats& s = h.stats();
    h.send(r1, A, P, ms(0));

    SECTION("refused") {
        h.send(r1.with_to_tag("reg-srv").resp(403), P, A, ms(30));
        CHECK(registrations(s, RegistrationResult::failure) == 1);
    }
    SECTION("a challenge never answered fails when its linger ends") {
        h.send(r1.with_to_tag("reg-srv").resp(401), P, A, ms(30));
        h.table.expire(ms(10'000));
        CHECK(registrations(s, RegistrationResult::failure) == 0);
        h.table.expire(ms(60'000));
        CHECK(registrations(s, RegistrationResult::failure) == 1);
    }
    SECTION("no response: a timeout at Timer F") {
        h.table.expire(ms(40'000));
        CHECK(registrations(s, RegistrationResult::timeout) == 1);
        CHECK(registrations(s, RegistrationResult::failure) == 0);
    }
    CHECK(registrations(s, RegistrationResult::success) == 0);
    CHECK(s.rrd.count() == 0);
}

TEST_CASE("rfc6076: dialogs that end without a final response count as none, once", "[sip][dialog][rfc6076]") {
    const Sip invite;
    const Sip early = invite.with_to_tag("callee-tag");

    SECTION("a CANCEL whose 487 never comes") {
        Harness h;
        h.send(invite, A, B, ms(0));
        h.send(early.resp(180), B, A, ms(100));
        h.send(invite.req("CANCEL", "z9hG4bK-a1", 1), A, B, ms(2000));
        h.table.expire(ms(60'000));
        CHECK(h.stats().finished(DialogOutcome::cancelled) == 1);
        CHECK(final_status(h.stats(), "none") == 1);
        CHECK(final_status_total(h.stats()) == 1);
    }
    SECTION("a BYE that ends an early dialog") {
        Harness h;
        h.send(invite, A, B, ms(0));
        h.send(early.resp(183), B, A, ms(100));
        const Sip bye = early.req("BYE", "z9hG4bK-a2", 2);
        h.send(bye, A, B, ms(900));
        h.send(bye.resp(200), B, A, ms(930));
        CHECK(final_status(h.stats(), "none") == 1);
        CHECK(h.stats().sdd.count() == 1);
        CHECK(h.stats().sdd.sum() == Approx(0.03));
    }
    SECTION("evicted at the cap: none if unanswered, nothing more if answered") {
        DialogConfig config;
        config.max_dialogs = 1;
        Harness h(config);
        h.send(invite, A, B, ms(0));  // unanswered, evicted by the next call
        Sip second_call = Sip{}.with_branch("z9hG4bK-b1");
        second_call.call_id = "call-2@example.net";
        h.send(second_call, A, B, ms(10));
        CHECK(h.stats().finished(DialogOutcome::evicted) == 1);
        CHECK(final_status(h.stats(), "none") == 1);
        h.send(second_call.with_to_tag("t2").resp(200), B, A, ms(500));
        CHECK(final_status(h.stats(), "200") == 1);
        Sip third_call = second_call;
        third_call.call_id = "call-3@example.net";
        h.send(third_call, A, B, ms(600));  // evicts the answered call
        CHECK(h.stats().finished(DialogOutcome::evicted) == 2);
        CHECK(final_status_total(h.stats()) == 2);
    }
}
