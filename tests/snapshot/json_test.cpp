// `hepd snapshot show`: the JSON rendering, compared in full with a hand-written expectation.
#include "sample_records.hpp"
#include "snapshot/snapshot.hpp"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

using namespace hepd;
using namespace hepd::snapshot;
using namespace hepd::snapshot::test;
using Json = nlohmann::ordered_json;

namespace {

// Times: 1'700'000'000 s is 2023-11-14T22:13:20Z.
constexpr const char* kExpected = R"({
  "format_version": 1,
  "hepd_version": "0.1.0",
  "written_at": "2023-11-14T22:13:20.000000Z",
  "captured_at": "2023-11-14T22:13:19.500000Z",
  "shard_count": 2,
  "counts": {"dialogs": 1, "transactions": 1, "streams": 1, "bindings": 1, "reported_streams": 1},
  "dialogs": [{
    "call_id": "a84b4c76e66710@pc33.atlanta.example.com",
    "from_tag": "1928301774",
    "state": "terminated",
    "caller": "192.0.2.10:5060",
    "callee": "[2001:db8::1]:5080",
    "user_agent": "Asterisk PBX 18.20.0-1~deb12u1 x",
    "from_user": "+4930123456", "from_host": "carrier.example", "to_user": "1002", "to_host": "2001:db8::5",
    "agent": 31,
    "callee_side": "198.51.100.7:5060",
    "callee_agent": 12,
    "invite_time": "2023-11-14T22:13:20.000001Z",
    "trying_time": "2023-11-14T22:13:20.005002Z",
    "ringing_time": "2023-11-14T22:13:20.080003Z",
    "indicative_time": "2023-11-14T22:13:20.070012Z",
    "answer_time": "2023-11-14T22:13:20.480004Z",
    "ack_time": "2023-11-14T22:13:20.495005Z",
    "cancel_time": "2023-11-14T22:13:20.500006Z",
    "bye_time": "2023-11-14T22:13:22.540007Z",
    "bye_answer_time": "2023-11-14T22:13:22.548008Z",
    "end_time": "2023-11-14T22:13:22.540009Z",
    "last_activity": "2023-11-14T22:13:22.548010Z",
    "deadline": "2023-11-14T22:13:54.540011Z",
    "final_status": 200,
    "pending_status": 407,
    "bye_status": 481,
    "q850_cause": 16,
    "pending_q850": 21,
    "q850_counted": true,
    "hangup": "callee",
    "cancel_seen": true,
    "invite_cseq": 314159,
    "caller_reinvite_cseq": 314160,
    "callee_reinvite_cseq": 77,
    "reinvites": 3,
    "retransmissions": 65535,
    "hop_count": 5,
    "hops": [286331153, 572662306, 858993459, 1145324612],
    "fork_count": 6,
    "fork_tags": [161, 162, 163, 164],
    "confirmed_tag": 162,
    "recent_fingerprints": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12],
    "recent_next": 5,
    "sdp_sides": [
      {"hop": 286331153, "forward": false, "media": ["[2001:db8::1]:30000"], "rtcp": []},
      {"hop": 286331153, "forward": true, "media": ["192.0.2.10:49170", "192.0.2.10:49172"], "rtcp": []},
      {"hop": 572662306, "forward": true, "media": [null, "198.51.100.7:40002"], "rtcp": []}
    ]
  }],
  "transactions": [{
    "call_id": "reg-843817637684230@998sdasdh09",
    "cseq": 1826,
    "method": "REGISTER",
    "state": "completed",
    "request_time": "2023-11-14T22:15:00.000001Z",
    "provisional_time": "2023-11-14T22:15:00.010002Z",
    "final_time": "2023-11-14T22:15:00.020003Z",
    "attempt_time": "2023-11-14T22:14:59.990006Z",
    "retried": true,
    "last_activity": "2023-11-14T22:15:00.030004Z",
    "deadline": "2023-11-14T22:15:32.020005Z",
    "final_status": 401,
    "retransmissions": 9,
    "agent": 7,
    "hop_count": 3,
    "hops": [3735928559, 4277009102],
    "recent_fingerprints": [91, 92, 93, 94, 95, 96],
    "recent_next": 4
  }],
  "streams": [{
    "src": "[2001:db8::20]:40002",
    "dst": "198.51.100.20:30000",
    "ssrc": 2596069104,
    "first": "2023-11-14T22:13:20.520000Z",
    "last": "2023-11-14T22:13:21.520001Z",
    "packets": 501,
    "bytes": 4294967299,
    "expected": 131917,
    "received": 804,
    "lost": 131113,
    "duplicates": 15,
    "out_of_order": 16,
    "event_packets": 12,
    "comfort_noise_packets": 13,
    "markers": 14,
    "max_gap_us": 60001,
    "voice_payload_type": 111,
    "dynamic_payload_type": 111,
    "payload_type_changes": 2,
    "has_voice_reference": true,
    "candidate_clocks": true,
    "last_voice_arrival": "2023-11-14T22:13:21.500002Z",
    "last_voice_timestamp": 3405691582,
    "jitter": [
      {"clock_rate": 8000, "jitter_us": 125.5, "max_jitter_us": 900.25},
      {"clock_rate": 16000, "jitter_us": 62.75, "max_jitter_us": 450.125},
      {"clock_rate": 48000, "jitter_us": 20.5, "max_jitter_us": 150.0625},
      {"clock_rate": 90000, "jitter_us": 11.25, "max_jitter_us": 83.5}
    ],
    "bound_clock_jitter": {"clock_rate": 24000, "jitter_us": 41.5, "max_jitter_us": 300.25},
    "sequence": {
      "started": true, "validated": true, "probation": 1, "base_seq": 65500, "max_seq": 406,
      "cycles": 196608, "received": 401, "prior_expected": 402, "prior_received": 403, "gaps": 404,
      "restarts": 408, "bad_seq": 407, "window_low": 18364758544493064720, "window_high": 81985529216486895
    },
    "receiver": {
      "reports": 17, "fraction_lost": 20, "cumulative_lost": -2, "jitter": 88, "rtt_us": 41000,
      "xr_reports": 18, "xr_loss_rate": 21, "xr_discard_rate": 22, "xr_r_factor": 93,
      "xr_mos_lq_x10": 43, "xr_mos_cq_x10": 42, "xr_round_trip_ms": 19
    }
  }],
  "bindings": [{
    "media": "198.51.100.20:30000",
    "peer": "192.0.2.10:49170",
    "call_id": "a84b4c76e66710@pc33.atlanta.example.com",
    "dialog": 26379009,
    "time": "2023-11-14T22:13:20.480004Z",
    "waiting": true,
    "released": false,
    "rtcp": false,
    "codecs": [
      {"payload_type": 0, "codec": "pcmu", "clock_rate": 8000},
      {"payload_type": 8, "codec": "pcma", "clock_rate": 8000},
      {"payload_type": 9, "codec": "g722", "clock_rate": 8000},
      {"payload_type": 18, "codec": "g729", "clock_rate": 8000},
      {"payload_type": 101, "codec": "telephone_event", "clock_rate": 8000},
      {"payload_type": 111, "codec": "opus", "clock_rate": 48000},
      {"payload_type": 13, "codec": "comfort_noise", "clock_rate": "unlisted"},
      {"payload_type": 96, "codec": "other", "clock_rate": 90000}
    ],
    "answer_choice": 3
  }],
  "reported_streams": [{
    "call_id": "rtpengine-7f1a@10.0.0.9",
    "ssrc": 16909060,
    "reporter": "203.0.113.7:40000",
    "reporter_ssrc": 84281096,
    "first": "2023-11-14T22:13:25.000001Z",
    "last": "2023-11-14T22:13:30.000002Z",
    "view": {
      "reports": 34, "fraction_lost": 37, "cumulative_lost": 33, "jitter": 31, "rtt_us": 32000,
      "xr_reports": 35, "xr_loss_rate": 38, "xr_discard_rate": 39, "xr_r_factor": 80,
      "xr_mos_lq_x10": 41, "xr_mos_cq_x10": 40, "xr_round_trip_ms": 36
    }
  }]
})";

