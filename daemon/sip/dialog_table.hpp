#pragma once
// One shard's SIP call tracker. Every SIP message of the shard goes through process(), in
// packet-time order; expire() runs the timers on packet time. Dialogs are keyed by Call-ID +
// From-tag of the INVITE:
//  - a call relayed by a proxy is one dialog seen on several hops (hop = unordered src/dst pair);
//  - a B2BUA's legs have different Call-IDs, hence are different dialogs; a Call-ID re-used with
//    a new From-tag is a new dialog;
//  - requests sent by the callee carry the callee's tag in From: lookups try the From-tag, then
//    the To-tag;
//  - a message seen again on the same hop in the same direction is a retransmission: counted,
//    not applied. The copy a proxy relays on the next hop is not one.
// Out-of-dialog non-INVITE requests go to the TransactionTable. SDP in INVITE, 1xx/2xx, ACK,
// UPDATE and PRACK becomes MediaBinding records for the caller's sink; when a dialog leaves the
// table (end of its linger, eviction) the sink gets the end of its bindings, one record per
// media address its SDP named (MediaBinding::dialog_ended).
//
// Not thread-safe: one table per shard (stats() may be read from the exporter thread). No
// exceptions and no allocation on the per-message path, except one key string when a dialog or
// transaction is created (and the tables' own growth until they reach their caps).
#include "core/deadline_queue.hpp"
#include "core/lru_table.hpp"
#include "core/packet_meta.hpp"
#include "core/reserved_memory.hpp"
#include "core/time.hpp"
#include "sip/dialog.hpp"
#include "sip/dialog_media.hpp"
#include "sip/dialog_stats.hpp"
#include "sip/message.hpp"
#include "sip/sdp.hpp"
#include "sip/sdp_side_store.hpp"
#include "sip/transaction_table.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

namespace hepd::sip {

// Sees every dialog record once, when it leaves the table: retired after its linger, or evicted
// at the cap (then possibly unfinished). The offline report collects failed calls this way.
class DialogSink {
public:
    virtual ~DialogSink() = default;
    // `caller` is empty unless the table keeps caller identities.
    virtual void on_dialog_removed(std::string_view call_id, std::string_view from_tag, const Dialog& dialog,
                                   const CallerIdentity& caller, bool evicted) = 0;
};

class DialogTable {
public:
    // `sink` may be null (bindings are then only counted); it must outlive the table.
    explicit DialogTable(const DialogConfig& config, MediaSink* sink = nullptr);
    DialogTable(const DialogTable&) = delete;
    DialogTable& operator=(const DialogTable&) = delete;

    // Applies one parsed message. `message` must have parsed successfully.
    Disposition process(const Message& message, const PacketMeta& meta);
    // Parses `text` (into a buffer reused across calls) and applies it; parse failures are
    // counted in stats().parse_errors.
    Disposition process(std::string_view text, const PacketMeta& meta);

    // Runs the timers whose deadline is <= now (Timer B/C, call cap, end of linger), in dialogs
    // and transactions: what is due, earliest first, at most once per second of packet time.
    // Messages also settle an overdue deadline of the record they match, so results do not
    // depend on how often this runs.
    void expire(Timestamp now);

    // Dialog stored under exactly this Call-ID and From-tag, or null.
    const Dialog* find(std::string_view call_id, std::string_view from_tag) const noexcept;
    // Dialog a message with these Call-ID, From-tag and To-tag belongs to (either direction).
    const Dialog* match(std::string_view call_id, std::string_view from_tag, std::string_view to_tag) const noexcept;

    std::size_t size() const noexcept { return table_.size(); }
    std::size_t active_count() const noexcept;  // records not in a terminal state

