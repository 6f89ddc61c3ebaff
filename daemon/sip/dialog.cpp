#include "sip/dialog.hpp"

#include "core/hash.hpp"

#include <algorithm>

namespace hepd::sip {

std::string_view to_string(DialogState state) noexcept {
    switch (state) {
    case DialogState::trying: return "trying";
    case DialogState::proceeding: return "proceeding";
    case DialogState::early: return "early";
    case DialogState::confirmed: return "confirmed";
    case DialogState::terminated: return "terminated";
    case DialogState::cancelled: return "cancelled";
    case DialogState::failed: return "failed";
    case DialogState::timed_out: return "timed_out";
    }
    return "unknown";
}

std::string_view to_string(DialogOutcome outcome) noexcept {
    switch (outcome) {
    case DialogOutcome::completed: return "completed";
    case DialogOutcome::failed: return "failed";
    case DialogOutcome::cancelled: return "cancelled";
    case DialogOutcome::timed_out: return "timed_out";
    case DialogOutcome::evicted: return "evicted";
    }
    return "unknown";
}

std::string_view to_string(Party party) noexcept {
    switch (party) {
    case Party::unknown: return "unknown";
    case Party::caller: return "caller";
    case Party::callee: return "callee";
    }
    return "unknown";
}

std::string_view to_string(TransactionOutcome outcome) noexcept {
    switch (outcome) {
    case TransactionOutcome::status_2xx: return "2xx";
    case TransactionOutcome::status_3xx: return "3xx";
    case TransactionOutcome::status_4xx: return "4xx";
    case TransactionOutcome::status_5xx: return "5xx";
    case TransactionOutcome::status_6xx: return "6xx";
    case TransactionOutcome::timed_out: return "timed_out";
    case TransactionOutcome::evicted: return "evicted";
    }
    return "unknown";
}

std::string_view to_string(DialogAnomaly anomaly) noexcept {
    switch (anomaly) {
    case DialogAnomaly::invite_without_from_tag: return "invite_without_from_tag";
    case DialogAnomaly::key_too_long: return "key_too_long";
    case DialogAnomaly::reinvite_unknown_dialog: return "reinvite_unknown_dialog";
    case DialogAnomaly::ack_unknown_dialog: return "ack_unknown_dialog";
    case DialogAnomaly::bye_unknown_dialog: return "bye_unknown_dialog";
    case DialogAnomaly::cancel_unknown_dialog: return "cancel_unknown_dialog";
    case DialogAnomaly::in_dialog_unknown_dialog: return "in_dialog_unknown_dialog";
    case DialogAnomaly::response_unknown_dialog: return "response_unknown_dialog";
    case DialogAnomaly::response_unknown_transaction: return "response_unknown_transaction";
    case DialogAnomaly::invite_after_end: return "invite_after_end";
    case DialogAnomaly::sdp_unusable_address: return "sdp_unusable_address";
    case DialogAnomaly::multipart_body_skipped: return "multipart_body_skipped";
    case DialogAnomaly::clock_skew: return "clock_skew";
    }
    return "unknown";
}

std::string_view to_string(MessageDefect defect) noexcept {
    switch (defect) {
    case MessageDefect::headers_unterminated: return "headers_unterminated";
    case MessageDefect::body_truncated: return "body_truncated";
    case MessageDefect::content_length_invalid: return "content_length_invalid";
    case MessageDefect::sdp_media_overflow: return "sdp_media_overflow";
    case MessageDefect::sdp_formats_overflow: return "sdp_formats_overflow";
    }
    return "unknown";
}

std::string_view to_string(Disposition disposition) noexcept {
    switch (disposition) {
    case Disposition::dialog_created: return "dialog_created";
    case Disposition::dialog_updated: return "dialog_updated";
    case Disposition::transaction_created: return "transaction_created";
    case Disposition::transaction_updated: return "transaction_updated";
    case Disposition::retransmission: return "retransmission";
    case Disposition::anomaly: return "anomaly";
    case Disposition::parse_error: return "parse_error";
    }
    return "unknown";
}

Hop hop_of(const PacketMeta& meta) noexcept {
    const bool forward = meta.src < meta.dst;
    const Endpoint& lo = forward ? meta.src : meta.dst;
    const Endpoint& hi = forward ? meta.dst : meta.src;
    const std::uint64_t h = mix64(hash_endpoint(lo) ^ (hash_endpoint(hi) * 0x9e3779b97f4a7c15ULL));
    auto id = static_cast<std::uint32_t>(h ^ (h >> 32));
    if (id == 0) id = 1;
    return Hop{id, forward};
}

PartyName party_name(std::string_view user, std::string_view host) noexcept {
    PartyName p;
    user = user.substr(0, kPartyUserCap);
    host = host.substr(0, kPartyNameCap - user.size());
    std::copy(user.begin(), user.end(), p.text.begin());
    std::copy(host.begin(), host.end(), p.text.begin() + static_cast<std::ptrdiff_t>(user.size()));
    p.user_size = static_cast<std::uint8_t>(user.size());
    p.host_size = static_cast<std::uint8_t>(host.size());
    return p;
}

PartyName party_name(std::string_view uri) noexcept {
    auto starts_with_ci = [&](std::string_view prefix) {
        if (uri.size() < prefix.size()) return false;
        for (std::size_t i = 0; i < prefix.size(); ++i)
            if ((uri[i] | 0x20) != prefix[i]) return false;
        return true;
    };
    bool tel = false;
    if (starts_with_ci("sips:")) {
        uri.remove_prefix(5);
    } else if (starts_with_ci("sip:")) {
        uri.remove_prefix(4);
    } else if (starts_with_ci("tel:")) {
        uri.remove_prefix(4);
        tel = true;
    } else {
        return {};  // another scheme (or none): nothing this record can name reliably
    }
    // URI parameters and headers end the part that names the party.
    const std::size_t end = uri.find_first_of(tel ? ";?" : "?");
    uri = uri.substr(0, end);
    if (tel) return party_name(uri, {});
    std::string_view user;
    std::string_view hostport = uri;
    // The user part may itself carry ';' (user parameters), so '@' is looked for first.
    if (const std::size_t at = uri.rfind('@'); at != std::string_view::npos) {
        user = uri.substr(0, at);
        hostport = uri.substr(at + 1);
        user = user.substr(0, user.find(':'));  // a password is never recorded
    }
    hostport = hostport.substr(0, hostport.find(';'));
    std::string_view host = hostport;
    if (!host.empty() && host.front() == '[') {
        const std::size_t close = host.find(']');
        host = close == std::string_view::npos ? host.substr(1) : host.substr(1, close - 1);
    } else {
        host = host.substr(0, host.find(':'));
    }
    return party_name(user, host);
}

std::uint32_t tag_id(std::string_view tag) noexcept {
    const std::uint64_t h = hash_text(tag);
    const auto v = static_cast<std::uint32_t>(h ^ (h >> 32));
    return v == 0 ? 1 : v;
}

void DialogTimes::set_invite(Timestamp t) noexcept {
    if (t == invite()) return;
    if (t.us == 0) {
        invite_set_ = false;  // the old base stays, and the offsets with it
        return;
    }
    std::array<Timestamp, kDialogTimeCount> times{};
    for (std::size_t i = 0; i < kDialogTimeCount; ++i) times[i] = get(static_cast<DialogTime>(i));
    base_ = t;
    invite_set_ = true;
    for (std::size_t i = 0; i < kDialogTimeCount; ++i) set(static_cast<DialogTime>(i), times[i]);
}

bool operator==(const DialogTimes& a, const DialogTimes& b) noexcept {
    if (a.invite() != b.invite()) return false;
    for (std::size_t i = 0; i < kDialogTimeCount; ++i)
        if (a.get(static_cast<DialogTime>(i)) != b.get(static_cast<DialogTime>(i))) return false;
    return true;
}

std::uint32_t message_fingerprint(const Message& m, Hop hop) noexcept {
    std::uint64_t h = hash_text(m.top_via.branch);
    h ^= (std::uint64_t{hop.id} << 32) | (std::uint64_t{hop.forward} << 31) | (std::uint64_t{m.is_response()} << 30) |
         (std::uint64_t{static_cast<std::uint8_t>(m.method)} << 16) | m.status_code;
    h = mix64(h ^ (std::uint64_t{m.cseq.number} * 0xff51afd7ed558ccdULL));
    if (m.is_response() && m.to.has_tag) h = mix64(h ^ hash_text(m.to.tag));
    // A retransmission repeats its body too: a callee's second 18x of the same transaction (the
    // first without SDP, the next with it, or a new SDP) is a message of its own.
    if (!m.body.empty()) h = mix64(h ^ hash_text(m.body));
    auto fp = static_cast<std::uint32_t>(h ^ (h >> 32));
    if (fp == 0) fp = 1;
    return fp;
}

DialogKey::DialogKey(std::string_view call_id, std::string_view from_tag) {
    static_assert(kMaxCallIdSize <= CompactText::kMaxSize && kMaxTagSize <= CompactText::kMaxSize);
    call_id = call_id.substr(0, kMaxCallIdSize);
    from_tag = from_tag.substr(0, kMaxTagSize);
    home_ = static_cast<std::uint32_t>(DialogKeyHash::of(call_id, from_tag) >> 32);
    text_ = CompactText::with_tail(call_id, from_tag);
}

}  // namespace hepd::sip
