// The Kamailio siptrace captures (tests/fixtures/README.md) through pcap reader -> HEP decoder
// -> dialog table. Expected times were read from the HEP chunks with a throw-away script over
// the raw capture bytes (and agree with tests/hep/fixture_test.cpp, which cross-checked them
// with sngrep + tshark), not with this code.
#include "dialog_test_util.hpp"
#include "hep/decoder.hpp"
#include "pcap/reader.hpp"
#include "support/fixtures.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace hepd;
using namespace hepd::sip;
using namespace hepd::sip::test;

namespace {

Timestamp at(std::int64_t seconds, std::int64_t micros) { return Timestamp::from_parts(seconds, micros); }

struct Fed {
    std::size_t messages = 0;
    std::size_t retransmissions = 0;
};

Fed feed_capture(const std::string& name, DialogTable& table) {
    Fed fed;
    auto reader = pcap::FileReader::open(hepd::test::fixture_path(name));
    REQUIRE(reader.ok());
    pcap::Frame frame;
    while (reader->next(frame)) {
        const auto l4 = pcap::decode_frame(frame);
        REQUIRE(l4.ok());
        const auto hep = hep::decode(l4->payload);
        REQUIRE(hep.ok());
        PacketMeta meta;
        meta.time = at(hep->seconds, hep->micros);
        meta.src = hep->src;
        meta.dst = hep->dst;
        meta.agent = 1;
        const Disposition d = table.process(as_text(hep->payload), meta);
        CHECK(d != Disposition::parse_error);
        CHECK(d != Disposition::anomaly);
        if (d == Disposition::retransmission) ++fed.retransmissions;
        ++fed.messages;
        table.expire(meta.time);
    }
    CHECK(reader->error() == pcap::FileError::none);
    return fed;
}

struct ExpectedCall {
    const char* call_id;
    const char* from_tag;
    const char* to_tag;
    Timestamp invite, trying, ringing, answer, ack, bye, bye_answer;
};

// kamailio-siptrace-hep3-udp.pcap: sipp UAC 127.0.0.1:5061 -> Kamailio 127.0.0.1:5060 -> sipp
// UAS 127.0.0.1:5070. The first 180/200 of each call is the UAS's, on the second hop.
const ExpectedCall kCalls[] = {
    {"1-18897@127.0.0.1", "18897SIPpTag001", "18891SIPpTag011", at(1796013063, 512829), at(1796013063, 513079),
     at(1796013063, 514157), at(1796013063, 514934), at(1796013063, 515409), at(1796013064, 520186),
     at(1796013064, 520918)},
    {"2-18897@127.0.0.1", "18897SIPpTag002", "18891SIPpTag012", at(1796013063, 712536), at(1796013063, 713120),
     at(1796013063, 713663), at(1796013063, 715212), at(1796013063, 715635), at(1796013064, 720301),
     at(1796013064, 720886)},
    {"3-18897@127.0.0.1", "18897SIPpTag003", "18891SIPpTag013", at(1796013063, 912540), at(1796013063, 913068),
     at(1796013063, 913609), at(1796013063, 914986), at(1796013063, 915441), at(1796013064, 920458),
     at(1796013064, 921023)},
    {"4-18897@127.0.0.1", "18897SIPpTag004", "18891SIPpTag014", at(1796013064, 112688), at(1796013064, 112878),
     at(1796013064, 113227), at(1796013064, 114362), at(1796013064, 114854), at(1796013065, 119987),
     at(1796013065, 120702)},
    {"5-18897@127.0.0.1", "18897SIPpTag005", "18891SIPpTag015", at(1796013064, 312693), at(1796013064, 313027),
     at(1796013064, 313336), at(1796013064, 314645), at(1796013064, 314851), at(1796013065, 320201),
     at(1796013065, 320693)},
};

}  // namespace

