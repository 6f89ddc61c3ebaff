#include "snapshot/mapping.hpp"

#include "core/compact_text.hpp"
#include "rtp/stream_codec.hpp"
#include "sip/method.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string_view>

namespace hepd::snapshot {

// The schema's enums are the C++ enums, value for value: a change on either side must show here.
static_assert(static_cast<int>(sip::DialogState::trying) == DIALOG_STATE_TRYING);
static_assert(static_cast<int>(sip::DialogState::proceeding) == DIALOG_STATE_PROCEEDING);
static_assert(static_cast<int>(sip::DialogState::early) == DIALOG_STATE_EARLY);
static_assert(static_cast<int>(sip::DialogState::confirmed) == DIALOG_STATE_CONFIRMED);
static_assert(static_cast<int>(sip::DialogState::terminated) == DIALOG_STATE_TERMINATED);
static_assert(static_cast<int>(sip::DialogState::cancelled) == DIALOG_STATE_CANCELLED);
static_assert(static_cast<int>(sip::DialogState::failed) == DIALOG_STATE_FAILED);
static_assert(static_cast<int>(sip::DialogState::timed_out) == DIALOG_STATE_TIMED_OUT);
static_assert(sip::kDialogStateCount == DialogState_ARRAYSIZE);
static_assert(static_cast<int>(sip::Party::unknown) == PARTY_UNKNOWN);
static_assert(static_cast<int>(sip::Party::caller) == PARTY_CALLER);
static_assert(static_cast<int>(sip::Party::callee) == PARTY_CALLEE);
static_assert(Party_ARRAYSIZE == 3);
static_assert(static_cast<int>(sip::Method::other) == METHOD_OTHER);
static_assert(static_cast<int>(sip::Method::invite) == METHOD_INVITE);
static_assert(static_cast<int>(sip::Method::ack) == METHOD_ACK);
static_assert(static_cast<int>(sip::Method::bye) == METHOD_BYE);
static_assert(static_cast<int>(sip::Method::cancel) == METHOD_CANCEL);
static_assert(static_cast<int>(sip::Method::register_) == METHOD_REGISTER);
static_assert(static_cast<int>(sip::Method::options) == METHOD_OPTIONS);
static_assert(static_cast<int>(sip::Method::subscribe) == METHOD_SUBSCRIBE);
static_assert(static_cast<int>(sip::Method::notify) == METHOD_NOTIFY);
static_assert(static_cast<int>(sip::Method::publish) == METHOD_PUBLISH);
static_assert(static_cast<int>(sip::Method::message) == METHOD_MESSAGE);
static_assert(static_cast<int>(sip::Method::info) == METHOD_INFO);
static_assert(static_cast<int>(sip::Method::prack) == METHOD_PRACK);
static_assert(static_cast<int>(sip::Method::update) == METHOD_UPDATE);
static_assert(static_cast<int>(sip::Method::refer) == METHOD_REFER);
static_assert(sip::kMethodCount == Method_ARRAYSIZE);
static_assert(static_cast<int>(sip::TransactionState::pending) == TRANSACTION_STATE_PENDING);
static_assert(static_cast<int>(sip::TransactionState::completed) == TRANSACTION_STATE_COMPLETED);
static_assert(TransactionState_ARRAYSIZE == 2);
static_assert(static_cast<int>(rtp::Codec::unknown) == CODEC_UNKNOWN);
static_assert(static_cast<int>(rtp::Codec::pcmu) == CODEC_PCMU);
static_assert(static_cast<int>(rtp::Codec::pcma) == CODEC_PCMA);
static_assert(static_cast<int>(rtp::Codec::g722) == CODEC_G722);
static_assert(static_cast<int>(rtp::Codec::g729) == CODEC_G729);
static_assert(static_cast<int>(rtp::Codec::g723) == CODEC_G723);
static_assert(static_cast<int>(rtp::Codec::gsm) == CODEC_GSM);
static_assert(static_cast<int>(rtp::Codec::ilbc) == CODEC_ILBC);
static_assert(static_cast<int>(rtp::Codec::opus) == CODEC_OPUS);
static_assert(static_cast<int>(rtp::Codec::telephone_event) == CODEC_TELEPHONE_EVENT);
static_assert(static_cast<int>(rtp::Codec::comfort_noise) == CODEC_COMFORT_NOISE);
static_assert(static_cast<int>(rtp::Codec::other) == CODEC_OTHER);
static_assert(Codec_ARRAYSIZE == 12);

namespace {

// Reads fields into a record, stopping at the first one that does not fit; names it in `why`.
inline constexpr std::int64_t kMaxTimeUs = 253'402'300'800'000'000;  // 10000-01-01T00:00:00Z

class FieldReader {
public:
    explicit FieldReader(std::string& why) : why_(why) {}

