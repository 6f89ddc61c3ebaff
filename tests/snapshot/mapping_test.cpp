// Records <-> protobuf: every field survives a round trip (through the wire encoding too), the
// messages mean what the schema says, and values a record cannot hold are refused by name.
#include "snapshot/mapping.hpp"

#include "sample_records.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace hepd;
using namespace hepd::snapshot;
using namespace hepd::snapshot::test;

namespace {

// Record -> message -> wire bytes -> message -> record.
template <class Message, class Record>
Record round_trip(const Record& in, Message* seen = nullptr) {
    Message m;
    to_proto(in, m);
    const std::string wire = m.SerializeAsString();
    Message parsed;
    REQUIRE(parsed.ParseFromString(wire));
    if (seen != nullptr) *seen = parsed;
    Record out;
    std::string why;
    const bool ok = from_proto(parsed, out, why);
    INFO(why);
    REQUIRE(ok);
    return out;
}

template <class Message, class Record>
std::string refusal(const Message& m) {
    Record out;
    std::string why;
    CHECK_FALSE(from_proto(m, out, why));
    return why;
}

std::string bytes_of(std::initializer_list<int> b) {
    std::string s;
    for (int v : b) s.push_back(static_cast<char>(v));
    return s;
}

}  // namespace

TEST_CASE("a dialog with every field set survives the round trip", "[snapshot][mapping]") {
    const DialogRecord in = sample_dialog();
    Dialog m;
    const DialogRecord out = round_trip(in, &m);
    CHECK(out == in);
    CHECK(out.call_id == in.call_id);
    CHECK(out.from_tag == in.from_tag);
    CHECK(out.caller.user_agent_view() == "Asterisk PBX 18.20.0-1~deb12u1 x");
    CHECK(out.caller.from_party.user() == "+4930123456");
    CHECK(out.caller.to_party.host() == "2001:db8::5");

    // The message says what the schema documents.
    CHECK(m.caller().address() == bytes_of({192, 0, 2, 10}));
    CHECK(m.caller().port() == 5060);
    CHECK(m.callee().address() == bytes_of({0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}));
    CHECK(m.callee().port() == 5080);
    CHECK(m.state() == DIALOG_STATE_TERMINATED);
    CHECK(m.hangup() == PARTY_CALLEE);
    CHECK(m.caller_reinvite_cseq() == 314160);
    CHECK(m.callee_reinvite_cseq() == 77);
    CHECK(m.invite_time_us() == 1'700'000'000'000'001);
    CHECK(m.deadline_us() == 1'700'000'034'540'011);
    CHECK(m.hops_size() == 4);
    CHECK(m.recent().slots_size() == 12);
    CHECK(m.recent().next() == 5);
    CHECK(m.retransmissions() == 65535);
    CHECK(m.callee_side().address() == bytes_of({198, 51, 100, 7}));
    CHECK(m.callee_agent() == 12);
    REQUIRE(m.sdp_sides_size() == 3);  // the empty slot is left out
    CHECK(m.sdp_sides(0).hop() == 0x11111111U);
    CHECK_FALSE(m.sdp_sides(0).forward());
    CHECK(m.sdp_sides(0).media_size() == 1);  // trailing lines without an address too
    CHECK(m.sdp_sides(1).forward());
    CHECK(m.sdp_sides(1).media(1).port() == 49172);
    REQUIRE(m.sdp_sides(2).media_size() == 2);  // but not the ones before a used line
    CHECK(m.sdp_sides(2).media(0).address().empty());
    CHECK(m.sdp_sides(2).media(0).port() == 0);
    CHECK(out.sdp_sides[2].media[1] == ep("198.51.100.7:40002"));
    CHECK(m.sdp_sides(1).rtcp_size() == 0);  // no RTCP address of its own

    // One (a=rtcp) comes back on its line.
    DialogRecord with_rtcp = in;
    with_rtcp.sdp_sides[1].rtcp[1] = ep("192.0.2.10:49555");
    Dialog r;
    CHECK(round_trip(with_rtcp, &r) == with_rtcp);
    REQUIRE(r.sdp_sides(1).rtcp_size() == 2);
    CHECK(r.sdp_sides(1).rtcp(1).port() == 49555);
}

TEST_CASE("a dialog from a file without SDP sides has none", "[snapshot][mapping]") {
    // Files written before the sides were kept restore as they did then.
    Dialog m;
    to_proto(sample_dialog(), m);
    m.clear_sdp_sides();
    DialogRecord out;
    std::string why;
    REQUIRE(from_proto(m, out, why));
    CHECK(out.sdp_sides == sip::SdpSides{});
    DialogRecord expected = sample_dialog();
    expected.sdp_sides = {};
    CHECK(out == expected);
}

TEST_CASE("a dialog from a file without the callee side takes the first hop's", "[snapshot][mapping]") {
    // Files written before peer groups: the callee side is the first INVITE's destination and
    // its agent the first INVITE's; the groups are found again at restore.
    Dialog m;
    to_proto(sample_dialog(), m);
    m.clear_callee_side();
    m.clear_callee_agent();
    DialogRecord out;
    std::string why;
    REQUIRE(from_proto(m, out, why));
    CHECK(out.dialog.callee_side() == sample_dialog().dialog.callee());
    CHECK(out.dialog.callee_agent == 31);
}

TEST_CASE("a default dialog keeps its non-zero defaults", "[snapshot][mapping]") {
    // kNoCSeq and kNoCause are not proto3 defaults: they must be written and read as values.
    DialogRecord in;
    in.call_id = "c";
    in.from_tag = "t";
    Dialog m;
    const DialogRecord out = round_trip(in, &m);
    CHECK(out == in);
    CHECK(out.dialog.reinvite_cseq[0] == sip::kNoCSeq);
    CHECK(out.dialog.q850_cause == sip::kNoCause);
    CHECK(m.q850_cause() == 0xffff);
    CHECK(m.hops_size() == 0);            // empty slots are left out
    CHECK(m.caller().address().empty());  // no address
}

TEST_CASE("partly filled arrays come back with their empty slots", "[snapshot][mapping]") {
    DialogRecord in = sample_dialog();
    in.dialog.hops = {7, 9, 0, 0};
    in.dialog.hop_count = 2;
    in.dialog.recent.slots = {};
    in.dialog.recent.slots[0] = 42;
    in.dialog.recent.next = 1;
    Dialog m;
    CHECK(round_trip(in, &m) == in);
    CHECK(m.hops_size() == 2);
    CHECK(m.recent().slots_size() == 1);
}

TEST_CASE("a transaction with every field set survives the round trip", "[snapshot][mapping]") {
    const TransactionRecord in = sample_transaction();
    Transaction m;
    CHECK(round_trip(in, &m) == in);
    CHECK(m.method() == METHOD_REGISTER);
    CHECK(m.state() == TRANSACTION_STATE_COMPLETED);
    CHECK(m.cseq() == 1826);
    CHECK(m.hops_size() == 2);

    TransactionRecord defaults;
    defaults.key.call_id = "x";
    CHECK(round_trip<Transaction>(defaults) == defaults);
}

TEST_CASE("a stream with every field set survives the round trip", "[snapshot][mapping]") {
    const StreamRecord in = sample_stream();
    Stream m;
    const StreamRecord out = round_trip(in, &m);
    CHECK(out == in);
    CHECK(out.stream.sequence == in.stream.sequence);
    CHECK(out.stream.receiver == in.stream.receiver);
    CHECK(out.stream.jitter == in.stream.jitter);

    CHECK(m.src().address().size() == 16);
    CHECK(m.dst().address() == bytes_of({198, 51, 100, 20}));
    CHECK(m.dst().port() == 30000);
    CHECK(m.sequence().window_low() == 0xfedcba9876543210ULL);
    CHECK(m.sequence().base_seq() == 65500);
    REQUIRE(m.jitter_size() == 4);
    CHECK(m.jitter(0).clock_rate() == 8000);
    CHECK(m.jitter(1).clock_rate() == 16000);
    CHECK(m.jitter(2).clock_rate() == 48000);
    CHECK(m.jitter(3).clock_rate() == 90000);
    CHECK(m.jitter(2).max_jitter_us() == 150.0625F);
    CHECK(m.receiver().cumulative_lost() == -2);
    CHECK(m.has_voice_reference());
    CHECK(m.candidate_clocks());
    CHECK(m.bytes() == 0x1'0000'0003ULL);
    CHECK(m.bound_clock_jitter().clock_rate() == 24000);
    CHECK(m.bound_clock_jitter().max_jitter_us() == 300.25F);

    // Each flag on its own maps to its own bit.
    StreamRecord one = in;
    one.stream.flags = rtp::Stream::kCandidateClocks;
    CHECK(round_trip<Stream>(one) == one);
    one.stream.flags = rtp::Stream::kHasVoiceReference;
    CHECK(round_trip<Stream>(one) == one);
    const StreamRecord defaults;
    CHECK(round_trip<Stream>(defaults) == defaults);

    // A snapshot from before the estimate under the binding's own clock has none.
    Stream old;
    to_proto(in, old);
    old.clear_bound_clock_jitter();
    StreamRecord back;
    std::string why;
    REQUIRE(from_proto(old, back, why));
    CHECK(back.stream.extras.get().bound_clock == 0);
    // A clock that is a candidate, or that this build has no code for, is refused.
    old.mutable_bound_clock_jitter()->set_clock_rate(48000);
    CHECK_FALSE(from_proto(old, back, why));
    old.mutable_bound_clock_jitter()->set_clock_rate(37800);
    CHECK_FALSE(from_proto(old, back, why));
}

TEST_CASE("jitter estimates are matched by clock rate, not by position", "[snapshot][mapping]") {
    const StreamRecord in = sample_stream();
    Stream m;
    to_proto(in, m);
    // A writer that listed the candidates in another order means the same thing.
    m.mutable_jitter()->SwapElements(0, 3);
    m.mutable_jitter()->SwapElements(1, 2);
    StreamRecord out;
    std::string why;
    REQUIRE(from_proto(m, out, why));
    CHECK(out == in);
    // A missing estimate reads as zero.
    m.mutable_jitter()->RemoveLast();  // now the 8000 Hz one (moved to the end)
    REQUIRE(from_proto(m, out, why));
    CHECK(out.stream.estimate(0) == rtp::JitterEstimate{});
    CHECK(out.stream.estimate(3) == in.stream.estimate(3));
}

TEST_CASE("a binding with every field set survives the round trip", "[snapshot][mapping]") {
    const BindingRecord in = sample_binding();
    Binding m;
    CHECK(round_trip(in, &m) == in);
    REQUIRE(m.codecs_size() == 8);
    CHECK(m.codecs(1).payload_type() == 8);
    CHECK(m.codecs(1).codec() == CODEC_PCMA);
    CHECK(m.codecs(1).clock_rate() == 8000);
    CHECK(m.codecs(5).clock_rate() == 48000);
    CHECK(m.codecs(6).clock_unlisted());
    CHECK(m.codecs(6).clock_rate() == 0);
    CHECK(m.codecs(7).clock_rate() == 90000);
    CHECK(m.answer_choice() == 4);  // 1 + the index
    CHECK(m.waiting());

    // Fewer codecs than the cap, a bound (not waiting) binding.
    BindingRecord few = in;
    few.binding.codec_count = 2;
    few.binding.payload_types = {8, 101, 0, 0, 0, 0, 0, 0};
    few.binding.set_codec(0, rtp::Codec::pcma, 1);
    few.binding.set_codec(1, rtp::Codec::telephone_event, 1);
    for (std::size_t i = 2; i < kMaxBindingCodecs; ++i) few.binding.set_codec(i, rtp::Codec::unknown, 0);
    few.waiting = false;
    few.binding.answer_choice = rtp::Binding::kNoChoice;  // before an answer, or from an older file
    CHECK(round_trip<Binding>(few) == few);
    few.binding.answer_choice = 0;
    CHECK(round_trip<Binding>(few) == few);
    // A choice beyond the codecs is refused.
    Binding wrong;
    to_proto(few, wrong);
    wrong.set_answer_choice(3);
    BindingRecord out;
    std::string why;
    CHECK_FALSE(from_proto(wrong, out, why));

    // Of an address of a call's RTCP alone (a=rtcp).
    BindingRecord rtcp = in;
    rtcp.binding.rtcp = true;
    Binding r;
    CHECK(round_trip(rtcp, &r) == rtcp);
    CHECK(r.rtcp());
    CHECK_FALSE(m.rtcp());
}

TEST_CASE("a clock rate unknown to this build reads as unlisted", "[snapshot][mapping]") {
    Binding m;
    to_proto(sample_binding(), m);
    m.mutable_codecs(0)->set_clock_rate(12345);
    BindingRecord out;
    std::string why;
    REQUIRE(from_proto(m, out, why));
    CHECK(out.binding.clock(0) == rtp::kUnlistedClock);
}

TEST_CASE("a reported stream with every field set survives the round trip", "[snapshot][mapping]") {
    const ReportedRecord in = sample_reported();
    ReportedStream m;
    CHECK(round_trip(in, &m) == in);
    CHECK(m.view().xr_r_factor() == 80);
    CHECK(m.reporter_ssrc() == 0x05060708U);
    const ReportedRecord defaults;
    CHECK(round_trip<ReportedStream>(defaults) == defaults);
}

TEST_CASE("Call-IDs that are not UTF-8 survive the round trip", "[snapshot][mapping]") {
    // SIP allows any octets a parser lets through; proto3 `string` would refuse them.
    const std::string odd = bytes_of({'a', 0xff, 0xfe, 0x00, 'b'});
    DialogRecord d = sample_dialog(odd);
    d.from_tag = bytes_of({0xc3, 0x28});
    CHECK(round_trip<Dialog>(d) == d);
    CHECK(round_trip<Transaction>(sample_transaction(odd)) == sample_transaction(odd));
    CHECK(round_trip<ReportedStream>(sample_reported(odd)) == sample_reported(odd));
}

TEST_CASE("values a record cannot hold are refused, naming the field", "[snapshot][mapping]") {
    SECTION("dialog") {
        Dialog base;
        to_proto(sample_dialog(), base);
        Dialog m = base;
        m.set_state(static_cast<DialogState>(8));
        CHECK(refusal<Dialog, DialogRecord>(m) == "state: unknown value 8");
        m = base;
        m.set_hangup(static_cast<Party>(-1));
        CHECK(refusal<Dialog, DialogRecord>(m) == "hangup: unknown value -1");
        m = base;
        m.set_final_status(65536);
        CHECK(refusal<Dialog, DialogRecord>(m) == "final_status: 65536 does not fit");
        m = base;
        m.set_agent(256);
        CHECK(refusal<Dialog, DialogRecord>(m) == "agent: 256 does not fit");
        m = base;
        m.add_hops(5);
        CHECK(refusal<Dialog, DialogRecord>(m) == "hops: 5 entries, at most 4");
        m = base;
        m.mutable_recent()->set_next(12);
        CHECK(refusal<Dialog, DialogRecord>(m) == "recent: next 12 past the ring");
        m = base;
        m.mutable_recent()->add_slots(13);
        CHECK(refusal<Dialog, DialogRecord>(m) == "recent: 13 entries, at most 12");
        m = base;
        m.set_user_agent(std::string(33, 'u'));
        CHECK(refusal<Dialog, DialogRecord>(m) == "user_agent: 33 octets, at most 32");
        m = base;
        m.mutable_caller()->set_address("12345");
        CHECK(refusal<Dialog, DialogRecord>(m) == "caller: address of 5 octets");
        m = base;
        m.mutable_callee()->set_port(65536);
        CHECK(refusal<Dialog, DialogRecord>(m) == "callee: port 65536");
        m = base;
        m.set_end_time_us(-1);
        CHECK(refusal<Dialog, DialogRecord>(m) == "end_time_us: -1 is not a time");
        m = base;
        m.set_deadline_us(INT64_MAX);
        CHECK(refusal<Dialog, DialogRecord>(m) == "deadline_us: 9223372036854775807 is not a time");
    }
    SECTION("dialog SDP sides") {
        Dialog base;
        to_proto(sample_dialog(), base);
        Dialog m = base;
        m.add_sdp_sides()->set_hop(7);
        m.add_sdp_sides()->set_hop(8);
        CHECK(refusal<Dialog, DialogRecord>(m) == "sdp_sides: 5 entries, at most 4");
        m = base;
        m.mutable_sdp_sides(1)->set_hop(0);
        CHECK(refusal<Dialog, DialogRecord>(m) == "sdp_sides.hop: 0 names no hop");
        m = base;
        m.mutable_sdp_sides(1)->set_forward(false);
        CHECK(refusal<Dialog, DialogRecord>(m) == "sdp_sides: hop 286331153 twice in one direction");
        m = base;
        for (int port = 1; port <= 8; ++port) m.mutable_sdp_sides(0)->add_media()->set_port(port);
        CHECK(refusal<Dialog, DialogRecord>(m) == "sdp_sides.media: 9 entries, at most 8");
        m = base;
        m.mutable_sdp_sides(1)->mutable_media(0)->set_address("12345");
        CHECK(refusal<Dialog, DialogRecord>(m) == "sdp_sides.media: address of 5 octets");
        m = base;
        m.mutable_sdp_sides(1)->mutable_media(0)->set_port(65536);
        CHECK(refusal<Dialog, DialogRecord>(m) == "sdp_sides.media: port 65536");
        m = base;
        m.mutable_sdp_sides(1)->mutable_media(0)->set_port(0);
        CHECK(refusal<Dialog, DialogRecord>(m) ==
              "sdp_sides.media: an address without a port or a port without an address");
        m = base;
        m.mutable_sdp_sides(2)->mutable_media(0)->set_port(4000);
        CHECK(refusal<Dialog, DialogRecord>(m) ==
              "sdp_sides.media: an address without a port or a port without an address");
    }
    SECTION("transaction") {
        Transaction base;
        to_proto(sample_transaction(), base);
        Transaction m = base;
        m.set_method(static_cast<Method>(15));
        CHECK(refusal<Transaction, TransactionRecord>(m) == "method: unknown value 15");
        m = base;
        m.set_state(static_cast<TransactionState>(2));
        CHECK(refusal<Transaction, TransactionRecord>(m) == "state: unknown value 2");
        m = base;
        m.add_hops(1);
        CHECK(refusal<Transaction, TransactionRecord>(m) == "hops: 3 entries, at most 2");
        m = base;
        m.mutable_recent()->set_next(6);
        CHECK(refusal<Transaction, TransactionRecord>(m) == "recent: next 6 past the ring");
        m = base;
        m.set_retransmissions(70000);
        CHECK(refusal<Transaction, TransactionRecord>(m) == "retransmissions: 70000 does not fit");
    }
    SECTION("stream") {
        Stream base;
        to_proto(sample_stream(), base);
        Stream m = base;
        m.mutable_sequence()->set_max_seq(65536);
        CHECK(refusal<Stream, StreamRecord>(m) == "sequence.max_seq: 65536 does not fit");
        m = base;
        m.mutable_sequence()->set_probation(256);
        CHECK(refusal<Stream, StreamRecord>(m) == "sequence.probation: 256 does not fit");
        m = base;
        m.mutable_jitter(1)->set_clock_rate(44100);
        CHECK(refusal<Stream, StreamRecord>(m) == "jitter.clock_rate: not a candidate clock: 44100");
        m = base;
        m.mutable_jitter(1)->set_clock_rate(8000);
        CHECK(refusal<Stream, StreamRecord>(m) == "jitter.clock_rate: twice: 8000");
        m = base;
        m.mutable_receiver()->set_fraction_lost(256);
        CHECK(refusal<Stream, StreamRecord>(m) == "receiver.fraction_lost: 256 does not fit");
        m = base;
        m.set_voice_payload_type(256);
        CHECK(refusal<Stream, StreamRecord>(m) == "voice_payload_type: 256 does not fit");
        m = base;
        m.mutable_src()->set_address(std::string(15, '\0'));
        CHECK(refusal<Stream, StreamRecord>(m) == "src: address of 15 octets");
        m = base;
        m.set_last_voice_arrival_us(-5);
        CHECK(refusal<Stream, StreamRecord>(m) == "last_voice_arrival_us: -5 is not a time");
    }
    SECTION("binding") {
        Binding base;
        to_proto(sample_binding(), base);
        Binding m = base;
        m.add_codecs();
        CHECK(refusal<Binding, BindingRecord>(m) == "codecs: 9 entries, at most 8");
        m = base;
        m.mutable_codecs(2)->set_codec(static_cast<Codec>(12));
        CHECK(refusal<Binding, BindingRecord>(m) == "codecs.codec: unknown value 12");
        m = base;
        m.mutable_codecs(2)->set_payload_type(256);
        CHECK(refusal<Binding, BindingRecord>(m) == "codecs.payload_type: 256 does not fit");
        m = base;
        m.mutable_media()->set_port(1U << 20);
        CHECK(refusal<Binding, BindingRecord>(m) == "media: port 1048576");
        m = base;
        m.set_call_id(std::string(256, 'c'));
        CHECK(refusal<Binding, BindingRecord>(m) == "call_id: 256 octets, at most 255");
    }
    SECTION("reported stream") {
        ReportedStream base;
        to_proto(sample_reported(), base);
        ReportedStream m = base;
        m.mutable_view()->set_reports(65536);
        CHECK(refusal<ReportedStream, ReportedRecord>(m) == "receiver.reports: 65536 does not fit");
        m = base;
        m.set_first_us(-1'000'000);
        CHECK(refusal<ReportedStream, ReportedRecord>(m) == "first_us: -1000000 is not a time");
        m = base;
        m.set_call_id(std::string(256, 'c'));
        CHECK(refusal<ReportedStream, ReportedRecord>(m) == "call_id: 256 octets, at most 255");
    }
}
