#pragma once
// Records with a distinct, non-default value in every field, so that a mapping that drops or
// swaps any field shows in a round trip.
#include "snapshot/records.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace hepd::snapshot::test {

inline hepd::Endpoint ep(const char* text) { return *parse_endpoint(text); }

inline DialogRecord sample_dialog(const std::string& call_id = "a84b4c76e66710@pc33.atlanta.example.com") {
    DialogRecord r;
    r.call_id = call_id;
    r.from_tag = "1928301774";
    sip::Dialog& d = r.dialog;
    d.set_invite_time(Timestamp{1'700'000'000'000'001});
    d.set_time(sip::DialogTime::trying, Timestamp{1'700'000'000'005'002});
    d.set_time(sip::DialogTime::ringing, Timestamp{1'700'000'000'080'003});
    d.set_time(sip::DialogTime::indicative, Timestamp{1'700'000'000'070'012});
    d.set_time(sip::DialogTime::answer, Timestamp{1'700'000'000'480'004});
    d.set_time(sip::DialogTime::ack, Timestamp{1'700'000'000'495'005});
    d.set_time(sip::DialogTime::cancel, Timestamp{1'700'000'000'500'006});
    d.set_time(sip::DialogTime::bye, Timestamp{1'700'000'002'540'007});
    d.set_time(sip::DialogTime::bye_answer, Timestamp{1'700'000'002'548'008});
    d.set_time(sip::DialogTime::end, Timestamp{1'700'000'002'540'009});
    d.set_time(sip::DialogTime::last_activity, Timestamp{1'700'000'002'548'010});
    d.set_time(sip::DialogTime::deadline, Timestamp{1'700'000'034'540'011});
    d.set_caller(ep("192.0.2.10:5060"));
    d.set_callee(ep("[2001:db8::1]:5080"));
    d.hops = {0x11111111U, 0x22222222U, 0x33333333U, 0x44444444U};
    d.fork_tags = {0xa1U, 0xa2U, 0xa3U, 0xa4U};
    d.confirmed_tag = 0xa2U;
    d.recent.slots = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    d.recent.next = 5;
    d.invite_cseq = 314159;
    d.reinvite_cseq = {314160, 77};
    d.final_status = 200;
    d.pending_status = 407;
    d.bye_status = 481;
    d.q850_cause = 16;
    d.pending_q850 = 21;
    d.retransmissions = 65535;
    d.reinvites = 3;
    d.hop_count = 5;
    d.fork_count = 6;
    d.agent = 31;
    d.set_callee_side(ep("198.51.100.7:5060"));
    d.callee_agent = 12;
    d.state = sip::DialogState::terminated;
    d.hangup = sip::Party::callee;
    d.cancel_seen = true;
    d.q850_counted = true;
    const std::string ua = "Asterisk PBX 18.20.0-1~deb12u1 x";  // 32 octets: exactly the cap
    std::copy(ua.begin(), ua.end(), r.caller.user_agent.begin());
    r.caller.user_agent_size = static_cast<std::uint8_t>(ua.size());
    r.caller.from_party = sip::party_name("sip:+4930123456@carrier.example");
    r.caller.to_party = sip::party_name("sip:1002@[2001:db8::5]:5080");
    // An offer and its answer on the first hop (video declined in the answer), and a relayed
    // offer on the second hop whose audio was on hold; the fourth slot empty.
    r.sdp_sides[0] = {0x11111111U, false, {ep("[2001:db8::1]:30000"), hepd::Endpoint{}}};
    r.sdp_sides[1] = {0x11111111U, true, {ep("192.0.2.10:49170"), ep("192.0.2.10:49172")}};
    r.sdp_sides[2] = {0x22222222U, true, {hepd::Endpoint{}, ep("198.51.100.7:40002")}};
    return r;
}

inline TransactionRecord sample_transaction(const std::string& call_id = "reg-843817637684230@998sdasdh09") {
    TransactionRecord r;
    r.key.call_id = call_id;
    r.key.cseq = 1826;
    r.key.method = sip::Method::register_;
    sip::Transaction& t = r.transaction;
    t.request_time = Timestamp{1'700'000'100'000'001};
    t.provisional_time = Timestamp{1'700'000'100'010'002};
    t.final_time = Timestamp{1'700'000'100'020'003};
    t.last_activity = Timestamp{1'700'000'100'030'004};
    t.deadline = Timestamp{1'700'000'132'020'005};
    t.hops = {0xdeadbeefU, 0xfeedfaceU};
    t.recent.slots = {91, 92, 93, 94, 95, 96};
    t.recent.next = 4;
    t.final_status = 401;
    t.retransmissions = 9;
    t.method = sip::Method::register_;
    t.state = sip::TransactionState::completed;
    t.agent = 7;
    t.hop_count = 3;
    t.attempt_time = Timestamp{1'700'000'099'990'006};
    t.retried = true;
    return r;
}

inline StreamRecord sample_stream(const char* dst = "198.51.100.20:30000") {
    StreamRecord r;
    r.key.src = ep("[2001:db8::20]:40002");
    r.key.dst = ep(dst);
    r.key.ssrc = 0x9abcdef0U;
    rtp::Stream& s = r.stream;
    s.first = Timestamp{1'700'000'000'520'000};
    s.last = Timestamp{1'700'000'001'520'001};
    s.bytes = 0x1'0000'0003ULL;
    rtp::SequenceTracker& q = s.sequence;
    q.window_low = 0xfedcba9876543210ULL;
    q.window_high = 0x0123456789abcdefULL;
    q.cycles = 3U << 16;
    q.received = 401;
    q.prior_expected = 402;
    q.prior_received = 403;
    q.gaps = 404;
    q.base_seq = 65500;
    q.max_seq = 406;
    q.bad_seq = 407;
    q.restarts = 408;
    q.probation = 1;
    q.started = true;
    q.validated = true;
    q.has_bad_seq = true;
    s.last_voice_timestamp = 0xcafebabeU;
    s.max_gap_us = 60'001;
    s.packets = 501;
    s.event_packets = 12;
    s.comfort_noise_packets = 13;
    s.markers = 14;
    s.duplicates = 15;
    s.out_of_order = 16;
    s.estimate_mut(0) = rtp::JitterEstimate{125.5F, 900.25F};
    s.estimate_mut(1) = rtp::JitterEstimate{62.75F, 450.125F};
    s.estimate_mut(2) = rtp::JitterEstimate{20.5F, 150.0625F};
    s.estimate_mut(3) = rtp::JitterEstimate{11.25F, 83.5F};
    rtp::ReceiverView& v = s.receiver.mut();
    v.jitter = 88;
    v.rtt_us = 41'000;
    v.cumulative_lost = -2;
    v.reports = 17;
    v.xr_reports = 18;
    v.xr_round_trip_ms = 19;
    v.fraction_lost = 20;
    v.xr_loss_rate = 21;
    v.xr_discard_rate = 22;
    v.xr_r_factor = 93;
    v.xr_mos_lq_x10 = 43;
    v.xr_mos_cq_x10 = 42;
    s.payload_type_changes = 2;
    s.voice_payload_type = 111;
    s.extras.mut().dynamic_payload_type = 111;
    s.extras.mut().bound_clock = 24000;  // as if the binding had said SILK/24000
    s.extras.mut().bound_us_per_tick = static_cast<float>(1e6 / 24000);
    s.extras.mut().bound = rtp::JitterEstimate{41.5F, 300.25F};
    s.flags = rtp::Stream::kCandidateClocks;
    s.set_voice_reference(1'700'000'001'500'002);
    return r;
}

inline BindingRecord sample_binding(const char* media = "198.51.100.20:30000") {
    BindingRecord r;
    r.media = ep(media);
    r.peer = ep("192.0.2.10:49170");
    rtp::Binding& b = r.binding;
    b.call_id = "a84b4c76e66710@pc33.atlanta.example.com";
    b.dialog = 0x1928301U;
    b.time = Timestamp{1'700'000'000'480'004};
    b.codec_count = 8;
    b.payload_types = {0, 8, 9, 18, 101, 111, 13, 96};
    const std::array<rtp::Codec, 8> codecs{
        rtp::Codec::pcmu, rtp::Codec::pcma,          rtp::Codec::g722, rtp::Codec::g729, rtp::Codec::telephone_event,
        rtp::Codec::opus, rtp::Codec::comfort_noise, rtp::Codec::other};
    // Codes of rtp::kClockRates: 8000, 8000, 8000, 8000, 8000, 48000, unlisted, 90000.
    const std::array<std::uint8_t, 8> clocks{1, 1, 1, 1, 1, 9, rtp::kUnlistedClock, 10};
    for (std::size_t i = 0; i < codecs.size(); ++i) b.set_codec(i, codecs[i], clocks[i]);
    b.answer_choice = 3;  // the answer chose G.729
    r.waiting = true;
    return r;
}

inline ReportedRecord sample_reported(const std::string& call_id = "rtpengine-7f1a@10.0.0.9") {
    ReportedRecord r;
    r.key.call_id = call_id;
    r.key.ssrc = 0x01020304U;
    r.stream.reporter = ep("203.0.113.7:40000");
    r.stream.reporter_ssrc = 0x05060708U;
    r.stream.first = Timestamp{1'700'000'005'000'001};
    r.stream.last = Timestamp{1'700'000'010'000'002};
    rtp::ReceiverView& v = r.stream.view;
    v.jitter = 31;
    v.rtt_us = 32'000;
    v.cumulative_lost = 33;
    v.reports = 34;
    v.xr_reports = 35;
    v.xr_round_trip_ms = 36;
    v.fraction_lost = 37;
    v.xr_loss_rate = 38;
    v.xr_discard_rate = 39;
    v.xr_r_factor = 80;
    v.xr_mos_lq_x10 = 41;
    v.xr_mos_cq_x10 = 40;
    return r;
}

inline ShardImage sample_image() {
    ShardImage image;
    image.dialogs.push_back(sample_dialog());
    image.transactions.push_back(sample_transaction());
    image.streams.push_back(sample_stream());
    image.bindings.push_back(sample_binding());
    image.reported_streams.push_back(sample_reported());
    return image;
}

}  // namespace hepd::snapshot::test