    // f(std::string_view call_id, std::string_view from_tag, const Dialog&), in eviction order:
    // ended, unanswered, then confirmed dialogs, each least recently active first. For snapshots
    // (a restore inserts them in this order, hence keeps it) and reports.
    template <class F>
    void for_each(F&& f) const {
        table_.for_each([&](std::uint32_t, const auto& e) { f(e.key.call_id(), e.key.from_tag(), e.value); });
    }
    // Same, for dialogs still open (what an offline run reports as active at the end).
    template <class F>
    void for_each_active(F&& f) const {
        table_.for_each([&](std::uint32_t, const auto& e) {
            if (!e.value.finished()) f(e.key.call_id(), e.key.from_tag(), e.value);
        });
    }
    // f(call_id, from_tag, const Dialog&, const SdpSides&, const CallerIdentity&): for_each()
    // with what the table keeps beside each dialog: the media addresses of its SDP (all empty
    // when it had none) and who placed it (empty unless kept). For snapshots and records.
    template <class F>
    void for_each_in_full(F&& f) const {
        table_.for_each([&](std::uint32_t at, const auto& e) {
            f(e.key.call_id(), e.key.from_tag(), e.value, sdp_sides_.get(at, e.value.hops), caller_identity_of(at));
        });
    }
    // Who placed the dialog (Call-ID, From-tag); empty when it is unknown or not kept.
    const CallerIdentity& caller_identity(std::string_view call_id, std::string_view from_tag) const noexcept;
    // Inserts a fully formed record (snapshot restore) with what the table keeps beside it:
    // counted in the state gauges, not as created. False when the key is refused (too long) or
    // already present. At the cap this evicts like any insertion.
    bool restore(std::string_view call_id, std::string_view from_tag, const Dialog& record,
                 const SdpSides& sdp_sides = {}, const CallerIdentity& caller = {});

    // Not owned; may be null.
    void set_sink(DialogSink* sink) noexcept { removed_sink_ = sink; }
    // Where dialogs get their peer groups; not owned, may be null (every dialog is "other").
    void set_peers(const peer::PeerDirectory* directory) noexcept { peers_ = peer::PeerClassifier(directory); }

    TransactionTable& transactions() noexcept { return transactions_; }
    const TransactionTable& transactions() const noexcept { return transactions_; }
    const DialogStats& stats() const noexcept { return *stats_; }
    const DialogConfig& config() const noexcept { return config_; }

    // Dialog and transaction tables' structures plus the heap their keys (and endpoints not IPv4) hold.
    std::size_t memory_bytes() const noexcept;
    // A lower bound of every dialog's deadline (microseconds; the largest value with none): no
    // expire() before this packet time ends a dialog or its bindings.
    std::int64_t next_deadline_us() const noexcept { return due_.earliest(); }

private:
    // At the cap, a dialog that has ended and only lingers goes first, then one nobody answered
    // yet (trying, or a proxy's 100), then one ringing (the callee's 1xx: a phone rings, which a
    // scanner's INVITE rarely reaches), and a confirmed call only when no other is left; each the
    // least recently active of its class. A confirmed call is silent from its ACK to its BYE and a
    // ringing one for up to a minute: in one order, a flood of unanswered INVITEs (a SIP scanner)
    // evicted the calls in progress before any of its own.
    struct EvictionClass {
        static constexpr std::size_t kCount = 4;
        static constexpr std::size_t of(const Dialog& d) noexcept {
            switch (d.state) {
            case DialogState::trying:
            case DialogState::proceeding: return 1;
            case DialogState::early: return 2;
            case DialogState::confirmed: return 3;
            default: return 0;
            }
        }
    };
    using Table = LruTable<DialogKey, Dialog, DialogKeyHash, true, EvictionClass>;
    static constexpr CallerIdentity kNoCallerIdentity{};

    std::uint32_t lookup(std::uint64_t call_hash, std::string_view call_id, std::string_view tag) const noexcept;
    Disposition on_unknown(const Message& m, const PacketMeta& meta, Hop hop, std::uint64_t call_hash,
                           std::uint32_t fingerprint);
    Disposition create(const Message& m, const PacketMeta& meta, Hop hop, std::uint32_t fingerprint);
    Disposition on_dialog_message(std::uint32_t at, Party side, const Message& m, const PacketMeta& meta, Hop hop,
                                  std::uint32_t fingerprint);
    void on_request(Dialog& d, Party side, const Message& m, Timestamp now);
    void on_response(Dialog& d, Party side, std::size_t hop_index, const Message& m, Timestamp now);
    void on_invite_response(Dialog& d, std::size_t hop_index, const Message& m, Timestamp now);
    void emit_sdp(std::uint32_t at, const Message& m, Hop hop, Timestamp now);

