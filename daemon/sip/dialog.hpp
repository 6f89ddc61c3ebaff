#pragma once
// Plain records of the SIP dialog and transaction tables: what one call (or one out-of-dialog
// transaction) looked like on the wire. Kept as plain data (no pointers, no views) so that a
// snapshot can serialise them and a restore can insert them back, possibly into another shard.
#include "core/address.hpp"
#include "core/bytes.hpp"
#include "core/compact_text.hpp"
#include "core/packed_endpoint.hpp"
#include "core/packet_meta.hpp"
#include "core/time.hpp"
#include "peer/peer_groups.hpp"
#include "sip/message.hpp"
#include "sip/method.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

namespace hepd::sip {

// Timers and caps of the tables; the daemon fills it from TablesConfig / TimersConfig.
struct DialogConfig {
    std::uint32_t max_dialogs = 100'000;
    std::uint32_t max_transactions = 100'000;
    // No final answer and no ringing this long after the INVITE: RFC 3261 Timer B (64 * T1).
    std::chrono::microseconds invite_timeout = std::chrono::seconds(32);
    // Ringing (101..199 seen) without a final answer: RFC 3261 Timer C, "greater than 3 minutes",
    // restarted by every provisional. Calls commonly ring longer than Timer B.
    std::chrono::microseconds ringing_timeout = std::chrono::minutes(3);
    // A 401/407 is often answered by a person typing credentials into a softphone (sngrep's
    // aaa.pcap: INVITEs re-sent 32 s and 51 s after the 407), so Timer B is too short a wait for
    // the retry. The wait is on a human, like ringing, hence the same bound as Timer C. After it,
    // the challenge is the call's outcome, dated when it arrived. Not in the configuration file.
    std::chrono::microseconds challenge_timeout = std::chrono::minutes(3);
    std::chrono::microseconds max_call_duration = std::chrono::hours(4);
    // Finished dialogs stay this long so that late retransmissions, ACKs and the BYE's answer
    // still match (and are counted) instead of creating new records.
    std::chrono::microseconds dialog_linger = std::chrono::seconds(32);
    // Non-INVITE transaction with no final response: Timer F (64 * T1).
    std::chrono::microseconds transaction_timeout = std::chrono::seconds(32);
    // Completed non-INVITE transaction kept to absorb retransmissions: Timer J/K.
    std::chrono::microseconds transaction_linger = std::chrono::seconds(32);
    // Keep each dialog's CallerIdentity (call records read it; nothing else does): 130 bytes a
    // dialog, so hepd keeps it only when it writes records.
    bool keep_caller_identity = true;
};

// The label set of hepd_dialogs_active{state}. Terminal states (terminated and after) are held by
// records that linger after the end of the call.
enum class DialogState : std::uint8_t {
    trying,      // INVITE seen
    proceeding,  // 100 Trying
    early,       // 101..199
    confirmed,   // 2xx to the INVITE
    terminated,  // BYE after the answer
    cancelled,   // CANCEL and/or 487, or BYE before the answer
    failed,      // final response >= 300
    timed_out,   // no final answer, or no BYE within max_call_duration
};
inline constexpr std::size_t kDialogStateCount = 8;
std::string_view to_string(DialogState state) noexcept;

constexpr bool is_finished(DialogState s) noexcept { return s >= DialogState::terminated; }
constexpr bool is_unanswered(DialogState s) noexcept { return s < DialogState::confirmed; }

// The label set of hepd_dialogs_finished_total{outcome}.
enum class DialogOutcome : std::uint8_t { completed, failed, cancelled, timed_out, evicted };
inline constexpr std::size_t kDialogOutcomeCount = 5;
std::string_view to_string(DialogOutcome outcome) noexcept;

// Outcome of a record in a terminal state (evicted records are gone, so never have a state).
constexpr DialogOutcome outcome_of(DialogState s) noexcept {
    switch (s) {
    case DialogState::cancelled: return DialogOutcome::cancelled;
    case DialogState::failed: return DialogOutcome::failed;
    case DialogState::timed_out: return DialogOutcome::timed_out;
    default: return DialogOutcome::completed;
    }
}

enum class Party : std::uint8_t { unknown, caller, callee };
std::string_view to_string(Party party) noexcept;

// Non-INVITE transaction outcomes: the final status class, or why there was none.
enum class TransactionOutcome : std::uint8_t {
    status_2xx,
    status_3xx,
    status_4xx,
    status_5xx,
    status_6xx,
    timed_out,
    evicted,
};
inline constexpr std::size_t kTransactionOutcomeCount = 7;
std::string_view to_string(TransactionOutcome outcome) noexcept;

// Input the tables cannot use. Counted by reason; never stored.
enum class DialogAnomaly : std::uint8_t {
    invite_without_from_tag,
    key_too_long,             // Call-ID or tag beyond kMaxCallIdSize / kMaxTagSize
    reinvite_unknown_dialog,  // INVITE with a To-tag for a dialog not tracked
    ack_unknown_dialog,
    bye_unknown_dialog,
    cancel_unknown_dialog,
    in_dialog_unknown_dialog,  // PRACK or UPDATE for a dialog not tracked
    response_unknown_dialog,   // response to INVITE/BYE/CANCEL/PRACK/UPDATE, dialog not tracked
    response_unknown_transaction,
    invite_after_end,        // a new INVITE attempt (higher CSeq, no To-tag) after the end
    sdp_unusable_address,    // SDP media with no literal, specified connection address
    multipart_body_skipped,  // SDP inside multipart bodies is not extracted
    clock_skew,              // an interval came out negative (agents' clocks disagree): 0 used
};
inline constexpr std::size_t kDialogAnomalyCount = 13;
std::string_view to_string(DialogAnomaly anomaly) noexcept;

// Messages that parsed and were used as far as they go, but carry a defect the parser only
// flagged (Message and SessionDescription fields of the same names). Counted once per message.
enum class MessageDefect : std::uint8_t {
    headers_unterminated,    // input ended after a header line, with no empty line
    body_truncated,          // fewer body bytes than Content-Length declares
    content_length_invalid,  // Content-Length not a 32-bit decimal number: the rest was the body
    sdp_media_overflow,      // m= sections beyond kMaxMedia, ignored
    sdp_formats_overflow,    // formats of an m= line beyond kMaxFormats, ignored
};
inline constexpr std::size_t kMessageDefectCount = 5;
std::string_view to_string(MessageDefect defect) noexcept;

// Keys longer than this are refused: they would let one packet pin kilobytes per record.
inline constexpr std::size_t kMaxCallIdSize = 255;
inline constexpr std::size_t kMaxTagSize = 128;

inline constexpr std::size_t kMaxHops = 4;        // distinct hops stored (counted exactly up to this)
inline constexpr std::size_t kMaxForkTags = 4;    // distinct To-tags stored (forks counted exactly up to this)
inline constexpr std::size_t kUserAgentCap = 32;  // bytes of the caller's User-Agent kept
inline constexpr std::size_t kPartyNameCap = 46;  // bytes of a party's URI user + host kept
inline constexpr std::size_t kPartyUserCap = 24;  // of which at most this much user part
inline constexpr std::uint16_t kNoCause = 0xffff;
inline constexpr std::uint32_t kNoCSeq = 0xffffffffU;  // RFC 3261: CSeq numbers are < 2^31

// The last N message fingerprints of a dialog or transaction: a message whose fingerprint is
// already there is a retransmission. Fixed size, so memory per record stays bounded.
template <std::size_t N>
struct FingerprintRing {
    std::array<std::uint32_t, N> slots{};  // 0 = empty (fingerprints are never 0)
    std::uint8_t next = 0;

