// The stream table: keys, statistics, expiry and flush, caps and evictions, media bindings in
// either order, RTCP receiver views (raw and RTCP-JSON), snapshot round trips.
#include "rtp/stream_table.hpp"

#include "rtp/ntp.hpp"
#include "stream_test_support.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

using namespace hepd;
using namespace hepd::rtp;
using namespace hepd::rtp::stream_test;

namespace {

const Endpoint alice = ep("10.0.0.1:30000");
const Endpoint alice_rtcp = ep("10.0.0.1:30001");
const Endpoint bob = ep("10.0.0.2:40000");
const Endpoint bob_rtcp = ep("10.0.0.2:40001");
const Endpoint carol = ep("10.0.0.3:50000");

// `count` packets of 20 ms from `src` to `dst`, perfectly paced, starting at `start_us`.
void send(StreamTable& t, const Endpoint& src, const Endpoint& dst, std::uint32_t ssrc, int count,
          std::int64_t start_us = 0, std::uint8_t pt = 8, std::uint16_t first_seq = 100) {
    for (int i = 0; i < count; ++i)
        t.on_rtp(meta_at(start_us + i * 20'000LL, src, dst),
                 make_rtp(pt, static_cast<std::uint16_t>(first_seq + i), static_cast<std::uint32_t>(i * 160), ssrc));
}

StreamTableConfig small_config() {
    StreamTableConfig c;
    c.max_streams = 16;
    c.max_pending_media = 16;
    c.max_reported_streams = 16;
    c.stream_idle_timeout_us = 5'000'000;
    c.pending_media_timeout_us = 60'000'000;
    return c;
}

}  // namespace

TEST_CASE("streams are keyed by source, destination and SSRC", "[rtp][stream][table]") {
    StreamTable t(small_config());
    send(t, alice, bob, 0xAAAA, 10);
    send(t, carol, bob, 0xAAAA, 10);  // same SSRC, other source (replayed media)
    send(t, alice, bob, 0xBBBB, 10);  // other SSRC
    send(t, bob, alice, 0xAAAA, 10);  // the other direction
    CHECK(t.size() == 4);
    CHECK(t.media_size() == 2);  // bob:40000 and alice:30000
    CHECK(t.stats().streams_active.value() == 4);
    CHECK(t.stats().streams_started.value() == 4);
    CHECK(t.stats().rtp_packets.value() == 40);
    CHECK(t.stats().rtp_bytes.value() == 40ULL * 160);
    const Stream* s = t.find({alice, bob, 0xAAAA});
    REQUIRE(s != nullptr);
    CHECK(s->packets == 10);
    CHECK(t.find({alice, carol, 0xAAAA}) == nullptr);
}

TEST_CASE("parse errors are counted by reason and create nothing", "[rtp][stream][table]") {
    StreamTable t(small_config());
    Bytes bad = rtp_bytes(0, 1, 0, 1);
    bad[0] = 0x40;  // version 1
    t.on_rtp(meta_at(0, alice, bob), span_of(bad));
    t.on_rtp(meta_at(0, alice, bob), span_of(Bytes{0x80, 0x00, 0x01}));
    t.on_rtcp(meta_at(0, alice_rtcp, bob_rtcp), span_of(Bytes{0x81, 0xc9, 0x00, 0x07, 0, 0, 0, 1}));
    t.on_rtcp_json(meta_at(0, alice, bob), "call", span_of(std::string_view("{\"ssrc\":")));
    CHECK(t.stats().rtp_errors[static_cast<std::size_t>(RtpError::bad_version)].value() == 1);
    CHECK(t.stats().rtp_errors[static_cast<std::size_t>(RtpError::too_short)].value() == 1);
    CHECK(t.stats().rtcp_errors[static_cast<std::size_t>(RtcpError::length_overflow)].value() == 1);
    CHECK(t.stats().rtcp_json_errors[static_cast<std::size_t>(RtcpJsonError::truncated)].value() == 1);
    CHECK(t.size() == 0);
    CHECK(t.stats().rtp_packets.value() == 0);

    t.on_rtp(meta_at(0, alice, bob), span_of(rtp_bytes(0, 1, 0, 1)));
    CHECK(t.size() == 1);
    CHECK(t.stats().rtp_packets.value() == 1);
}

TEST_CASE("truncations at every length are counted and never create state", "[rtp][stream][table][hostile]") {
    StreamTable t(small_config());
    // RTP with a CSRC, a one-octet-form extension and padding: every prefix is malformed.
    // clang-format off
    Bytes packet = {0xb1, 0x08, 0x00, 0x10, 0, 0, 0, 0x50, 0, 0, 0, 0x07,  // V=2 P X CC=1, PT 8
                    0x11, 0x22, 0x33, 0x44,                                  // CSRC
                    0xbe, 0xde, 0x00, 0x01, 0x10, 0xaa, 0x00, 0x00};         // extension, 1 word
    // clang-format on
    for (int i = 0; i < 20; ++i) packet.push_back(0xd5);
    packet.push_back(0x00);
    packet.push_back(0x00);
    packet.push_back(0x03);  // padding count 3
    std::uint64_t errors = 0;
    for (std::size_t n = 0; n < packet.size(); ++n) {
        const Bytes prefix(packet.begin(), packet.begin() + static_cast<std::ptrdiff_t>(n));
        t.on_rtp(meta_at(0, alice, bob), span_of(prefix));
    }
    for (const Counter& c : t.stats().rtp_errors) errors += c.value();
    CHECK(errors == packet.size());
    CHECK(t.size() == 0);
    t.on_rtp(meta_at(0, alice, bob), span_of(packet));
    REQUIRE(t.size() == 1);
    CHECK(t.find({alice, bob, 7})->bytes == 20);

    // An RR whose length says more than it holds, and every prefix of a real one.
    const Bytes rr = receiver_report(9, {Block{7, 5}, Block{8, 6}});
    std::uint64_t rtcp_errors = 0;
    for (std::size_t n = 0; n < rr.size(); ++n) {
        const Bytes prefix(rr.begin(), rr.begin() + static_cast<std::ptrdiff_t>(n));
        t.on_rtcp(meta_at(0, bob_rtcp, alice_rtcp), span_of(prefix));
    }
    Bytes lying = rr;
    lying[0] = 0x83;  // RC 3, two blocks present
    t.on_rtcp(meta_at(0, bob_rtcp, alice_rtcp), span_of(lying));
    for (const Counter& c : t.stats().rtcp_errors) rtcp_errors += c.value();
    CHECK(rtcp_errors == rr.size() + 1);
    CHECK(t.find({alice, bob, 7})->receiver.get().reports == 0);
    CHECK_FALSE(t.find({alice, bob, 7})->receiver.allocated());  // no view made for a report that was not read
    CHECK(t.stats().rtcp_reports[static_cast<std::size_t>(ReportSource::rtcp)].value() == 0);
}

TEST_CASE("error counters cover every parser error and nothing more", "[rtp][stream][stats]") {
    CHECK(to_string(static_cast<RtpError>(kRtpErrorCount - 1)) != "unknown");
    CHECK(to_string(static_cast<RtpError>(kRtpErrorCount)) == "unknown");
    CHECK(to_string(static_cast<RtcpError>(kRtcpErrorCount - 1)) != "unknown");
    CHECK(to_string(static_cast<RtcpError>(kRtcpErrorCount)) == "unknown");
    CHECK(to_string(FinishReason::evicted) == "evicted");
    CHECK(to_string(ReportSource::rtcp_json) == "rtcp_json");
    CHECK(to_string(StreamTableKind::pending_media) == "pending_media");
    CHECK(to_string(CodecLabel::telephone_event) == "telephone_event");
}

TEST_CASE("idle streams finish once, feeding the statistics exactly once", "[rtp][stream][table][expiry]") {
    StreamTable t(small_config());
    RecordingSink sink;
    t.set_sink(&sink);
    send(t, alice, bob, 1, 50);  // 0 .. 0.98 s
    // Second stream: seqs 100..149 without 120 and 121.
    for (int i = 0; i < 50; ++i) {
        if (i == 20 || i == 21) continue;
        t.on_rtp(meta_at(i * 20'000LL, bob, alice), make_rtp(0, static_cast<std::uint16_t>(100 + i), i * 160U, 2));
    }
    CHECK(t.stats().duplicate_packets.value() == 0);

    t.expire(Timestamp{kBaseUs + 980'000 + 4'999'999});  // just under the idle timeout
    CHECK(t.size() == 2);
    CHECK(sink.finished.empty());

    t.expire(Timestamp{kBaseUs + 980'000 + 5'000'000});
    CHECK(t.size() == 0);
    REQUIRE(sink.finished.size() == 2);
    CHECK(t.stats().streams_active.value() == 0);
    CHECK(t.stats().streams_finished[static_cast<std::size_t>(FinishReason::idle)].value() == 2);
    CHECK(t.stats().lost_packets.value() == 2);
    CHECK(t.stats().jitter_seconds.count() == 2);
    CHECK(t.stats().mos.count() == 2);
    CHECK(t.stats().finished_streams_by_codec[static_cast<std::size_t>(CodecLabel::pcma)].value() == 1);
    CHECK(t.stats().finished_streams_by_codec[static_cast<std::size_t>(CodecLabel::pcmu)].value() == 1);
    const Finished* lossy = sink.by_ssrc(2);
    REQUIRE(lossy != nullptr);
    CHECK(lossy->reason == FinishReason::idle);
    CHECK(lossy->summary.lost == 2);
    CHECK(lossy->summary.expected == 49);
    CHECK_FALSE(lossy->bound);

    t.expire(Timestamp{kBaseUs + 100'000'000});
    t.finish_all(Timestamp{kBaseUs + 100'000'000});
    CHECK(sink.finished.size() == 2);
    CHECK(t.stats().streams_finished_total() == 2);
    CHECK(t.stats().jitter_seconds.count() == 2);
}

TEST_CASE("finish_all flushes every stream for the offline report", "[rtp][stream][table][expiry]") {
    StreamTable t(small_config());
    RecordingSink sink;
    t.set_sink(&sink);
    send(t, alice, bob, 1, 5);
    send(t, bob, alice, 2, 5);
    t.finish_all(Timestamp{kBaseUs + 100'000});
    CHECK(t.size() == 0);
    CHECK(t.media_size() == 0);
    REQUIRE(sink.finished.size() == 2);
    CHECK(sink.finished[0].reason == FinishReason::flushed);
    CHECK(t.stats().streams_finished[static_cast<std::size_t>(FinishReason::flushed)].value() == 2);
    CHECK(t.stats().streams_active.value() == 0);
}

TEST_CASE("a source that never passes probation is scored not at all", "[rtp][stream][table][probation]") {
    // RFC 3550 A.1: two packets in sequence validate a source. Every other sequence number
    // missing (half the packets lost), a lone packet, and a flow whose numbers never run on
    // have no loss figure: they must not count as perfect calls.
    StreamTable t(small_config());
    RecordingSink sink;
    t.set_sink(&sink);
    for (int i = 0; i < 100; ++i)
        t.on_rtp(meta_at(i * 40'000LL, alice, bob), make_rtp(8, static_cast<std::uint16_t>(1000 + 2 * i), i * 320U, 1));
    send(t, bob, alice, 2, 1);
    send(t, carol, alice, 3, 50);  // a healthy stream beside them
    t.finish_all(Timestamp{kBaseUs + 10'000'000});
    REQUIRE(sink.finished.size() == 3);
    const Finished* halved = sink.by_ssrc(1);
    REQUIRE(halved != nullptr);
    CHECK(halved->stream.packets == 100);
    CHECK_FALSE(halved->summary.has_quality);
    CHECK(halved->summary.expected == 0);
    const Finished* lone = sink.by_ssrc(2);
    REQUIRE(lone != nullptr);
    CHECK_FALSE(lone->summary.has_quality);
    const Finished* healthy = sink.by_ssrc(3);
    REQUIRE(healthy != nullptr);
    CHECK(healthy->summary.has_quality);
    CHECK(t.stats().unvalidated_streams.value() == 2);
    CHECK(t.stats().mos.count() == 1);
    CHECK(t.stats().loss_ratio.count() == 1);
    CHECK(t.stats().jitter_seconds.count() == 1);
}

TEST_CASE("a restart needs the next packet to follow the held one in timestamp too", "[rtp][stream][table][restart]") {
    StreamTable t(small_config());
    RecordingSink sink;
    t.set_sink(&sink);
    // One packet of 100 with its timestamp 50 s out of line, its neighbours in line: a stray.
    for (int i = 0; i < 100; ++i) {
        const std::uint32_t ts = static_cast<std::uint32_t>(i * 160) + (i == 50 ? 400'000U : 0U);
        t.on_rtp(meta_at(i * 20'000LL, alice, bob), make_rtp(0, static_cast<std::uint16_t>(100 + i), ts, 1));
    }
    // A sender that restarts numbering and timestamps: held, confirmed by the next packet.
    send(t, bob, alice, 2, 50, 0, 0, 100);
    for (int i = 0; i < 50; ++i)
        t.on_rtp(
            meta_at(1'000'000 + i * 20'000LL, bob, alice),
            make_rtp(0, static_cast<std::uint16_t>(30'000 + i), 9'000'000U + static_cast<std::uint32_t>(i * 160), 2));
    t.finish_all(Timestamp{kBaseUs + 10'000'000});
    CHECK(t.stats().streams_finished[static_cast<std::size_t>(FinishReason::restarted)].value() == 1);
    REQUIRE(sink.finished.size() == 3);
    const Finished* stray = sink.by_ssrc(1);
    REQUIRE(stray != nullptr);
    CHECK(stray->reason == FinishReason::flushed);
    CHECK(stray->stream.packets == 100);
    CHECK(stray->summary.expected == 99);  // A.1: counted from the packet that validated the source
    CHECK(stray->summary.lost == 0);
    // The stray is the sender's slip, not delay variation: the timing of its neighbours, paced
    // exactly, says jitter 0 and the best MOS.
    CHECK(stray->summary.max_jitter_ms == 0.0);
    CHECK(stray->summary.mos == Approx(4.41).margin(0.01));
}

TEST_CASE("a packet far out of line in sequence and timestamp leaves the timing alone",
          "[rtp][stream][table][restart]") {
    // A leftover of a switched or replayed source with the stream's SSRC: RFC 3550 A.1 ignores
    // it (a jump its successor does not confirm); it must not reach the A.8 estimate either.
    StreamTable t(small_config());
    RecordingSink sink;
    t.set_sink(&sink);
    for (int i = 0; i < 500; ++i) {
        t.on_rtp(meta_at(i * 20'000LL, alice, bob),
                 make_rtp(0, static_cast<std::uint16_t>(100 + i), static_cast<std::uint32_t>(i * 160), 1));
        if (i == 250) t.on_rtp(meta_at(i * 20'000LL + 5'000, alice, bob), make_rtp(0, 30'000, 123'456'789U, 1));
    }
    t.finish_all(Timestamp{kBaseUs + 20'000'000});
    REQUIRE(sink.finished.size() == 1);
    const Finished& f = sink.finished[0];
    CHECK(f.stream.packets == 501);
    CHECK(f.summary.lost == 0);
    CHECK(f.summary.max_jitter_ms == 0.0);
    CHECK(f.summary.mos == Approx(4.41).margin(0.01));
    CHECK(t.stats().streams_finished[static_cast<std::size_t>(FinishReason::restarted)].value() == 0);
}

TEST_CASE("a network stall delivered in a burst is jitter, not a restart", "[rtp][stream][table][restart]") {
    // Packets 200-274 (1.5 s of audio) held up in the network and delivered 2 us apart at the
    // end of the stall: their numbers and timestamps run on, only their arrival is late.
    StreamTable t(small_config());
    RecordingSink sink;
    t.set_sink(&sink);
    double jitter = 0;
    double max_jitter = 0;
    std::int64_t previous_arrival = 0;
    for (int i = 0; i < 500; ++i) {
        const std::int64_t arrival =
            i >= 200 && i < 275 ? 274 * 20'000LL + 1'000 + (i - 200) * 2LL : static_cast<std::int64_t>(i) * 20'000;
        t.on_rtp(meta_at(arrival, alice, bob),
                 make_rtp(0, static_cast<std::uint16_t>(100 + i), static_cast<std::uint32_t>(i * 160), 9));
        if (i > 0) {  // RFC 3550 A.8, in 8 kHz ticks
            const double d = static_cast<double>(arrival - previous_arrival) * 8000 / 1e6 - 160;
            jitter += (std::fabs(d) - jitter) / 16;
            max_jitter = std::max(max_jitter, jitter);
        }
        previous_arrival = arrival;
    }
    t.finish_all(Timestamp{kBaseUs + 20'000'000});
    CHECK(t.stats().streams_finished[static_cast<std::size_t>(FinishReason::restarted)].value() == 0);
    REQUIRE(sink.finished.size() == 1);
    const Finished& f = sink.finished[0];
    CHECK(f.stream.packets == 500);
    CHECK(f.summary.expected == 499);
    CHECK(f.summary.lost == 0);
    CHECK(f.summary.max_jitter_ms == Approx(max_jitter / 8).margin(0.01));
}

TEST_CASE("a packet held when its stream ends counts as the stray it was", "[rtp][stream][table][restart]") {
    StreamTable t(small_config());
    RecordingSink sink;
    t.set_sink(&sink);
    send(t, alice, bob, 1, 30);
    t.on_rtp(meta_at(30 * 20'000LL, alice, bob), make_rtp(8, 100 + 30 + 10'000, 30 * 160, 1));  // a jump: held
    t.finish_all(Timestamp{kBaseUs + 10'000'000});
    REQUIRE(sink.finished.size() == 1);
    CHECK(sink.finished[0].stream.packets == 31);
    CHECK(sink.finished[0].stream.bytes == t.stats().rtp_bytes.value());
}

TEST_CASE("a flood of 100k SSRCs keeps memory flat and counts every eviction", "[rtp][stream][table][cap]") {
    StreamTableConfig c = small_config();
    c.max_streams = 1000;
    StreamTable t(c);
    RecordingSink sink;
    t.set_sink(&sink);
    std::size_t memory_at_cap = 0;
    for (std::uint32_t i = 0; i < 100'000; ++i) {
        t.on_rtp(meta_at(i, alice, bob), make_rtp(0, 1, 0, i));
        if (i == 9'999) memory_at_cap = t.memory_bytes();
    }
    CHECK(t.size() == 1000);
    CHECK(t.media_size() == 1);
    CHECK(t.memory_bytes() == memory_at_cap);
    CHECK(t.stats().evictions[static_cast<std::size_t>(StreamTableKind::streams)].value() == 99'000);
    CHECK(t.stats().streams_finished[static_cast<std::size_t>(FinishReason::evicted)].value() == 99'000);
    CHECK(t.stats().streams_active.value() == 1000);
    CHECK(sink.finished.size() == 99'000);
    CHECK(sink.finished.front().key.ssrc == 0);  // least recently active first
    CHECK(sink.finished.back().key.ssrc == 98'999);
    CHECK(t.find({alice, bob, 99'999}) != nullptr);
    CHECK(t.find({alice, bob, 98'999}) == nullptr);

    t.expire(Timestamp{kBaseUs + 10'000'000});
    CHECK(t.stats().streams_active.value() == 0);
    CHECK(t.media_size() == 0);
    CHECK(t.stats().streams_finished_total() == 100'000);
}

TEST_CASE("eviction keeps the least recently active streams' neighbours intact", "[rtp][stream][table][cap]") {
    StreamTableConfig c = small_config();
    c.max_streams = 3;
    StreamTable t(c);
    send(t, alice, bob, 1, 1, 0);
    send(t, alice, bob, 2, 1, 10);
    send(t, alice, bob, 3, 1, 20);
    send(t, alice, bob, 1, 1, 30, 8, 101);  // stream 1 becomes the most recent
    send(t, carol, bob, 4, 1, 40);          // evicts stream 2
    CHECK(t.find({alice, bob, 2}) == nullptr);
    CHECK(t.find({alice, bob, 1}) != nullptr);
    // The RTCP lookup walks the media entry's list: it must still reach 1, 3 and 4.
    for (const std::uint32_t ssrc : {1U, 3U, 4U}) {
        t.on_rtcp(meta_at(50, bob_rtcp, alice_rtcp), span_of(receiver_report(9, {Block{ssrc, 1}})));
    }
    CHECK(t.stats().rtcp_unmatched_blocks.value() == 0);
    CHECK(t.find({alice, bob, 3})->receiver.get().reports == 1);
    CHECK(t.find({carol, bob, 4})->receiver.get().reports == 1);
}

TEST_CASE("a binding without codecs takes its call's from the address, not the newest call's",
          "[rtp][stream][table][binding]") {
    // A dialer's one port offers to two calls at once: call X's binding there has its rtpmap
    // (Opus on 111), then call Y's offer is the address's newest. X's answer pairs the port with
    // X's callee, without codecs (they came with the offer): they are X's, not Y's.
    StreamTable t(small_config());
    RecordingSink sink;
    t.set_sink(&sink);
    MediaBinding x = media_binding(bob, "call-x", 0, {codec(111, "opus", 48000)});
    x.peer = alice;
    t.bind(x);
    t.bind(media_binding(bob, "call-y", 10, {codec(0, "PCMU", 8000)}));
    MediaBinding answer = media_binding(bob, "call-x", 20, {});
    answer.peer = carol;
    t.bind(answer);
    for (int i = 0; i < 20; ++i)
        t.on_rtp(meta_at(100'000 + i * 20'000LL, carol, bob),
                 make_rtp(111, static_cast<std::uint16_t>(i), static_cast<std::uint32_t>(i * 960), 0x0C, 80));
    t.finish_all(Timestamp{kBaseUs + 5'000'000});
    const Finished* f = sink.by_ssrc(0x0C);
    REQUIRE(f != nullptr);
    CHECK(f->call_id == "call-x");
    CHECK(f->summary.codec == Codec::opus);
}

TEST_CASE("RTCP to a shared address: each report reaches the stream it goes back to", "[rtp][stream][table][rtcp]") {
    // 80 callers (one SSRC for all, as sipp sends) to one media-server port; the server reports
    // to each caller's RTCP port about that caller's stream: more streams than a walk looks at.
    StreamTableConfig c = small_config();
    c.max_streams = 128;
    StreamTable t(c);
    const auto caller = [](int i) {
        return Endpoint{IpAddress::v4(0x0a010000U + static_cast<std::uint32_t>(i)), 40000};
    };
    for (int i = 0; i < 80; ++i) send(t, caller(i), bob, 0x5150, 3, i * 100LL);
    const Endpoint server_rtcp{bob.address, static_cast<std::uint16_t>(bob.port + 1)};
    for (int i = 0; i < 80; ++i)
        t.on_rtcp(meta_at(100'000 + i, server_rtcp, Endpoint{caller(i).address, 40001}),
                  span_of(receiver_report(9, {Block{0x5150, 1}})));
    CHECK(t.stats().rtcp_unmatched_blocks.value() == 0);
    for (int i = 0; i < 80; ++i) {
        INFO("caller " << i);
        REQUIRE(t.find({caller(i), bob, 0x5150}) != nullptr);
        CHECK(t.find({caller(i), bob, 0x5150})->receiver.get().reports == 1);
    }
    // A report back to an address none of them sends from could be any of theirs: nobody's.
    t.on_rtcp(meta_at(200'000, server_rtcp, alice_rtcp), span_of(receiver_report(9, {Block{0x5150, 1}})));
    CHECK(t.stats().rtcp_unmatched_blocks.value() == 1);
}

namespace {

struct Outcome {
    std::vector<Finished> finished;
    std::uint64_t late_bindings = 0;
};

// A call's media: Opus (dynamic, 48 kHz) with RFC 4733 events alice -> bob, PCMA bob -> alice.
// The answer's bindings (each address paired with the other) are applied before any packet or
// after `packets_before` packets, while both streams are still sending.
Outcome run_call(int packets_before) {
    StreamTable t(small_config());
    RecordingSink sink;
    t.set_sink(&sink);
    std::uint32_t state = 7;
    for (int i = 0; i < 200; ++i) {
        if (i == packets_before) {
            MediaBinding to_bob = media_binding(bob, "call-1@example", i * 20'000LL,
                                                {codec(111, "opus", 48000), codec(101, "telephone-event", 8000)});
            to_bob.peer = alice;
            MediaBinding to_alice = media_binding(alice, "call-1@example", i * 20'000LL, {codec(8, "PCMA", 8000)});
            to_alice.peer = bob;
            t.bind(to_bob);
            t.bind(to_alice);
        }
        state = state * 1664525U + 1013904223U;
        const std::int64_t at = i * 20'000LL + (state >> 8) % 15'000;
        const bool event = i >= 100 && i < 105;
        t.on_rtp(meta_at(at, alice, bob), make_rtp(event ? 101 : 111, static_cast<std::uint16_t>(i),
                                                   event ? 96000U : i * 960U, 0x0A, event ? 4 : 80));
        t.on_rtp(meta_at(at + 3, bob, alice), make_rtp(8, static_cast<std::uint16_t>(5000 + i), i * 160U, 0x0B));
    }
    t.finish_all(Timestamp{kBaseUs + 5'000'000});
    return {sink.finished, t.stats().late_bindings.value()};
}

}  // namespace

TEST_CASE("an offer overtaken by its media joins the stream that began just before it",
          "[rtp][stream][table][binding]") {
    // Live, the media of a quickly answered call can reach their shard before the offer's
    // binding from the SIP shard (a batch age apart). The offer's address alone (no peer yet)
    // then meets an unbound stream that began after the offer was sent: that is its call's.
    StreamTable t(small_config());
    RecordingSink sink;
    t.set_sink(&sink);
    for (int i = 0; i < 5; ++i)
        t.on_rtp(meta_at(100'000 + i * 20'000LL, bob, alice),
                 make_rtp(8, static_cast<std::uint16_t>(i), static_cast<std::uint32_t>(i * 160), 0x0B));
    t.bind(media_binding(alice, "call-1@example", 50'000, {codec(8, "PCMA", 8000)}));
    // A stream to the address that began long before the offer is another call's: it ends.
    t.on_rtp(meta_at(200'000, carol, bob), make_rtp(8, 1, 160, 0x0C));
    t.on_rtp(meta_at(5'000'000, carol, bob), make_rtp(8, 2, 320, 0x0C));
    t.bind(media_binding(bob, "call-2@example", 5'100'000, {codec(8, "PCMA", 8000)}));
    t.finish_all(Timestamp{kBaseUs + 6'000'000});
    CHECK(t.stats().late_bindings.value() == 1);
    const Finished* joined = sink.by_ssrc(0x0B);
    REQUIRE(joined != nullptr);
    CHECK(joined->bound);
    CHECK(joined->call_id == "call-1@example");
    CHECK(joined->reason == FinishReason::flushed);
    const Finished* older = sink.by_ssrc(0x0C);
    REQUIRE(older != nullptr);
    CHECK(older->reason == FinishReason::rebound);
}

TEST_CASE("a released binding keeps its streams but takes no new one", "[rtp][stream][table][binding]") {
    // The call ended (or left the address) while its stream still runs: that stream keeps its
    // call; RTP that begins afterwards from elsewhere (a later user of the address) is not it.
    StreamTable t(small_config());
    RecordingSink sink;
    t.set_sink(&sink);
    t.bind(media_binding(bob, "call-1@example", 0, {codec(0, "PCMU", 8000)}));
    send(t, alice, bob, 1, 20);
    t.unbind(bob, Endpoint{}, "call-1@example", 0, Timestamp{kBaseUs + 400'000});
    send(t, carol, bob, 2, 20, 500'000);
    t.finish_all(Timestamp{kBaseUs + 2'000'000});
    const Finished* kept = sink.by_ssrc(1);
    REQUIRE(kept != nullptr);
    CHECK(kept->bound);
    CHECK(kept->call_id == "call-1@example");
    const Finished* later = sink.by_ssrc(2);
    REQUIRE(later != nullptr);
    CHECK_FALSE(later->bound);
}

TEST_CASE("binding first or packets first give the same streams", "[rtp][stream][table][binding]") {
    const Outcome first = run_call(0);
    CHECK(first.late_bindings == 0);
    for (const int after : {1, 37, 199}) {
        INFO("binding after " << after << " packets");
        const Outcome late = run_call(after);
        CHECK(late.late_bindings == 2);
        REQUIRE(late.finished.size() == first.finished.size());
        for (std::size_t i = 0; i < first.finished.size(); ++i) {
            const Finished& a = first.finished[i];
            const Finished& b = late.finished[i];
            CHECK(a.key == b.key);
            CHECK(a.stream == b.stream);
            CHECK(b.bound);
            CHECK(a.call_id == b.call_id);
            CHECK(a.summary.codec == b.summary.codec);
            CHECK(a.summary.clock_rate == b.summary.clock_rate);
            CHECK(a.summary.jitter_ms == b.summary.jitter_ms);
            CHECK(a.summary.max_jitter_ms == b.summary.max_jitter_ms);
            CHECK(a.summary.mos == b.summary.mos);
            CHECK(a.summary.lost == b.summary.lost);
        }
    }
    REQUIRE(first.finished.size() == 2);
    for (const Finished& f : first.finished) {
        CHECK(f.call_id == "call-1@example");
        if (f.key.ssrc == 0x0A) {
            CHECK(f.summary.codec == Codec::opus);
            CHECK(f.summary.clock_rate == 48000);
            CHECK(f.summary.clock_from_binding);
            CHECK(f.stream.event_packets == 5);
            CHECK(f.summary.lost == 0);
        } else {
            CHECK(f.summary.codec == Codec::pcma);
        }
    }
}

TEST_CASE("a binding reaches streams created later, also after the first ones ended", "[rtp][stream][table][binding]") {
    StreamTable t(small_config());
    t.bind(media_binding(ep("10.0.0.2:40001"), "c@x", 0, {codec(8, "PCMA", 8000)}));  // RTCP port: same media key
    CHECK(t.pending_size() == 1);
    CHECK(t.stats().pending_bindings.value() == 1);
    send(t, alice, bob, 1, 10);
    CHECK(t.pending_size() == 0);
    CHECK(t.stats().pending_bindings.value() == 0);
    REQUIRE(t.binding_of({alice, bob, 1}) != nullptr);
    CHECK(t.binding_of({alice, bob, 1})->call_id == "c@x");

    t.expire(Timestamp{kBaseUs + 10'000'000});
    CHECK(t.size() == 0);
    CHECK(t.pending_size() == 1);            // kept for streams to come
    send(t, alice, bob, 2, 10, 20'000'000);  // a new SSRC after a re-INVITE
    REQUIRE(t.binding_of({alice, bob, 2}) != nullptr);
    CHECK(t.binding_of({alice, bob, 2})->call_id == "c@x");
    CHECK(t.binding_of({carol, alice, 2}) == nullptr);
}

TEST_CASE("an SSRC change is a new stream; the old one ends when idle", "[rtp][stream][table]") {
    StreamTable t(small_config());
    RecordingSink sink;
    t.set_sink(&sink);
    t.bind(media_binding(bob, "restart@x", 0, {codec(0, "PCMU", 8000)}));
    send(t, alice, bob, 0x1111, 50, 0, 0, 100);         // until 0.98 s
    send(t, alice, bob, 0x2222, 200, 1'000'000, 0, 7);  // the sender restarted: new SSRC and numbering
    CHECK(t.size() == 2);
    CHECK(t.media_size() == 1);
    t.expire(Timestamp{kBaseUs + 6'000'000});  // the first is idle for 5 s, the second is not
    REQUIRE(sink.finished.size() == 1);
    CHECK(sink.finished[0].key.ssrc == 0x1111);
    CHECK(sink.finished[0].call_id == "restart@x");
    CHECK(sink.finished[0].summary.lost == 0);
    CHECK(t.stats().streams_active.value() == 1);
    t.finish_all(Timestamp{kBaseUs + 6'000'000});
    REQUIRE(sink.finished.size() == 2);
    CHECK(sink.finished[1].key.ssrc == 0x2222);
    CHECK(sink.finished[1].call_id == "restart@x");
    CHECK(sink.finished[1].summary.expected == 199);
    CHECK(sink.finished[1].summary.lost == 0);
    CHECK(t.stats().lost_packets.value() == 0);
}

TEST_CASE("a binding clock outside the candidates is counted when the stream finishes",
          "[rtp][stream][table][binding]") {
    StreamTable t(small_config());
    t.bind(media_binding(bob, "l16@x", 0, {codec(96, "L16", 37800)}));  // no code in kClockRates
    send(t, alice, bob, 1, 20, 0, 96);
    send(t, alice, carol, 2, 20, 0, 96);  // unbound: the smoothest candidate, nothing to count
    t.finish_all(Timestamp{kBaseUs + 1'000'000});
    CHECK(t.stats().clock_rate_unmatched.value() == 1);
    CHECK(t.stats().finished_streams_by_codec[static_cast<std::size_t>(CodecLabel::other)].value() == 2);
}

namespace {

// RFC 3550 A.8 over (arrival us, RTP timestamp) pairs, in timestamp units, as written.
double reference_max_jitter(const std::vector<std::pair<std::int64_t, std::uint32_t>>& sent, double rate) {
    double j = 0.0;
    double max = 0.0;
    for (std::size_t i = 1; i < sent.size(); ++i) {
        const double d = static_cast<double>(sent[i].first - sent[i - 1].first) * rate / 1e6 -
                         static_cast<double>(static_cast<std::int32_t>(sent[i].second - sent[i - 1].second));
        j += (std::fabs(d) - j) / 16.0;
        max = std::max(max, j);
    }
    return max;
}

}  // namespace

TEST_CASE("a dynamic payload type's rtpmap clock outside the candidates is the jitter's clock",
          "[rtp][stream][table][binding][jitter]") {
    // SILK at 24 kHz, G.722.1C at 32 kHz, L16 at 44.1 kHz, iLBC-like 12 kHz: RFC 3550 A.8 jitter is
    // in timestamp units of the payload's own clock; a neighbouring candidate's scales it wrongly.
    struct Case {
        const char* name;
        std::uint32_t rate;
    };
    for (const Case c : {Case{"SILK", 24000}, Case{"G7221", 32000}, Case{"L16", 44100}, Case{"X-NB", 12000}}) {
        INFO(c.name << "/" << c.rate);
        StreamTable t(small_config());
        RecordingSink sink;
        t.set_sink(&sink);
        t.bind(media_binding(bob, "clock@x", 0, {codec(104, c.name, c.rate), codec(101, "telephone-event", 8000)}));
        std::vector<std::pair<std::int64_t, std::uint32_t>> sent;
        const std::uint32_t step = c.rate / 50;  // 20 ms
        for (int i = 0; i < 300; ++i) {
            const std::int64_t at = i * 20'000LL + ((i * 7) % 5) * 3'000LL;
            const auto ts = static_cast<std::uint32_t>(12345 + step * i);
            t.on_rtp(meta_at(at, alice, bob), make_rtp(104, static_cast<std::uint16_t>(100 + i), ts, 0x33, 60));
            sent.emplace_back(at, ts);
        }
        t.finish_all(Timestamp{kBaseUs + 7'000'000});
        REQUIRE(sink.finished.size() == 1);
        const StreamSummary& sum = sink.finished[0].summary;
        CHECK(sum.clock_rate == c.rate);
        CHECK(sum.clock_from_binding);
        CHECK_FALSE(sum.clock_unmatched);
        CHECK(sum.max_jitter_ms == Approx(reference_max_jitter(sent, c.rate) * 1000.0 / c.rate).epsilon(0.001));
        CHECK(t.stats().clock_rate_unmatched.value() == 0);
    }
}

TEST_CASE("comfort noise on a dynamic payload type is not the stream's voice, nor its codec",
          "[rtp][stream][table][binding][jitter]") {
    // G.729 with wideband and narrowband CN mapped as WebRTC and FreeSWITCH offer them
    // (a=rtpmap:105 CN/16000, a=rtpmap:13 CN/8000), silence suppression: a 1-octet CN packet
    // at the start of each silence (RFC 3389: sent at irregular intervals), voice resumes with
    // the marker bit.
    StreamTable t(small_config());
    RecordingSink sink;
    t.set_sink(&sink);
    t.bind(media_binding(bob, "cn@x", 0,
                         {codec(18, "G729", 8000), codec(105, "CN", 16000), codec(13, "CN", 8000),
                          codec(101, "telephone-event", 8000)}));
    std::vector<std::pair<std::int64_t, std::uint32_t>> voice;
    std::uint16_t seq = 100;
    std::uint32_t ts = 0;
    std::int64_t at = 0;
    for (int burst = 0; burst < 4; ++burst) {
        for (int i = 0; i < 100; ++i, ++seq, ts += 160, at += 20'000) {
            const std::int64_t arrival = at + (i % 4) * 1'000LL;
            t.on_rtp(meta_at(arrival, alice, bob), make_rtp(18, seq, ts, 0x99, 20, i == 0 && burst > 0));
            voice.emplace_back(arrival, ts);
        }
        t.on_rtp(meta_at(at, alice, bob), make_rtp(105, seq++, ts * 2, 0x99, 1));
        at += 2'000'000;
        ts += 16'000;
    }
    t.finish_all(Timestamp{kBaseUs + 20'000'000});
    REQUIRE(sink.finished.size() == 1);
    const Finished& f = sink.finished[0];
    CHECK(f.stream.comfort_noise_packets == 4);
    CHECK(f.stream.voice_packets() == 400);
    CHECK(f.stream.voice_payload_type == 18);
    CHECK(f.stream.payload_type_changes == 0);
    CHECK(f.summary.codec == Codec::g729);
    CHECK(f.summary.lost == 0);
    CHECK(f.summary.max_jitter_ms == Approx(reference_max_jitter(voice, 8000) / 8.0).epsilon(0.001));
    // G.729's impairment (Ie 11), not comfort noise's default.
    CHECK(f.summary.r_factor == Approx(93.2 - 11.0).margin(0.01));
    CHECK(t.stats().finished_streams_by_codec[static_cast<std::size_t>(CodecLabel::g729)].value() == 1);
}

namespace {

// A stream with silence suppression and comfort noise on dynamic payload type 105 (one CN
// packet at the start of each silence), optionally beginning in silence (CN first), its SDP
// bound before packet `bind_at` (0: before the first; live, a late 200 OK's HEP binds it in the
// middle).
Finished play_with_dynamic_cn(const MediaBinding& binding, std::uint8_t voice_pt, std::uint32_t rate, bool cn_first,
                              std::size_t bind_at, std::uint64_t* late_bindings = nullptr) {
    struct Packet {
        std::int64_t at;
        std::uint8_t pt;
        std::uint16_t seq;
        std::uint32_t ts;
        std::size_t size;
        bool marker;
    };
    std::vector<Packet> packets;
    std::uint16_t seq = 100;
    std::uint32_t ts = 0;
    std::int64_t at = 0;
    const std::uint32_t step = rate / 50;  // 20 ms
    if (cn_first) {
        packets.push_back({at, 105, seq++, ts, 1, false});
        at += 500'000;
        ts += rate / 2;
    }
    for (int burst = 0; burst < 4; ++burst) {
        for (int i = 0; i < 100; ++i, ++seq, ts += step, at += 20'000)
            packets.push_back({at + (i % 4) * 1'000LL, voice_pt, seq, ts, 20, i == 0 && (burst > 0 || cn_first)});
        packets.push_back({at, 105, seq++, ts, 1, false});
        at += 2'000'000;
        ts += 2 * rate;
    }
    StreamTable t(small_config());
    RecordingSink sink;
    t.set_sink(&sink);
    for (std::size_t i = 0; i < packets.size(); ++i) {
        if (i == bind_at) t.bind(binding);
        const Packet& p = packets[i];
        t.on_rtp(meta_at(p.at, alice, bob), make_rtp(p.pt, p.seq, p.ts, 0x99, p.size, p.marker));
    }
    t.finish_all(Timestamp{kBaseUs + 20'000'000});
    if (late_bindings != nullptr) *late_bindings = t.stats().late_bindings.value();
    REQUIRE(sink.finished.size() == 1);
    return sink.finished[0];
}

}  // namespace

TEST_CASE("comfort noise on a dynamic payload type before a late binding is comfort noise once it binds",
          "[rtp][stream][table][binding][jitter]") {
    // Live, RTP may come before its SDP (the 200 OK's HEP later than the first RTP): the CN
    // packets before the binding looked like voice of another payload type. When the binding
    // names 105 CN they are re-classified: the same figures as with the binding first.
    const auto check = [](const char* name, const MediaBinding& binding, std::uint8_t voice_pt, std::uint32_t rate,
                          bool cn_first, std::size_t bind_at) {
        INFO(name);
        const Finished early = play_with_dynamic_cn(binding, voice_pt, rate, cn_first, 0);
        std::uint64_t late_bindings = 0;
        const Finished late = play_with_dynamic_cn(binding, voice_pt, rate, cn_first, bind_at, &late_bindings);
        REQUIRE(late.bound);
        CHECK(late_bindings == 1);
        CHECK(early.stream.comfort_noise_packets == (cn_first ? 5U : 4U));
        CHECK(late.stream.comfort_noise_packets == early.stream.comfort_noise_packets);
        CHECK(late.stream.voice_packets() == 400);
        CHECK(late.stream.voice_payload_type == voice_pt);
        CHECK(late.stream.payload_type_changes == 0);
        CHECK(late.summary.codec == early.summary.codec);
        CHECK(late.summary.clock_rate == rate);
        CHECK(late.summary.jitter_slot == early.summary.jitter_slot);
        // One jitter sample fewer (the first voice packet after the early CN has no reference).
        CHECK(late.summary.max_jitter_ms == Approx(early.summary.max_jitter_ms).epsilon(0.05));
        CHECK(late.summary.r_factor == Approx(early.summary.r_factor).margin(0.05));
    };
    check("G.729, CN/16000 after the first talk spurt",
          media_binding(bob, "cn@x", 0, {codec(18, "G729", 8000), codec(105, "CN", 16000)}), 18, 8000, false, 150);
    check("G.729, beginning in silence",
          media_binding(bob, "cn@x", 0, {codec(18, "G729", 8000), codec(105, "CN", 16000)}), 18, 8000, true, 150);
    check("opus, beginning in silence",
          media_binding(bob, "cn@x", 0,
                        {codec(111, "opus", 48000), codec(105, "CN", 16000), codec(101, "telephone-event", 8000)}),
          111, 48000, true, 250);
}

TEST_CASE("a third dynamic payload type before a late binding stays as counted, and the binding is counted untracked",
          "[rtp][stream][table][binding]") {
    // Opus with events on 101 (4 octets), comfort noise on 105 and events several to a packet on
    // 110, all before the binding: UnboundRuns notes two types. The runs of opus and 105 take the
    // slots (105 the one 101's event-shaped packets held: they stay events, as their rtpmap says);
    // 110 finds none, so its packets stay voice and its payload-type changes stay.
    const MediaBinding binding =
        media_binding(bob, "third@x", 0,
                      {codec(111, "opus", 48000), codec(105, "CN", 16000), codec(101, "telephone-event", 8000),
                       codec(110, "telephone-event", 48000)});
    const auto play = [&](bool late, std::uint64_t* untracked) {
        StreamTable t(small_config());
        RecordingSink sink;
        t.set_sink(&sink);
        if (!late) t.bind(binding);
        std::uint16_t seq = 1;
        std::uint32_t ts = 0;
        std::int64_t at = 0;
        const auto send = [&](std::uint8_t pt, std::size_t size, int count) {
            for (int i = 0; i < count; ++i, at += 20'000, ts += 960)
                t.on_rtp(meta_at(at, alice, bob), make_rtp(pt, seq++, ts, 0x77, size));
        };
        send(111, 80, 50);
        send(101, 4, 5);
        send(105, 1, 1);
        send(111, 80, 50);
        send(110, 8, 3);
        send(111, 80, 50);
        if (late) t.bind(binding);
        send(111, 80, 10);
        t.finish_all(Timestamp{kBaseUs + 20'000'000});
        *untracked = t.stats().untracked_late_types.value();
        REQUIRE(sink.finished.size() == 1);
        return sink.finished[0];
    };
    std::uint64_t untracked = 0;
    const Finished early = play(false, &untracked);
    CHECK(untracked == 0);
    CHECK(early.stream.comfort_noise_packets == 1);
    CHECK(early.stream.event_packets == 8);
    CHECK(early.stream.voice_packets() == 160);
    CHECK(early.stream.payload_type_changes == 0);
    const Finished late = play(true, &untracked);
    REQUIRE(late.bound);
    CHECK(untracked == 1);
    CHECK(late.stream.comfort_noise_packets == 1);
    CHECK(late.stream.event_packets == 5);
    CHECK(late.stream.voice_packets() == 163);     // 110's three
    CHECK(late.stream.payload_type_changes == 2);  // into and out of 110
    CHECK(late.stream.voice_payload_type == 111);
    CHECK(late.summary.codec == Codec::opus);
}

TEST_CASE("another call's SDP for a running pair ends its streams; the next packet starts the new call's",
          "[rtp][stream][table][binding]") {
    StreamTable t(small_config());
    RecordingSink sink;
    t.set_sink(&sink);
    t.bind(media_binding(bob, "old", 10, {}));  // the offer: no peer known yet
    send(t, alice, bob, 1, 3);
    CHECK(t.binding_of({alice, bob, 1})->call_id == "old");

    MediaBinding next = media_binding(bob, "new", 100'000, {});
    next.peer = alice;  // the answer pairs bob with alice
    t.bind(next);
    CHECK(t.stats().rebindings.value() == 1);
    REQUIRE(sink.finished.size() == 1);
    CHECK(sink.finished[0].reason == FinishReason::rebound);
    CHECK(sink.finished[0].call_id == "old");
    CHECK(t.find({alice, bob, 1}) == nullptr);

    send(t, alice, bob, 1, 3, 200'000);
    CHECK(t.binding_of({alice, bob, 1})->call_id == "new");
    CHECK(t.stats().streams_started.value() == 2);
    CHECK(t.stats().late_bindings.value() == 0);

    // The same call naming the pair again (a session refresh) changes nothing.
    t.bind(next);
    CHECK(sink.finished.size() == 1);
    CHECK(t.binding_of({alice, bob, 1})->call_id == "new");
}

TEST_CASE("a shared address never decides alone: each peer's stream joins its own call",
          "[rtp][stream][table][binding]") {
    StreamTable t(small_config());
    const Endpoint carol_rtp{IpAddress::v4(0x0a000003), 32000};
    for (const auto& [peer, call] : {std::pair{alice, "a"}, std::pair{carol_rtp, "c"}}) {
        MediaBinding b = media_binding(bob, call, 10, {});
        b.peer = peer;
        t.bind(b);
    }
    send(t, alice, bob, 1, 3);
    send(t, carol_rtp, bob, 1, 3);
    CHECK(t.binding_of({alice, bob, 1})->call_id == "a");
    CHECK(t.binding_of({carol_rtp, bob, 1})->call_id == "c");
    // A sender no SDP named (behind NAT) could be either call's: left unbound, counted.
    const Endpoint nat{IpAddress::v4(0x0a000009), 50000};
    send(t, nat, bob, 7, 3);
    CHECK(t.binding_of({nat, bob, 7}) == nullptr);
    CHECK(t.stats().ambiguous_bindings.value() == 1);
    // Once call "a" has ended, the address is call "c"'s alone: a new sender no SDP named joins it.
    t.unbind(bob, alice, "a", 0, Timestamp{kBaseUs + 100'000});
    const Endpoint nat2{IpAddress::v4(0x0a00000a), 50002};
    send(t, nat2, bob, 8, 3, 200'000);
    REQUIRE(t.binding_of({nat2, bob, 8}) != nullptr);
    CHECK(t.binding_of({nat2, bob, 8})->call_id == "c");
    CHECK(t.stats().ambiguous_bindings.value() == 1);
}

TEST_CASE("pending bindings are capped (LRU) and expire", "[rtp][stream][table][binding][cap]") {
    StreamTableConfig c = small_config();
    c.max_pending_media = 3;
    StreamTable t(c);
    for (int i = 0; i < 5; ++i)
        t.bind(media_binding(Endpoint{bob.address, static_cast<std::uint16_t>(40000 + 2 * i)}, "c" + std::to_string(i),
                             i, {}));
    CHECK(t.pending_size() == 3);
    CHECK(t.stats().evictions[static_cast<std::size_t>(StreamTableKind::pending_media)].value() == 2);
    CHECK(t.stats().pending_bindings.value() == 3);
    CHECK(t.pending_binding(Endpoint{bob.address, 40000}) == nullptr);
    CHECK(t.pending_binding(Endpoint{bob.address, 40002}) == nullptr);
    REQUIRE(t.pending_binding(Endpoint{bob.address, 40004}) != nullptr);

    t.expire(Timestamp{kBaseUs + 60'000'002});  // binding times 2, 3, 4 us: the first has waited long enough
    CHECK(t.pending_size() == 2);
    CHECK(t.stats().pending_bindings_expired.value() == 1);
    t.expire(Timestamp{kBaseUs + 61'000'000});
    CHECK(t.pending_size() == 0);
    CHECK(t.stats().pending_bindings.value() == 0);
    CHECK(t.stats().pending_bindings_expired.value() == 3);
}

TEST_CASE("a binding its streams have left waits from their last packet, and a new SDP does not shorten the wait",
          "[rtp][stream][table][binding]") {
    StreamTable t(small_config());  // streams idle after 5 s, waiting bindings after 60 s
    t.bind(media_binding(bob, "c", 0, {}));
    send(t, alice, bob, 1, 100);               // 0 .. 1.98 s
    t.expire(Timestamp{kBaseUs + 7'000'000});  // the stream has gone idle
    CHECK(t.size() == 0);
    REQUIRE(t.pending_binding(bob) != nullptr);
    CHECK(t.pending_binding(bob)->time.us == kBaseUs + 1'980'000);
    t.bind(media_binding(bob, "c", 1'000, {}));  // the same call's SDP again, older than the stream
    CHECK(t.pending_binding(bob)->time.us == kBaseUs + 1'980'000);
    t.expire(Timestamp{kBaseUs + 61'979'999});
    CHECK(t.pending_size() == 1);
    t.expire(Timestamp{kBaseUs + 61'980'000});
    CHECK(t.pending_size() == 0);
    CHECK(t.stats().pending_bindings_expired.value() == 1);
}

TEST_CASE("IPv6 and mixed-family streams are kept whole beside the IPv4 pairs, and finish with their keys",
          "[rtp][stream][table]") {
    StreamTable t(small_config());
    RecordingSink sink;
    t.set_sink(&sink);
    const Endpoint v6_a{*IpAddress::parse("2001:db8::a"), 30000};
    const Endpoint v6_b{*IpAddress::parse("2001:db8::b"), 40000};
    // The IPv4 address whose bytes start like 2001:db8::a's must not meet its stream.
    const Endpoint v4_alias{IpAddress::v4(0x20010db8), 30000};
    send(t, v6_a, v6_b, 1, 5);
    send(t, v4_alias, v6_b, 1, 5);  // mixed families: kept whole too
    send(t, alice, bob, 1, 5);
    for (int i = 5; i < 10; ++i)  // the first stream goes on
        t.on_rtp(meta_at(i * 20'000LL, v6_a, v6_b),
                 make_rtp(8, static_cast<std::uint16_t>(100 + i), static_cast<std::uint32_t>(i * 160), 1));
    CHECK(t.size() == 3);
    REQUIRE(t.find({v6_a, v6_b, 1}) != nullptr);
    CHECK(t.find({v6_a, v6_b, 1})->packets == 10);
    CHECK(t.find({v4_alias, v6_b, 1})->packets == 5);
    CHECK(t.find({alice, bob, 1})->packets == 5);
    CHECK(t.find({v6_b, v6_a, 1}) == nullptr);

    t.expire(Timestamp{kBaseUs + 60'000'000});
    REQUIRE(sink.finished.size() == 3);
    std::vector<StreamKey> keys;
    for (const auto& f : sink.finished) keys.push_back(f.key);
    CHECK(std::count(keys.begin(), keys.end(), StreamKey{v6_a, v6_b, 1}) == 1);
    CHECK(std::count(keys.begin(), keys.end(), StreamKey{v4_alias, v6_b, 1}) == 1);
    CHECK(std::count(keys.begin(), keys.end(), StreamKey{alice, bob, 1}) == 1);

    // Their slots are taken again: streams of other keys, each its own.
    send(t, v6_b, v6_a, 2, 3, 61'000'000);
    send(t, v6_a, v6_b, 3, 4, 61'000'000);
    CHECK(t.size() == 2);
    CHECK(t.find({v6_b, v6_a, 2})->packets == 3);
    CHECK(t.find({v6_a, v6_b, 3})->packets == 4);
    CHECK(t.find({v6_a, v6_b, 1}) == nullptr);
}

TEST_CASE("IPv6 media addresses and peers bind and join like IPv4 ones, and leave nothing behind",
          "[rtp][stream][table][binding]") {
    StreamTable t(small_config());
    const Endpoint v6_a{*IpAddress::parse("2001:db8::a"), 30000};
    const Endpoint v6_b{*IpAddress::parse("2001:db8::b"), 40000};
    const Endpoint v6_c{*IpAddress::parse("2001:db8::c"), 50000};
    std::size_t memory_after_first_round = 0;
    for (int round = 0; round < 3; ++round) {
        const std::int64_t start = round * 200'000'000LL;
        for (const auto& [peer, call] : {std::pair{v6_a, "a"}, std::pair{v6_c, "c"}}) {
            MediaBinding b = media_binding(v6_b, call, start, {});
            b.peer = peer;
            t.bind(b);
        }
        send(t, v6_a, v6_b, 1, 3, start);
        send(t, v6_c, v6_b, 1, 3, start);
        CHECK(t.size() == 2);
        CHECK(t.media_size() == 1);
        REQUIRE(t.binding_of({v6_a, v6_b, 1}) != nullptr);
        CHECK(t.binding_of({v6_a, v6_b, 1})->call_id == "a");
        CHECK(t.binding_of({v6_c, v6_b, 1})->call_id == "c");
        std::vector<std::pair<Endpoint, Endpoint>> listed;
        t.for_each_binding([&](const Endpoint& media, const Endpoint& peer, const Binding&, bool, bool) {
            listed.emplace_back(media, peer);
        });
        CHECK(listed.size() == 2);
        for (const auto& [media, peer] : listed) {
            CHECK(media == media_key(v6_b));
            CHECK((peer == media_key(v6_a) || peer == media_key(v6_c)));
        }
        // Streams go idle, their bindings wait and expire: every entry and pooled address goes.
        t.expire(Timestamp{kBaseUs + start + 100'000'000});
        CHECK(t.size() == 0);
        CHECK(t.pending_size() == 0);
        CHECK(t.media_size() == 0);
        if (round == 0) memory_after_first_round = t.memory_bytes();
        CHECK(t.memory_bytes() == memory_after_first_round);  // slots are taken again, not added
    }
}

TEST_CASE("RTCP RR: the receiver's view with an exact RTT", "[rtp][stream][table][rtcp]") {
    StreamTable t(small_config());
    send(t, alice, bob, 0x5555, 10);
    // Alice sent an SR at t0 (whole second: NTP fraction 0). Bob's RR arrives at t0 + 0.5 s and
    // says it held the SR for DLSR = 0x4000 = 0.25 s: RTT = 0.5 - 0.25 = 0.25 s exactly.
    const std::int64_t t0 = kBaseUs + 1'000'000;
    const std::uint32_t lsr = ntp_middle32(ntp_from_unix_micros(t0));
    REQUIRE((lsr & 0xFFFF) == 0);
    const Bytes rr = receiver_report(0xB0B, {Block{0x5555, 64, -3, 0x0001'0010, 800, lsr, 0x4000}});
    t.on_rtcp(PacketMeta{Timestamp{t0 + 500'000}, bob_rtcp, alice_rtcp, 0}, span_of(rr));

    const Stream* s = t.find({alice, bob, 0x5555});
    REQUIRE(s != nullptr);
    ReceiverView expected;
    expected.reports = 1;
    expected.fraction_lost = 64;
    expected.cumulative_lost = -3;
    expected.jitter = 800;
    expected.rtt_us = 250'000;
    CHECK(s->receiver.get() == expected);
    CHECK(s->sequence.lost() == 0);  // the measured view is untouched
    CHECK(t.stats().rtcp_reports[static_cast<std::size_t>(ReportSource::rtcp)].value() == 1);
    CHECK(t.stats().rtcp_fraction_lost.count() == 1);
    CHECK(t.stats().rtcp_fraction_lost.sum() == 0.25);
    CHECK(t.stats().rtcp_rtt_seconds.count() == 1);
    CHECK(t.stats().rtcp_rtt_seconds.sum() == 0.25);
    CHECK(t.summary({alice, bob, 0x5555}).one_way_delay_ms == Approx(125.0));

    // An SR carrying a block with LSR 0 (no SR seen yet): no RTT, the old one stays.
    const Bytes sr = sender_report(0xB0B, 0, {Block{0x5555, 0, 0, 0, 0, 0, 0}});
    t.on_rtcp(PacketMeta{Timestamp{t0 + 700'000}, bob_rtcp, alice_rtcp, 0}, span_of(sr));
    CHECK(s->receiver.get().reports == 2);
    CHECK(s->receiver.get().fraction_lost == 0);
    CHECK(s->receiver.get().rtt_us == 250'000);
    CHECK(t.stats().rtcp_rtt_seconds.count() == 1);
    CHECK(t.stats().rtcp_reports[static_cast<std::size_t>(ReportSource::rtcp)].value() == 2);
}

TEST_CASE("RTCP about unknown streams is counted; rtcp-mux reporters match too", "[rtp][stream][table][rtcp]") {
    StreamTable t(small_config());
    send(t, alice, bob, 0x77, 3);
    t.on_rtcp(meta_at(0, bob_rtcp, alice_rtcp), span_of(receiver_report(1, {Block{0x78}, Block{0x77}})));
    CHECK(t.stats().rtcp_unmatched_blocks.value() == 1);
    t.on_rtcp(meta_at(0, carol, alice_rtcp), span_of(receiver_report(1, {Block{0x77}})));  // not bob
    CHECK(t.stats().rtcp_unmatched_blocks.value() == 2);
    t.on_rtcp(meta_at(0, bob, alice), span_of(receiver_report(1, {Block{0x77}})));  // muxed on the RTP port
    CHECK(t.find({alice, bob, 0x77})->receiver.get().reports == 2);
}

TEST_CASE("RTCP picks the symmetric source when several send one SSRC", "[rtp][stream][table][rtcp]") {
    StreamTable t(small_config());
    send(t, alice, bob, 0x99, 3);
    send(t, carol, bob, 0x99, 3);
    t.on_rtcp(meta_at(0, bob_rtcp, ep("10.0.0.1:30001")), span_of(receiver_report(1, {Block{0x99, 7}})));
    CHECK(t.find({alice, bob, 0x99})->receiver.get().fraction_lost == 7);
    CHECK(t.find({carol, bob, 0x99})->receiver.get().reports == 0);
    t.on_rtcp(meta_at(0, bob_rtcp, ep("10.0.0.3:50001")), span_of(receiver_report(1, {Block{0x99, 9}})));
    CHECK(t.find({carol, bob, 0x99})->receiver.get().fraction_lost == 9);
}

TEST_CASE("RTCP XR VoIP metrics", "[rtp][stream][table][rtcp][xr]") {
    StreamTable t(small_config());
    send(t, alice, bob, 0x42, 3);
    VoipBlock v;
    v.ssrc = 0x42;
    v.loss_rate = 13;
    v.discard_rate = 3;
    v.round_trip_ms = 120;
    v.r_factor = 80;
    v.mos_lq_x10 = 41;
    v.mos_cq_x10 = 39;
    t.on_rtcp(meta_at(0, bob_rtcp, alice_rtcp), span_of(xr_voip_metrics(0xB0B, v)));
    const ReceiverView& view = t.find({alice, bob, 0x42})->receiver.get();
    CHECK(view.xr_reports == 1);
    CHECK(view.xr_loss_rate == 13);
    CHECK(view.xr_discard_rate == 3);
    CHECK(view.xr_round_trip_ms == 120);
    CHECK(view.xr_r_factor == 80);
    CHECK(view.xr_mos_lq_x10 == 41);
    CHECK(view.xr_mos_cq_x10 == 39);
    CHECK(view.reports == 0);
    CHECK(t.stats().rtcp_reports[static_cast<std::size_t>(ReportSource::xr)].value() == 1);
    v.ssrc = 0x43;
    t.on_rtcp(meta_at(0, bob_rtcp, alice_rtcp), span_of(xr_voip_metrics(0xB0B, v)));
    CHECK(t.stats().rtcp_unmatched_blocks.value() == 1);
}

TEST_CASE("RTCP from an address of a call's RTCP alone (a=rtcp) becomes a reported stream of the call",
          "[rtp][stream][table][rtcp]") {
    StreamTable t(small_config());
    RecordingSink sink;
    t.set_sink(&sink);
    // Bob's SDP: RTP at 40000, a=rtcp:45001 (another media key); its answer pairs it with alice's.
    const Endpoint bob_far_rtcp = ep("10.0.0.2:45001");
    MediaBinding rtcp = media_binding(bob_far_rtcp, "call-R", 0, {codec(8, "PCMA", 8000)});
    rtcp.rtcp = true;
    rtcp.dialog = 7;
    t.bind(rtcp);  // the offer's: no peer yet
    rtcp.peer = alice_rtcp;
    t.bind(rtcp);  // the answer pairs it, the offer's goes
    CHECK(t.bindings_size() == 1);
    CHECK(t.find_binding(bob_far_rtcp, alice_rtcp) != nullptr);
    CHECK(t.pending_binding(bob_far_rtcp) == nullptr);  // never the address's binding for RTP

    // RTP sent there (nothing should) joins no call through it.
    send(t, carol, bob_far_rtcp, 0x33, 3);
    CHECK(t.binding_of({carol, bob_far_rtcp, 0x33}) == nullptr);

    // Bob reports on alice's stream, which lives where its RTP goes (here: nowhere).
    t.on_rtcp(meta_at(100'000, bob_far_rtcp, alice_rtcp), span_of(receiver_report(0xB0B, {Block{0xA11CE, 12, 4}})));
    CHECK(t.stats().rtcp_unmatched_blocks.value() == 0);
    const ReportedStream* r = t.find_reported("call-R", 0xA11CE);
    REQUIRE(r != nullptr);
    CHECK(r->reporter_ssrc == 0xB0B);
    CHECK(r->view.reports == 1);
    CHECK(r->view.fraction_lost == 12);
    CHECK(r->view.cumulative_lost == 4);
    CHECK(r->dialog == 7);
    CHECK(r->codec == Codec::pcma);
    // From elsewhere, or to an unrelated address without an offer's binding: nobody's.
    t.on_rtcp(meta_at(200'000, carol, alice_rtcp), span_of(receiver_report(1, {Block{0xA11CE}})));
    CHECK(t.stats().rtcp_unmatched_blocks.value() == 1);

    // The dialog's end releases the binding and finishes its reported stream.
    t.unbind(bob_far_rtcp, alice_rtcp, "call-R", 7, Timestamp{kBaseUs + 300'000});
    CHECK(t.bindings_size() == 0);
    REQUIRE(sink.reported.size() == 1);
    CHECK(sink.reported_reasons[0] == FinishReason::call_ended);
    // A late report joins nothing.
    t.on_rtcp(meta_at(400'000, bob_far_rtcp, alice_rtcp), span_of(receiver_report(0xB0B, {Block{0xA11CE}})));
    CHECK(t.stats().rtcp_unmatched_blocks.value() == 2);
}

TEST_CASE("RTCP-JSON: a capped table of receiver views by Call-ID and SSRC", "[rtp][stream][table][rtcp_json]") {
    StreamTableConfig c = small_config();
    c.max_reported_streams = 2;
    StreamTable t(c);
    RecordingSink sink;
    t.set_sink(&sink);
    const std::int64_t t0 = kBaseUs + 1'000'000;
    const std::uint32_t lsr = ntp_middle32(ntp_from_unix_micros(t0));
    const std::string rtpengine = R"({ "ssrc":1,"type":201,"report_count":2,"report_blocks":[{"source_ssrc":2,)"
                                  R"("highest_seq_no":100,"fraction_lost":26,"ia_jitter":40,"packets_lost":16777215,)"
                                  R"("lsr":)" +
                                  std::to_string(lsr) + R"(,"dlsr":16384},{"source_ssrc":3}] })";
    t.on_rtcp_json(PacketMeta{Timestamp{t0 + 750'000}, alice, bob, 0}, "call-A", span_of(rtpengine));
    CHECK(t.reported_size() == 2);
    CHECK(t.stats().reported_streams_active.value() == 2);
    CHECK(t.stats().rtcp_reports[static_cast<std::size_t>(ReportSource::rtcp_json)].value() == 1);
    const ReportedStream* r = t.find_reported("call-A", 2);
    REQUIRE(r != nullptr);
    CHECK(r->reporter_ssrc == 1);
    CHECK(r->view.fraction_lost == 26);
    CHECK(r->view.cumulative_lost == -1);
    CHECK(r->view.jitter == 40);
    CHECK(r->view.rtt_us == 500'000);  // 0.75 s - 16384/65536 s
    CHECK(t.stats().rtcp_rtt_seconds.count() == 1);
    CHECK(t.stats().rtcp_fraction_lost.count() == 2);
    CHECK(t.find_reported("call-B", 2) == nullptr);

    const std::string asterisk = R"({"ssrc":5,"type":201,"report_count":1,"sender_information":null,)"
                                 R"("report_blocks":[{"source_ssrc":2,"fraction_lost":0,"packets_lost":0,)"
                                 R"("highest_seq_no":1,"ia_jitter":1,"lsr":"0","dlsr":0}]})";
    t.on_rtcp_json(meta_at(2'000'000, alice, bob), "call-B", span_of(asterisk));
    CHECK(t.reported_size() == 2);
    CHECK(t.stats().evictions[static_cast<std::size_t>(StreamTableKind::reported_streams)].value() == 1);
    REQUIRE(sink.reported.size() == 1);
    CHECK(sink.reported[0].first.call_id == "call-A");
    CHECK(t.find_reported("call-B", 2) != nullptr);

    t.on_rtcp_json(meta_at(2'000'000, alice, bob), "", span_of(asterisk));
    CHECK(t.stats().rtcp_json_without_call_id.value() == 1);
    CHECK(t.reported_size() == 2);

    t.expire(Timestamp{kBaseUs + 2'000'000 + 5'000'000});
    CHECK(t.reported_size() == 0);
    CHECK(t.stats().reported_streams_active.value() == 0);
    CHECK(sink.reported.size() == 3);
}

TEST_CASE("RTCP-JSON: a correlation id longer than any SIP Call-ID names no call", "[rtp][stream][table][rtcp_json]") {
    StreamTable t(small_config());
    const std::string report = R"({"ssrc":5,"type":201,"report_count":1,"report_blocks":[{"source_ssrc":2}]})";
    t.on_rtcp_json(meta_at(0, alice, bob), std::string(256, 'c'), span_of(report));
    CHECK(t.stats().rtcp_json_without_call_id.value() == 1);
    CHECK(t.reported_size() == 0);
    // 255 octets is the longest Call-ID the SIP side keeps, and kept here too, whole.
    const std::string longest = std::string(254, 'c') + "@";
    t.on_rtcp_json(meta_at(0, alice, bob), longest, span_of(report));
    CHECK(t.stats().rtcp_json_without_call_id.value() == 1);
    const ReportedStream* r = t.find_reported(longest, 2);
    REQUIRE(r != nullptr);
    CHECK(t.key_heap_bytes() == 255);
    std::string seen;
    t.for_each_reported([&](const ReportedKey& key, const ReportedStream&) { seen = key.call_id.view(); });
    CHECK(seen == longest);
}

TEST_CASE("snapshot round trip: visit everything, insert it into a new table", "[rtp][stream][table][snapshot]") {
    StreamTable a(small_config());
    a.bind(media_binding(bob, "snap@x", 0, {codec(8, "PCMA", 8000)}));
    a.bind(media_binding(carol, "waiting@x", 0, {}));
    send(a, alice, bob, 1, 20);
    send(a, bob, alice, 2, 20);
    a.on_rtcp(meta_at(500'000, bob_rtcp, alice_rtcp), span_of(receiver_report(9, {Block{1, 3}})));
    a.on_rtcp_json(meta_at(0, alice, bob), "snap@x",
                   span_of(std::string_view(R"({"report_blocks":[{"source_ssrc":4}]})")));

    StreamTable b(small_config());
    a.for_each_binding([&](const Endpoint& media, const Endpoint& peer, const Binding& binding, bool, bool released) {
        b.insert_binding(media, peer, binding, released);
    });
    a.for_each([&](const StreamKey& key, const Stream& stream, const Binding*) { CHECK(b.insert(key, stream)); });
    a.for_each_reported([&](const ReportedKey& key, const ReportedStream& r) { CHECK(b.insert_reported(key, r)); });

    CHECK(b.size() == 2);
    CHECK(b.pending_size() == 1);
    CHECK(b.reported_size() == 1);
    CHECK(b.stats().streams_active.value() == 2);
    a.for_each([&](const StreamKey& key, const Stream& stream, const Binding* binding) {
        const Stream* copy = b.find(key);
        REQUIRE(copy != nullptr);
        CHECK(*copy == stream);
        const Binding* copy_binding = b.binding_of(key);
        CHECK((binding == nullptr) == (copy_binding == nullptr));
        if (binding != nullptr && copy_binding != nullptr) CHECK(*binding == *copy_binding);
    });
    CHECK(b.binding_of({alice, bob, 1})->call_id == "snap@x");
    CHECK(*b.find_reported("snap@x", 4) == *a.find_reported("snap@x", 4));
    CHECK_FALSE(b.insert({alice, bob, 1}, Stream{}));
    ReportedStream again;  // the same reporter's view again: refused; another reporter's is its own
    again.reporter = a.find_reported("snap@x", 4)->reporter;
    CHECK_FALSE(b.insert_reported(ReportedKey{CompactText("snap@x"), 4}, again));
    again.reporter = carol;
    CHECK(b.insert_reported(ReportedKey{CompactText("snap@x"), 4}, again));
    CHECK(b.reported_size() == 2);
}

TEST_CASE("snapshot round trip: a shared address's newest binding stays its newest", "[rtp][stream][table][snapshot]") {
    // Two calls answered from one media-server port; a sender no SDP named (behind NAT) is left
    // unbound while both are live, and joins the newer once the older has ended: the same before
    // a restart and after it.
    StreamTable a(small_config());
    const Endpoint carol_rtp{IpAddress::v4(0x0a000003), 32000};
    for (const auto& [peer, call, at] : {std::tuple{alice, "older", 10}, std::tuple{carol_rtp, "newer", 20}}) {
        MediaBinding b = media_binding(bob, call, at, {});
        b.peer = peer;
        a.bind(b);
    }
    struct Saved {
        Endpoint media, peer;
        Binding binding;
        bool released;
    };
    std::vector<Saved> saved;
    a.for_each_binding([&](const Endpoint& media, const Endpoint& peer, const Binding& binding, bool, bool released) {
        saved.push_back({media, peer, binding, released});
    });
    // As snapshot::restore() does: oldest first.
    std::sort(saved.begin(), saved.end(),
              [](const Saved& x, const Saved& y) { return x.binding.time < y.binding.time; });
    StreamTable b(small_config());
    for (const Saved& s : saved) b.insert_binding(s.media, s.peer, s.binding, s.released);

    const Endpoint nat{IpAddress::v4(0x0a000009), 50000};
    send(a, nat, bob, 7, 3);
    send(b, nat, bob, 7, 3);
    CHECK(a.binding_of({nat, bob, 7}) == nullptr);
    CHECK(b.binding_of({nat, bob, 7}) == nullptr);
    for (StreamTable* t : {&a, &b}) {
        t->unbind(bob, alice, "older", 0, Timestamp{kBaseUs + 100'000});
        const Endpoint nat2{IpAddress::v4(0x0a00000a), 50002};
        send(*t, nat2, bob, 8, 3, 200'000);
        REQUIRE(t->binding_of({nat2, bob, 8}) != nullptr);
        CHECK(t->binding_of({nat2, bob, 8})->call_id == "newer");
    }
}

TEST_CASE("statistics merge across shards", "[rtp][stream][stats]") {
    StreamTable a(small_config());
    StreamTable b(small_config());
    send(a, alice, bob, 1, 10);
    send(b, bob, alice, 2, 5);
    a.finish_all(Timestamp{kBaseUs + 1'000'000});
    StreamStats total;
    total.merge(a.stats());
    total.merge(b.stats());
    CHECK(total.rtp_packets.value() == 15);
    CHECK(total.streams_active.value() == 1);
    CHECK(total.streams_started.value() == 2);
    CHECK(total.streams_finished_total() == 1);
    CHECK(total.mos.count() == 1);
    CHECK(total.mos.sum() == a.stats().mos.sum());
}

TEST_CASE("memory per stream and per media binding", "[rtp][stream][memory]") {
    // A full table of bound streams, one per media address: 2^14 entries, so that no vector has
    // growth slack and each index holds exactly two 4-byte slots per entry.
    constexpr std::uint32_t n = 16'384;
    StreamTableConfig c;
    c.max_streams = n;
    c.max_pending_media = n;
    StreamTable t(c);
    const std::string call_id = "a84b4c76e66710@pc33.atlanta.example.com";  // 39 octets, RFC 3261 style
    for (std::uint32_t i = 0; i < n; ++i) {
        const Endpoint to{IpAddress::v4(0x0a000000U + i), 40000};
        t.bind(media_binding(to, call_id, 0, {codec(8, "PCMA", 8000), codec(101, "telephone-event", 8000)}));
        t.on_rtp(meta_at(0, alice, to), make_rtp(8, 1, 0, i));
    }
    REQUIRE(t.size() == n);
    REQUIRE(t.media_size() == n);
    REQUIRE(t.pending_size() == 0);
    const auto sizes = StreamTable::entry_sizes();
    const double per_stream = static_cast<double>(t.memory_bytes()) / n;
    const std::size_t expected = sizes.stream + 8 + sizes.media + 8 + sizes.binding + 8 + call_id.size();
    WARN("sizeof(Stream) " << sizeof(Stream) << ", sizeof(Binding) " << sizeof(Binding) << "; entries: stream "
                           << sizes.stream << ", media " << sizes.media << ", binding " << sizes.binding
                           << ", reported " << sizes.reported << "; bytes per bound stream " << per_stream);
    // A few free-list words, and a second index slot per entry where an index has just doubled.
    CHECK(per_stream <= static_cast<double>(expected) + 65.0);
    CHECK(sizeof(Stream) <= 136);  // 192 before its rarely used parts went out of line (StreamExtras),
                                   // 152 with the receiver's view inline
    CHECK(sizes.stream <= 208);
    CHECK(sizes.media <= 32);      // 48 with recency links that nothing read, 40 with counts of its two lists
    CHECK(sizes.binding <= 96);    // 176 before the peer was kept only in the key and the Call-ID compact,
                                   // 120 with the media address in the key instead of its media entry,
                                   // 104 with a 16-byte Call-ID handle
    CHECK(sizes.reported <= 128);  // 152 with the Call-ID as a std::string, 136 with a 16-byte handle
}

TEST_CASE("the bindings of one call hold one Call-ID, another call's its own",
          "[rtp][stream][table][binding][memory]") {
    StreamTable t(small_config());
    // The offer: alice's address, no peer yet; then the answer pairs both addresses.
    t.bind(media_binding(alice, "call-1@example", 0, {codec(8, "PCMA", 8000)}));
    MediaBinding to_bob = media_binding(bob, "call-1@example", 1'000, {codec(8, "PCMA", 8000)});
    to_bob.peer = alice;
    MediaBinding to_alice = media_binding(alice, "call-1@example", 1'000, {});
    to_alice.peer = bob;
    t.bind(to_bob);
    t.bind(to_alice);
    const Binding* at_bob = t.find_binding(bob, alice);
    const Binding* at_alice = t.find_binding(alice, bob);
    REQUIRE(at_bob != nullptr);
    REQUIRE(at_alice != nullptr);
    CHECK(at_alice->call_id.shares(at_bob->call_id));
    CHECK(at_alice->codec_count == 1);        // the offer's codecs, as before
    CHECK(t.find_binding(alice) == nullptr);  // the answered offer has gone; its block lives on

    // Another call on carol's address, paired with alice: the same text would be another call
    // only with another dialog, and a different Call-ID never shares.
    MediaBinding other = media_binding(carol, "call-2@example", 2'000, {codec(0, "PCMU", 8000)});
    other.peer = alice;
    t.bind(other);
    const Binding* at_carol = t.find_binding(carol, alice);
    REQUIRE(at_carol != nullptr);
    CHECK_FALSE(at_carol->call_id.shares(at_alice->call_id));
    CHECK(at_carol->call_id == std::string_view("call-2@example"));
    CHECK(at_alice->call_id == std::string_view("call-1@example"));
}

TEST_CASE("a binding shares the block of the dialog that sent it, and copies a text it cannot trust",
          "[rtp][stream][table][binding][memory]") {
    StreamTable t(small_config());
    // A dialog key's block: the Call-ID, with the From-tag as its tail.
    const CompactText key = CompactText::with_tail("call-9@example", "from-tag-9");
    MediaBinding offer = media_binding(alice, "call-9@example", 0, {codec(8, "PCMA", 8000)});
    offer.call_id = key.view();
    offer.call_id_text = &key;
    t.bind(offer);
    const Binding* at_alice = t.find_binding(alice);
    REQUIRE(at_alice != nullptr);
    CHECK(at_alice->call_id.shares(key));
    CHECK(at_alice->call_id == std::string_view("call-9@example"));  // the tail stays out of the view

    // A block that the binding's Call-ID is not a view of is not taken, even with equal text.
    const CompactText stray("call-8@example");
    MediaBinding other = media_binding(carol, "call-8@example", 0, {codec(8, "PCMA", 8000)});
    other.call_id_text = &stray;
    t.bind(other);
    const Binding* at_carol = t.find_binding(carol);
    REQUIRE(at_carol != nullptr);
    CHECK_FALSE(at_carol->call_id.shares(stray));
    CHECK(at_carol->call_id == std::string_view("call-8@example"));
}

TEST_CASE("a stream's extras exist only once it needs them, and are accounted while they do", "[rtp][stream][memory]") {
    StreamTable t(small_config());
    const auto extras = [&t](const StreamKey& key) {
        const Stream* s = t.find(key);
        REQUIRE(s != nullptr);
        return s->extras.allocated();
    };
    send(t, alice, bob, 1, 10);  // PCMA: one clock, no report, no break
    send(t, alice, carol, 2, 10, 0, 96);
    send(t, bob, alice, 3, 10);
    send(t, carol, alice, 4, 10);
    const std::size_t plain = t.memory_bytes();
    CHECK_FALSE(extras({alice, bob, 1}));
    CHECK(extras({alice, carol, 2}));  // a dynamic payload type: every candidate clock runs
    CHECK(t.memory_bytes() == plain);  // counted since its first packet
    std::size_t views = 0;

    SECTION("RTCP about a stream: the receiver's view exists from the first report on, apart from the extras") {
        CHECK_FALSE(t.find({alice, bob, 1})->receiver.allocated());
        const Bytes rr = receiver_report(0xB0B, {Block{1, 0, 0, 110, 80, 0, 0}});
        t.on_rtcp(meta_at(300'000, bob_rtcp, alice_rtcp), span_of(rr));
        CHECK_FALSE(extras({alice, bob, 1}));
        CHECK(t.find({alice, bob, 1})->receiver.allocated());
        CHECK(t.find({alice, bob, 1})->receiver.get().reports == 1);
        CHECK(t.memory_bytes() == plain + sizeof(ReceiverView));
        t.on_rtcp(meta_at(310'000, bob_rtcp, alice_rtcp), span_of(rr));  // the same view again
        CHECK(t.find({alice, bob, 1})->receiver.get().reports == 2);
        CHECK(t.memory_bytes() == plain + sizeof(ReceiverView));
        views = 1;
        send(t, bob, alice, 3, 1, 200'000, 8, 30'000);  // held: as below
    }
    SECTION("a packet that breaks the sequence is held") {
        send(t, bob, alice, 3, 1, 200'000, 8, 30'000);
        CHECK(extras({bob, alice, 3}));
        CHECK(t.find({bob, alice, 3})->held().valid);
        CHECK(t.memory_bytes() == plain + sizeof(StreamExtras));
        send(t, bob, alice, 3, 1, 220'000, 8, 110);  // a stray: measured, the extras stay
        CHECK_FALSE(t.find({bob, alice, 3})->held().valid);
        CHECK(t.memory_bytes() == plain + sizeof(StreamExtras));
    }
    // Streams leave with their extras and views (two had extras); the free lists grow by a few words.
    const std::size_t before = t.memory_bytes();
    t.expire(Timestamp{kBaseUs + 60'000'000});
    REQUIRE(t.size() == 0);
    CHECK(t.memory_bytes() + 2 * sizeof(StreamExtras) + views * sizeof(ReceiverView) <= before + 64);
    send(t, alice, bob, 5, 10);
    CHECK_FALSE(extras({alice, bob, 5}));
}

TEST_CASE("catalogue: RTP with a CSRC count past the end is counted as csrc_truncated, state untouched",
          "[rtp][stream][table][catalogue]") {
    StreamTable t(small_config());
    send(t, alice, bob, 7, 10);
    REQUIRE(t.size() == 1);
    const std::uint64_t packets_before = t.stats().rtp_packets.value();
    // CC says 1..15 CSRCs; the packet holds one word fewer each time (and no payload).
    for (std::uint8_t cc = 1; cc <= 15; ++cc) {
        Bytes packet = rtp_bytes(8, 500, 0, 0xC5C5, 0);
        packet[0] = static_cast<std::uint8_t>(0x80 | cc);
        packet.resize(12 + 4 * (cc - 1), 0x11);
        t.on_rtp(meta_at(1'000'000, carol, bob), span_of(packet));
    }
    CHECK(t.stats().rtp_errors[static_cast<std::size_t>(RtpError::csrc_truncated)].value() == 15);
    std::uint64_t errors = 0;
    for (const Counter& c : t.stats().rtp_errors) errors += c.value();
    CHECK(errors == 15);
    CHECK(t.size() == 1);
    CHECK(t.find({carol, bob, 0xC5C5}) == nullptr);
    CHECK(t.stats().rtp_packets.value() == packets_before);
    // The stream that was there goes on as before.
    send(t, alice, bob, 7, 1, 200'000, 8, 110);
    CHECK(t.find({alice, bob, 7})->packets == 11);
}

TEST_CASE("catalogue: RTCP length chains end: 16,383 empty packets parse, lying lengths are counted",
          "[rtp][rtcp][stream][table][catalogue]") {
    StreamTable t(small_config());
    send(t, alice, bob, 7, 10);
    const auto errors_total = [&] {
        std::uint64_t n = 0;
        for (const Counter& c : t.stats().rtcp_errors) n += c.value();
        return n;
    };
    // The longest chain a 65,535-octet datagram can hold: 16,383 headers of length 0 (one word
    // each, an empty SDES). Each step advances: the walk ends.
    Bytes chain;
    for (int i = 0; i < 16'383; ++i) chain.insert(chain.end(), {0x80, 202, 0x00, 0x00});
    const auto compound = parse_rtcp(span_of(chain));
    REQUIRE(compound.ok());
    CHECK(compound->size() == 16'383);
    std::size_t walked = 0;
    for (auto it = compound->begin(); it != compound->end(); ++it) ++walked;
    CHECK(walked == 16'383);
    t.on_rtcp(meta_at(0, bob_rtcp, alice_rtcp), span_of(chain));
    CHECK(errors_total() == 0);

    // Lengths that would wrap a 16-bit octet count to 0 (0x3fff, 0xffff words) or point past the
    // end, at the start, in the middle and at the end of the chain.
    std::uint64_t refused = 0;
    for (const std::size_t at : {std::size_t{0}, std::size_t{8'191}, std::size_t{16'382}}) {
        const auto past_end = static_cast<std::uint16_t>(16'383 - at);  // one word more than is left
        for (const std::uint16_t words : {std::uint16_t{0x3fff}, std::uint16_t{0xffff}, past_end}) {
            Bytes lying = chain;
            store_be16(&lying[at * 4 + 2], words);
            INFO("length " << words << " at packet " << at);
            const auto r = parse_rtcp(span_of(lying));
            REQUIRE_FALSE(r.ok());
            CHECK(r.error() == RtcpError::length_overflow);
            t.on_rtcp(meta_at(0, bob_rtcp, alice_rtcp), span_of(lying));
            ++refused;
        }
    }
    CHECK(t.stats().rtcp_errors[static_cast<std::size_t>(RtcpError::length_overflow)].value() == refused);
    CHECK(errors_total() == refused);
    CHECK(t.size() == 1);
    CHECK(t.stats().rtcp_reports[static_cast<std::size_t>(ReportSource::rtcp)].value() == 0);
    // A real report afterwards is used.
    t.on_rtcp(meta_at(0, bob_rtcp, alice_rtcp), span_of(receiver_report(9, {Block{7, 5}})));
    CHECK(t.find({alice, bob, 7})->receiver.get().reports == 1);
    CHECK(errors_total() == refused);
}
