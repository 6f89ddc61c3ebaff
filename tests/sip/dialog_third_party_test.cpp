// Public captures from other projects (tests/fixtures/third-party/README.md) through capture
// source -> dialog table: each call ends the way its flow says (read with tshark, see there).
#include "dialog_test_util.hpp"
#include "pcap/capture_source.hpp"
#include "support/third_party.hpp"

#include <catch2/catch.hpp>

#include <map>
#include <string>

using namespace hepd;
using namespace hepd::sip;
using namespace hepd::sip::test;

namespace {

struct Outcome {
    DialogState state;
    std::uint16_t final_status;
    friend bool operator==(const Outcome&, const Outcome&) = default;
};

struct Calls : DialogSink {
    std::map<std::string, Outcome> ended;
    void on_dialog_removed(std::string_view call_id, std::string_view, const Dialog& d, const CallerIdentity&,
                           bool) override {
        ended[std::string(call_id)] = Outcome{d.state, d.final_status};
    }
};

// Feeds every SIP message of the capture, then runs the timers well past its end.
Calls replay(const std::string& name, DialogTable& table) {
    Calls calls;
    table.set_sink(&calls);
    pcap::CaptureSource source;
    Timestamp last{};
    std::size_t fed = 0;
    const auto error = source.read_file(hepd::test::third_party_fixture(name), [&](const shard::Datagram& d) {
        if (d.kind != PayloadClass::sip) return;
        table.expire(d.time);
        table.process(as_text(d.payload), PacketMeta{d.time, d.src, d.dst, 1});
        last = d.time;
        ++fed;
    });
    CHECK(error == pcap::FileError::none);
    CHECK(fed > 0);
    table.expire(Timestamp{last.us + 24LL * 3600 * 1'000'000});
    CHECK(table.size() == 0);
    table.set_sink(nullptr);
    return calls;
}

std::uint64_t anomalies(const DialogTable& t) {
    std::uint64_t n = 0;
    for (const auto& a : t.stats().anomalies) n += a.value();
    return n;
}

}  // namespace

TEST_CASE("third-party: aaa.pcap, late authenticated retries end with their own answer", "[sip][dialog][third-party]") {
    DialogTable table(DialogConfig{});
    const Calls calls = replay("aaa.pcap", table);
    const std::map<std::string, Outcome> want = {
        {"105090259-446faf7a@192.168.1.2", {DialogState::failed, 408}},  // 100, CANCEL after 34 s, then 408
        {"85216695-42dcdb1d@192.168.1.2", {DialogState::failed, 403}},   // 407, retried 32.5 s later
        {"24487391-449bf2a0@192.168.1.2", {DialogState::failed, 403}},   // 407, retried 51.2 s later
        {"11894297-4432a9f8@192.168.1.2", {DialogState::failed, 480}},   // 407, retried 17.3 s later
    };
    CHECK(calls.ended == want);
    CHECK(table.stats().dialogs_created.value() == 4);
    CHECK(table.stats().anomalies[static_cast<std::size_t>(DialogAnomaly::invite_after_end)].value() == 0);
    CHECK(anomalies(table) == 0);
    std::uint64_t parse_errors = 0;
    for (const auto& e : table.stats().parse_errors) parse_errors += e.value();
    CHECK(parse_errors == 0);
}

TEST_CASE("third-party: ipip.pcap, one TCP call half inside a tunnel, completed", "[sip][dialog][third-party]") {
    DialogTable table(DialogConfig{});
    const Calls calls = replay("ipip.pcap", table);
    CHECK(calls.ended == std::map<std::string, Outcome>{{"1RLuVzzBClYCf2", {DialogState::terminated, 200}}});
    CHECK(anomalies(table) == 0);
}

TEST_CASE("third-party: sip_tcp_websocket.pcap, the WebSocket caller's call and the B2BUA leg complete",
          "[sip][dialog][third-party]") {
    DialogTable table(DialogConfig{});
    const Calls calls = replay("sip_tcp_websocket.pcap", table);
    const std::map<std::string, Outcome> want = {
        {"kovfhoptshgn59q712sr", {DialogState::terminated, 200}},
        {"926ffd16-6154-1237-09ba-0270b3230128", {DialogState::terminated, 200}},
    };
    CHECK(calls.ended == want);
    // The WebSocket leg is the caller's: its INVITE came first, over WebSocket.
    CHECK(anomalies(table) == 0);
}