    bool contains(std::uint32_t fp) const noexcept {
        for (const std::uint32_t s : slots)
            if (s == fp) return true;
        return false;
    }
    void push(std::uint32_t fp) noexcept {
        slots[next] = fp;
        next = static_cast<std::uint8_t>((next + 1) % N);
    }
    friend bool operator==(const FingerprintRing&, const FingerprintRing&) = default;
};

inline constexpr std::size_t kDialogRingSize = 12;
inline constexpr std::size_t kTransactionRingSize = 6;

// Where a message travelled: the unordered (src, dst) pair, and which way along it.
struct Hop {
    std::uint32_t id = 0;  // hash of the unordered endpoint pair (never 0)
    bool forward = false;  // src sorts before dst
};
Hop hop_of(const PacketMeta& meta) noexcept;

// Adds `id` to a record's list of hop ids (or To-tag hashes); returns its index (0 = the first
// one seen), or N when the list is full and `id` is not in it (the count then stays at N).
template <std::size_t N>
std::size_t remember_id(std::array<std::uint32_t, N>& ids, std::uint8_t& count, std::uint32_t id) noexcept {
    const std::size_t stored = count < N ? count : N;
    for (std::size_t i = 0; i < stored; ++i)
        if (ids[i] == id) return i;
    if (stored == N) return N;
    ids[stored] = id;
    ++count;
    return stored;
}

// The 32-bit hash stored for a To-tag (Dialog::fork_tags, Dialog::confirmed_tag); never 0.
std::uint32_t tag_id(std::string_view tag) noexcept;

// Identity of a message within its transaction, as seen on one hop in one direction: top Via
// branch + CSeq + method, and for a response also the status code and the To-tag (two forks
// answer the same branch with the same code, and those are not retransmissions of each other),
// and the body (a callee's two different 183s are two messages).
// Seeing a fingerprint twice means a retransmission; the copy a proxy relays on another hop
// differs by the hop (and usually the branch).
std::uint32_t message_fingerprint(const Message& message, Hop hop) noexcept;

// What the tables did with a message.
enum class Disposition : std::uint8_t {
    dialog_created,
    dialog_updated,
    transaction_created,
    transaction_updated,
    retransmission,  // counted, not applied
    anomaly,         // counted by DialogAnomaly, not stored
    parse_error,     // counted by ParseError
};
std::string_view to_string(Disposition disposition) noexcept;

// Who a call was from or to, as the INVITE's URIs named them (call records): the user part and
// the host of a SIP URI (a tel: URI gives its number as the user and no host). Both are cut to
// fit: the user part to kPartyUserCap, the host to what is left of kPartyNameCap.
struct PartyName {
    std::array<char, kPartyNameCap> text{};  // user, then host
    std::uint8_t user_size = 0;
    std::uint8_t host_size = 0;

