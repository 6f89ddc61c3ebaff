// Non-INVITE transactions outside dialogs: they are timed and counted, then forgotten.
#include "dialog_test_util.hpp"

#include <catch2/catch.hpp>

using namespace hepd;
using namespace hepd::sip;
using namespace hepd::sip::test;

namespace {

std::uint64_t outcome(const DialogStats& s, Method m, TransactionOutcome o) {
    return s.transactions_finished[static_cast<std::size_t>(m)][static_cast<std::size_t>(o)].value();
}

const TransactionDelayHistogram& delay(const DialogStats& s, Method m) {
    return s.transaction_delay[static_cast<std::size_t>(m)];
}

Sip registration(std::uint32_t cseq, std::string branch) {
    Sip s;
    s.method = "REGISTER";
    s.call_id = "reg-1@10.0.0.1";
    s.from_tag = "reg-tag";
    s.branch = std::move(branch);
    s.cseq = cseq;
    return s;
}

}  // namespace

TEST_CASE("transactions: REGISTER challenged with 401, then accepted with 200", "[sip][dialog][transaction]") {
    Harness h;
    const Sip r1 = registration(1, "z9hG4bK-r1");
    const Sip r2 = registration(2, "z9hG4bK-r2");
    CHECK(h.send(r1, A, P, ms(0)) == Disposition::transaction_created);
    CHECK(h.send(r1.with_to_tag("reg-srv").resp(401), P, A, ms(20)) == Disposition::transaction_updated);
    CHECK(h.send(r2, A, P, ms(50)) == Disposition::transaction_created);
    CHECK(h.send(r2.with_to_tag("reg-srv").resp(200), P, A, ms(80)) == Disposition::transaction_updated);

    const DialogStats& s = h.stats();
    CHECK(h.table.size() == 0);  // no dialog
    CHECK(s.dialogs_created.value() == 0);
    CHECK(h.table.transactions().size() == 2);
    CHECK(s.transactions_started[static_cast<std::size_t>(Method::register_)].value() == 2);
    CHECK(outcome(s, Method::register_, TransactionOutcome::status_4xx) == 1);
    CHECK(outcome(s, Method::register_, TransactionOutcome::status_2xx) == 1);
    CHECK(outcome(s, Method::register_, TransactionOutcome::timed_out) == 0);
    // 20 ms falls in (10, 25] ms (index 2), 30 ms in (25, 50] ms (index 3).
    CHECK(delay(s, Method::register_).count() == 2);
    CHECK(delay(s, Method::register_).bucket(2) == 1);
    CHECK(delay(s, Method::register_).bucket(3) == 1);
    CHECK(delay(s, Method::register_).sum() == Approx(0.05));
    CHECK(s.transactions_pending.value() == 0);
    CHECK(s.transactions_lingering.value() == 2);
    CHECK(requests(s, Method::register_) == 2);
    CHECK(responses(s, Method::register_, 4) == 1);
    CHECK(responses(s, Method::register_, 2) == 1);

    const Transaction* t = h.table.transactions().find("reg-1@10.0.0.1", 1, Method::register_);
    REQUIRE(t != nullptr);
    CHECK(t->request_time == ms(0));
    CHECK(t->final_time == ms(20));
    CHECK(t->final_status == 401);
    CHECK(t->state == TransactionState::completed);
    CHECK(t->method == Method::register_);
    CHECK(t->hop_count == 1);
    CHECK(t->deadline == ms(20 + 32'000));
    CHECK(h.table.transactions().find("reg-1@10.0.0.1", 3, Method::register_) == nullptr);

    SECTION("a retransmitted final response inside the linger is counted, not re-applied") {
        CHECK(h.send(r1.with_to_tag("reg-srv").resp(401), P, A, ms(520)) == Disposition::retransmission);
        CHECK(retransmissions(s, Method::register_) == 1);
        CHECK(outcome(s, Method::register_, TransactionOutcome::status_4xx) == 1);
        CHECK(delay(s, Method::register_).count() == 2);
    }
    SECTION("both retire after the linger") {
        // The lingers end at 32.02 s and 32.08 s; scans are at least a second apart.
        h.table.expire(ms(31'000));
        CHECK(h.table.transactions().size() == 2);
        h.table.expire(ms(32'050));
        CHECK(h.table.transactions().size() == 1);
        CHECK(h.table.transactions().find("reg-1@10.0.0.1", 2, Method::register_) != nullptr);
        h.table.expire(ms(33'050));
        CHECK(h.table.transactions().size() == 0);
        CHECK(h.all_gauges_zero());
        CHECK(outcome(s, Method::register_, TransactionOutcome::timed_out) == 0);
    }
}

TEST_CASE("transactions: OPTIONS without an answer times out after Timer F", "[sip][dialog][transaction]") {
    Harness h;
    Sip options;
    options.method = "OPTIONS";
    options.call_id = "ping-1";
    options.branch = "z9hG4bK-o1";
    CHECK(h.send(options, P, B, ms(0)) == Disposition::transaction_created);
    CHECK(h.send(options, P, B, ms(500)) == Disposition::retransmission);  // Timer E
    CHECK(h.stats().transactions_pending.value() == 1);
    h.table.expire(ms(31'000));
    CHECK(h.table.transactions().size() == 1);
    h.table.expire(ms(32'000));
    CHECK(h.table.transactions().size() == 0);
    CHECK(outcome(h.stats(), Method::options, TransactionOutcome::timed_out) == 1);
    CHECK(delay(h.stats(), Method::options).count() == 0);
    CHECK(retransmissions(h.stats(), Method::options) == 1);
    CHECK(h.all_gauges_zero());

    // The answer nobody waits for any more.
    CHECK(h.send(options.with_to_tag("x").resp(200), B, P, ms(40'000)) == Disposition::anomaly);
    CHECK(h.stats().anomaly(DialogAnomaly::response_unknown_transaction) == 1);
    CHECK(h.table.transactions().size() == 0);
}

TEST_CASE("transactions: the timeout also applies on the packet path, without expire()", "[sip][dialog][transaction]") {
    Harness h;
    Sip options;
    options.method = "OPTIONS";
    options.call_id = "ping-2";
    h.send(options, P, B, ms(0));
    CHECK(h.send(options.with_to_tag("x").resp(200), B, P, ms(32'000)) == Disposition::anomaly);
    CHECK(outcome(h.stats(), Method::options, TransactionOutcome::timed_out) == 1);
    CHECK(outcome(h.stats(), Method::options, TransactionOutcome::status_2xx) == 0);
}

TEST_CASE("transactions: a transaction relayed by a proxy is one, on two hops", "[sip][dialog][transaction]") {
    Harness h;
    Sip msg;
    msg.method = "MESSAGE";
    msg.call_id = "im-1";
    msg.branch = "z9hG4bK-m1";
    const Sip relayed = msg.with_branch("z9hG4bK-m1p");
    CHECK(h.send(msg, A, P, ms(0)) == Disposition::transaction_created);
    CHECK(h.send(relayed, P, B, ms(1)) == Disposition::transaction_updated);
    CHECK(h.send(relayed.with_to_tag("b").resp(100), B, P, ms(2)) == Disposition::transaction_updated);
    CHECK(h.send(relayed.with_to_tag("b").resp(202), B, P, ms(10)) == Disposition::transaction_updated);
    CHECK(h.send(msg.with_to_tag("b").resp(202), P, A, ms(11)) == Disposition::transaction_updated);
    const Transaction* t = h.table.transactions().find("im-1", 1, Method::message);
    REQUIRE(t != nullptr);
    CHECK(t->hop_count == 2);
    CHECK(t->retransmissions == 0);
    CHECK(t->provisional_time == ms(2));
    CHECK(t->final_time == ms(10));
    CHECK(t->final_status == 202);
    CHECK(h.stats().transactions_started[static_cast<std::size_t>(Method::message)].value() == 1);
    CHECK(outcome(h.stats(), Method::message, TransactionOutcome::status_2xx) == 1);
    CHECK(delay(h.stats(), Method::message).sum() == Approx(0.010));
    CHECK(delay(h.stats(), Method::message).bucket(1) == 1);  // (5, 10] ms
}

TEST_CASE("transactions: SUBSCRIBE/NOTIFY do not become dialogs", "[sip][dialog][transaction]") {
    Harness h;
    Sip sub;
    sub.method = "SUBSCRIBE";
    sub.call_id = "presence-1";
    sub.from_tag = "watcher";
    h.send(sub, A, P, ms(0));
    h.send(sub.with_to_tag("notifier").resp(200), P, A, ms(5));
    for (std::uint32_t i = 1; i <= 5; ++i) {
        const Sip notify =
            sub.with_to_tag("notifier").from_callee("notifier").req("NOTIFY", "z9hG4bK-n" + std::to_string(i), i);
        CHECK(h.send(notify, P, A, ms(1000 * i)) == Disposition::transaction_created);
        CHECK(h.send(notify.resp(200), A, P, ms(1000 * i + 3)) == Disposition::transaction_updated);
    }
    CHECK(h.table.size() == 0);
    CHECK(h.table.transactions().size() == 6);
    CHECK(outcome(h.stats(), Method::notify, TransactionOutcome::status_2xx) == 5);
    CHECK(outcome(h.stats(), Method::subscribe, TransactionOutcome::status_2xx) == 1);
    h.table.expire(ms(5003 + 32'000));
    CHECK(h.table.transactions().size() == 0);
    CHECK(h.all_gauges_zero());
}

TEST_CASE("transactions: in-dialog requests go to the dialog, not the transaction table",
          "[sip][dialog][transaction]") {
    Harness h;
    const Sip invite;
    const Sip tagged = invite.with_to_tag("tt");
    h.send(invite, A, B, ms(0));
    h.send(tagged.resp(200), B, A, ms(100));
    CHECK(h.send(tagged.req("INFO", "z9hG4bK-i1", 2), A, B, ms(200)) == Disposition::dialog_updated);
    CHECK(h.send(tagged.req("INFO", "z9hG4bK-i1", 2).resp(200), B, A, ms(210)) == Disposition::dialog_updated);
    CHECK(h.send(tagged.from_callee("tt").req("UPDATE", "z9hG4bK-u1", 3), B, A, ms(300)) ==
          Disposition::dialog_updated);
    CHECK(h.table.transactions().size() == 0);
    CHECK(h.dialog()->time(DialogTime::last_activity) == ms(300));
}

TEST_CASE("transactions: the cap evicts the least recently active and counts it", "[sip][dialog][transaction]") {
    DialogConfig config;
    config.max_transactions = 500;
    Harness h(config);
    Sip options;
    options.method = "OPTIONS";
    std::size_t memory_at_cap = 0;
    for (int i = 0; i < 10'000; ++i) {
        options.call_id = "flood-" + std::to_string(100'000 + i);
        CHECK(h.send(options, A, P, ms(i)) == Disposition::transaction_created);
        if (i == 999) memory_at_cap = h.table.transactions().memory_bytes();
    }
    CHECK(h.table.transactions().size() == 500);
    CHECK(h.stats().transaction_evictions.value() == 9500);
    CHECK(outcome(h.stats(), Method::options, TransactionOutcome::evicted) == 9500);
    CHECK(h.stats().transactions_pending.value() == 500);
    CHECK(h.table.transactions().memory_bytes() == memory_at_cap);
    // The newest 500 survive; the oldest are gone.
    CHECK(h.table.transactions().find("flood-109999", 1, Method::options) != nullptr);
    CHECK(h.table.transactions().find("flood-109500", 1, Method::options) != nullptr);
    CHECK(h.table.transactions().find("flood-109499", 1, Method::options) == nullptr);
    h.table.expire(ms(10'000 + 32'000));
    CHECK(h.table.transactions().size() == 0);
    CHECK(outcome(h.stats(), Method::options, TransactionOutcome::timed_out) == 500);
    CHECK(h.all_gauges_zero());
}