    // A message of the dialog at `now`: the timer steps its deadlines due by then.
    std::uint32_t settle(std::uint32_t at, Timestamp now);
    // One timer step: finish an open dialog, or retire a finished one. Returns kNone if retired.
    // by_clock: the packet clock reached the deadline (expire()), not a message of the dialog.
    std::uint32_t on_deadline(std::uint32_t at, bool by_clock);
    void finish(Dialog& d, DialogState state, Timestamp when);
    void classify_peers(Dialog& d);
    void follow_callee_side(Dialog& d, const PacketMeta& meta);
    PeerDialogFigures& peer_figures(const Dialog& d) { return stats_->by_peers.at(d.caller_peer, d.callee_peer); }
    void set_state(Dialog& d, DialogState state) noexcept;
    void set_deadline(Dialog& d, Timestamp deadline) noexcept;
    // Arms the deadline of the dialog at `at` unless one no later is armed (DeadlineQueue).
    void queue_deadline(std::uint32_t at);
    void note_cause(Dialog& d, const Message& m) noexcept;
    void count_cause(Dialog& d) noexcept;
    bool awaits_indicative(const Dialog& d) const noexcept;
    void note_indicative(Dialog& d, SetupResult result, Timestamp when, double since_invite);
    std::int64_t interval(Timestamp from, Timestamp to) noexcept;
    void anomaly(DialogAnomaly a) noexcept;
    void defect(MessageDefect d) noexcept;
    // `now`/`when`: when a dialog leaves the table (dates the end of its bindings; 0 at restore).
    void insert_entry(DialogKey key, const Dialog& record, std::uint32_t* at_out, Timestamp now);
    // at_deadline: removed because the packet clock reached `when` (expire(), not a message or an insert).
    void account_removed(const Table::Entry& entry, bool evicted, std::uint32_t at, Timestamp when,
                         bool at_deadline = false);
    // Tells the owners of the media addresses of the dialog `entry` (its SDP sides still at `at`)
    // that its bindings go.
    void end_media(std::uint32_t at, const Table::Entry& entry, Timestamp when, bool at_deadline);
    // Releases the addresses of `replaced`, an SDP side a newer one took the place of, that no
    // side left names (a re-INVITE that moved the media, a hold, another fork's early media).
    void release_replaced(const SdpSide& replaced, const SdpSides& sides, const Table::Entry& entry, Timestamp now);
    static MediaBinding release_of(const Table::Entry& entry, Timestamp when) noexcept;

    DialogConfig config_;
    MediaSink* sink_;
    DialogSink* removed_sink_ = nullptr;
    peer::PeerClassifier peers_;
    // Heap-held so that the exporter keeps a stable address and the table stays movable later.
    std::unique_ptr<DialogStats> stats_;
    Table table_;
    TransactionTable transactions_;
    std::size_t key_heap_bytes_ = 0;
    std::size_t endpoint_heap_bytes_ = 0;  // dialogs' endpoints that are not IPv4 (Dialog::endpoint_heap_bytes)
    DeadlineQueue due_;                    // every live dialog has an armed deadline no later than its own
    // Scratch buffers reused across messages (a Message and a SessionDescription are kilobytes).
    std::unique_ptr<Message> message_;
    std::unique_ptr<SessionDescription> sdp_;
    SdpSideStore sdp_sides_;  // by dialog entry index
    // By dialog entry index, like the SDP sides; empty unless config_.keep_caller_identity.
    EntryColumn<CallerIdentity> caller_identities_;
    const CallerIdentity& caller_identity_of(std::uint32_t at) const noexcept;
};

}  // namespace hepd::sip
