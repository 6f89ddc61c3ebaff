// Call records (daemon/records): the line builder field by field and its escaping, the party
// names taken from URIs, the join of streams to dialogs, the rotated file (real files in a
// temporary directory, /dev/full for a full disk) and the writer's bounded queues.
#include "records/call_record.hpp"
#include "records/offline_records.hpp"
#include "records/record_file.hpp"
#include "records/record_joiner.hpp"
#include "records/record_writer.hpp"
#include "records/written_records.hpp"
#include "sip/dialog_table.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <unordered_set>
#include <vector>

using namespace hepd;
using namespace hepd::records;
using Json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

Endpoint ep(const char* text) { return *parse_endpoint(text); }

std::string escaped(std::string_view text) {
    std::string out;
    append_json_string(out, text);
    return out;
}

DialogFigures answered_call(const std::string& call_id, const std::string& from_tag, std::int64_t t0) {
    sip::Dialog d;
    d.set_invite_time(Timestamp{t0});
    d.set_time(sip::DialogTime::ringing, Timestamp{t0 + 150'000});
    d.set_time(sip::DialogTime::indicative, Timestamp{t0 + 150'000});
    d.set_time(sip::DialogTime::answer, Timestamp{t0 + 2'000'000});
    d.set_time(sip::DialogTime::bye, Timestamp{t0 + 62'000'000});
    d.set_time(sip::DialogTime::bye_answer, Timestamp{t0 + 62'010'000});
    d.set_time(sip::DialogTime::end, d.time(sip::DialogTime::bye));
    d.set_caller(ep("192.0.2.1:5060"));
    d.set_callee(ep("[2001:db8::2]:5080"));
    d.set_callee_side(ep("[2001:db8::3]:5090"));  // the proxy at `callee` relayed the INVITE here
    d.final_status = 200;
    d.bye_status = 200;
    d.q850_cause = 16;
    d.hangup = sip::Party::callee;
    d.state = sip::DialogState::terminated;
    d.hop_count = 2;
    d.fork_count = 1;
    d.retransmissions = 3;
    d.reinvites = 1;
    sip::CallerIdentity who;
    who.from_party = sip::party_name("sip:+4930123@carrier.example;user=phone");
    who.to_party = sip::party_name("sip:bob@pbx.example:5080");
    const std::string ua = "sipp \"3.6\"";
    std::copy(ua.begin(), ua.end(), who.user_agent.begin());
    who.user_agent_size = static_cast<std::uint8_t>(ua.size());
    return dialog_figures(call_id, from_tag, d, who, false, nullptr);
}

StreamFigures stream_of(const std::string& call_id, std::string_view from_tag, std::uint32_t ssrc, std::int64_t first) {
    StreamFigures s;
    s.call_id = call_id;
    s.dialog_id = sip::tag_id(from_tag);
    s.key = rtp::StreamKey{ep("192.0.2.1:16000"), ep("192.0.2.2:26000"), ssrc};
    s.first = Timestamp{first};
    s.last = Timestamp{first + 60'000'000};
    s.packets = 3000;
    s.summary.expected = 3002;
    s.summary.lost = 2;
    s.summary.loss_percent = 2.0 / 3002 * 100;
    s.summary.jitter_ms = 0.5;
    s.summary.max_jitter_ms = 1.25;
    s.summary.codec = rtp::Codec::pcma;
    s.summary.clock_rate = 8000;
    s.summary.has_quality = true;
    s.summary.r_factor = 92.1;
    s.summary.mos = 4.38;
    s.receiver.reports = 12;
    s.receiver.fraction_lost = 64;
    s.receiver.cumulative_lost = -1;
    s.receiver.jitter = 80;
    s.receiver.rtt_us = 21'500;
    s.reason = rtp::FinishReason::idle;
    return s;
}

// A PCMU stream rtpengine reported 4 times: 25 % lost in each interval, jitter up to 24 units.
ReportedFigures report_of(const std::string& call_id, std::uint32_t ssrc) {
    rtp::ReportedStream s;
    s.reporter = ep("198.51.100.7:30000");
    s.reporter_ssrc = 77;
    s.first = Timestamp{1'000'000};
    s.last = Timestamp{5'000'000};
    s.view.reports = 4;
    s.view.fraction_lost = 64;
    s.view.cumulative_lost = 40;
    s.view.jitter = 16;
    s.view.xr_reports = 1;
    s.view.xr_mos_lq_x10 = 41;
    s.view.xr_r_factor = 88;
    s.fraction_lost_sum = 4 * 64;
    s.max_jitter = 24;
    s.codec = rtp::Codec::pcmu;
    s.clock_rate = 8000;
    const rtp::ReportedKey key{CompactText(call_id), ssrc};
    const rtp::ReportedSummary summary = rtp::summarize_reported(s, rtp::QualityOptions{});
    return reported_figures({key, s, summary, rtp::FinishReason::idle});
}

std::vector<std::string> lines_of(const std::string& path) {
    std::ifstream in(path);
    std::vector<std::string> out;
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
}

struct TempDir {
    fs::path path;
    TempDir() {
        std::string pattern = (fs::temp_directory_path() / "hepd-records-XXXXXX").string();
        REQUIRE(mkdtemp(pattern.data()) != nullptr);
        path = pattern;
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
    std::vector<std::string> names() const {
        std::vector<std::string> out;
        for (const auto& e : fs::directory_iterator(path)) out.push_back(e.path().filename().string());
        std::sort(out.begin(), out.end());
        return out;
    }
};

// A writer's surroundings: a fresh directory with its record file, the two clocks at fixed times.
struct WriterBed {
    TempDir dir;
    ManualClock steady{Timestamp{1'000'000'000}};
    ManualClock wall{Timestamp{1'700'000'000'000'000}};
    RecordWriterOptions o = options_in(dir);

    static RecordWriterOptions options_in(const TempDir& d) {
        RecordWriterOptions out;
        out.file.path = (d.path / "calls.jsonl").string();
        return out;
    }
};

// The call_id of each line of a record file, in order.
std::vector<std::string> call_ids(const std::string& path) {
    std::vector<std::string> out;
    for (const std::string& text : lines_of(path)) out.push_back(Json::parse(text)["call_id"]);
    return out;
}

}  // namespace

TEST_CASE("party names: user part and host of sip, sips and tel URIs", "[records]") {
    auto check = [](std::string_view uri, std::string_view user, std::string_view host) {
        INFO(uri);
        const auto p = sip::party_name(uri);
        CHECK(p.user() == user);
        CHECK(p.host() == host);
    };
    check("sip:alice@example.com", "alice", "example.com");
    check("SIP:alice@example.com:5060;transport=udp", "alice", "example.com");
    check("sips:+4930123;npdi@[2001:db8::1]:5061;user=phone", "+4930123;npdi", "2001:db8::1");
    check("sip:alice:secret@10.0.0.1", "alice", "10.0.0.1");  // never the password
    check("sip:10.0.0.1:5060", "", "10.0.0.1");
    check("tel:+1-201-555-0123;phone-context=example.com", "+1-201-555-0123", "");
    check("sip:bob@host?subject=x", "bob", "host");
    check("mailto:bob@example.com", "", "");
    check("", "", "");
    // Cut to fit: the user part at kPartyUserCap, the host at what is left.
    const std::string long_user(40, 'u');
    const std::string long_host(60, 'h');
    const auto p = sip::party_name("sip:" + long_user + "@" + long_host);
    CHECK(p.user() == long_user.substr(0, sip::kPartyUserCap));
    CHECK(p.host() == long_host.substr(0, sip::kPartyNameCap - sip::kPartyUserCap));
}

TEST_CASE("party names: the dialog table takes them from the first INVITE's From and To", "[records]") {
    sip::DialogConfig config;
    sip::DialogTable table(config);
    const PacketMeta meta{Timestamp{1'000'000}, ep("192.0.2.1:5060"), ep("192.0.2.2:5060"), 0};
    // To names no user (a trunk that routes on the request URI): the request URI's is taken.
    const std::string invite =
        "INVITE sip:+4930999@gw.example;user=phone SIP/2.0\r\n"
        "Via: SIP/2.0/UDP 192.0.2.1:5060;branch=z9hG4bK-1\r\n"
        "From: \"Alice\" <sip:alice@a.example>;tag=f1\r\n"
        "To: <sip:gw.example>\r\n"
        "Call-ID: party-1\r\n"
        "CSeq: 1 INVITE\r\n"
        "Content-Length: 0\r\n\r\n";
    REQUIRE(table.process(invite, meta) == sip::Disposition::dialog_created);
    REQUIRE(table.find("party-1", "f1") != nullptr);
    const sip::CallerIdentity& who = table.caller_identity("party-1", "f1");
    CHECK(who.from_party.user() == "alice");
    CHECK(who.from_party.host() == "a.example");
    CHECK(who.to_party.user() == "+4930999");
    CHECK(who.to_party.host() == "gw.example");

    // Without call records nothing reads them: a table told so keeps none, and its sink and
    // snapshot walk see an empty identity beside the same dialog.
    sip::DialogConfig lean = config;
    lean.keep_caller_identity = false;
    sip::DialogTable without(lean);
    REQUIRE(without.process(invite, meta) == sip::Disposition::dialog_created);
    REQUIRE(without.find("party-1", "f1") != nullptr);
    CHECK(without.caller_identity("party-1", "f1") == sip::CallerIdentity{});
    CHECK(*without.find("party-1", "f1") == *table.find("party-1", "f1"));
    std::size_t seen = 0;
    without.for_each_in_full([&](std::string_view, std::string_view, const sip::Dialog&, const sip::SdpSides&,
                                 const sip::CallerIdentity& caller) {
        CHECK(caller == sip::CallerIdentity{});
        ++seen;
    });
    CHECK(seen == 1);
    CHECK(without.memory_bytes() < table.memory_bytes());
}

TEST_CASE("JSON strings: quotes, backslashes, control bytes and invalid UTF-8 are escaped", "[records]") {
    CHECK(escaped("plain@127.0.0.1") == "\"plain@127.0.0.1\"");
    CHECK(escaped("a\"b\\c") == R"("a\"b\\c")");
    CHECK(escaped("\n\r\t") == R"("\n\r\t")");
    CHECK(escaped(std::string("\x00\x01\x1f\x7f", 4)) == R"("\u0000\u0001\u001f\u007f")");
    CHECK(escaped("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x93\x9e") == "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x93\x9e\"");
    CHECK(escaped("\xff") == R"("\ufffd")");
    CHECK(escaped("\xc0\x80") == R"("\ufffd\ufffd")");                      // overlong NUL
    CHECK(escaped("\xed\xa0\x80") == R"("\ufffd\ufffd\ufffd")");            // a surrogate
    CHECK(escaped("\xf4\x90\x80\x80") == R"("\ufffd\ufffd\ufffd\ufffd")");  // above U+10FFFF
    CHECK(escaped("x\xe2\x82") == R"("x\ufffd\ufffd")");                    // cut short
    // Whatever the bytes, the result is one JSON string that a strict parser reads back.
    std::string all;
    for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
    const Json parsed = Json::parse(escaped(all));
    CHECK(parsed.is_string());
}

TEST_CASE("record line: every field of a call with a stream and a reported stream", "[records]") {
    CallRecord r;
    r.dialog = answered_call("abc\"1@host\\x", "tag\x01", 1'700'000'000'000'000);
    r.streams.push_back(stream_of(r.dialog.call_id, "tag\x01", 0xdeadbeef, 1'700'000'002'000'000));
    r.reported.push_back(report_of(r.dialog.call_id, 4242));
    const std::string line = record_line(r);
    REQUIRE(line.back() == '\n');
    CHECK(std::count(line.begin(), line.end(), '\n') == 1);
    const Json j = Json::parse(line);
    CHECK(j["v"] == 1);
    CHECK(j["call_id"] == "abc\"1@host\\x");
    CHECK(j["from_tag"] == "tag\x01");
    CHECK(j["start"] == "2023-11-14T22:13:20.000000Z");
    CHECK(j["ringing"] == "2023-11-14T22:13:20.150000Z");
    CHECK(j["answer"] == "2023-11-14T22:13:22.000000Z");
    CHECK(j["cancel"].is_null());
    CHECK(j["bye"] == "2023-11-14T22:14:22.000000Z");
    CHECK(j["end"] == "2023-11-14T22:14:22.000000Z");
    CHECK(j["from_user"] == "+4930123");
    CHECK(j["from_host"] == "carrier.example");
    CHECK(j["to_user"] == "bob");
    CHECK(j["to_host"] == "pbx.example");
    CHECK(j["caller_ip"] == "192.0.2.1");
    CHECK(j["caller_port"] == 5060);
    CHECK(j["callee_ip"] == "2001:db8::2");
    CHECK(j["callee_port"] == 5080);
    CHECK(j["callee_side_ip"] == "2001:db8::3");
    CHECK(j["callee_side_port"] == 5090);
    CHECK_FALSE(j.contains("caller_group"));  // peer groups appear only when set
    CHECK_FALSE(j.contains("callee_group"));
    CHECK(j["user_agent"] == "sipp \"3.6\"");
    CHECK(j["state"] == "terminated");
    CHECK(j["outcome"] == "completed");
    CHECK(j["final_status"] == 200);
    CHECK(j["q850_cause"] == 16);
    CHECK(j["hangup"] == "callee");
    CHECK(j["bye_status"] == 200);
    CHECK(j["srd_ms"] == 150.0);
    CHECK(j["pdd_ms"] == 150.0);
    CHECK(j["setup_ms"] == 2000.0);
    CHECK(j["duration_ms"] == 60000.0);
    CHECK(j["sdd_ms"] == 10.0);
    CHECK(j["hops"] == 2);
    CHECK(j["forks"] == 1);
    CHECK(j["retransmissions"] == 3);
    CHECK(j["reinvites"] == 1);
    REQUIRE(j["streams"].size() == 1);
    const Json& s = j["streams"][0];
    CHECK(s["ssrc"] == 0xdeadbeefU);
    CHECK(s["src_ip"] == "192.0.2.1");
    CHECK(s["src_port"] == 16000);
    CHECK(s["dst_ip"] == "192.0.2.2");
    CHECK(s["dst_port"] == 26000);
    CHECK(s["codec"] == "pcma");
    CHECK(s["first"] == "2023-11-14T22:13:22.000000Z");
    CHECK(s["last"] == "2023-11-14T22:14:22.000000Z");
    CHECK(s["packets"] == 3000);
    CHECK(s["expected"] == 3002);
    CHECK(s["lost"] == 2);
    CHECK(s["loss_pct"] == Approx(0.067));
    CHECK(s["jitter_ms"] == 0.5);
    CHECK(s["max_jitter_ms"] == 1.25);
    CHECK(s["r_factor"] == Approx(92.1));
    CHECK(s["mos"] == Approx(4.38));
    CHECK(s["end_reason"] == "idle");
    const Json& rtcp = s["rtcp"];
    CHECK(rtcp["reports"] == 12);
    CHECK(rtcp["fraction_lost_pct"] == 25.0);
    CHECK(rtcp["cumulative_lost"] == -1);
    CHECK(rtcp["jitter_ts"] == 80);
    CHECK(rtcp["jitter_ms"] == 10.0);  // 80 units at 8000 Hz
    CHECK(rtcp["rtt_ms"] == 21.5);
    CHECK(rtcp["xr_reports"] == 0);
    CHECK(rtcp["xr_mos_lq"].is_null());
    CHECK(rtcp["xr_r_factor"].is_null());
    REQUIRE(j["reported"].size() == 1);
    const Json& rep = j["reported"][0];
    CHECK(rep["ssrc"] == 4242);
    CHECK(rep["reporter_ip"] == "198.51.100.7");
    CHECK(rep["reporter_port"] == 30000);
    CHECK(rep["reporter_ssrc"] == 77);
    CHECK(rep["first"] == "1970-01-01T00:00:01.000000Z");
    CHECK(rep["codec"] == "pcmu");
    CHECK(rep["reports"] == 4);
    CHECK(rep["fraction_lost_pct"] == 25.0);
    CHECK(rep["cumulative_lost"] == 40);
    CHECK(rep["jitter_ts"] == 16);
    CHECK(rep["jitter_ms"] == 2.0);  // 16 units at PCMU's 8000 Hz
    CHECK(rep["rtt_ms"].is_null());
    CHECK(rep["xr_mos_lq"] == 4.1);
    CHECK(rep["xr_r_factor"] == 88);
    // The figures the stream families took under source="rtcp".
    const rtp::ReportedSummary& sum = r.reported[0].summary;
    REQUIRE(sum.has_quality);
    CHECK(rep["loss_pct"] == 25.0);
    CHECK(rep["max_jitter_ms"] == 3.0);  // 24 units
    CHECK(rep["r_factor"] == Approx(sum.r_factor).margin(0.005));
    CHECK(rep["mos"] == Approx(sum.mos).margin(0.005));
    CHECK(sum.mos < 3.0);  // a quarter of the packets lost
    CHECK(rep["end_reason"] == "idle");
}

TEST_CASE("record line: an unanswered call has nulls, an evicted one its own outcome, groups when set", "[records]") {
    sip::Dialog d;
    d.set_invite_time(Timestamp{1'000'000});
    d.set_time(sip::DialogTime::indicative, Timestamp{1'500'000});
    d.set_time(sip::DialogTime::end, Timestamp{1'500'000});
    d.final_status = 486;
    d.state = sip::DialogState::failed;
    // Groups by name from the directory the shards classify with; a far end in none is "other".
    peer::PeerDirectory peers;
    peers.publish({peer::PeerRule{"carrier-a", {}, {}}, peer::PeerRule{"pbx", {}, {}}});
    d.caller_peer = 1;
    d.callee_peer = 2;
    CallRecord r;
    r.dialog = dialog_figures("c1", "t1", d, {}, false, &peers);
    Json j = Json::parse(record_line(r));
    CHECK(j["outcome"] == "failed");
    CHECK(j["final_status"] == 486);
    CHECK(j["srd_ms"] == 500.0);
    CHECK(j["pdd_ms"].is_null());
    CHECK(j["setup_ms"].is_null());
    CHECK(j["duration_ms"].is_null());
    CHECK(j["q850_cause"].is_null());
    CHECK(j["hangup"].is_null());
    CHECK(j["caller_ip"].is_null());
    CHECK(j["caller_group"] == "carrier-a");
    CHECK(j["callee_group"] == "pbx");
    CHECK(j["streams"].empty());
    CHECK(j["reported"].empty());
    d.callee_peer = peer::kOtherPeer;
    j = Json::parse(record_line(CallRecord{dialog_figures("c1", "t1", d, {}, false, &peers), {}, {}}));
    CHECK(j["callee_group"] == "other");
    // Without groups configured, none are written (not even "other").
    peer::PeerDirectory none;
    none.publish({});
    j = Json::parse(record_line(CallRecord{dialog_figures("c1", "t1", d, {}, false, &none), {}, {}}));
    CHECK_FALSE(j.contains("caller_group"));

    d.state = sip::DialogState::early;
    r.dialog = dialog_figures("c1", "t1", d, {}, true, nullptr);
    j = Json::parse(record_line(r));
    CHECK(j["outcome"] == "evicted");
    CHECK(j["state"] == "evicted");
}

TEST_CASE("joiner: streams join their dialog in either order, by Call-ID and dialog identity", "[records]") {
    JoinerOptions o;
    o.hold_us = 5'000'000;
    o.media_wait_us = 100'000'000;
    RecordJoiner j(o);
    std::vector<CallRecord> out;
    // A stream that finished before its dialog, one of another dialog of the same Call-ID, one
    // with no call at all, and a report about the Call-ID.
    j.add_stream(stream_of("c1", "a", 1, 10), 1'000);
    j.add_stream(stream_of("c1", "other-tag", 2, 10), 1'000);
    j.add_stream(StreamFigures{}, 1'000);
    j.add_reported(report_of("c1", 9), 1'000);
    CHECK(j.waiting() == 3);
    CHECK(j.counts().unbound_streams == 1);
    j.add_dialog(answered_call("c1", "a", 0), 2'000);
    CHECK(j.waiting() == 1);  // the other dialog's stream still waits
    CHECK(j.held() == 1);
    // Finishing on another shard just after the dialog left its table: within the hold.
    j.add_stream(stream_of("c1", "a", 3, 5), 3'000);
    j.take_due(2'000 + o.hold_us - 1, out);
    CHECK(out.empty());
    j.take_due(2'000 + o.hold_us, out);
    REQUIRE(out.size() == 1);
    REQUIRE(out[0].streams.size() == 2);
    CHECK(out[0].streams[0].key.ssrc == 3);  // ordered by first packet
    CHECK(out[0].streams[1].key.ssrc == 1);
    CHECK(out[0].reported.size() == 1);
    CHECK(j.held() == 0);
    // The other dialog's stream never finds its dialog: dropped after media_wait, counted.
    j.take_due(1'000 + o.media_wait_us, out);
    CHECK(j.waiting() == 0);
    CHECK(j.counts().media_expired == 1);
}

TEST_CASE("record order: two streams of one key and first packet go in one order whatever order they came in",
          "[records]") {
    // A capture merged with one that overlaps it: the same packets make a stream twice, one
    // ending idle, the other flushed at the end; two reports of one reporter likewise.
    StreamFigures idle = stream_of("c1", "a", 1, 10);
    StreamFigures flushed = idle;
    flushed.reason = rtp::FinishReason::flushed;
    ReportedFigures early = report_of("c1", 9);
    ReportedFigures late = early;
    late.reason = rtp::FinishReason::flushed;
    CallRecord one;
    one.streams = {idle, flushed};
    one.reported = {early, late};
    CallRecord other;
    other.streams = {flushed, idle};
    other.reported = {late, early};
    sort_media(one);
    sort_media(other);
    CHECK(record_line(one) == record_line(other));
}

TEST_CASE("offline records: a call held twice is written in one order whatever order its dialogs left in",
          "[records]") {
    // The same call from two merged captures that overlap: one ended by its BYE, one timed out.
    DialogFigures ended = answered_call("c1", "a", 1'000'000);
    DialogFigures timed_out = ended;
    timed_out.dialog.state = sip::DialogState::timed_out;
    const auto lines = [&](const DialogFigures& first, const DialogFigures& second) {
        ShardEvents shard(nullptr, nullptr, nullptr);
        shard.dialogs = {first, second};
        std::vector<ShardEvents*> shards{&shard};
        OfflineResult result;
        std::string out;
        for (const CallRecord& r : join_offline(shards, result)) out += record_line(r);
        return out;
    };
    CHECK(lines(ended, timed_out) == lines(timed_out, ended));
}

TEST_CASE("joiner: waiting media and held dialogs are capped", "[records]") {
    JoinerOptions o;
    o.hold_us = 1'000'000;
    o.max_waiting_media = 2;
    o.max_held = 1;
    RecordJoiner j(o);
    j.add_stream(stream_of("old", "a", 1, 0), 1);
    j.add_stream(stream_of("mid", "a", 2, 0), 2);
    j.add_stream(stream_of("new", "a", 3, 0), 3);  // pushes out the oldest call's
    CHECK(j.waiting() == 2);
    CHECK(j.counts().media_cap == 1);
    std::vector<CallRecord> out;
    j.add_dialog(answered_call("mid", "a", 0), 10);
    j.add_dialog(answered_call("new", "a", 0), 11);
    j.take_due(12, out);  // over max_held: the oldest is written before its hold ends
    REQUIRE(out.size() == 1);
    CHECK(out[0].dialog.call_id == "mid");
    CHECK(out[0].streams.size() == 1);
    j.take_all(out);
    REQUIRE(out.size() == 2);
    CHECK(out[1].dialog.call_id == "new");
    CHECK(out[1].streams.size() == 1);
}

TEST_CASE("record file: rotation by size keeps N files, by age too", "[records]") {
    TempDir dir;
    RecordFileOptions o;
    o.path = (dir.path / "sub" / "calls.jsonl").string();  // the directory is created
    o.max_bytes = 100;
    o.max_age_us = 0;
    o.keep = 2;
    o.buffer_bytes = 1;  // every line written at once
    const std::string line(40, 'x');
    {
        RecordFile f(o);
        Timestamp t{1'700'000'000'000'000};
        for (int i = 0; i < 7; ++i) {
            f.append(line + "\n", t);
            t.us += 1'000'000;  // one rotation per second: names never collide
        }
        // 41-byte lines, two per file: rotations before lines 3, 5 and 7.
        CHECK(f.stats().rotations == 3);
        CHECK(f.stats().lines == 7);
        CHECK(f.stats().bytes == 7 * std::uint64_t{41});
        CHECK(f.stats().write_errors == 0);
    }
    const fs::path sub = dir.path / "sub";
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(sub)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    // The oldest rotated file (lines 1-2, rotated at line 3) was deleted: keep 2.
    REQUIRE(names.size() == 3);
    CHECK(names[0] == "calls.jsonl");
    CHECK(names[1] == "calls.jsonl.20231114T221324Z");
    CHECK(names[2] == "calls.jsonl.20231114T221326Z");
    CHECK(lines_of((sub / names[0]).string()).size() == 1);
    CHECK(lines_of((sub / names[1]).string()).size() == 2);

    // By age: the file is rotated at the first line after max_age, whatever its size.
    o.path = (dir.path / "aged.jsonl").string();
    o.max_bytes = 1 << 20;
    o.max_age_us = 60'000'000;
    o.keep = 10;
    RecordFile aged(o);
    aged.append("a\n", Timestamp{1'700'000'000'000'000});
    aged.append("b\n", Timestamp{1'700'000'059'000'000});
    CHECK(aged.stats().rotations == 0);
    aged.append("c\n", Timestamp{1'700'000'060'000'000});
    aged.flush();
    CHECK(aged.stats().rotations == 1);
    CHECK(lines_of((dir.path / "aged.jsonl").string()) == std::vector<std::string>{"c"});
    CHECK(lines_of((dir.path / "aged.jsonl.20231114T221420Z").string()) == std::vector<std::string>{"a", "b"});
}

TEST_CASE("record file: a full disk loses the lines, counted, and never throws", "[records]") {
    RecordFileOptions o;
    o.path = "/dev/full";
    o.max_age_us = 0;
    RecordFile f(o);
    f.append("one\n", Timestamp{1});
    f.append("two\n", Timestamp{2});
    f.flush();
    CHECK(f.stats().write_errors == 1);
    CHECK(f.stats().lost_lines == 2);
    CHECK(f.stats().lines == 0);
    f.append("three\n", Timestamp{3});
    f.flush();  // tried again, fails again
    CHECK(f.stats().write_errors == 2);
    CHECK(f.stats().lost_lines == 3);
}

TEST_CASE("record file: a path that cannot be opened is tried once a second, not per line", "[records]") {
    RecordFileOptions o;
    o.path = "/dev/null/calls.jsonl";  // ENOTDIR, as EROFS under a sandbox: never opens
    o.max_age_us = 0;
    RecordFile f(o);
    for (int i = 0; i < 100; ++i) f.append("line\n", Timestamp{1'000'000 + i * 1'000});
    f.flush();
    CHECK(f.stats().lost_lines == 100);
    CHECK(f.stats().write_errors == 1);  // one failed open, not a hundred
    f.append("line\n", Timestamp{2'000'001});
    CHECK(f.stats().write_errors == 2);  // a second later, tried again
    CHECK(f.stats().lost_lines == 101);
}

TEST_CASE("record file: keep_files keeps the newest when more than nine rotations share a second", "[records]") {
    TempDir dir;
    RecordFileOptions o;
    o.path = (dir.path / "calls.jsonl").string();
    o.max_bytes = 100;
    o.max_age_us = 0;
    o.keep = 3;
    o.buffer_bytes = 1;
    const std::string line(60, 'x');
    {
        RecordFile f(o);
        // One line a file, all in one second: rotated as the stamp, then -2 ... -12, never
        // reusing a name that keep_files freed.
        for (int i = 0; i < 13; ++i) f.append(line + "\n", Timestamp{1'700'000'000'000'000});
        CHECK(f.stats().rotations == 12);
    }
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir.path)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    CHECK(names == std::vector<std::string>{"calls.jsonl", "calls.jsonl.20231114T221320Z-10",
                                            "calls.jsonl.20231114T221320Z-11", "calls.jsonl.20231114T221320Z-12"});
}

// A disk with `space` bytes left: write(2) writes what fits, then fails with ENOSPC, as the
// kernel does on a full file system.
struct FillingDisk {
    std::size_t space = 0;
    ssize_t operator()(int fd, const void* data, std::size_t size) {
        if (space == 0) {
            errno = ENOSPC;
            return -1;
        }
        const ssize_t n = ::write(fd, data, std::min(size, space));
        if (n > 0) space -= static_cast<std::size_t>(n);
        return n;
    }
};

TEST_CASE("record file: a write cut short by a full disk leaves only whole lines; the next write goes on",
          "[records]") {
    TempDir dir;
    auto disk = std::make_shared<FillingDisk>();
    RecordFileOptions o;
    o.path = (dir.path / "calls.jsonl").string();
    o.max_age_us = 0;
    o.write = [disk](int fd, const void* data, std::size_t size) { return (*disk)(fd, data, size); };
    auto line = [](int n) {
        return R"({"n":)" + std::to_string(n) +
               R"(,"pad":"xxxxxxxxxxxxxxxxxxxxxxxxxxxx"})"
               "\n";
    };
    const std::size_t len = line(0).size();  // one digit: every line the same length
    RecordFile f(o);

    // Room for two lines and a half: the third is cut, and cut off again.
    disk->space = 2 * len + len / 2;
    for (int n = 1; n <= 3; ++n) f.append(line(n), Timestamp{n});
    f.flush();
    CHECK(f.stats().write_errors == 1);
    CHECK(f.stats().lines == 2);
    CHECK(f.stats().lost_lines == 1);
    CHECK(f.stats().bytes == 2 * len);
    CHECK(fs::file_size(o.path) == 2 * len);

    // A few bytes more: a cut in the first line of a write leaves the file as it was.
    disk->space = 5;
    for (int n = 4; n <= 5; ++n) f.append(line(n), Timestamp{n});
    f.flush();
    CHECK(f.stats().write_errors == 2);
    CHECK(f.stats().lines == 2);
    CHECK(f.stats().lost_lines == 3);
    CHECK(fs::file_size(o.path) == 2 * len);

    // Space again: the next lines follow the last whole one.
    disk->space = 1 << 20;
    f.append(line(6), Timestamp{6});
    f.flush();
    CHECK(f.stats().write_errors == 2);
    CHECK(f.stats().lines == 3);
    CHECK(f.stats().bytes == 3 * len);
    CHECK(f.stats().bytes == fs::file_size(o.path));
    std::vector<int> numbers;
    for (const std::string& text : lines_of(o.path)) numbers.push_back(Json::parse(text)["n"].get<int>());
    CHECK(numbers == std::vector<int>{1, 2, 6});
}

TEST_CASE_METHOD(WriterBed,
                 "writer: a full shard queue drops the event and counts it; the rest is written after the hold",
                 "[records]") {
    o.join.hold_us = 5'000'000;
    o.queue_size = 16;
    o.flush_interval_us = 0;
    RecordWriter w(o, 2, steady, wall);
    // The writer is not polled: shard 0's queue fills after 16 events and the shard goes on.
    for (int i = 0; i < 20; ++i) {
        const auto d = answered_call("call-" + std::to_string(i), "a", 1'000'000 + i);
        w.shard(0).on_dialog_removed(d.call_id, d.from_tag, d.dialog, d.caller, false);
    }
    // An unfinished dialog leaving the table without eviction has no record; an evicted one has.
    sip::Dialog open;
    open.set_invite_time(Timestamp{5});
    w.shard(1).on_dialog_removed("unfinished", "x", open, {}, false);
    w.shard(1).on_dialog_removed("evicted", "x", open, {}, true);
    CHECK(w.shard(0).dropped() == 4);
    CHECK(w.queue_drops() == 4);
    w.poll();
    CHECK(w.stats().held.value() == 17);
    CHECK(w.stats().written.value() == 0);
    steady.advance_us(o.join.hold_us);
    w.poll();
    CHECK(w.stats().written.value() == 17);
    CHECK(w.stats().dropped[static_cast<std::size_t>(DropReason::queue_full)].value() == 4);
    const auto lines = lines_of(o.file.path);
    REQUIRE(lines.size() == 17);
    CHECK(Json::parse(lines.back())["outcome"] == "evicted");
    CHECK(w.stats().bytes.value() == fs::file_size(o.file.path));
}

TEST_CASE_METHOD(WriterBed, "writer: max_file_age rotates an idle file, without waiting for the next record",
                 "[records]") {
    o.file.max_age_us = 60'000'000;
    o.join.hold_us = 0;
    o.flush_interval_us = 0;
    RecordWriter w(o, 1, steady, wall);
    const auto d = answered_call("idle", "a", 1'000'000);
    w.shard(0).on_dialog_removed(d.call_id, d.from_tag, d.dialog, d.caller, false);
    w.poll();
    REQUIRE(w.stats().written.value() == 1);
    steady.advance_us(59'000'000);
    wall.advance_us(59'000'000);
    w.poll();
    CHECK(w.stats().rotations.value() == 0);
    // No record comes; the writer's next pass past the age rotates the file.
    steady.advance_us(1'000'000);
    wall.advance_us(1'000'000);
    w.poll();
    CHECK(w.stats().rotations.value() == 1);
    CHECK(dir.names() == std::vector<std::string>{"calls.jsonl.20231114T221420Z"});
    CHECK(lines_of((dir.path / "calls.jsonl.20231114T221420Z").string()).size() == 1);
    // An empty file is not rotated, however long nothing comes.
    steady.advance_us(600'000'000);
    wall.advance_us(600'000'000);
    w.poll();
    CHECK(w.stats().rotations.value() == 1);
}

TEST_CASE_METHOD(WriterBed, "writer: a removed or replaced record file is opened again at its path", "[records]") {
    o.join.hold_us = 0;
    o.flush_interval_us = 0;
    RecordWriter w(o, 1, steady, wall);
    auto call = [&](const std::string& id) {
        const auto d = answered_call(id, "a", 1'000'000);
        w.shard(0).on_dialog_removed(d.call_id, d.from_tag, d.dialog, d.caller, false);
        steady.advance_us(1'000'000);
        wall.advance_us(1'000'000);
        w.poll();
    };
    call("before");
    fs::remove(o.file.path);  // rm, or a shipper removing what it shipped
    call("after-rm");
    CHECK(call_ids(o.file.path) == std::vector<std::string>{"after-rm"});
    fs::rename(o.file.path, o.file.path + ".1");  // logrotate without copytruncate: renamed, created anew
    std::ofstream(o.file.path).close();
    call("after-logrotate");
    CHECK(call_ids(o.file.path + ".1") == std::vector<std::string>{"after-rm"});
    CHECK(call_ids(o.file.path) == std::vector<std::string>{"after-logrotate"});
    CHECK(w.stats().written.value() == 3);
    CHECK(w.stats().write_errors.value() == 0);
    CHECK(w.stats().reopens.value() == 2);
    // The directory too: created again.
    fs::remove_all(dir.path);
    call("after-rm-r");
    CHECK(call_ids(o.file.path) == std::vector<std::string>{"after-rm-r"});
    CHECK(w.stats().reopens.value() == 3);
    CHECK(w.stats().write_errors.value() == 0);
    // Opened again empty and left so past max_file_age: the file ages from its first line, so
    // that line is not rotated away at the next pass.
    fs::remove(o.file.path);
    steady.advance_us(1'000'000);
    wall.advance_us(1'000'000);
    w.poll();
    CHECK(w.stats().reopens.value() == 4);
    steady.advance_us(2 * o.file.max_age_us);
    wall.advance_us(2 * o.file.max_age_us);
    call("late");
    steady.advance_us(1'000'000);
    wall.advance_us(1'000'000);
    w.poll();
    CHECK(w.stats().rotations.value() == 0);
    CHECK(call_ids(o.file.path) == std::vector<std::string>{"late"});
}

TEST_CASE_METHOD(WriterBed, "writer: stop writes the held records and counts the streams still waiting", "[records]") {
    o.join.hold_us = 60'000'000;
    RecordWriter w(o, 1, steady, wall);
    w.start();
    const auto d = answered_call("held", "a", 1'000'000);
    w.shard(0).on_dialog_removed(d.call_id, d.from_tag, d.dialog, d.caller, false);
    rtp::StreamKey key{ep("192.0.2.1:16000"), ep("192.0.2.2:26000"), 7};
    rtp::Stream stream;
    rtp::Binding binding;
    binding.call_id = "no-dialog-yet";
    binding.dialog = sip::tag_id("a");
    rtp::StreamSummary summary;
    w.shard(0).on_stream_finished(rtp::FinishedStream{key, stream, &binding, summary, rtp::FinishReason::idle});
    w.stop();
    CHECK(lines_of(o.file.path).size() == 1);
    CHECK(w.stats().written.value() == 1);
    CHECK(w.stats().dropped[static_cast<std::size_t>(DropReason::shutdown)].value() == 1);
    CHECK(w.stats().dropped[static_cast<std::size_t>(DropReason::media_expired)].value() == 0);
}

TEST_CASE("record key: every line begins with its call's key, escaped as the line is", "[records]") {
    const auto d = answered_call("q\"uote\\d@host", "tag\x01", 1'000'000);
    const std::string key = record_key(d.call_id, d.from_tag);
    CHECK(key == "{\"v\":1,\"call_id\":\"q\\\"uote\\\\d@host\",\"from_tag\":\"tag\\u0001\",");
    CHECK(record_line(CallRecord{d, {}, {}}).rfind(key, 0) == 0);
}

TEST_CASE("restore: records written since the snapshot are found in whole lines of recent files", "[records]") {
    TempDir dir;
    const std::string path = (dir.path / "calls.jsonl").string();
    auto line_of = [](const std::string& call_id) {
        return record_line(CallRecord{answered_call(call_id, "t", 1'000'000), {}, {}});
    };
    const auto key = [](const std::string& call_id) { return record_key(call_id, "t"); };
    {
        std::ofstream(path) << line_of("a") << "{\"v\":1,\"call_id\":\"x\"}\n" << line_of("b").substr(0, 60);
        std::ofstream(path + ".20261207T100000Z") << line_of("old");
        std::ofstream(path + ".20261207T100001Z") << line_of("d");
        std::ofstream(dir.path / "other.jsonl") << line_of("e");
    }
    // The snapshot was taken now: a rotated file last written an hour ago holds nothing since.
    fs::last_write_time(path + ".20261207T100000Z", fs::file_time_type::clock::now() - std::chrono::hours(1));
    const std::int64_t now =
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    const std::unordered_set<std::string> wanted{key("a"), key("b"), key("old"), key("d"), key("e"), key("f")};
    // b's line was cut off by the crash: not a record.
    CHECK(find_written(path, Timestamp{now}, wanted) == std::unordered_set<std::string>{key("a"), key("d")});
    CHECK(find_written(path, Timestamp{now - 7'200'000'000LL}, wanted) ==
          std::unordered_set<std::string>{key("a"), key("d"), key("old")});
    CHECK(find_written(path, Timestamp{now}, {}).empty());
}

TEST_CASE_METHOD(WriterBed,
                 "catalogue: a record file ending in part of a line (a crash in a write) is cut back to its last "
                 "whole line, not glued to the next record",
                 "[records][catalogue]") {
    o.join.hold_us = 0;
    o.flush_interval_us = 0;
    auto line_of = [](const std::string& call_id) {
        return record_line(CallRecord{answered_call(call_id, "a", 1'000'000), {}, {}});
    };
    const std::string cut = line_of("cut").substr(0, 100);  // the process died in this write
    std::ofstream(o.file.path) << line_of("one") << line_of("two") << cut;
    const auto whole = static_cast<std::uintmax_t>(line_of("one").size() + line_of("two").size());
    REQUIRE(fs::file_size(o.file.path) == whole + cut.size());
    // The restart's look for written records does not take the cut line for a record...
    CHECK(find_written(o.file.path, Timestamp{0}, {record_key("one", "a"), record_key("cut", "a")}) ==
          std::unordered_set<std::string>{record_key("one", "a")});
    RecordWriter w(o, 1, steady, wall);
    // ... so the restored call is recorded again, after the last whole line.
    for (const char* id : {"cut", "three"}) {
        const auto d = answered_call(id, "a", 1'000'000);
        w.shard(0).on_dialog_removed(d.call_id, d.from_tag, d.dialog, d.caller, false);
    }
    w.poll();
    CHECK(call_ids(o.file.path) == std::vector<std::string>{"one", "two", "cut", "three"});  // every line parses
    CHECK(fs::file_size(o.file.path) == whole + line_of("cut").size() + line_of("three").size());
    CHECK(w.stats().truncated_lines.value() == 1);
    CHECK(w.stats().written.value() == 2);
    CHECK(w.stats().write_errors.value() == 0);
    // A file replaced by one that is nothing but part of a line (longer than a read): emptied.
    fs::remove(o.file.path);
    std::ofstream(o.file.path) << std::string(10'000, 'x');
    steady.advance_us(1'000'000);
    wall.advance_us(1'000'000);
    const auto d = answered_call("four", "a", 1'000'000);
    w.shard(0).on_dialog_removed(d.call_id, d.from_tag, d.dialog, d.caller, false);
    w.poll();
    CHECK(call_ids(o.file.path) == std::vector<std::string>{"four"});
    CHECK(w.stats().truncated_lines.value() == 2);
    CHECK(w.stats().reopens.value() == 1);
}

TEST_CASE("record file: a file that ends in a whole line, or is empty, is appended to as it is", "[records]") {
    TempDir dir;
    RecordFileOptions o;
    o.path = (dir.path / "calls.jsonl").string();
    for (const std::string before : {"", "a\n", "a\nb\n"}) {
        std::ofstream(o.path) << before;
        {
            RecordFile f(o);
            f.append("c\n", Timestamp{1});
            f.flush();
            CHECK(f.stats().truncated_lines == 0);
        }
        std::ifstream in(o.path);
        CHECK(std::string(std::istreambuf_iterator<char>(in), {}) == before + "c\n");
    }
}

TEST_CASE_METHOD(WriterBed, "writer: calls whose records were written before a crash are not written again",
                 "[records]") {
    o.join.hold_us = 0;
    RecordWriter w(o, 1, steady, wall);
    w.skip_written({record_key("written", "a")});
    for (const char* id : {"written", "new", "written"}) {  // the second "written": the call came again
        const auto d = answered_call(id, "a", 1'000'000);
        w.shard(0).on_dialog_removed(d.call_id, d.from_tag, d.dialog, d.caller, false);
    }
    w.poll();
    w.stop();
    CHECK(call_ids(o.file.path) == std::vector<std::string>{"new", "written"});
}

TEST_CASE_METHOD(WriterBed, "writer: at a stop without snapshot, ended calls are recorded, open ones counted",
                 "[records]") {
    o.queue_size = 2;  // fewer than the calls that end at the stop: none is dropped
    RecordWriter w(o, 1, steady, wall);
    w.start();
    sip::DialogTable dialogs(sip::DialogConfig{});
    rtp::StreamTable streams;
    streams.set_sink(&w.shard(0));
    for (int i = 0; i < 3; ++i) {
        const auto ended = answered_call("ended-" + std::to_string(i), "a", 1'000'000 + i);
        REQUIRE(dialogs.restore(ended.call_id, ended.from_tag, ended.dialog));
        const auto open = answered_call("open-" + std::to_string(i), "b", 1'000'000);
        sip::Dialog d = open.dialog;
        d.state = sip::DialogState::confirmed;
        REQUIRE(dialogs.restore(open.call_id, open.from_tag, d));
    }
    CHECK(w.record_remaining(0, dialogs, streams) == 3);
    w.stop();
    std::vector<std::string> ids = call_ids(o.file.path);
    std::sort(ids.begin(), ids.end());
    CHECK(ids == std::vector<std::string>{"ended-0", "ended-1", "ended-2"});
    CHECK(w.stats().dropped[static_cast<std::size_t>(DropReason::in_progress)].value() == 3);
    CHECK(w.queue_drops() == 0);
}
