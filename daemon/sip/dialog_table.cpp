#include "sip/dialog_table.hpp"

#include "core/hash.hpp"

#include <algorithm>
#include <limits>

namespace hepd::sip {

namespace {

bool has_tag(const NameAddr& n) noexcept { return n.has_tag && !n.tag.empty(); }

std::uint64_t dialog_hash(std::uint64_t call_hash, std::string_view tag) noexcept {
    return mix64(call_hash ^ (hash_text(tag) * 0xc2b2ae3d27d4eb4fULL));
}

Timestamp plus(Timestamp t, std::chrono::microseconds d) noexcept { return Timestamp{t.us + d.count()}; }

double seconds(std::int64_t us) noexcept { return static_cast<double>(us) / 1e6; }

std::uint16_t q850_of(const Message& m) noexcept {
    return (m.reason.protocol == ReasonProtocol::q850 && m.reason.has_cause) ? m.reason.cause : kNoCause;
}

// 401/407 (credentials) and 422 (session interval too small) are answered by a new INVITE with
// a higher CSeq in the same dialog: the call is not over yet.
bool is_retried_failure(std::uint16_t code) noexcept { return code == 401 || code == 407 || code == 422; }
bool is_challenge(std::uint16_t code) noexcept { return code == 401 || code == 407; }

// A message of a forked call's other early dialog: when two forks answer, the caller confirms
// both and ends the one it does not keep with a BYE (RFC 3261 13.2.2.4); the call is the dialog
// of the first 2xx. The callee's tag is the To-tag of what the caller sends, the From-tag of what
// the callee sends.
bool of_other_fork(const Dialog& d, Party side, const Message& m) noexcept {
    if (d.confirmed_tag == 0) return false;
    const NameAddr& callee = side == Party::caller ? m.to : m.from;
    return has_tag(callee) && tag_id(callee.tag) != d.confirmed_tag;
}

// The new INVITE of a caller a 3xx redirected: the same Call-ID and From tag, a higher CSeq
// (RFC 3261 8.1.3.4). It is a new call, not a late message of the one that was redirected.
bool follows_redirect(const Dialog& d, const Message& m) noexcept {
    return m.is_request() && m.method == Method::invite && !has_tag(m.to) && d.finished() && d.final_status >= 300 &&
           d.final_status < 400 && m.cseq.number > d.invite_cseq;
}

// The hop an answer to the caller's INVITE came back on. A caller that sends from one port and
// names another in its Via without rport gets its answers there (RFC 3261 18.2.2): from the
// address its INVITE went to, to its own address at another port. That is still its first hop.
Hop answer_hop(const Dialog& d, Party side, const Message& m, const PacketMeta& meta, Hop hop) noexcept {
    if (!m.is_response() || m.method != Method::invite || side != Party::caller || !(meta.src == d.callee()) ||
        !(meta.dst.address == d.caller().address) || meta.dst.port == d.caller().port)
        return hop;
    PacketMeta as_sent = meta;
    as_sent.dst = d.caller();
    return hop_of(as_sent);
}

bool carries_sdp(const Message& m) noexcept {
    switch (m.method) {
    case Method::invite:
    case Method::update:
    case Method::prack: return m.is_request() || (m.status_code > 100 && m.status_code < 300);
    case Method::ack: return m.is_request();
    default: return false;
    }
}

// Counts bindings when the table has no sink.
class DiscardSink final : public MediaSink {
public:
    void on_media_binding(const MediaBinding&) noexcept override {}
};

// Stamps the dialog's peer groups on each binding on its way to the stream tables.
class PeerStampingSink final : public MediaSink {
public:
    PeerStampingSink(MediaSink& next, const Dialog& d) noexcept : next_(next), dialog_(d) {}
    void on_media_binding(const MediaBinding& binding) noexcept override {
        MediaBinding stamped = binding;
        stamped.caller_peer = dialog_.caller_peer;
        stamped.callee_peer = dialog_.callee_peer;
        next_.on_media_binding(stamped);
    }

private:
    MediaSink& next_;
    const Dialog& dialog_;
};

}  // namespace

std::uint64_t DialogKeyHash::of(std::string_view call_id, std::string_view from_tag) noexcept {
    return dialog_hash(hash_text(call_id), from_tag);
}

DialogTable::DialogTable(const DialogConfig& config, MediaSink* sink)
    : config_(config),
      sink_(sink),
      stats_(std::make_unique<DialogStats>()),
      table_(config.max_dialogs),
      transactions_(config, *stats_),
      message_(std::make_unique<Message>()),
      sdp_(std::make_unique<SessionDescription>()),
      sdp_sides_(config.max_dialogs) {
    if (config.keep_caller_identity) caller_identities_.reserve(config.max_dialogs);
}

Disposition DialogTable::process(std::string_view text, const PacketMeta& meta) {
    if (const auto error = parse_message_into(text, *message_, ParseDepth::dialog)) {
        stats_->parse_errors[static_cast<std::size_t>(*error)].add();
        return Disposition::parse_error;
    }
    return process(*message_, meta);
}

Disposition DialogTable::process(const Message& m, const PacketMeta& meta) {
    if (m.headers_unterminated) defect(MessageDefect::headers_unterminated);
    if (m.body_truncated) defect(MessageDefect::body_truncated);
    if (m.content_length_invalid) defect(MessageDefect::content_length_invalid);
    const std::size_t agent = meta.agent < kMaxAgents ? meta.agent : 0;
    const auto method = static_cast<std::size_t>(m.method);
    if (m.is_request())
        stats_->requests[method][agent].add();
    else
        stats_->responses[method][status_class_index(m.status_code)][agent].add();

    if (m.call_id.size() > kMaxCallIdSize) {
        anomaly(DialogAnomaly::key_too_long);
        return Disposition::anomaly;
    }
    const Hop hop = hop_of(meta);
    const std::uint32_t fingerprint = message_fingerprint(m, hop);
    const std::uint64_t call_hash = hash_text(m.call_id);

    std::uint32_t at = Table::kNone;
    Party side = Party::caller;
    if (has_tag(m.from) && m.from.tag.size() <= kMaxTagSize) at = lookup(call_hash, m.call_id, m.from.tag);
    if (at == Table::kNone && has_tag(m.to) && m.to.tag.size() <= kMaxTagSize) {
        at = lookup(call_hash, m.call_id, m.to.tag);
        side = Party::callee;
    }
    if (at != Table::kNone) at = settle(at, meta.time);
    if (at != Table::kNone && side == Party::caller && follows_redirect(table_[at], m)) {
        // Its linger cut short: the key now names the new call.
        account_removed(table_.entry(at), false, at, meta.time);
        table_.erase(at);
        at = Table::kNone;
    }
    if (at == Table::kNone) return on_unknown(m, meta, hop, call_hash, fingerprint);
    const Timestamp deadline = table_[at].time(DialogTime::deadline);
    const Disposition done =
        on_dialog_message(at, side, m, meta, answer_hop(table_[at], side, m, meta, hop), fingerprint);
    // Only a deadline brought forward needs arming: the armed one is a lower bound of a later one.
    if (table_[at].time(DialogTime::deadline) < deadline) queue_deadline(at);
    return done;
}

std::uint32_t DialogTable::lookup(std::uint64_t call_hash, std::string_view call_id,
                                  std::string_view tag) const noexcept {
    return table_.find(dialog_hash(call_hash, tag),
                       [&](const DialogKey& k) { return k.from_tag() == tag && k.call_id() == call_id; });
}

const Dialog* DialogTable::find(std::string_view call_id, std::string_view from_tag) const noexcept {
    const std::uint32_t at = lookup(hash_text(call_id), call_id, from_tag);
    return at == Table::kNone ? nullptr : &table_.entry(at).value;
}

const Dialog* DialogTable::match(std::string_view call_id, std::string_view from_tag,
                                 std::string_view to_tag) const noexcept {
    const std::uint64_t call_hash = hash_text(call_id);
    std::uint32_t at = from_tag.empty() ? Table::kNone : lookup(call_hash, call_id, from_tag);
    if (at == Table::kNone && !to_tag.empty()) at = lookup(call_hash, call_id, to_tag);
    return at == Table::kNone ? nullptr : &table_.entry(at).value;
}

std::size_t DialogTable::active_count() const noexcept {
    std::int64_t n = 0;
    for (std::size_t s = 0; s < kDialogStateCount; ++s)
        if (!is_finished(static_cast<DialogState>(s))) n += stats_->dialogs_by_state[s].value();
    return static_cast<std::size_t>(n);
}

std::size_t DialogTable::memory_bytes() const noexcept {
    return table_.memory_bytes() + key_heap_bytes_ + endpoint_heap_bytes_ + transactions_.memory_bytes() +
           due_.memory_bytes() + sdp_sides_.memory_bytes() + caller_identities_.memory_bytes();
}

void DialogTable::anomaly(DialogAnomaly a) noexcept { stats_->anomalies[static_cast<std::size_t>(a)].add(); }

void DialogTable::defect(MessageDefect d) noexcept { stats_->defects[static_cast<std::size_t>(d)].add(); }

std::int64_t DialogTable::interval(Timestamp from, Timestamp to) noexcept {
    const std::int64_t d = to.us - from.us;
    if (d >= 0) return d;
    anomaly(DialogAnomaly::clock_skew);
    return 0;
}

// ---------------------------------------------------------------------------------------------
// Messages without a dialog

Disposition DialogTable::on_unknown(const Message& m, const PacketMeta& meta, Hop hop, std::uint64_t call_hash,
                                    std::uint32_t fingerprint) {
    if (m.is_request()) {
        switch (m.method) {
        case Method::invite:
            if (has_tag(m.to)) {
                anomaly(DialogAnomaly::reinvite_unknown_dialog);
                return Disposition::anomaly;
            }
            if (!has_tag(m.from)) {
                anomaly(DialogAnomaly::invite_without_from_tag);
                return Disposition::anomaly;
            }
            if (m.from.tag.size() > kMaxTagSize) {
                anomaly(DialogAnomaly::key_too_long);
                return Disposition::anomaly;
            }
            return create(m, meta, hop, fingerprint);
        case Method::ack: anomaly(DialogAnomaly::ack_unknown_dialog); return Disposition::anomaly;
        case Method::bye: anomaly(DialogAnomaly::bye_unknown_dialog); return Disposition::anomaly;
        case Method::cancel: anomaly(DialogAnomaly::cancel_unknown_dialog); return Disposition::anomaly;
        case Method::prack:
        case Method::update: anomaly(DialogAnomaly::in_dialog_unknown_dialog); return Disposition::anomaly;
        default: return transactions_.on_request(m, meta, hop, call_hash, fingerprint);
        }
    }
    switch (m.method) {
    case Method::invite:
    case Method::ack:
    case Method::bye:
    case Method::cancel:
    case Method::prack:
    case Method::update: anomaly(DialogAnomaly::response_unknown_dialog); return Disposition::anomaly;
    default: return transactions_.on_response(m, meta, hop, call_hash, fingerprint);
    }
}

Disposition DialogTable::create(const Message& m, const PacketMeta& meta, Hop hop, std::uint32_t fingerprint) {
    Dialog d;
    d.set_invite_time(meta.time);
    d.set_time(DialogTime::last_activity, meta.time);
    d.set_time(DialogTime::deadline, plus(meta.time, config_.invite_timeout));
    d.set_caller(meta.src);
    d.set_callee(meta.dst);
    d.set_callee_side(meta.dst);
    remember_id(d.hops, d.hop_count, hop.id);
    d.recent.push(fingerprint);
    d.invite_cseq = m.cseq.number;
    d.agent = static_cast<std::uint8_t>(meta.agent < kMaxAgents ? meta.agent : 0);
    d.callee_agent = d.agent;
    classify_peers(d);

    std::uint32_t at = Table::kNone;
    insert_entry(DialogKey(m.call_id, m.from.tag), d, &at, meta.time);
    if (config_.keep_caller_identity) {
        CallerIdentity& who = caller_identities_.grown_to(at);
        const std::size_t ua = std::min(m.user_agent.size(), kUserAgentCap);
        std::copy_n(m.user_agent.data(), ua, who.user_agent.data());
        who.user_agent_size = static_cast<std::uint8_t>(ua);
        who.from_party = party_name(m.from.uri);
        who.to_party = party_name(m.to.uri);
        if (who.to_party.user_size == 0) who.to_party = party_name(m.request_uri);
    }
    stats_->dialogs_created.add();
    emit_sdp(at, m, hop, meta.time);
    return Disposition::dialog_created;
}

// ---------------------------------------------------------------------------------------------
// Messages of a known dialog

Disposition DialogTable::on_dialog_message(std::uint32_t at, Party side, const Message& m, const PacketMeta& meta,
                                           Hop hop, std::uint32_t fingerprint) {
    Dialog& d = table_[at];
    d.set_time(DialogTime::last_activity, std::max(d.time(DialogTime::last_activity), meta.time));
    if (d.recent.contains(fingerprint)) {
        table_.touch(at);
        stats_->retransmissions[static_cast<std::size_t>(m.method)].add();
        if (d.retransmissions < std::numeric_limits<std::uint16_t>::max()) ++d.retransmissions;
        return Disposition::retransmission;
    }
    d.recent.push(fingerprint);
    const std::size_t hop_index = remember_id(d.hops, d.hop_count, hop.id);
    if (m.is_request() && m.method == Method::invite && !has_tag(m.to) && m.cseq.number >= d.invite_cseq)
        follow_callee_side(d, meta);
    if (m.is_request())
        on_request(d, side, m, meta.time);
    else
        on_response(d, side, hop_index, m, meta.time);
    table_.touch(at);  // after the state it may have changed: an answer or an end changes its eviction class
    emit_sdp(at, m, hop, meta.time);
    return Disposition::dialog_updated;
}

void DialogTable::on_request(Dialog& d, Party side, const Message& m, Timestamp now) {
    switch (m.method) {
    case Method::invite:
        if (!has_tag(m.to)) {
            // The INVITE relayed on another hop (same CSeq), or a new attempt after a challenge.
            if (m.cseq.number == d.invite_cseq) {
                d.set_invite_time(std::min(d.invite_time(), now));
            } else if (m.cseq.number > d.invite_cseq) {
                if (d.finished()) {
                    anomaly(DialogAnomaly::invite_after_end);
                } else if (is_unanswered(d.state)) {
                    d.invite_cseq = m.cseq.number;
                    d.set_time(DialogTime::ack, Timestamp{});  // the ACK of the challenge is not the call's
                    d.pending_status = 0;
                    d.pending_q850 = kNoCause;
                    d.set_time(DialogTime::end, Timestamp{});
                    set_deadline(
                        d, plus(now, d.state == DialogState::early ? config_.ringing_timeout : config_.invite_timeout));
                }
            }
            break;
        }
        {
            // A re-INVITE: counted once per transaction, not per hop (the relayed copy has the
            // same CSeq). Caller and callee number their requests independently.
            std::uint32_t& last = d.reinvite_cseq[side == Party::callee ? 1 : 0];
            if (last != m.cseq.number) {
                last = m.cseq.number;
                if (d.reinvites < std::numeric_limits<std::uint16_t>::max()) ++d.reinvites;
                stats_->reinvites.add();
            }
        }
        break;
    case Method::ack:
        if (side == Party::caller && m.cseq.number == d.invite_cseq && d.time(DialogTime::ack).us == 0 &&
            !of_other_fork(d, side, m))
            d.set_time(DialogTime::ack, now);
        break;
    case Method::bye:
        if (of_other_fork(d, side, m)) break;  // the caller ends a fork's extra answer, not its call
        note_cause(d, m);
        if (d.time(DialogTime::bye).us != 0) break;  // the same BYE on the next hop, or the other party's
        d.set_time(DialogTime::bye, now);
        d.hangup = side;
        if (d.state == DialogState::confirmed) {
            const double duration = seconds(interval(d.time(DialogTime::answer), now));
            stats_->duration.observe(duration);
            peer_figures(d).duration.observe(duration);
            finish(d, DialogState::terminated, now);
        } else if (is_unanswered(d.state)) {
            // RFC 3261 15: the caller may end an early dialog with BYE; the call was abandoned.
            finish(d, DialogState::cancelled, now);
        }
        break;
    case Method::cancel:
        if (!d.cancel_seen) {
            d.cancel_seen = true;
            d.set_time(DialogTime::cancel, now);
        }
        // A CANCEL that lost the race against the 2xx does not explain how the call ended.
        if (is_unanswered(d.state)) {
            note_cause(d, m);
            // The callee answers a CANCEL with 487 at once; no longer wait out a ringing timer.
            set_deadline(d, std::min(d.time(DialogTime::deadline), plus(now, config_.invite_timeout)));
        }
        break;
    default: break;
    }
}

void DialogTable::on_response(Dialog& d, Party side, std::size_t hop_index, const Message& m, Timestamp now) {
    switch (m.method) {
    case Method::invite:
        // Only answers to the current INVITE attempt from the caller drive the state; answers to
        // re-INVITEs and stale attempts do not.
        if (side == Party::caller && m.cseq.number == d.invite_cseq) on_invite_response(d, hop_index, m, now);
        break;
    case Method::bye:
        if (m.status_code >= 200 && d.bye_status == 0 && !of_other_fork(d, side, m)) {
            d.bye_status = m.status_code;
            d.set_time(DialogTime::bye_answer, now);
            if (d.time(DialogTime::bye).us != 0) stats_->sdd.observe(seconds(interval(d.time(DialogTime::bye), now)));
        }
        break;
    default: break;
    }
}

void DialogTable::on_invite_response(Dialog& d, std::size_t hop_index, const Message& m, Timestamp now) {
    const std::uint16_t code = m.status_code;
    if (code == 100) {
        if (d.time(DialogTime::trying).us == 0) d.set_time(DialogTime::trying, now);
        if (d.state == DialogState::trying) set_state(d, DialogState::proceeding);
        if (d.state == DialogState::proceeding) {
            // RFC 3261 17.1.1.2: Timer B runs only until a provisional arrives; after a 100 the
            // caller waits for the final answer as long as a proxy's Timer C lets it.
            Timestamp deadline = std::max(d.time(DialogTime::deadline), plus(now, config_.ringing_timeout));
            if (d.cancel_seen) deadline = std::min(deadline, plus(d.time(DialogTime::cancel), config_.invite_timeout));
            set_deadline(d, deadline);
        }
        return;
    }
    if (code < 300 && has_tag(m.to)) {
        const std::uint8_t before = d.fork_count;
        remember_id(d.fork_tags, d.fork_count, tag_id(m.to.tag));
        if (before == 1 && d.fork_count == 2) stats_->forked_dialogs.add();
    }
    if (code < 200) {
        // A fork's 18x after the call was answered or refused did not ring for this caller.
        const bool ringing =
            (code == 180 || code == 183) && d.time(DialogTime::ringing).us == 0 && is_unanswered(d.state);
        const bool indicative = awaits_indicative(d);
        if (ringing || indicative) {
            const double since_invite = seconds(interval(d.invite_time(), now));  // one skew count per message
            if (ringing) {
                d.set_time(DialogTime::ringing, now);
                stats_->pdd.observe(since_invite);
                peer_figures(d).pdd.observe(since_invite);
            }
            if (indicative) note_indicative(d, SetupResult::success, now, since_invite);
        }
        if (is_unanswered(d.state)) {
            set_state(d, DialogState::early);
            Timestamp deadline = plus(now, config_.ringing_timeout);
            if (d.cancel_seen) deadline = std::min(deadline, plus(d.time(DialogTime::cancel), config_.invite_timeout));
            set_deadline(d, deadline);
        }
        return;
    }
    if (code < 300) {
        if (!is_unanswered(d.state)) return;  // another fork's 2xx, or too late
        d.set_time(DialogTime::answer, now);
        d.final_status = code;
        d.confirmed_tag = has_tag(m.to) ? tag_id(m.to.tag) : 0;
        d.pending_status = 0;
        d.pending_q850 = kNoCause;
        d.set_time(DialogTime::end, Timestamp{});
        set_state(d, DialogState::confirmed);
        const double since_invite = seconds(interval(d.invite_time(), now));
        stats_->setup.observe(since_invite);
        peer_figures(d).setup.observe(since_invite);
        if (d.time(DialogTime::indicative).us == 0) note_indicative(d, SetupResult::success, now, since_invite);
        stats_->final_status[final_status_index(code)].add();
        peer_figures(d).final_status[final_status_index(code)].add();
        set_deadline(d, plus(now, config_.max_call_duration));
        return;
    }
    if (!is_unanswered(d.state)) return;  // a losing fork's failure after the answer, or late
    if (hop_index != 0 || is_retried_failure(code)) {
        // Not (yet) what the caller got: a proxy may still try other targets, and a challenged
        // caller retries. Kept; it becomes the outcome if nothing else happens before the timer.
        d.pending_status = code;
        d.pending_q850 = q850_of(m);
        // Nothing else happens in a challenged transaction: if no retry comes, the call ended
        // with the challenge. Other pending failures end the call when their timer runs out.
        // A 422 the caller got (on its own hop) is over as well, unless it retries.
        const bool reached_caller = is_challenge(code) || (hop_index == 0 && is_retried_failure(code));
        d.set_time(DialogTime::end, reached_caller ? now : Timestamp{});
        const auto wait = is_challenge(code) ? config_.challenge_timeout : config_.invite_timeout;
        set_deadline(d, std::max(d.time(DialogTime::deadline), plus(now, wait)));
        return;
    }
    d.final_status = code;
    if (code >= 400 && awaits_indicative(d))
        note_indicative(d, SetupResult::failure, now, seconds(interval(d.invite_time(), now)));
    note_cause(d, m);
    // Proxies do not always relay the Reason header; the callee's copy of this answer had it.
    if (d.q850_cause == kNoCause && d.pending_status == code) d.q850_cause = d.pending_q850;
    finish(d, code == 487 ? DialogState::cancelled : DialogState::failed, now);
}

void DialogTable::emit_sdp(std::uint32_t at, const Message& m, Hop hop, Timestamp now) {
    if (!carries_sdp(m) || m.body.empty()) return;
    std::string_view body = m.body;
    if (!is_sdp_content_type(m.content_type)) {
        if (!is_multipart_content_type(m.content_type)) return;
        const auto part = sdp_part_of_multipart(m.content_type, m.body);
        if (!part) {
            anomaly(DialogAnomaly::multipart_body_skipped);  // no SDP part, or one cut short
            return;
        }
        body = *part;
    }
    if (const auto error = parse_sdp_into(body, *sdp_)) {
        stats_->sdp_errors[static_cast<std::size_t>(*error)].add();
        return;
    }
    if (sdp_->media_overflow != 0) defect(MessageDefect::sdp_media_overflow);
    const auto sections = sdp_->media_sections();
    if (std::any_of(sections.begin(), sections.end(), [](const Media& s) { return s.formats_overflow != 0; }))
        defect(MessageDefect::sdp_formats_overflow);
    SdpSide mine{hop.id, hop.forward, {}, {}};
    for (std::size_t i = 0; i < std::min<std::size_t>(sdp_->media_count, kSdpMedia); ++i) {
        const auto media = usable_media(*sdp_, i);
        if (!media) continue;
        mine.media[i] = *media;
        if (const auto rtcp = rtcp_alias(*sdp_, i, *media)) mine.rtcp[i] = *rtcp;
    }

    SdpSides sides = sdp_sides_.get(at, table_[at].hops);
    const auto other = std::find_if(sides.begin(), sides.end(),
                                    [&](const SdpSide& s) { return s.hop == hop.id && s.forward != hop.forward; });
    const SdpSide none{};
    const SdpSide& peer_side = other != sides.end() ? *other : none;
    const std::array<Endpoint, kSdpMedia>& peers = peer_side.media;
    std::array<Endpoint, kSdpMedia> rtcp_peers{};
    for (std::size_t i = 0; i < kSdpMedia; ++i) rtcp_peers[i] = rtcp_of(peer_side, i);

    DiscardSink discard;
    PeerStampingSink sink(sink_ != nullptr ? *sink_ : discard, table_.entry(at).value);
    const DialogKey& key = table_.entry(at).key;
    const std::uint32_t dialog = tag_id(key.from_tag());
    const MediaEmitResult r = emit_media_bindings(*sdp_, key.call_id_text(), dialog, now, peers, sink, rtcp_peers);
    stats_->media_bindings.add(r.emitted);
    if (r.unusable != 0)
        stats_->anomalies[static_cast<std::size_t>(DialogAnomaly::sdp_unusable_address)].add(r.unusable);
    // The other side's addresses learn their peer too (their codecs came with their own SDP),
    // and this SDP's formats: when it answers theirs, which of their formats the call uses.
    for (std::size_t i = 0; i < kSdpMedia; ++i) {
        if (peers[i].port == 0 || mine.media[i].port == 0) continue;
        MediaBinding back;
        back.media = peers[i];
        back.peer = mine.media[i];
        back.time = now;
        back.call_id = key.call_id();
        back.call_id_text = &key.call_id_text();
        back.dialog = dialog;
        put_codecs(*sdp_, i, back);
        back.codecs_of_peer = true;
        sink.on_media_binding(back);
        stats_->media_bindings.add();
        if (peer_side.rtcp[i].port != 0) {  // and so does the other side's RTCP address
            back.rtcp = true;
            back.media = peer_side.rtcp[i];
            back.peer = rtcp_of(mine, i);
            sink.on_media_binding(back);
            stats_->media_bindings.add();
        }
    }
    // Most recent first; this direction's previous SDP, or the oldest side, makes room.
    auto same = std::find_if(sides.begin(), sides.end(),
                             [&](const SdpSide& s) { return s.hop == hop.id && s.forward == hop.forward; });
    if (same == sides.end()) same = sides.end() - 1;
    const SdpSide replaced = *same;
    std::move_backward(sides.begin(), same, same + 1);
    sides.front() = mine;
    sdp_sides_.set(at, sides, table_[at].hops);
    if (replaced.hop != 0) release_replaced(replaced, sides, table_.entry(at), now);
}

// The message that releases the dialog's bindings at an address (media and peer still to set).
MediaBinding DialogTable::release_of(const Table::Entry& entry, Timestamp when) noexcept {
    MediaBinding ended;
    ended.call_id = entry.key.call_id();
    ended.dialog = tag_id(entry.key.from_tag());
    ended.dialog_ended = true;
    ended.time = when;
    return ended;
}

// Without this, the dialog's end releases only the addresses its last SDP sides name: the
// earlier ones stayed bound until pending_media_timeout (hours), filling max_pending_media and
// taking another call's RTP to that address long after this call had left it. Streams already
// bound keep their call (a released binding stays while it has streams).
void DialogTable::release_replaced(const SdpSide& replaced, const SdpSides& sides, const Table::Entry& entry,
                                   Timestamp now) {
    if (sink_ == nullptr) return;
    MediaBinding ended = release_of(entry, now);
    const auto release = [&](const Endpoint& media, bool rtcp) {
        if (media.port == 0) return;
        const bool still_named = std::any_of(sides.begin(), sides.end(), [&](const SdpSide& s) {
            const auto& named = rtcp ? s.rtcp : s.media;
            return s.hop != 0 && std::find(named.begin(), named.end(), media) != named.end();
        });
        if (still_named) return;
        ended.media = media;
        ended.rtcp = rtcp;
        sink_->on_media_binding(ended);
    };
    for (const Endpoint& media : replaced.media) release(media, false);
    for (const Endpoint& rtcp : replaced.rtcp) release(rtcp, true);
}

// ---------------------------------------------------------------------------------------------
// State, causes, timers

void DialogTable::set_state(Dialog& d, DialogState state) noexcept {
    if (d.state == state) return;
    stats_->dialogs_by_state[static_cast<std::size_t>(d.state)].add(-1);
    stats_->dialogs_by_state[static_cast<std::size_t>(state)].add(1);
    d.state = state;
}

void DialogTable::set_deadline(Dialog& d, Timestamp deadline) noexcept { d.set_time(DialogTime::deadline, deadline); }

void DialogTable::note_cause(Dialog& d, const Message& m) noexcept {
    const std::uint16_t cause = q850_of(m);
    if (cause == kNoCause || d.q850_cause != kNoCause) return;
    d.q850_cause = cause;
    if (d.finished()) count_cause(d);
}

void DialogTable::count_cause(Dialog& d) noexcept {
    if (d.q850_counted || d.q850_cause == kNoCause) return;
    stats_->q850_causes[d.q850_cause < kQ850Slots - 1 ? d.q850_cause : kQ850Slots - 1].add();
    d.q850_counted = true;
}

// RFC 6076 4.3: SRD ends at the first response that tells the caller how its request fares;
// later ones (more provisionals, the answer after ringing) do not move it, and nothing after
// the set-up is settled does.
bool DialogTable::awaits_indicative(const Dialog& d) const noexcept {
    return d.time(DialogTime::indicative).us == 0 && is_unanswered(d.state);
}

void DialogTable::note_indicative(Dialog& d, SetupResult result, Timestamp when, double since_invite) {
    d.set_time(DialogTime::indicative, when);
    stats_->srd[static_cast<std::size_t>(result)].observe(since_invite);
    peer_figures(d).srd[static_cast<std::size_t>(result)].observe(since_invite);
}

void DialogTable::classify_peers(Dialog& d) {
    d.caller_peer = peers_.classify(d.caller().address, d.agent);
    d.callee_peer = peers_.classify(d.callee_side().address, d.callee_agent);
}

// The INVITE relayed on: a copy sent by the current callee side (same endpoint, or the same host
// from another port as over TCP) moves the callee side one hop further. Copies arriving in
// another order, or from elsewhere, leave it where it is, and so does a copy going back to the
// caller's host (a spiral), unless every party is on one host (a lab, a loopback test).
void DialogTable::follow_callee_side(Dialog& d, const PacketMeta& meta) {
    const Endpoint callee_side = d.callee_side();
    const Endpoint caller = d.caller();
    const bool relayed =
        meta.src == callee_side || (meta.src.address == callee_side.address && meta.dst.address != meta.src.address);
    const bool back_to_caller =
        meta.dst == caller || (meta.dst.address == caller.address && meta.dst.address != meta.src.address);
    if (!relayed || meta.dst == callee_side || back_to_caller) return;
    const std::size_t heap_before = d.endpoint_heap_bytes();
    d.set_callee_side(meta.dst);
    endpoint_heap_bytes_ += d.endpoint_heap_bytes() - heap_before;
    d.callee_agent = static_cast<std::uint8_t>(meta.agent < kMaxAgents ? meta.agent : 0);
    d.callee_peer = peers_.classify(meta.dst.address, d.callee_agent);
}

void DialogTable::finish(Dialog& d, DialogState state, Timestamp when) {
    set_state(d, state);
    d.set_time(DialogTime::end, when);
    set_deadline(d, plus(when, config_.dialog_linger));
    stats_->dialogs_finished[static_cast<std::size_t>(outcome_of(state))].add();
    PeerDialogFigures& by_peers = peer_figures(d);
    by_peers.finished[static_cast<std::size_t>(outcome_of(state))].add();
    // An answered call's status was counted at the answer; others are decided now (0: "none").
    if (d.time(DialogTime::answer).us == 0) {
        stats_->final_status[final_status_index(d.final_status)].add();
        by_peers.final_status[final_status_index(d.final_status)].add();
    }
    count_cause(d);
}

std::uint32_t DialogTable::settle(std::uint32_t at, Timestamp now) {
    while (at != Table::kNone && table_[at].time(DialogTime::deadline) <= now) at = on_deadline(at, false);
    return at;
}

std::uint32_t DialogTable::on_deadline(std::uint32_t at, bool by_clock) {
    auto& entry = table_.entry(at);
    Dialog& d = entry.value;
    if (d.finished()) {
        account_removed(entry, false, at, d.time(DialogTime::deadline), by_clock);  // the end of its linger
        table_.erase(at);
        return Table::kNone;
    }
    // Timer-driven ends are dated at the deadline, not at whenever the timer was noticed.
    const Timestamp when = d.time(DialogTime::deadline);
    // A confirmed call times out whatever failure or CANCEL was pending, hence the repeated branch.
    if (d.state == DialogState::confirmed) {  // NOLINT(bugprone-branch-clone)
        finish(d, DialogState::timed_out, when);
    } else if (d.pending_status != 0) {
        // Nothing followed the pending failure. A challenge ended the call when it arrived (the
        // linger still runs from now, so late messages keep matching).
        const Timestamp challenged_at = d.time(DialogTime::end);
        const Timestamp failed_at = challenged_at.us != 0 ? challenged_at : when;
        d.final_status = d.pending_status;
        // The unanswered challenge was what the caller got; a failure relayed on another hop
        // only was not seen reaching the caller, so its time is unknown.
        if (challenged_at.us != 0 && awaits_indicative(d))
            note_indicative(d, SetupResult::failure, failed_at, seconds(interval(d.invite_time(), failed_at)));
        if (d.q850_cause == kNoCause) d.q850_cause = d.pending_q850;
        finish(d, d.pending_status == 487 ? DialogState::cancelled : DialogState::failed, when);
        d.set_time(DialogTime::end, failed_at);
    } else if (d.cancel_seen) {
        finish(d, DialogState::cancelled, when);
    } else {
        finish(d, DialogState::timed_out, when);
    }
    table_.touch(at);  // ended: among the lingering, evicted first
    return at;
}

void DialogTable::expire(Timestamp now) {
    transactions_.expire(now);
    if (now.us < due_.earliest()) return;
    // Every live dialog has an armed deadline no later than its own, so every dialog that is due
    // comes up here; one whose deadline moved on is armed again at it. One deadline at a time, in
    // deadline order: what a step of the clock brings (dialogs ended, removed, their bindings'
    // ends) goes in the same order whatever steps came before (a shard reading beside others
    // steps less often than a single reader).
    while (const auto item = due_.pop_due(now.us)) {
        if (!table_.contains(item->at)) continue;  // retired or evicted since
        if (table_[item->at].time(DialogTime::deadline).us != item->deadline_us) {
            queue_deadline(item->at);
            continue;
        }
        const std::uint32_t kept = on_deadline(item->at, true);
        if (kept != Table::kNone) queue_deadline(kept);
    }
}

void DialogTable::queue_deadline(std::uint32_t at) { due_.schedule(at, table_[at].time(DialogTime::deadline).us); }

// ---------------------------------------------------------------------------------------------
// Insertion, eviction, restore

void DialogTable::insert_entry(DialogKey key, const Dialog& record, std::uint32_t* at_out, Timestamp now) {
    key_heap_bytes_ += key.heap_bytes();
    endpoint_heap_bytes_ += record.endpoint_heap_bytes();
    auto [at, evicted] = table_.insert(std::move(key), record);
    // The victim's slot is the one reused: its SDP sides are still at `at`.
    if (evicted) account_removed(*evicted, true, at, now);
    sdp_sides_.clear(at);
    if (at < caller_identities_.size()) caller_identities_[at] = CallerIdentity{};
    stats_->dialogs_by_state[static_cast<std::size_t>(record.state)].add(1);
    set_deadline(table_[at], record.time(DialogTime::deadline));
    queue_deadline(at);
    *at_out = at;
}

const CallerIdentity& DialogTable::caller_identity_of(std::uint32_t at) const noexcept {
    return at < caller_identities_.size() ? caller_identities_[at] : kNoCallerIdentity;
}

const CallerIdentity& DialogTable::caller_identity(std::string_view call_id, std::string_view from_tag) const noexcept {
    const std::uint32_t at = lookup(hash_text(call_id), call_id, from_tag);
    return at == Table::kNone ? kNoCallerIdentity : caller_identity_of(at);
}

void DialogTable::end_media(std::uint32_t at, const Table::Entry& entry, Timestamp when, bool at_deadline) {
    if (sink_ == nullptr) return;
    const SdpSides sides = sdp_sides_.get(at, entry.value.hops);
    // Each media address with the other end of its media line on the same hop (as emit_sdp()
    // paired them), once: the stream table finds that pair directly.
    std::array<std::pair<Endpoint, Endpoint>, kSdpSides * kSdpMedia * 2> sent{};
    std::size_t count = 0;
    MediaBinding ended = release_of(entry, when);
    ended.at_deadline = at_deadline;
    for (const SdpSide& side : sides) {
        if (side.hop == 0) continue;
        const auto other = std::find_if(sides.begin(), sides.end(), [&](const SdpSide& s) {
            return s.hop == side.hop && s.forward != side.forward;
        });
        const auto end_of = [&](const Endpoint& media, const Endpoint& peer, bool rtcp) {
            if (media.port == 0) return;
            const std::pair<Endpoint, Endpoint> key{media_key(media), peer.port != 0 ? media_key(peer) : peer};
            const auto end = sent.begin() + static_cast<std::ptrdiff_t>(count);
            if (std::find(sent.begin(), end, key) != end) return;
            sent[count++] = key;
            ended.media = media;
            ended.peer = peer;
            ended.rtcp = rtcp;
            sink_->on_media_binding(ended);
        };
        for (std::size_t i = 0; i < kSdpMedia; ++i) {
            end_of(side.media[i], other != sides.end() ? other->media[i] : Endpoint{}, false);
            end_of(side.rtcp[i], other != sides.end() ? rtcp_of(*other, i) : Endpoint{}, true);
        }
    }
    sdp_sides_.clear(at);
}

void DialogTable::account_removed(const Table::Entry& entry, bool evicted, std::uint32_t at, Timestamp when,
                                  bool at_deadline) {
    end_media(at, entry, when, at_deadline);
    if (removed_sink_ != nullptr)
        removed_sink_->on_dialog_removed(entry.key.call_id(), entry.key.from_tag(), entry.value, caller_identity_of(at),
                                         evicted);
    key_heap_bytes_ -= entry.key.heap_bytes();
    endpoint_heap_bytes_ -= entry.value.endpoint_heap_bytes();
    stats_->dialogs_by_state[static_cast<std::size_t>(entry.value.state)].add(-1);
    if (!evicted) return;
    stats_->dialog_evictions[static_cast<std::size_t>(entry.value.state)].add();
    if (entry.value.finished()) return;
    stats_->dialogs_finished[static_cast<std::size_t>(DialogOutcome::evicted)].add();
    PeerDialogFigures& by_peers = peer_figures(entry.value);
    by_peers.finished[static_cast<std::size_t>(DialogOutcome::evicted)].add();
    if (entry.value.time(DialogTime::answer).us == 0) {
        stats_->final_status[final_status_index(0)].add();
        by_peers.final_status[final_status_index(0)].add();
    }
}

bool DialogTable::restore(std::string_view call_id, std::string_view from_tag, const Dialog& record,
                          const SdpSides& sdp_sides, const CallerIdentity& caller) {
    if (call_id.size() > kMaxCallIdSize || from_tag.size() > kMaxTagSize || from_tag.empty()) return false;
    const std::uint64_t call_hash = hash_text(call_id);
    if (lookup(call_hash, call_id, from_tag) != Table::kNone) return false;
    // Peer ids are this process's: the groups are found again under the configuration in force.
    Dialog restored = record;
    classify_peers(restored);
    std::uint32_t at = Table::kNone;
    insert_entry(DialogKey(call_id, from_tag), restored, &at, Timestamp{});
    // Its bindings end with it, and a later offer or answer pairs with these as before.
    if (sdp_sides != SdpSides{}) sdp_sides_.set(at, sdp_sides, table_[at].hops);
    if (config_.keep_caller_identity && caller != CallerIdentity{}) caller_identities_.grown_to(at) = caller;
    return true;
}

}  // namespace hepd::sip