    std::string_view user() const noexcept { return {text.data(), user_size}; }
    std::string_view host() const noexcept { return {text.data() + user_size, host_size}; }
    friend bool operator==(const PartyName&, const PartyName&) = default;
};
// The user part and host of a sip:, sips: or tel: URI as written in From, To or the request
// line ("sip:+4930123@example.com:5060;user=phone"); empty parts when the URI has none.
PartyName party_name(std::string_view uri) noexcept;
PartyName party_name(std::string_view user, std::string_view host) noexcept;

// Who placed a call and to whom, as its first INVITE said: what a call record names. The dialog
// table keeps it beside the dialog (DialogConfig::keep_caller_identity).
struct CallerIdentity {
    std::uint8_t user_agent_size = 0;
    std::array<char, kUserAgentCap> user_agent{};  // caller's User-Agent, cut at kUserAgentCap
    PartyName from_party;                          // From URI of the first INVITE
    PartyName to_party;                            // To URI of the first INVITE (its request URI when To names no user)

    std::string_view user_agent_view() const noexcept { return {user_agent.data(), user_agent_size}; }
    friend bool operator==(const CallerIdentity&, const CallerIdentity&) = default;
};

// The times of a dialog other than its INVITE's (Dialog::time); 0 = not seen.
enum class DialogTime : std::uint8_t {
    trying,   // first 100
    ringing,  // first 180/183 (PDD end)
    // RFC 6076 4.3 status indicative response (SRD end): the first provisional other than 100,
    // else the 2xx or the failure (4xx-6xx) that settled the call.
    indicative,
    answer,      // first 2xx to the INVITE
    ack,         // first ACK of the INVITE transaction
    cancel,      // first CANCEL
    bye,         // first BYE
    bye_answer,  // first final response to a BYE
    end,         // when the record reached its terminal state; while a 401/407 waits for its retry,
                 // when the challenge arrived
    last_activity,
    deadline,  // next timer: Timer B/C, call cap, or the end of the linger
};
inline constexpr std::size_t kDialogTimeCount = 11;

// A dialog's twelve times in 64 bytes instead of 96 (every dialog is one call, and calls are
// what memory is sized by): the base in full, the others as signed 40-bit microsecond offsets
// from it (+-2^39 us, about 6.36 days), 5 bytes each. The base is the INVITE's time once that is
// set (setting it re-encodes the others), before that the first time set. A time further than
// that from the base is clamped to the nearest offset kept: only agents whose clocks are days
// apart produce one (the table counts their negative intervals as DialogAnomaly::clock_skew).
// The configuration keeps the timers within it (timers.max_call_duration up to 120 h).
class DialogTimes {
public:
    Timestamp invite() const noexcept { return invite_set_ ? base_ : Timestamp{}; }
    void set_invite(Timestamp t) noexcept;
    Timestamp get(DialogTime which) const noexcept {
        const std::uint64_t stored = load(which);
        return stored == kNotSet ? Timestamp{} : Timestamp{base_.us + offset_of(stored)};
    }
    void set(DialogTime which, Timestamp t) noexcept {
        if (t.us == 0) return store(which, kNotSet);
        if (!invite_set_ && base_.us == 0) base_ = t;  // the first time set, until the INVITE's
        store(which, encode(t));
    }