TEST_CASE("capture: 5 calls through Kamailio, both legs mirrored over HEP/UDP", "[sip][dialog][capture]") {
    RecordingSink sink;
    DialogTable table(DialogConfig{}, &sink);
    const Fed fed = feed_capture("kamailio-siptrace-hep3-udp.pcap", table);
    CHECK(fed.messages == 60);
    CHECK(fed.retransmissions == 0);

    REQUIRE(table.size() == 5);
    const DialogStats& s = table.stats();
    CHECK(s.dialogs_created.value() == 5);
    CHECK(s.finished(DialogOutcome::completed) == 5);
    CHECK(s.in_state(DialogState::terminated) == 5);
    CHECK(table.active_count() == 0);
    CHECK(table.transactions().size() == 0);
    CHECK(requests(s, Method::invite) == 10);
    CHECK(requests(s, Method::ack) == 5);
    CHECK(requests(s, Method::bye) == 10);
    CHECK(responses(s, Method::invite, 1) == 15);
    CHECK(responses(s, Method::invite, 2) == 10);
    CHECK(responses(s, Method::bye, 2) == 10);
    for (const auto& c : s.retransmissions) CHECK(c.value() == 0);
    for (const auto& c : s.anomalies) CHECK(c.value() == 0);

    for (const ExpectedCall& e : kCalls) {
        INFO(e.call_id);
        const Dialog* d = table.find(e.call_id, e.from_tag);
        REQUIRE(d != nullptr);
        CHECK(d->state == DialogState::terminated);
        CHECK(d->hop_count == 2);
        CHECK(d->fork_count == 1);
        CHECK(d->confirmed_tag == tag_id(e.to_tag));
        CHECK(d->retransmissions == 0);
        CHECK(d->caller() == ep("127.0.0.1:5061"));
        CHECK(d->callee() == ep("127.0.0.1:5060"));
        CHECK(d->invite_time() == e.invite);
        CHECK(d->time(DialogTime::trying) == e.trying);
        CHECK(d->time(DialogTime::ringing) == e.ringing);
        CHECK(d->time(DialogTime::answer) == e.answer);
        CHECK(d->time(DialogTime::ack) == e.ack);
        CHECK(d->time(DialogTime::bye) == e.bye);
        CHECK(d->time(DialogTime::bye_answer) == e.bye_answer);
        CHECK(d->time(DialogTime::end) == e.bye);
        CHECK(d->final_status == 200);
        CHECK(d->bye_status == 200);
        CHECK(d->hangup == Party::caller);
        CHECK(d->q850_cause == kNoCause);
        CHECK(table.caller_identity(e.call_id, e.from_tag).user_agent_view().empty());  // sipp sends none
        CHECK(table.match(e.call_id, e.to_tag, e.from_tag) == d);
    }
    // Call 1 to the microsecond: PDD 1328 us, setup 2105 us, duration 1.005252 s.
    const Dialog* first = table.find("1-18897@127.0.0.1", "18897SIPpTag001");
    CHECK(first->pdd_us() == 1328);
    CHECK(first->setup_us() == 2105);
    CHECK(first->duration_us() == 1'005'252);
    CHECK(s.pdd.count() == 5);
    CHECK(s.pdd.bucket(0) == 5);       // all under 100 ms
    CHECK(s.duration.bucket(1) == 5);  // all in (1, 5] s

    // Per call: two INVITEs (RTP to the caller's 6004, peer not known yet), then two 200s,
    // each answering the INVITE of its own hop: the callee's 6000 paired with 6004, and 6004
    // paired back with 6000 (with the answer's codecs, which tell 6004 the call's choice).
    REQUIRE(sink.got.size() == 30);
    CHECK(s.media_bindings.value() == 30);
    for (std::size_t i = 0; i < sink.got.size(); ++i) {
        const auto& b = sink.got[i].binding;
        INFO("binding " << i);
        CHECK(sink.got[i].call_id == kCalls[i / 6].call_id);
        const std::size_t k = i % 6;
        if (k < 2) {
            CHECK(b.media == ep("127.0.0.1:6004"));
            CHECK(b.peer.port == 0);
        } else if (k % 2 == 0) {
            CHECK(b.media == ep("127.0.0.1:6000"));
            CHECK(b.peer == ep("127.0.0.1:6004"));
        } else {
            CHECK(b.media == ep("127.0.0.1:6004"));
            CHECK(b.peer == ep("127.0.0.1:6000"));
            CHECK(b.codecs_of_peer);
        }
        REQUIRE(b.codec_count == 1);
        CHECK(b.codecs[0].payload_type == 0);
        CHECK(b.codecs[0].name_view() == "PCMU");
        CHECK(b.codecs[0].clock_rate == 8000);
    }

    // After the last BYE (1796013065.321863) plus the linger, nothing is left.
    table.expire(at(1796013065 + 33, 0));
    CHECK(table.size() == 0);
    for (const auto& g : s.dialogs_by_state) CHECK(g.value() == 0);
}

TEST_CASE("capture: the same calls mirrored by Kamailio's core (13 messages a call)", "[sip][dialog][capture]") {
    DialogTable table(DialogConfig{});
    const Fed fed = feed_capture("kamailio-siptrace-hep3-udp-core.pcap", table);
    CHECK(fed.messages == 65);
    CHECK(fed.retransmissions == 0);
    CHECK(table.size() == 5);
    CHECK(table.stats().finished(DialogOutcome::completed) == 5);
    CHECK(requests(table.stats(), Method::ack) == 10);  // the ACK on both legs this time
    table.for_each([](std::string_view, std::string_view, const Dialog& d) {
        CHECK(d.hop_count == 2);
        CHECK(d.state == DialogState::terminated);
        CHECK(d.time(DialogTime::ack).us != 0);
        CHECK(d.pdd_us() > 0);
        CHECK(d.duration_us() > 1'000'000);
    });
}
