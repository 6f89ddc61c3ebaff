#pragma once
// Non-INVITE transactions outside dialogs (REGISTER, OPTIONS, SUBSCRIBE, NOTIFY, MESSAGE,
// PUBLISH, INFO, ...), keyed by Call-ID + CSeq number + method. Each lives from its request to
// its final response (delay and status class counted) or to Timer F (timed_out), then lingers
// briefly to absorb retransmissions; none becomes a long-lived record. Capped: at the cap the
// least recently active transaction is evicted and counted.
#include "core/deadline_queue.hpp"
#include "core/lru_table.hpp"
#include "core/packet_meta.hpp"
#include "sip/dialog.hpp"
#include "sip/dialog_stats.hpp"
#include "sip/message.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace hepd::sip {

class TransactionTable {
public:
    TransactionTable(const DialogConfig& config, DialogStats& stats);

    // The caller (DialogTable) has counted the message, checked the key length and found no
    // dialog for it; `call_hash` is hash_text(message.call_id).
    Disposition on_request(const Message& message, const PacketMeta& meta, Hop hop, std::uint64_t call_hash,
                           std::uint32_t fingerprint);
    Disposition on_response(const Message& message, const PacketMeta& meta, Hop hop, std::uint64_t call_hash,
                            std::uint32_t fingerprint);

    // Times out pending transactions and retires lingering ones whose deadline is <= now: what
    // is due, earliest first, at most once per second of packet time.
    void expire(Timestamp now);

    std::size_t size() const noexcept { return table_.size(); }
    const Transaction* find(std::string_view call_id, std::uint32_t cseq, Method method) const noexcept;

    // f(const TransactionKey&, const Transaction&), least recently active first.
    template <class F>
    void for_each(F&& f) const {
        table_.for_each([&](std::uint32_t, const auto& entry) { f(entry.key, entry.value); });
    }
    // Inserts a fully formed record (snapshot restore). False when the key is refused or present.
    bool restore(const TransactionKey& key, const Transaction& record);

    // Table structures plus the heap held by keys.
    std::size_t memory_bytes() const noexcept { return table_.memory_bytes() + key_heap_bytes_ + due_.memory_bytes(); }

private:
    using Table = LruTable<TransactionKey, Transaction, TransactionKeyHash>;

    std::uint32_t lookup(std::uint64_t hash, std::string_view call_id, std::uint32_t cseq,
                         Method method) const noexcept;
    // Applies an overdue deadline found on the packet path, so that results do not depend on
    // how often expire() runs. Returns Table::kNone when the entry is gone.
    std::uint32_t settle(std::uint32_t at, Timestamp now);
    void on_deadline(std::uint32_t at);
    // RFC 6076 4.1/4.2: RRD and the registration attempt's result, at a REGISTER's final response.
    void on_register_final(const Transaction& t, Timestamp now);
    void account_removed(const Table::Entry& entry);
    void insert_entry(TransactionKey key, const Transaction& record);
    // Arms the deadline of the transaction at `at` unless one no later is armed (DeadlineQueue).
    void queue_deadline(std::uint32_t at);

    DialogConfig config_;
    DialogStats& stats_;
    Table table_;
    std::size_t key_heap_bytes_ = 0;
    DeadlineQueue due_;  // every live transaction has an armed deadline no later than its own
};

std::uint64_t transaction_hash(std::uint64_t call_hash, std::uint32_t cseq, Method method) noexcept;

}  // namespace hepd::sip