    // By value: the same times set in another order may be kept against another base.
    friend bool operator==(const DialogTimes& a, const DialogTimes& b) noexcept;

private:
    static constexpr std::size_t kOffsetBytes = 5;
    // Offsets are kept biased by 2^39, so that the reserved minimum, "not set", is all zero bytes.
    static constexpr std::int64_t kBias = std::int64_t{1} << 39;
    static constexpr std::int64_t kMaxOffset = kBias - 1;
    static constexpr std::uint64_t kNotSet = 0;

    static constexpr std::int64_t offset_of(std::uint64_t stored) noexcept {
        return static_cast<std::int64_t>(stored) - kBias;
    }
    std::uint64_t load(DialogTime which) const noexcept {
        // A word and a byte, not five byte loads: the compiler does not merge the loop's.
        const std::uint8_t* p = offsets_.data() + static_cast<std::size_t>(which) * kOffsetBytes;
        return std::uint64_t{load_le32(p)} | (std::uint64_t{p[4]} << 32);
    }
    void store(DialogTime which, std::uint64_t stored) noexcept {
        std::uint8_t* p = offsets_.data() + static_cast<std::size_t>(which) * kOffsetBytes;
        store_le32(p, static_cast<std::uint32_t>(stored));
        p[4] = static_cast<std::uint8_t>(stored >> 32);
    }
    // `t` (not 0) against the base, clamped to the offsets kept (bounds that cannot overflow).
    std::uint64_t encode(Timestamp t) const noexcept {
        const std::int64_t low = base_.us >= std::numeric_limits<std::int64_t>::min() + kMaxOffset
                                     ? base_.us - kMaxOffset
                                     : std::numeric_limits<std::int64_t>::min();
        const std::int64_t high = base_.us <= std::numeric_limits<std::int64_t>::max() - kMaxOffset
                                      ? base_.us + kMaxOffset
                                      : std::numeric_limits<std::int64_t>::max();
        return static_cast<std::uint64_t>(std::clamp(t.us, low, high) - base_.us + kBias);
    }