    bool ok() const noexcept { return ok_; }

    template <class T>
    void uint(const char* name, std::uint64_t value, T& out) {
        if (!ok_) return;
        if (value > std::numeric_limits<T>::max()) return fail(name, std::to_string(value) + " does not fit");
        out = static_cast<T>(value);
    }

    template <class E>
    void enumeration(const char* name, int value, int count, E& out) {
        if (!ok_) return;
        if (value < 0 || value >= count) return fail(name, "unknown value " + std::to_string(value));
        out = static_cast<E>(value);
    }

    // A repeated field of at most `cap` entries.
    bool entries(const char* name, int size, std::size_t cap) {
        if (!ok_) return false;
        if (static_cast<std::size_t>(size) > cap)
            fail(name, std::to_string(size) + " entries, at most " + std::to_string(cap));
        return ok_;
    }

    template <class Repeated, class T, std::size_t N>
    void array(const char* name, const Repeated& in, std::array<T, N>& out) {
        if (!entries(name, in.size(), N)) return;
        out.fill(T{});
        for (int i = 0; i < in.size(); ++i) uint(name, in.Get(i), out[static_cast<std::size_t>(i)]);
    }

    template <std::size_t N>
    void ring(const char* name, const FingerprintRing& in, sip::FingerprintRing<N>& out) {
        array(name, in.slots(), out.slots);
        if (ok_ && in.next() >= N) return fail(name, "next " + std::to_string(in.next()) + " past the ring");
        out.next = static_cast<std::uint8_t>(in.next());
    }

    // Packet times between the epoch and the year 10000: the tables subtract and add them
    // freely, which only a sane range keeps free of overflow.
    void time(const char* name, std::int64_t us, Timestamp& out) {
        if (!ok_) return;
        if (us < 0 || us > kMaxTimeUs) return fail(name, std::to_string(us) + " is not a time");
        out = Timestamp{us};
    }
    // A dialog's times go in through its setters: they are kept packed (sip::DialogTimes).
    void time(const char* name, std::int64_t us, sip::Dialog& out, sip::DialogTime which) {
        Timestamp t;
        time(name, us, t);
        out.set_time(which, t);
    }
    void invite_time(std::int64_t us, sip::Dialog& out) {
        Timestamp t;
        time("invite_time_us", us, t);
        out.set_invite_time(t);
    }

    void endpoint(const char* name, const Endpoint& in, hepd::Endpoint& out) {
        if (!ok_) return;
        std::string inner;
        if (!from_proto(in, out, inner)) fail(name, inner);
    }

    // A Call-ID as records keep it: refused, not clamped, past what a CompactText holds.
    void text(const char* name, const std::string& in, CompactText& out) {
        if (!ok_) return;
        constexpr std::size_t cap = CompactText::kMaxSize;
        if (in.size() > cap) return fail(name, std::to_string(in.size()) + " octets, at most " + std::to_string(cap));
        out = std::string_view(in);
    }

