#include "sip/transaction_table.hpp"

#include "core/hash.hpp"

#include <algorithm>
#include <limits>

namespace hepd::sip {

namespace {

TransactionOutcome outcome_for_status(std::uint16_t code) noexcept {
    switch (code / 100) {
    case 2: return TransactionOutcome::status_2xx;
    case 3: return TransactionOutcome::status_3xx;
    case 4: return TransactionOutcome::status_4xx;
    case 5: return TransactionOutcome::status_5xx;
    default: return TransactionOutcome::status_6xx;
    }
}

std::size_t key_heap(const TransactionKey& key) noexcept { return string_heap_bytes(key.call_id); }

// RFC 3261 10.2: a UA answers these by sending the REGISTER again, with the next CSeq.
bool is_retried_registration(std::uint16_t code) noexcept { return code == 401 || code == 407 || code == 423; }

Counter& registrations(DialogStats& stats, RegistrationResult result) noexcept {
    return stats.registrations[static_cast<std::size_t>(result)];
}

Counter& outcome_counter(DialogStats& stats, Method method, TransactionOutcome outcome) noexcept {
    return stats.transactions_finished[static_cast<std::size_t>(method)][static_cast<std::size_t>(outcome)];
}

}  // namespace

std::uint64_t transaction_hash(std::uint64_t call_hash, std::uint32_t cseq, Method method) noexcept {
    const std::uint64_t extra = (std::uint64_t{cseq} << 8) | static_cast<std::uint8_t>(method);
    return mix64(call_hash ^ (extra * 0x9e3779b97f4a7c15ULL));
}

std::uint64_t TransactionKeyHash::operator()(const TransactionKey& key) const noexcept {
    return transaction_hash(hash_text(key.call_id), key.cseq, key.method);
}

TransactionTable::TransactionTable(const DialogConfig& config, DialogStats& stats)
    : config_(config), stats_(stats), table_(config.max_transactions) {}

std::uint32_t TransactionTable::lookup(std::uint64_t hash, std::string_view call_id, std::uint32_t cseq,
                                       Method method) const noexcept {
    return table_.find(
        hash, [&](const TransactionKey& k) { return k.cseq == cseq && k.method == method && k.call_id == call_id; });
}

const Transaction* TransactionTable::find(std::string_view call_id, std::uint32_t cseq, Method method) const noexcept {
    const std::uint32_t at = lookup(transaction_hash(hash_text(call_id), cseq, method), call_id, cseq, method);
    return at == Table::kNone ? nullptr : &table_.entry(at).value;
}

void TransactionTable::queue_deadline(std::uint32_t at) { due_.schedule(at, table_[at].deadline.us); }

void TransactionTable::account_removed(const Table::Entry& entry) {
    key_heap_bytes_ -= key_heap(entry.key);
    if (entry.value.state == TransactionState::pending)
        stats_.transactions_pending.add(-1);
    else
        stats_.transactions_lingering.add(-1);
}

void TransactionTable::insert_entry(TransactionKey key, const Transaction& record) {
    key_heap_bytes_ += key_heap(key);
    auto [at, evicted] = table_.insert(std::move(key), record);
    if (evicted) {
        stats_.transaction_evictions.add();
        if (evicted->value.state == TransactionState::pending)
            outcome_counter(stats_, evicted->value.method, TransactionOutcome::evicted).add();
        account_removed(*evicted);
    }
    if (record.state == TransactionState::pending)
        stats_.transactions_pending.add(1);
    else
        stats_.transactions_lingering.add(1);
    queue_deadline(at);
}

void TransactionTable::on_deadline(std::uint32_t at) {
    const auto& entry = table_.entry(at);
    const Transaction& t = entry.value;
    if (t.state == TransactionState::pending) outcome_counter(stats_, t.method, TransactionOutcome::timed_out).add();
    if (t.method == Method::register_) {
        if (t.state == TransactionState::pending)
            registrations(stats_, RegistrationResult::timeout).add();
        else if (is_retried_registration(t.final_status) && !t.retried)
            registrations(stats_, RegistrationResult::failure).add();  // the UA gave up
    }
    account_removed(entry);
    table_.erase(at);
}

std::uint32_t TransactionTable::settle(std::uint32_t at, Timestamp now) {
    if (table_[at].deadline > now) return at;
    on_deadline(at);
    return Table::kNone;
}

Disposition TransactionTable::on_request(const Message& m, const PacketMeta& meta, Hop hop, std::uint64_t call_hash,
                                         std::uint32_t fingerprint) {
    const Method method = m.method;
    const std::uint64_t hash = transaction_hash(call_hash, m.cseq.number, method);
    std::uint32_t at = lookup(hash, m.call_id, m.cseq.number, method);
    if (at != Table::kNone) at = settle(at, meta.time);
    if (at != Table::kNone) {
        table_.touch(at);
        Transaction& t = table_[at];
        t.last_activity = std::max(t.last_activity, meta.time);
        if (t.recent.contains(fingerprint)) {
            stats_.retransmissions[static_cast<std::size_t>(method)].add();
            if (t.retransmissions < std::numeric_limits<std::uint16_t>::max()) ++t.retransmissions;
            return Disposition::retransmission;
        }
        t.recent.push(fingerprint);
        remember_id(t.hops, t.hop_count, hop.id);
        t.request_time = std::min(t.request_time, meta.time);
        return Disposition::transaction_updated;
    }

    Transaction t;
    if (method == Method::register_ && m.cseq.number > 0) {
        // The retry of a challenged REGISTER continues its attempt (RFC 6076 4.1 Figure 1).
        const std::uint32_t cseq = m.cseq.number - 1;
        std::uint32_t prior = lookup(transaction_hash(call_hash, cseq, method), m.call_id, cseq, method);
        if (prior != Table::kNone) prior = settle(prior, meta.time);
        if (prior != Table::kNone) {
            Transaction& p = table_[prior];
            if (p.state == TransactionState::completed && is_retried_registration(p.final_status) && !p.retried) {
                p.retried = true;
                t.attempt_time = p.attempt_time.us != 0 ? p.attempt_time : p.request_time;
            }
        }
    }
    t.request_time = meta.time;
    t.last_activity = meta.time;
    t.deadline = Timestamp{meta.time.us + config_.transaction_timeout.count()};
    t.method = method;
    t.agent = static_cast<std::uint8_t>(meta.agent < kMaxAgents ? meta.agent : 0);
    t.recent.push(fingerprint);
    remember_id(t.hops, t.hop_count, hop.id);
    insert_entry(TransactionKey{std::string(m.call_id), m.cseq.number, method}, t);
    stats_.transactions_started[static_cast<std::size_t>(method)].add();
    return Disposition::transaction_created;
}

Disposition TransactionTable::on_response(const Message& m, const PacketMeta& meta, Hop hop, std::uint64_t call_hash,
                                          std::uint32_t fingerprint) {
    const Method method = m.method;  // of the CSeq
    std::uint32_t at = lookup(transaction_hash(call_hash, m.cseq.number, method), m.call_id, m.cseq.number, method);
    if (at != Table::kNone) at = settle(at, meta.time);
    if (at == Table::kNone) {
        stats_.anomalies[static_cast<std::size_t>(DialogAnomaly::response_unknown_transaction)].add();
        return Disposition::anomaly;
    }
    table_.touch(at);
    Transaction& t = table_[at];
    t.last_activity = std::max(t.last_activity, meta.time);
    if (t.recent.contains(fingerprint)) {
        stats_.retransmissions[static_cast<std::size_t>(method)].add();
        if (t.retransmissions < std::numeric_limits<std::uint16_t>::max()) ++t.retransmissions;
        return Disposition::retransmission;
    }
    t.recent.push(fingerprint);
    remember_id(t.hops, t.hop_count, hop.id);

    if (m.status_code < 200) {
        if (t.provisional_time.us == 0) t.provisional_time = meta.time;
        return Disposition::transaction_updated;
    }
    if (t.state == TransactionState::pending) {
        t.state = TransactionState::completed;
        t.final_status = m.status_code;
        t.final_time = meta.time;
        std::int64_t delay = meta.time.us - t.request_time.us;
        if (delay < 0) {
            stats_.anomalies[static_cast<std::size_t>(DialogAnomaly::clock_skew)].add();
            delay = 0;
        }
        stats_.transaction_delay[static_cast<std::size_t>(method)].observe(static_cast<double>(delay) / 1e6);
        outcome_counter(stats_, method, outcome_for_status(m.status_code)).add();
        if (method == Method::register_) on_register_final(t, meta.time);
        stats_.transactions_pending.add(-1);
        stats_.transactions_lingering.add(1);
        t.deadline = Timestamp{meta.time.us + config_.transaction_linger.count()};
        queue_deadline(at);
    }
    return Disposition::transaction_updated;
}

void TransactionTable::on_register_final(const Transaction& t, Timestamp now) {
    if (t.final_status < 300) {
        const Timestamp start = t.attempt_time.us != 0 ? t.attempt_time : t.request_time;
        stats_.rrd.observe(static_cast<double>(std::max<std::int64_t>(0, now.us - start.us)) / 1e6);
        registrations(stats_, RegistrationResult::success).add();
    } else if (!is_retried_registration(t.final_status)) {
        registrations(stats_, RegistrationResult::failure).add();
    }  // a challenge: the retry continues the attempt, or the linger ends it as a failure
}

void TransactionTable::expire(Timestamp now) {
    if (now.us < due_.earliest()) return;
    // Every live transaction has an armed deadline no later than its own (see DialogTable::expire).
    while (const auto item = due_.pop_due(now.us)) {
        if (!table_.contains(item->at)) continue;  // retired or evicted since
        if (settle(item->at, now) != Table::kNone) queue_deadline(item->at);
    }
}

bool TransactionTable::restore(const TransactionKey& key, const Transaction& record) {
    if (key.call_id.size() > kMaxCallIdSize) return false;
    if (lookup(TransactionKeyHash{}(key), key.call_id, key.cseq, key.method) != Table::kNone) return false;
    TransactionKey copy{std::string(key.call_id), key.cseq, key.method};
    insert_entry(std::move(copy), record);
    return true;
}

}  // namespace hepd::sip