    Timestamp base_;
    std::array<std::uint8_t, kDialogTimeCount * kOffsetBytes> offsets_{};  // little-endian, biased
    bool invite_set_ = false;
};

struct Dialog {
    Timestamp invite_time() const noexcept { return times_.invite(); }  // first INVITE, earliest over hops
    void set_invite_time(Timestamp t) noexcept { times_.set_invite(t); }
    Timestamp time(DialogTime which) const noexcept { return times_.get(which); }
    void set_time(DialogTime which, Timestamp t) noexcept { times_.set(which, t); }  // 0 clears it

    Endpoint caller() const noexcept { return endpoints_.get(kCaller); }  // source of the first INVITE (first hop)
    // Its destination: the callee, or the proxy that relays the call.
    Endpoint callee() const noexcept { return endpoints_.get(kCallee); }
    // Where the INVITE went on the last hop seen (the hop whose sender is the previous hop's
    // destination): the callee side of the call. Equal to callee() while one hop is known.
    Endpoint callee_side() const noexcept { return endpoints_.get(kCalleeSide); }
    void set_caller(const Endpoint& e) { endpoints_.set(kCaller, e); }
    void set_callee(const Endpoint& e) { endpoints_.set(kCallee, e); }
    void set_callee_side(const Endpoint& e) { endpoints_.set(kCalleeSide, e); }
    // Heap bytes the endpoints hold (one of them not IPv4).
    std::size_t endpoint_heap_bytes() const noexcept { return endpoints_.heap_bytes(); }

    std::array<std::uint32_t, kMaxHops> hops{};           // Hop::id; hops[0] is the caller's hop
    std::array<std::uint32_t, kMaxForkTags> fork_tags{};  // hashes of To-tags of 1xx/2xx
    std::uint32_t confirmed_tag = 0;                      // hash of the first 2xx's To-tag
    FingerprintRing<kDialogRingSize> recent;

    std::uint32_t invite_cseq = 0;                                 // CSeq of the current INVITE attempt
    std::array<std::uint32_t, 2> reinvite_cseq{kNoCSeq, kNoCSeq};  // last re-INVITE by caller, callee
    std::uint16_t final_status = 0;                                // final answer to the INVITE (0: none)
    std::uint16_t pending_status = 0;       // a failure not yet authoritative (challenge, or another hop)
    std::uint16_t bye_status = 0;           // final answer to the first answered BYE
    std::uint16_t q850_cause = kNoCause;    // Reason: Q.850 of BYE, CANCEL or the final answer
    std::uint16_t pending_q850 = kNoCause;  // Q.850 of pending_status
    std::uint16_t retransmissions = 0;      // saturating
    std::uint16_t reinvites = 0;            // saturating
    std::uint8_t hop_count = 0;             // distinct hops (exact up to kMaxHops)
    std::uint8_t fork_count = 0;            // distinct To-tags on 1xx/2xx (exact up to kMaxForkTags)
    std::uint8_t agent = 0;                 // capture agent of the first INVITE
    std::uint8_t callee_agent = 0;          // capture agent of the INVITE to callee_side
    // Peer groups of the caller side (caller, agent) and the callee side (callee_side,
    // callee_agent): ids of a peer::PeerDirectory, kept across a reload.
    peer::PeerId caller_peer = peer::kOtherPeer;
    peer::PeerId callee_peer = peer::kOtherPeer;
    DialogState state = DialogState::trying;
    Party hangup = Party::unknown;  // sender of the first BYE
    bool cancel_seen = false;
    bool q850_counted = false;  // the cause went into the statistics

