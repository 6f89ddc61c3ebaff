// `hepd snapshot show FILE`: a snapshot as JSON an operator can read (and jq can query).
#include "rtp/stream_codec.hpp"
#include "sip/method.hpp"
#include "snapshot/snapshot.hpp"

#include <nlohmann/json.hpp>
#include <string>

namespace hepd::snapshot {

namespace {

using Json = nlohmann::ordered_json;

Json time_json(Timestamp t) { return t.us == 0 ? Json(nullptr) : Json(format_iso8601(t)); }

Json endpoint_json(const hepd::Endpoint& e) {
    return e.address.empty() && e.port == 0 ? Json(nullptr) : Json(e.to_string());
}

template <class T, std::size_t N>
Json array_json(const std::array<T, N>& a, std::size_t n) {
    Json out = Json::array();
    for (std::size_t i = 0; i < n && i < N; ++i) out.push_back(a[i]);
    return out;
}

// Stored slots of a fixed array whose empty slots are zeros at the end.
template <class T, std::size_t N>
Json used_json(const std::array<T, N>& a) {
    std::size_t n = N;
    while (n > 0 && a[n - 1] == 0) --n;
    return array_json(a, n);
}

Json optional_json(std::uint32_t v, std::uint32_t none) { return v == none ? Json(nullptr) : Json(v); }

Json counts_json(const RecordCounts& c) {
    Json j;
    j["dialogs"] = c.dialogs;
    j["transactions"] = c.transactions;
    j["streams"] = c.streams;
    j["bindings"] = c.bindings;
    j["reported_streams"] = c.reported_streams;
    return j;
}

Json view_json(const rtp::ReceiverView& v) {
    Json j;
    j["reports"] = v.reports;
    j["fraction_lost"] = v.fraction_lost;
    j["cumulative_lost"] = v.cumulative_lost;
    j["jitter"] = v.jitter;
    j["rtt_us"] = optional_json(v.rtt_us, rtp::kNoRtt);
    j["xr_reports"] = v.xr_reports;
    j["xr_loss_rate"] = v.xr_loss_rate;
    j["xr_discard_rate"] = v.xr_discard_rate;
    j["xr_r_factor"] = optional_json(v.xr_r_factor, 127);
    j["xr_mos_lq_x10"] = optional_json(v.xr_mos_lq_x10, 127);
    j["xr_mos_cq_x10"] = optional_json(v.xr_mos_cq_x10, 127);
    j["xr_round_trip_ms"] = v.xr_round_trip_ms;
    return j;
}

Json dialog_json(const DialogRecord& r) {
    const sip::Dialog& d = r.dialog;
    Json j;
    j["call_id"] = r.call_id;
    j["from_tag"] = r.from_tag;
    j["state"] = sip::to_string(d.state);
    j["caller"] = endpoint_json(d.caller());
    j["callee"] = endpoint_json(d.callee());
    j["user_agent"] = std::string(r.caller.user_agent_view());
    j["from_user"] = std::string(r.caller.from_party.user());
    j["from_host"] = std::string(r.caller.from_party.host());
    j["to_user"] = std::string(r.caller.to_party.user());
    j["to_host"] = std::string(r.caller.to_party.host());
    j["agent"] = d.agent;
    j["callee_side"] = endpoint_json(d.callee_side());
    j["callee_agent"] = d.callee_agent;
    j["invite_time"] = time_json(d.invite_time());
    j["trying_time"] = time_json(d.time(sip::DialogTime::trying));
    j["ringing_time"] = time_json(d.time(sip::DialogTime::ringing));
    j["indicative_time"] = time_json(d.time(sip::DialogTime::indicative));
    j["answer_time"] = time_json(d.time(sip::DialogTime::answer));
    j["ack_time"] = time_json(d.time(sip::DialogTime::ack));
    j["cancel_time"] = time_json(d.time(sip::DialogTime::cancel));
    j["bye_time"] = time_json(d.time(sip::DialogTime::bye));
    j["bye_answer_time"] = time_json(d.time(sip::DialogTime::bye_answer));
    j["end_time"] = time_json(d.time(sip::DialogTime::end));
    j["last_activity"] = time_json(d.time(sip::DialogTime::last_activity));
    j["deadline"] = time_json(d.time(sip::DialogTime::deadline));
    j["final_status"] = d.final_status;
    j["pending_status"] = d.pending_status;
    j["bye_status"] = d.bye_status;
    j["q850_cause"] = optional_json(d.q850_cause, sip::kNoCause);
    j["pending_q850"] = optional_json(d.pending_q850, sip::kNoCause);
    j["q850_counted"] = d.q850_counted;
    j["hangup"] = sip::to_string(d.hangup);
    j["cancel_seen"] = d.cancel_seen;
    j["invite_cseq"] = d.invite_cseq;
    j["caller_reinvite_cseq"] = optional_json(d.reinvite_cseq[0], sip::kNoCSeq);
    j["callee_reinvite_cseq"] = optional_json(d.reinvite_cseq[1], sip::kNoCSeq);
    j["reinvites"] = d.reinvites;
    j["retransmissions"] = d.retransmissions;
    j["hop_count"] = d.hop_count;
    j["hops"] = used_json(d.hops);
    j["fork_count"] = d.fork_count;
    j["fork_tags"] = used_json(d.fork_tags);
    j["confirmed_tag"] = d.confirmed_tag;
    j["recent_fingerprints"] = used_json(d.recent.slots);
    j["recent_next"] = d.recent.next;
    // By m= line, as in the file: trailing lines without an address are left out.
    const auto lines = [](const auto& endpoints) {
        std::size_t n = endpoints.size();
        while (n > 0 && endpoints[n - 1] == hepd::Endpoint{}) --n;
        Json out = Json::array();
        for (std::size_t i = 0; i < n; ++i) out.push_back(endpoint_json(endpoints[i]));
        return out;
    };
    Json sides = Json::array();
    for (const sip::SdpSide& side : r.sdp_sides) {
        if (side.hop == 0) continue;
        sides.push_back(Json{
            {"hop", side.hop}, {"forward", side.forward}, {"media", lines(side.media)}, {"rtcp", lines(side.rtcp)}});
    }
    j["sdp_sides"] = std::move(sides);
    return j;
}

Json transaction_json(const TransactionRecord& r) {
    const sip::Transaction& t = r.transaction;
    Json j;
    j["call_id"] = r.key.call_id;
    j["cseq"] = r.key.cseq;
    j["method"] = sip::to_string(r.key.method);
    j["state"] = t.state == sip::TransactionState::pending ? "pending" : "completed";
    j["request_time"] = time_json(t.request_time);
    j["provisional_time"] = time_json(t.provisional_time);
    j["final_time"] = time_json(t.final_time);
    j["attempt_time"] = time_json(t.attempt_time);
    j["retried"] = t.retried;
    j["last_activity"] = time_json(t.last_activity);
    j["deadline"] = time_json(t.deadline);
    j["final_status"] = t.final_status;
    j["retransmissions"] = t.retransmissions;
    j["agent"] = t.agent;
    j["hop_count"] = t.hop_count;
    j["hops"] = used_json(t.hops);
    j["recent_fingerprints"] = used_json(t.recent.slots);
    j["recent_next"] = t.recent.next;
    return j;
}

Json stream_json(const StreamRecord& r) {
    const rtp::Stream& s = r.stream;
    const rtp::SequenceTracker& q = s.sequence;
    Json j;
    j["src"] = endpoint_json(r.key.src);
    j["dst"] = endpoint_json(r.key.dst);
    j["ssrc"] = r.key.ssrc;
    j["first"] = time_json(s.first);
    j["last"] = time_json(s.last);
    j["packets"] = s.packets;
    j["bytes"] = s.bytes;
    j["expected"] = q.expected();
    j["received"] = q.received_total();
    j["lost"] = q.lost();
    j["duplicates"] = s.duplicates;
    j["out_of_order"] = s.out_of_order;
    j["event_packets"] = s.event_packets;
    j["comfort_noise_packets"] = s.comfort_noise_packets;
    j["markers"] = s.markers;
    j["max_gap_us"] = s.max_gap_us;
    j["voice_payload_type"] = optional_json(s.voice_payload_type, rtp::kNoPayloadType);
    j["dynamic_payload_type"] = optional_json(s.dynamic_payload_type(), rtp::kNoPayloadType);
    j["payload_type_changes"] = s.payload_type_changes;
    j["has_voice_reference"] = (s.flags & rtp::Stream::kHasVoiceReference) != 0;
    j["candidate_clocks"] = (s.flags & rtp::Stream::kCandidateClocks) != 0;
    j["last_voice_arrival"] = time_json(Timestamp{s.last_voice_arrival_us()});
    j["last_voice_timestamp"] = s.last_voice_timestamp;
    Json jitter = Json::array();
    for (std::size_t i = 0; i < rtp::kCandidateClockRates.size(); ++i) {
        Json e;
        e["clock_rate"] = rtp::kCandidateClockRates[i];
        e["jitter_us"] = s.estimate(i).jitter_us;
        e["max_jitter_us"] = s.estimate(i).max_jitter_us;
        jitter.push_back(std::move(e));
    }
    j["jitter"] = std::move(jitter);
    if (const rtp::StreamExtras& extras = s.extras.get(); extras.bound_clock != 0) {
        Json e;
        e["clock_rate"] = extras.bound_clock;
        e["jitter_us"] = extras.bound.jitter_us;
        e["max_jitter_us"] = extras.bound.max_jitter_us;
        j["bound_clock_jitter"] = std::move(e);
    }
    Json seq;
    seq["started"] = q.started;
    seq["validated"] = q.validated;
    seq["probation"] = q.probation;
    seq["base_seq"] = q.base_seq;
    seq["max_seq"] = q.max_seq;
    seq["cycles"] = q.cycles;
    seq["received"] = q.received;
    seq["prior_expected"] = q.prior_expected;
    seq["prior_received"] = q.prior_received;
    seq["gaps"] = q.gaps;
    seq["restarts"] = q.restarts;
    seq["bad_seq"] = q.has_bad_seq ? Json(q.bad_seq) : Json(nullptr);
    seq["window_low"] = q.window_low;
    seq["window_high"] = q.window_high;
    j["sequence"] = std::move(seq);
    j["receiver"] = view_json(s.receiver.get());
    return j;
}

Json binding_json(const BindingRecord& r) {
    const rtp::Binding& b = r.binding;
    Json j;
    j["media"] = endpoint_json(r.media);
    j["peer"] = r.peer.port != 0 ? endpoint_json(r.peer) : Json(nullptr);
    j["call_id"] = std::string(b.call_id.view());
    j["dialog"] = b.dialog;
    j["time"] = time_json(b.time);
    j["waiting"] = r.waiting;
    j["released"] = r.released;
    j["rtcp"] = b.rtcp;
    Json codecs = Json::array();
    for (std::size_t i = 0; i < b.codec_count && i < kMaxBindingCodecs; ++i) {
        Json c;
        c["payload_type"] = b.payload_types[i];
        c["codec"] = rtp::to_string(b.codec(i));
        c["clock_rate"] = b.clock(i) == rtp::kUnlistedClock ? Json("unlisted") : Json(b.clock_rate(i));
        codecs.push_back(std::move(c));
    }
    j["codecs"] = std::move(codecs);
    if (b.answer_choice < b.codec_count) j["answer_choice"] = b.answer_choice;
    return j;
}

Json reported_json(const ReportedRecord& r) {
    Json j;
    j["call_id"] = std::string(r.key.call_id.view());
    j["ssrc"] = r.key.ssrc;
    j["reporter"] = r.stream.reporter.port != 0 ? endpoint_json(r.stream.reporter) : Json(nullptr);
    j["reporter_ssrc"] = r.stream.reporter_ssrc;
    j["first"] = time_json(r.stream.first);
    j["last"] = time_json(r.stream.last);
    j["view"] = view_json(r.stream.view);
    return j;
}

template <class Records, class F>
Json list_json(const Records& records, F&& f) {
    Json out = Json::array();
    for (const auto& r : records) out.push_back(f(r));
    return out;
}

}  // namespace

std::string to_json(const SnapshotFile& file) {
    Json j;
    j["format_version"] = file.header.format_version;
    j["hepd_version"] = file.header.hepd_version;
    j["written_at"] = time_json(file.header.written_at);
    j["captured_at"] = time_json(file.header.captured_at);
    j["shard_count"] = file.header.shard_count;
    j["counts"] = counts_json(file.header.counts);
    j["dialogs"] = list_json(file.records.dialogs, dialog_json);
    j["transactions"] = list_json(file.records.transactions, transaction_json);
    j["streams"] = list_json(file.records.streams, stream_json);
    j["bindings"] = list_json(file.records.bindings, binding_json);
    j["reported_streams"] = list_json(file.records.reported_streams, reported_json);
    // Call-IDs and User-Agents are wire bytes, not necessarily UTF-8: invalid sequences become
    // U+FFFD instead of failing the whole rendering.
    return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace hepd::snapshot