    void fail(const char* name, const std::string& what) {
        ok_ = false;
        why_ = std::string(name) + ": " + what;
    }

private:
    std::string& why_;
    bool ok_ = true;
};

template <class Repeated, class T, std::size_t N>
void put_array(const std::array<T, N>& in, Repeated& out) {
    // Trailing zeros are empty slots: left out, they read back as zeros.
    std::size_t n = N;
    while (n > 0 && in[n - 1] == 0) --n;
    out.Clear();
    out.Reserve(static_cast<int>(n));
    for (std::size_t i = 0; i < n; ++i) out.Add(in[i]);
}

template <std::size_t N>
void put_ring(const sip::FingerprintRing<N>& in, FingerprintRing& out) {
    put_array(in.slots, *out.mutable_slots());
    out.set_next(in.next);
}

void put_sdp_sides(const sip::SdpSides& in, google::protobuf::RepeatedPtrField<SdpSide>& out) {
    out.Clear();
    for (const sip::SdpSide& side : in) {
        if (side.hop == 0) continue;  // an empty slot
        SdpSide& to = *out.Add();
        to.set_hop(side.hop);
        to.set_forward(side.forward);
        // Trailing lines without an address are left out; the ones before a used line stay.
        const auto put = [](const auto& lines, auto& into) {
            std::size_t n = lines.size();
            while (n > 0 && lines[n - 1] == hepd::Endpoint{}) --n;
            for (std::size_t i = 0; i < n; ++i) to_proto(lines[i], *into.Add());
        };
        put(side.media, *to.mutable_media());
        put(side.rtcp, *to.mutable_rtcp());
    }
}

// Sides as emit_sdp() leaves them: a hop, each hop and direction once, and media lines that
// are an address and a port, or nothing.
void get_sdp_sides(FieldReader& r, const google::protobuf::RepeatedPtrField<SdpSide>& in, sip::SdpSides& out) {
    out = sip::SdpSides{};
    if (!r.entries("sdp_sides", in.size(), out.size())) return;
    for (std::size_t i = 0; i < static_cast<std::size_t>(in.size()); ++i) {
        const SdpSide& side = in.Get(static_cast<int>(i));
        sip::SdpSide& to = out[i];
        if (side.hop() == 0) return r.fail("sdp_sides.hop", "0 names no hop");
        to.hop = side.hop();
        to.forward = side.forward();
        for (std::size_t j = 0; j < i; ++j)
            if (out[j].hop == to.hop && out[j].forward == to.forward)
                return r.fail("sdp_sides", "hop " + std::to_string(to.hop) + " twice in one direction");
        const auto get = [&](const char* field, const auto& lines, auto& into) {
            if (!r.entries(field, lines.size(), into.size())) return false;
            for (std::size_t m = 0; m < static_cast<std::size_t>(lines.size()); ++m) {
                r.endpoint(field, lines.Get(static_cast<int>(m)), into[m]);
                if (!r.ok()) return false;
                if (into[m].address.empty() != (into[m].port == 0)) {
                    r.fail(field, "an address without a port or a port without an address");
                    return false;
                }
            }
            return true;
        };
        if (!get("sdp_sides.media", side.media(), to.media) || !get("sdp_sides.rtcp", side.rtcp(), to.rtcp)) return;
    }
}

void put_view(const rtp::ReceiverView& in, ReceiverView& out) {
    out.set_jitter(in.jitter);
    out.set_rtt_us(in.rtt_us);
    out.set_cumulative_lost(in.cumulative_lost);
    out.set_reports(in.reports);
    out.set_xr_reports(in.xr_reports);
    out.set_xr_round_trip_ms(in.xr_round_trip_ms);
    out.set_fraction_lost(in.fraction_lost);
    out.set_xr_loss_rate(in.xr_loss_rate);
    out.set_xr_discard_rate(in.xr_discard_rate);
    out.set_xr_r_factor(in.xr_r_factor);
    out.set_xr_mos_lq_x10(in.xr_mos_lq_x10);
    out.set_xr_mos_cq_x10(in.xr_mos_cq_x10);
}

void get_view(FieldReader& r, const ReceiverView& in, rtp::ReceiverView& out) {
    out.jitter = in.jitter();
    out.rtt_us = in.rtt_us();
    out.cumulative_lost = in.cumulative_lost();
    r.uint("receiver.reports", in.reports(), out.reports);
    r.uint("receiver.xr_reports", in.xr_reports(), out.xr_reports);
    r.uint("receiver.xr_round_trip_ms", in.xr_round_trip_ms(), out.xr_round_trip_ms);
    r.uint("receiver.fraction_lost", in.fraction_lost(), out.fraction_lost);
    r.uint("receiver.xr_loss_rate", in.xr_loss_rate(), out.xr_loss_rate);
    r.uint("receiver.xr_discard_rate", in.xr_discard_rate(), out.xr_discard_rate);
    r.uint("receiver.xr_r_factor", in.xr_r_factor(), out.xr_r_factor);
    r.uint("receiver.xr_mos_lq_x10", in.xr_mos_lq_x10(), out.xr_mos_lq_x10);
    r.uint("receiver.xr_mos_cq_x10", in.xr_mos_cq_x10(), out.xr_mos_cq_x10);
}

}  // namespace

// ---- endpoints -----------------------------------------------------------------------------

void to_proto(const hepd::Endpoint& in, Endpoint& out) {
    const auto& bytes = in.address.bytes();
    const std::size_t n = in.address.is_v4() ? 4 : in.address.is_v6() ? 16 : 0;
    out.set_address(reinterpret_cast<const char*>(bytes.data()), n);
    out.set_port(in.port);
}

bool from_proto(const Endpoint& in, hepd::Endpoint& out, std::string& why) {
    const auto* p = reinterpret_cast<const std::uint8_t*>(in.address().data());
    switch (in.address().size()) {
    case 0: out.address = IpAddress{}; break;
    case 4: out.address = IpAddress::v4(std::span<const std::uint8_t, 4>(p, 4)); break;
    case 16: out.address = IpAddress::v6(std::span<const std::uint8_t, 16>(p, 16)); break;
    default: why = "address of " + std::to_string(in.address().size()) + " octets"; return false;
    }
    if (in.port() > 0xffff) {
        why = "port " + std::to_string(in.port());
        return false;
    }
    out.port = static_cast<std::uint16_t>(in.port());
    return true;
}

// ---- dialogs -------------------------------------------------------------------------------

void to_proto(const DialogRecord& in, Dialog& out) {
    const sip::Dialog& d = in.dialog;
    out.set_call_id(in.call_id);
    out.set_from_tag(in.from_tag);
    out.set_invite_time_us(d.invite_time().us);
    out.set_trying_time_us(d.time(sip::DialogTime::trying).us);
    out.set_ringing_time_us(d.time(sip::DialogTime::ringing).us);
    out.set_indicative_time_us(d.time(sip::DialogTime::indicative).us);
    out.set_answer_time_us(d.time(sip::DialogTime::answer).us);
    out.set_ack_time_us(d.time(sip::DialogTime::ack).us);
    out.set_cancel_time_us(d.time(sip::DialogTime::cancel).us);
    out.set_bye_time_us(d.time(sip::DialogTime::bye).us);
    out.set_bye_answer_time_us(d.time(sip::DialogTime::bye_answer).us);
    out.set_end_time_us(d.time(sip::DialogTime::end).us);
    out.set_last_activity_us(d.time(sip::DialogTime::last_activity).us);
    out.set_deadline_us(d.time(sip::DialogTime::deadline).us);
    to_proto(d.caller(), *out.mutable_caller());
    to_proto(d.callee(), *out.mutable_callee());
    put_array(d.hops, *out.mutable_hops());
    put_array(d.fork_tags, *out.mutable_fork_tags());
    out.set_confirmed_tag(d.confirmed_tag);
    put_ring(d.recent, *out.mutable_recent());
    out.set_invite_cseq(d.invite_cseq);
    out.set_caller_reinvite_cseq(d.reinvite_cseq[0]);
    out.set_callee_reinvite_cseq(d.reinvite_cseq[1]);
    out.set_final_status(d.final_status);
    out.set_pending_status(d.pending_status);
    out.set_bye_status(d.bye_status);
    out.set_q850_cause(d.q850_cause);
    out.set_pending_q850(d.pending_q850);
    out.set_retransmissions(d.retransmissions);
    out.set_reinvites(d.reinvites);
    out.set_hop_count(d.hop_count);
    out.set_fork_count(d.fork_count);
    out.set_agent(d.agent);
    to_proto(d.callee_side(), *out.mutable_callee_side());
    out.set_callee_agent(d.callee_agent);
    out.set_state(static_cast<DialogState>(d.state));
    out.set_hangup(static_cast<Party>(d.hangup));
    out.set_cancel_seen(d.cancel_seen);
    out.set_q850_counted(d.q850_counted);
    const sip::CallerIdentity& who = in.caller;
    const std::size_t ua = std::min<std::size_t>(who.user_agent_size, who.user_agent.size());
    out.set_user_agent(who.user_agent.data(), ua);
    out.set_from_user(std::string(who.from_party.user()));
    out.set_from_host(std::string(who.from_party.host()));
    out.set_to_user(std::string(who.to_party.user()));
    out.set_to_host(std::string(who.to_party.host()));
    put_sdp_sides(in.sdp_sides, *out.mutable_sdp_sides());
}

bool from_proto(const Dialog& in, DialogRecord& out, std::string& why) {
    FieldReader r(why);
    sip::Dialog& d = out.dialog;
    d = sip::Dialog{};
    out.caller = sip::CallerIdentity{};
    out.call_id = in.call_id();
    out.from_tag = in.from_tag();
    r.invite_time(in.invite_time_us(), d);
    r.time("trying_time_us", in.trying_time_us(), d, sip::DialogTime::trying);
    r.time("ringing_time_us", in.ringing_time_us(), d, sip::DialogTime::ringing);
    r.time("indicative_time_us", in.indicative_time_us(), d, sip::DialogTime::indicative);
    r.time("answer_time_us", in.answer_time_us(), d, sip::DialogTime::answer);
    r.time("ack_time_us", in.ack_time_us(), d, sip::DialogTime::ack);
    r.time("cancel_time_us", in.cancel_time_us(), d, sip::DialogTime::cancel);
    r.time("bye_time_us", in.bye_time_us(), d, sip::DialogTime::bye);
    r.time("bye_answer_time_us", in.bye_answer_time_us(), d, sip::DialogTime::bye_answer);
    r.time("end_time_us", in.end_time_us(), d, sip::DialogTime::end);
    r.time("last_activity_us", in.last_activity_us(), d, sip::DialogTime::last_activity);
    r.time("deadline_us", in.deadline_us(), d, sip::DialogTime::deadline);
    hepd::Endpoint caller;
    hepd::Endpoint callee;
    r.endpoint("caller", in.caller(), caller);
    r.endpoint("callee", in.callee(), callee);
    d.set_caller(caller);
    d.set_callee(callee);
    r.array("hops", in.hops(), d.hops);
    r.array("fork_tags", in.fork_tags(), d.fork_tags);
    d.confirmed_tag = in.confirmed_tag();
    r.ring("recent", in.recent(), d.recent);
    d.invite_cseq = in.invite_cseq();
    d.reinvite_cseq = {in.caller_reinvite_cseq(), in.callee_reinvite_cseq()};
    r.uint("final_status", in.final_status(), d.final_status);
    r.uint("pending_status", in.pending_status(), d.pending_status);
    r.uint("bye_status", in.bye_status(), d.bye_status);
    r.uint("q850_cause", in.q850_cause(), d.q850_cause);
    r.uint("pending_q850", in.pending_q850(), d.pending_q850);
    r.uint("retransmissions", in.retransmissions(), d.retransmissions);
    r.uint("reinvites", in.reinvites(), d.reinvites);
    r.uint("hop_count", in.hop_count(), d.hop_count);
    r.uint("fork_count", in.fork_count(), d.fork_count);
    r.uint("agent", in.agent(), d.agent);
    if (in.has_callee_side()) {
        hepd::Endpoint callee_side;
        r.endpoint("callee_side", in.callee_side(), callee_side);
        d.set_callee_side(callee_side);
        r.uint("callee_agent", in.callee_agent(), d.callee_agent);
    } else {
        d.set_callee_side(callee);
        d.callee_agent = d.agent;
    }
    r.enumeration("state", in.state(), DialogState_ARRAYSIZE, d.state);
    r.enumeration("hangup", in.hangup(), Party_ARRAYSIZE, d.hangup);
    d.cancel_seen = in.cancel_seen();
    d.q850_counted = in.q850_counted();
    get_sdp_sides(r, in.sdp_sides(), out.sdp_sides);
    sip::CallerIdentity& who = out.caller;
    if (r.ok() && in.user_agent().size() > who.user_agent.size())
        r.fail("user_agent",
               std::to_string(in.user_agent().size()) + " octets, at most " + std::to_string(who.user_agent.size()));
    if (!r.ok()) return false;
    who.user_agent.fill('\0');
    std::copy(in.user_agent().begin(), in.user_agent().end(), who.user_agent.begin());
    who.user_agent_size = static_cast<std::uint8_t>(in.user_agent().size());
    // Longer text than a live record holds is cut the same way (a party name is informational).
    who.from_party = sip::party_name(in.from_user(), in.from_host());
    who.to_party = sip::party_name(in.to_user(), in.to_host());
    return true;
}

// ---- transactions --------------------------------------------------------------------------

void to_proto(const TransactionRecord& in, Transaction& out) {
    const sip::Transaction& t = in.transaction;
    out.set_call_id(in.key.call_id);
    out.set_cseq(in.key.cseq);
    out.set_method(static_cast<Method>(in.key.method));
    out.set_request_time_us(t.request_time.us);
    out.set_provisional_time_us(t.provisional_time.us);
    out.set_final_time_us(t.final_time.us);
    out.set_last_activity_us(t.last_activity.us);
    out.set_deadline_us(t.deadline.us);
    put_array(t.hops, *out.mutable_hops());
    put_ring(t.recent, *out.mutable_recent());
    out.set_final_status(t.final_status);
    out.set_retransmissions(t.retransmissions);
    out.set_state(static_cast<TransactionState>(t.state));
    out.set_agent(t.agent);
    out.set_hop_count(t.hop_count);
    out.set_attempt_time_us(t.attempt_time.us);
    out.set_retried(t.retried);
}

bool from_proto(const Transaction& in, TransactionRecord& out, std::string& why) {
    FieldReader r(why);
    sip::Transaction& t = out.transaction;
    t = sip::Transaction{};
    out.key.call_id = in.call_id();
    out.key.cseq = in.cseq();
    r.enumeration("method", in.method(), Method_ARRAYSIZE, out.key.method);
    t.method = out.key.method;
    r.time("request_time_us", in.request_time_us(), t.request_time);
    r.time("provisional_time_us", in.provisional_time_us(), t.provisional_time);
    r.time("final_time_us", in.final_time_us(), t.final_time);
    r.time("last_activity_us", in.last_activity_us(), t.last_activity);
    r.time("deadline_us", in.deadline_us(), t.deadline);
    r.array("hops", in.hops(), t.hops);
    r.ring("recent", in.recent(), t.recent);
    r.uint("final_status", in.final_status(), t.final_status);
    r.uint("retransmissions", in.retransmissions(), t.retransmissions);
    r.enumeration("state", in.state(), TransactionState_ARRAYSIZE, t.state);
    r.uint("agent", in.agent(), t.agent);
    r.uint("hop_count", in.hop_count(), t.hop_count);
    r.time("attempt_time_us", in.attempt_time_us(), t.attempt_time);
    t.retried = in.retried();
    return r.ok();
}

// ---- streams -------------------------------------------------------------------------------

void to_proto(const StreamRecord& in, Stream& out) {
    const rtp::Stream& s = in.stream;
    to_proto(in.key.src, *out.mutable_src());
    to_proto(in.key.dst, *out.mutable_dst());
    out.set_ssrc(in.key.ssrc);
    out.set_first_us(s.first.us);
    out.set_last_us(s.last.us);
    out.set_last_voice_arrival_us(s.last_voice_arrival_us());
    out.set_bytes(s.bytes);
    SequenceTracker& q = *out.mutable_sequence();
    q.set_window_low(s.sequence.window_low);
    q.set_window_high(s.sequence.window_high);
    q.set_cycles(s.sequence.cycles);
    q.set_received(s.sequence.received);
    q.set_prior_expected(s.sequence.prior_expected);
    q.set_prior_received(s.sequence.prior_received);
    q.set_gaps(s.sequence.gaps);
    q.set_base_seq(s.sequence.base_seq);
    q.set_max_seq(s.sequence.max_seq);
    q.set_bad_seq(s.sequence.bad_seq);
    q.set_restarts(s.sequence.restarts);
    q.set_probation(s.sequence.probation);
    q.set_started(s.sequence.started);
    q.set_validated(s.sequence.validated);
    q.set_has_bad_seq(s.sequence.has_bad_seq);
    out.set_last_voice_timestamp(s.last_voice_timestamp);
    out.set_max_gap_us(s.max_gap_us);
    out.set_packets(s.packets);
    out.set_event_packets(s.event_packets);
    out.set_comfort_noise_packets(s.comfort_noise_packets);
    out.set_markers(s.markers);
    out.set_duplicates(s.duplicates);
    out.set_out_of_order(s.out_of_order);
    out.mutable_jitter()->Reserve(static_cast<int>(rtp::kCandidateClockRates.size()));
    for (std::size_t i = 0; i < rtp::kCandidateClockRates.size(); ++i) {
        JitterEstimate& j = *out.add_jitter();
        j.set_clock_rate(rtp::kCandidateClockRates[i]);
        j.set_jitter_us(s.estimate(i).jitter_us);
        j.set_max_jitter_us(s.estimate(i).max_jitter_us);
    }
    put_view(s.receiver.get(), *out.mutable_receiver());
    out.set_payload_type_changes(s.payload_type_changes);
    out.set_voice_payload_type(s.voice_payload_type);
    out.set_dynamic_payload_type(s.dynamic_payload_type());
    out.set_has_voice_reference((s.flags & rtp::Stream::kHasVoiceReference) != 0);
    out.set_candidate_clocks((s.flags & rtp::Stream::kCandidateClocks) != 0);
    if (const rtp::StreamExtras& extras = s.extras.get(); extras.bound_clock != 0) {
        JitterEstimate& j = *out.mutable_bound_clock_jitter();
        j.set_clock_rate(extras.bound_clock);
        j.set_jitter_us(extras.bound.jitter_us);
        j.set_max_jitter_us(extras.bound.max_jitter_us);
    }
}

bool from_proto(const Stream& in, StreamRecord& out, std::string& why) {
    FieldReader r(why);
    rtp::Stream& s = out.stream;
    s = rtp::Stream{};
    r.endpoint("src", in.src(), out.key.src);
    r.endpoint("dst", in.dst(), out.key.dst);
    out.key.ssrc = in.ssrc();
    r.time("first_us", in.first_us(), s.first);
    r.time("last_us", in.last_us(), s.last);
    Timestamp voice_arrival;
    r.time("last_voice_arrival_us", in.last_voice_arrival_us(), voice_arrival);
    s.bytes = in.bytes();
    const SequenceTracker& q = in.sequence();
    s.sequence.window_low = q.window_low();
    s.sequence.window_high = q.window_high();
    s.sequence.cycles = q.cycles();
    s.sequence.received = q.received();
    s.sequence.prior_expected = q.prior_expected();
    s.sequence.prior_received = q.prior_received();
    s.sequence.gaps = q.gaps();
    r.uint("sequence.base_seq", q.base_seq(), s.sequence.base_seq);
    r.uint("sequence.max_seq", q.max_seq(), s.sequence.max_seq);
    r.uint("sequence.bad_seq", q.bad_seq(), s.sequence.bad_seq);
    r.uint("sequence.restarts", q.restarts(), s.sequence.restarts);
    r.uint("sequence.probation", q.probation(), s.sequence.probation);
    s.sequence.started = q.started();
    s.sequence.validated = q.validated();
    s.sequence.has_bad_seq = q.has_bad_seq();
    s.last_voice_timestamp = in.last_voice_timestamp();
    s.max_gap_us = in.max_gap_us();
    s.packets = in.packets();
    s.event_packets = in.event_packets();
    s.comfort_noise_packets = in.comfort_noise_packets();
    s.markers = in.markers();
    s.duplicates = in.duplicates();
    s.out_of_order = in.out_of_order();
    std::array<bool, rtp::kCandidateClockRates.size()> seen{};
    for (const JitterEstimate& j : in.jitter()) {
        if (!r.ok()) break;
        const int slot = rtp::candidate_clock_index(j.clock_rate());
        if (slot < 0) {
            r.fail("jitter.clock_rate", "not a candidate clock: " + std::to_string(j.clock_rate()));
            break;
        }
        const auto i = static_cast<std::size_t>(slot);
        if (seen[i]) {
            r.fail("jitter.clock_rate", "twice: " + std::to_string(j.clock_rate()));
            break;
        }
        seen[i] = true;
        const rtp::JitterEstimate estimate{j.jitter_us(), j.max_jitter_us()};
        // Candidates other than the first are kept only when set (extras out of line).
        if (i == 0 || estimate != rtp::JitterEstimate{}) s.estimate_mut(i) = estimate;
    }
    rtp::ReceiverView view;
    get_view(r, in.receiver(), view);
    if (view != rtp::ReceiverView{}) s.receiver.mut() = view;  // out of line only when reported
    r.uint("payload_type_changes", in.payload_type_changes(), s.payload_type_changes);
    r.uint("voice_payload_type", in.voice_payload_type(), s.voice_payload_type);
    std::uint8_t dynamic_payload_type = rtp::kNoPayloadType;
    r.uint("dynamic_payload_type", in.dynamic_payload_type(), dynamic_payload_type);
    if (dynamic_payload_type != rtp::kNoPayloadType) s.extras.mut().dynamic_payload_type = dynamic_payload_type;
    s.flags = in.candidate_clocks() ? rtp::Stream::kCandidateClocks : 0;
    if (in.has_bound_clock_jitter()) {
        const JitterEstimate& j = in.bound_clock_jitter();
        const std::uint32_t rate = j.clock_rate();
        if (rtp::clock_code(rate) == rtp::kUnlistedClock || rate == 0 || rtp::candidate_clock_index(rate) >= 0) {
            r.fail("bound_clock_jitter.clock_rate",
                   "not a listed clock outside the candidates: " + std::to_string(rate));
        } else {
            rtp::StreamExtras& extras = s.extras.mut();
            extras.bound_clock = rate;
            extras.bound_us_per_tick = static_cast<float>(1e6 / rate);
            extras.bound = rtp::JitterEstimate{j.jitter_us(), j.max_jitter_us()};
        }
    }
    // A reference after `last` or too far before it (never written so) is dropped, as live.
    s.set_voice_reference(voice_arrival.us);
    if (!in.has_voice_reference()) s.flags = static_cast<std::uint8_t>(s.flags & ~rtp::Stream::kHasVoiceReference);
    return r.ok();
}

// ---- bindings ------------------------------------------------------------------------------

void to_proto(const BindingRecord& in, Binding& out) {
    const rtp::Binding& b = in.binding;
    to_proto(in.media, *out.mutable_media());
    out.set_call_id(std::string(b.call_id.view()));
    out.set_time_us(b.time.us);
    const std::size_t n = std::min<std::size_t>(b.codec_count, kMaxBindingCodecs);
    out.mutable_codecs()->Reserve(static_cast<int>(n));
    for (std::size_t i = 0; i < n; ++i) {
        BindingCodec& c = *out.add_codecs();
        c.set_payload_type(b.payload_types[i]);
        c.set_codec(static_cast<Codec>(b.codec(i)));
        // The rate, not the build's one-octet code, so that the file does not depend on the
        // order of rtp::kClockRates.
        if (b.clock(i) == rtp::kUnlistedClock) {
            c.set_clock_unlisted(true);
        } else {
            c.set_clock_rate(b.clock_rate(i));
        }
    }
    out.set_waiting(in.waiting);
    out.set_released(in.released);
    if (in.peer.port != 0) to_proto(in.peer, *out.mutable_peer());
    out.set_dialog(b.dialog);
    if (b.answer_choice < n) out.set_answer_choice(b.answer_choice + 1U);
    out.set_rtcp(b.rtcp);
}

bool from_proto(const Binding& in, BindingRecord& out, std::string& why) {
    FieldReader r(why);
    rtp::Binding& b = out.binding;
    b = rtp::Binding{};
    out.peer = hepd::Endpoint{};
    r.endpoint("media", in.media(), out.media);
    r.text("call_id", in.call_id(), b.call_id);
    r.time("time_us", in.time_us(), b.time);
    if (r.ok() && static_cast<std::size_t>(in.codecs_size()) > kMaxBindingCodecs)
        r.fail("codecs", std::to_string(in.codecs_size()) + " entries, at most " + std::to_string(kMaxBindingCodecs));
    for (int k = 0; k < in.codecs_size() && r.ok(); ++k) {
        const auto i = static_cast<std::size_t>(k);
        const BindingCodec& c = in.codecs(k);
        r.uint("codecs.payload_type", c.payload_type(), b.payload_types[i]);
        rtp::Codec codec = rtp::Codec::unknown;
        r.enumeration("codecs.codec", c.codec(), Codec_ARRAYSIZE, codec);
        // A rate this build has no code for is "unlisted", as if the SDP had named it.
        b.set_codec(i, codec, c.clock_unlisted() ? rtp::kUnlistedClock : rtp::clock_code(c.clock_rate()));
    }
    b.codec_count = static_cast<std::uint8_t>(in.codecs_size());
    if (in.has_peer()) r.endpoint("peer", in.peer(), out.peer);
    b.dialog = in.dialog();
    if (in.answer_choice() != 0) {
        if (in.answer_choice() > b.codec_count) {
            r.fail("answer_choice", std::to_string(in.answer_choice()) + " beyond the codecs");
        } else {
            b.answer_choice = static_cast<std::uint8_t>(in.answer_choice() - 1) & 0x0FU;  // checked above
        }
    }
    b.rtcp = in.rtcp();
    out.waiting = in.waiting();
    out.released = in.released();
    return r.ok();
}

// ---- reported streams ----------------------------------------------------------------------

void to_proto(const ReportedRecord& in, ReportedStream& out) {
    out.set_call_id(std::string(in.key.call_id.view()));
    out.set_ssrc(in.key.ssrc);
    out.set_reporter_ssrc(in.stream.reporter_ssrc);
    out.set_first_us(in.stream.first.us);
    out.set_last_us(in.stream.last.us);
    put_view(in.stream.view, *out.mutable_view());
    if (in.stream.reporter.port != 0) to_proto(in.stream.reporter, *out.mutable_reporter());
    out.set_max_jitter(in.stream.max_jitter);
    out.set_fraction_lost_sum(in.stream.fraction_lost_sum);
    out.set_dialog(in.stream.dialog);
    out.set_clock_rate(in.stream.clock_rate);
    out.set_codec(static_cast<Codec>(in.stream.codec));
}

bool from_proto(const ReportedStream& in, ReportedRecord& out, std::string& why) {
    FieldReader r(why);
    r.text("call_id", in.call_id(), out.key.call_id);
    out.key.ssrc = in.ssrc();
    out.stream = rtp::ReportedStream{};
    out.stream.reporter_ssrc = in.reporter_ssrc();
    r.time("first_us", in.first_us(), out.stream.first);
    r.time("last_us", in.last_us(), out.stream.last);
    get_view(r, in.view(), out.stream.view);
    if (in.has_reporter()) r.endpoint("reporter", in.reporter(), out.stream.reporter);
    out.stream.max_jitter = in.max_jitter();
    out.stream.fraction_lost_sum = in.fraction_lost_sum();
    out.stream.dialog = in.dialog();
    out.stream.clock_rate = in.clock_rate();
    r.enumeration("codec", in.codec(), Codec_ARRAYSIZE, out.stream.codec);
    return r.ok();
}

// ---- header --------------------------------------------------------------------------------

void to_proto(const SnapshotHeader& in, Header& out) {
    out.set_format_version(in.format_version);
    out.set_hepd_version(in.hepd_version);
    out.set_written_at_us(in.written_at.us);
    out.set_captured_at_us(in.captured_at.us);
    out.set_shard_count(in.shard_count);
    Counts& c = *out.mutable_counts();
    c.set_dialogs(in.counts.dialogs);
    c.set_transactions(in.counts.transactions);
    c.set_streams(in.counts.streams);
    c.set_bindings(in.counts.bindings);
    c.set_reported_streams(in.counts.reported_streams);
}

bool from_proto(const Header& in, SnapshotHeader& out, std::string& /*why*/) {
    out.format_version = in.format_version();
    out.hepd_version = in.hepd_version();
    out.written_at = Timestamp{in.written_at_us()};
    out.captured_at = Timestamp{in.captured_at_us()};
    out.shard_count = in.shard_count();
    out.counts = RecordCounts{in.counts().dialogs(), in.counts().transactions(), in.counts().streams(),
                              in.counts().bindings(), in.counts().reported_streams()};
    return true;
}

}  // namespace hepd::snapshot