    bool finished() const noexcept { return is_finished(state); }
    DialogOutcome outcome() const noexcept { return outcome_of(state); }
    // Microsecond intervals; -1 when either end is missing.
    std::int64_t pdd_us() const noexcept { return span(invite_time(), time(DialogTime::ringing)); }
    std::int64_t setup_us() const noexcept { return span(invite_time(), time(DialogTime::answer)); }
    std::int64_t duration_us() const noexcept { return span(time(DialogTime::answer), time(DialogTime::bye)); }

    friend bool operator==(const Dialog&, const Dialog&) = default;

private:
    static std::int64_t span(Timestamp a, Timestamp b) noexcept { return (a.us == 0 || b.us == 0) ? -1 : b.us - a.us; }
    enum EndpointIndex : std::size_t { kCaller, kCallee, kCalleeSide };

    CompactEndpoints<3> endpoints_;
    DialogTimes times_;
};
// Memory per concurrent call is held under 1 KiB, and every call is a dialog.
static_assert(sizeof(Dialog) <= 224);

// Call-ID + From-tag of the INVITE in one heap block, the Call-ID as a CompactText with the
// From-tag as its tail: 16 bytes a key with its home. The call's media bindings share the block
// (MediaBinding::call_id_text), and so do copies: the text never changes.
class DialogKey {
public:
    DialogKey() = default;
    // Longer texts are clamped to kMaxCallIdSize and kMaxTagSize (the table refuses them first).
    DialogKey(std::string_view call_id, std::string_view from_tag);

    std::string_view call_id() const noexcept { return text_.view(); }
    std::string_view from_tag() const noexcept { return text_.tail(); }
    const CompactText& call_id_text() const noexcept { return text_; }
    // Text bytes held by the key.
    std::size_t heap_bytes() const noexcept { return call_id().size() + from_tag().size(); }
    // The high half of DialogKeyHash of the key, kept in what would be padding: the table
    // places and moves entries by it without reading the heap text again.
    std::uint32_t home() const noexcept { return home_; }

private:
    CompactText text_;
    std::uint32_t home_ = 0;
};
// The hash under which the dialog table files a key (dialog_table.cpp).
struct DialogKeyHash {
    std::uint64_t operator()(const DialogKey& key) const noexcept { return of(key.call_id(), key.from_tag()); }
    static std::uint64_t of(std::string_view call_id, std::string_view from_tag) noexcept;
    static std::size_t home(const DialogKey& key) noexcept { return key.home(); }  // LruTable
};

enum class TransactionState : std::uint8_t { pending, completed };

struct Transaction {
    Timestamp request_time;      // first request, earliest over hops
    Timestamp provisional_time;  // first 1xx
    Timestamp final_time;        // first final response
    Timestamp last_activity;
    Timestamp deadline;  // Timer F while pending, end of the linger once completed
    std::array<std::uint32_t, 2> hops{};
    FingerprintRing<kTransactionRingSize> recent;
    std::uint16_t final_status = 0;
    std::uint16_t retransmissions = 0;
    // A REGISTER sent again after a 401/407/423 (next CSeq, same Call-ID): the first REGISTER of
    // the attempt, where RFC 6076 RRD starts; 0 when this is the attempt's first request.
    Timestamp attempt_time;
    bool retried = false;  // this REGISTER's 401/407/423 was answered by a retry
    Method method = Method::other;
    TransactionState state = TransactionState::pending;
    std::uint8_t agent = 0;
    std::uint8_t hop_count = 0;

    friend bool operator==(const Transaction&, const Transaction&) = default;
};

struct TransactionKey {
    std::string call_id;
    std::uint32_t cseq = 0;
    Method method = Method::other;
};
// The hash under which the transaction table files a key (transaction_table.cpp).
struct TransactionKeyHash {
    std::uint64_t operator()(const TransactionKey& key) const noexcept;
};

}  // namespace hepd::sip