SnapshotFile sample_file() {
    SnapshotFile f;
    f.header.hepd_version = "0.1.0";
    f.header.written_at = Timestamp::from_parts(1'700'000'000, 0);
    f.header.captured_at = Timestamp::from_parts(1'699'999'999, 500'000);
    f.header.shard_count = 2;
    f.header.counts = RecordCounts{1, 1, 1, 1, 1};
    f.records = sample_image();
    return f;
}

}  // namespace

TEST_CASE("snapshot show renders every record in full", "[snapshot][json]") {
    const std::string text = to_json(sample_file());
    const Json got = Json::parse(text);
    const Json expected = Json::parse(kExpected);
    // ordered_json compares key order too: the header comes first.
    CHECK(got == expected);
    if (got != expected) WARN(nlohmann::json::diff(nlohmann::json(expected), nlohmann::json(got)).dump(1));
    CHECK(text.rfind("{\n  \"format_version\": 1,\n", 0) == 0);
    CHECK(text.back() == '\n');
}

TEST_CASE("snapshot show writes null for what is not known", "[snapshot][json]") {
    SnapshotFile f;
    f.records.dialogs.push_back(DialogRecord{"c", "t", {}});
    f.records.streams.emplace_back();
    const Json j = Json::parse(to_json(f));
    CHECK(j["written_at"].is_null());
    CHECK(j["captured_at"].is_null());
    const Json& d = j["dialogs"][0];
    CHECK(d["state"] == "trying");
    CHECK(d["caller"].is_null());
    CHECK(d["invite_time"].is_null());
    CHECK(d["q850_cause"].is_null());
    CHECK(d["caller_reinvite_cseq"].is_null());
    CHECK(d["hops"] == Json::array());
    const Json& s = j["streams"][0];
    CHECK(s["voice_payload_type"].is_null());
    CHECK(s["sequence"]["bad_seq"].is_null());
    CHECK(s["receiver"]["rtt_us"].is_null());
    CHECK(s["receiver"]["xr_r_factor"].is_null());
}

TEST_CASE("snapshot show survives Call-IDs that are not UTF-8", "[snapshot][json]") {
    SnapshotFile f;
    f.records.dialogs.push_back(DialogRecord{std::string("a\xff"
                                                         "b"),
                                             "t",
                                             {}});
    const Json j = Json::parse(to_json(f));
    CHECK(j["dialogs"][0]["call_id"] ==
          "a\xef\xbf\xbd"
          "b");  // U+FFFD in place of the bad octet
}
