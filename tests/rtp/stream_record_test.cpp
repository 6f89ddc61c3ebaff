// Per-stream measurement: RFC 3550 A.8 jitter against a reference computed here from the
// transit times (RFC form), telephone-events and comfort noise kept out of jitter, candidate
// clocks for dynamic payload types, and the stream summary (codec, loss, E-model MOS). MOS and R
// expectations were computed by hand (python3) from the G.107 formulas in emodel.hpp.
#include "rtp/stream_record.hpp"

#include "stream_test_support.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <tuple>
#include <vector>

using namespace hepd;
using namespace hepd::rtp;
using namespace hepd::rtp::stream_test;

namespace {

struct Sent {
    std::int64_t arrival_us;
    std::int64_t timestamp;  // unwrapped
    std::uint16_t seq;
    std::uint8_t pt;
    std::size_t payload;
};

// Deterministic "network": every packet leaves on its 20 ms slot and is delayed 0..30 ms.
std::vector<Sent> jittery_voice(int count, std::int64_t ts_step, std::int64_t first_ts, std::uint8_t pt,
                                std::uint32_t seed = 12345) {
    std::vector<Sent> out;
    std::uint32_t state = seed;
    for (int i = 0; i < count; ++i) {
        state = state * 1664525U + 1013904223U;
        const std::int64_t delay = (state >> 8) % 30'000;
        out.push_back({i * 20'000LL + delay, first_ts + i * ts_step, static_cast<std::uint16_t>(1000 + i), pt, 160});
    }
    std::stable_sort(out.begin(), out.end(), [](const Sent& a, const Sent& b) { return a.arrival_us < b.arrival_us; });
    return out;
}

struct Reference {
    double jitter = 0.0;  // timestamp units
    double max_jitter = 0.0;
};

// RFC 3550 A.8 as written: transit = arrival (in timestamp units) - timestamp; D = difference
// of consecutive transits; J += (|D| - J) / 16.
Reference reference_jitter(const std::vector<Sent>& packets, double rate) {
    Reference r;
    bool first = true;
    double previous = 0.0;
    for (const Sent& p : packets) {
        const double transit = static_cast<double>(p.arrival_us) * rate / 1e6 - static_cast<double>(p.timestamp);
        if (!first) {
            const double d = std::fabs(transit - previous);
            r.jitter += (d - r.jitter) / 16.0;
            r.max_jitter = std::max(r.max_jitter, r.jitter);
        }
        previous = transit;
        first = false;
    }
    return r;
}

Stream run(const std::vector<Sent>& packets, std::uint32_t ssrc = 0x1234) {
    Stream s;
    for (const Sent& p : packets)
        observe_packet(s, make_rtp(p.pt, p.seq, static_cast<std::uint32_t>(p.timestamp), ssrc, p.payload),
                       Timestamp{kBaseUs + p.arrival_us});
    return s;
}

const QualityOptions options{};

}  // namespace

TEST_CASE("jitter matches RFC 3550 A.8 computed independently, across a timestamp wrap", "[rtp][stream][jitter]") {
    const auto packets = jittery_voice(500, 160, 0xFFFF'F000LL, 0);
    const Stream s = run(packets);
    const Reference ref = reference_jitter(packets, 8000);
    REQUIRE(ref.jitter > 10.0);  // the model produces real jitter (in timestamp units)
    const StreamSummary sum = summarize(s, nullptr, options);
    CHECK(sum.clock_rate == 8000);
    CHECK(sum.jitter_ms == Approx(ref.jitter / 8.0).epsilon(0.01));
    CHECK(sum.max_jitter_ms == Approx(ref.max_jitter / 8.0).epsilon(0.01));
    CHECK(s.out_of_order > 0);  // the model reorders, and jitter still agrees
    CHECK(sum.lost == 0);
}

TEST_CASE("a perfectly paced stream has no jitter", "[rtp][stream][jitter]") {
    Stream s;
    for (int i = 0; i < 50; ++i)
        observe_packet(s, make_rtp(8, static_cast<std::uint16_t>(i), static_cast<std::uint32_t>(i * 160), 1),
                       Timestamp{kBaseUs + i * 20'000LL});
    const StreamSummary sum = summarize(s, nullptr, options);
    CHECK(sum.jitter_ms == 0.0);
    CHECK(sum.max_jitter_ms == 0.0);
    CHECK(s.max_gap_us == 20'000);
}

TEST_CASE("telephone-events share the sequence space but not the jitter", "[rtp][stream][jitter][dtmf]") {
    // 100 slots of 20 ms: voice, then an RFC 4733 event for slots 40..49 (timestamp frozen at
    // the event start, 4-octet payload), then voice again with the timestamp of its slot.
    std::vector<Sent> all;
    std::vector<Sent> voice;
    std::uint32_t state = 99;
    for (int i = 0; i < 100; ++i) {
        state = state * 1664525U + 1013904223U;
        const std::int64_t arrival = i * 20'000LL + (state >> 8) % 8'000;
        const bool event = i >= 40 && i < 50;
        const Sent p{arrival, event ? 40 * 160 : i * 160, static_cast<std::uint16_t>(500 + i),
                     static_cast<std::uint8_t>(event ? 101 : 0), event ? 4U : 160U};
        all.push_back(p);
        if (!event) voice.push_back(p);
    }
    const Stream s = run(all);
    CHECK(s.event_packets == 10);
    CHECK(s.voice_packets() == 90);
    CHECK(s.payload_type_changes == 0);
    const StreamSummary sum = summarize(s, nullptr, options);
    CHECK(sum.lost == 0);
    CHECK(sum.codec == Codec::pcmu);

    const Reference voice_only = reference_jitter(voice, 8000);
    const Reference with_events = reference_jitter(all, 8000);
    CHECK(sum.jitter_ms == Approx(voice_only.jitter / 8.0).epsilon(0.01));
    CHECK(sum.max_jitter_ms == Approx(voice_only.max_jitter / 8.0).epsilon(0.01));
    // The events would have disturbed it badly: the check above can tell.
    CHECK(with_events.max_jitter > 2 * voice_only.max_jitter);
}

TEST_CASE("an event-only stream has neither jitter nor MOS", "[rtp][stream][dtmf]") {
    Stream s;
    for (int i = 0; i < 8; ++i)
        observe_packet(s, make_rtp(101, static_cast<std::uint16_t>(7984 + i), 13280, 2, 4, i == 0),
                       Timestamp{kBaseUs + i * 20'000LL});
    observe_packet(s, make_rtp(101, 7991, 13280, 2, 4), Timestamp{kBaseUs + 140'100});  // end, resent
    observe_packet(s, make_rtp(101, 7991, 13280, 2, 4), Timestamp{kBaseUs + 140'200});
    CHECK(s.event_packets == 10);
    CHECK(s.duplicates == 2);
    CHECK(s.markers == 1);
    CHECK(s.voice_payload_type == kNoPayloadType);
    const StreamSummary sum = summarize(s, nullptr, options);
    CHECK(sum.codec == Codec::telephone_event);
    CHECK_FALSE(sum.has_quality);
    CHECK(sum.jitter_ms == 0.0);
    CHECK(sum.lost == -2);  // as tshark reports it for sipp's DTMF
    CHECK(sum.lost_clamped == 0);
}

TEST_CASE("comfort noise does not feed jitter", "[rtp][stream][jitter]") {
    Stream s;
    for (int i = 0; i < 40; ++i) {
        const bool cn = i % 10 == 5;
        // CN timestamps are off on purpose; voice is perfectly paced.
        observe_packet(s,
                       make_rtp(cn ? 13 : 0, static_cast<std::uint16_t>(i),
                                static_cast<std::uint32_t>(cn ? 7 : i * 160), 3, cn ? 1 : 160),
                       Timestamp{kBaseUs + i * 20'000LL});
    }
    CHECK(s.comfort_noise_packets == 4);
    CHECK(s.payload_type_changes == 0);
    CHECK(summarize(s, nullptr, options).max_jitter_ms == 0.0);
}

TEST_CASE("the voice reference outlives comfort noise up to 2^32 us, and no longer", "[rtp][stream][jitter]") {
    // Ten paced voice packets, comfort noise once a second for `silence_s`, then one voice packet
    // whose timestamp is 0.5 s behind its arrival: |D| = 0.5 s against the last voice packet,
    // J = 0.5 s / 16. The reference is kept as an offset back from the latest arrival, which
    // comfort noise moves on: past 2^32 us (71.6 minutes) it is dropped and no D is taken.
    const auto max_jitter_ms = [](std::int64_t silence_s) {
        Stream s;
        std::uint16_t seq = 0;
        for (int i = 0; i < 10; ++i, ++seq)
            observe_packet(s, make_rtp(0, seq, static_cast<std::uint32_t>(i * 160), 5),
                           Timestamp{kBaseUs + i * 20'000LL});
        const std::int64_t last_voice_us = 9 * 20'000LL;
        for (std::int64_t t = 1; t <= silence_s; ++t, ++seq)
            observe_packet(s, make_rtp(13, seq, 7, 5, 1), Timestamp{kBaseUs + last_voice_us + t * 1'000'000});
        CHECK(s.comfort_noise_packets == silence_s);
        const std::int64_t arrival = last_voice_us + (silence_s + 1) * 1'000'000;
        const auto timestamp = static_cast<std::uint32_t>(9 * 160LL + (arrival - last_voice_us - 500'000) * 8 / 1000);
        observe_packet(s, make_rtp(0, seq, timestamp, 5), Timestamp{kBaseUs + arrival});
        CHECK(s.voice_packets() == 11);
        return summarize(s, nullptr, options).max_jitter_ms;
    };
    CHECK(max_jitter_ms(60) == Approx(500.0 / 16));
    CHECK(max_jitter_ms(4'200) == Approx(500.0 / 16));  // 70 minutes
    CHECK(max_jitter_ms(4'300) == 0.0);                 // 71.7 minutes
}

TEST_CASE("a payload-type change restarts the jitter reference", "[rtp][stream][jitter]") {
    Stream s;
    int i = 0;
    for (; i < 10; ++i)
        observe_packet(s, make_rtp(0, static_cast<std::uint16_t>(i), static_cast<std::uint32_t>(i * 160), 4),
                       Timestamp{kBaseUs + i * 20'000LL});
    // PCMA after a 500 ms pause whose time the timestamps do not show: across the change this
    // would be |D| = 500 ms; within the new payload type everything is paced.
    for (; i < 20; ++i)
        observe_packet(s, make_rtp(8, static_cast<std::uint16_t>(i), static_cast<std::uint32_t>(i * 160), 4),
                       Timestamp{kBaseUs + 500'000 + i * 20'000LL});
    CHECK(s.payload_type_changes == 1);
    CHECK(s.voice_payload_type == 8);
    CHECK(summarize(s, nullptr, options).max_jitter_ms == 0.0);
    CHECK(s.max_gap_us == 520'000);
    observe_packet(s, make_rtp(0, 20, 20 * 160, 4), Timestamp{kBaseUs + 900'000});
    CHECK(s.payload_type_changes == 2);
}

TEST_CASE("dynamic payload type: the clock comes from the binding or the smoothest candidate",
          "[rtp][stream][jitter][binding]") {
    const auto packets = jittery_voice(300, 960, 5000, 111);  // Opus, 20 ms at 48 kHz
    const Stream s = run(packets);
    CHECK((s.flags & Stream::kCandidateClocks) != 0);
    CHECK(s.dynamic_payload_type() == 111);
    const Reference ref = reference_jitter(packets, 48000);

    SECTION("unbound: 48000 is where arrival and timestamps agree best") {
        const StreamSummary sum = summarize(s, nullptr, options);
        CHECK(sum.jitter_slot == 2);
        CHECK_FALSE(sum.clock_from_binding);
        CHECK(sum.clock_rate == 48000);
        CHECK(sum.codec == Codec::unknown);
        CHECK(sum.max_jitter_ms == Approx(ref.max_jitter / 48.0).epsilon(0.01));
    }
    SECTION("bound by rtpmap opus/48000") {
        const Binding b = make_binding(media_binding(ep("10.0.0.2:4000"), "c1", 0, {codec(111, "opus", 48000)}));
        const StreamSummary sum = summarize(s, &b, options);
        CHECK(sum.jitter_slot == 2);
        CHECK(sum.clock_from_binding);
        CHECK(sum.codec == Codec::opus);
        CHECK(sum.jitter_ms == Approx(ref.jitter / 48.0).epsilon(0.01));
        CHECK(sum.max_jitter_ms == Approx(ref.max_jitter / 48.0).epsilon(0.01));
    }
    SECTION("bound to a clock the binding names, even a wrong one") {
        const Binding b = make_binding(media_binding(ep("10.0.0.2:4000"), "c1", 0, {codec(111, "X-FOO", 8000)}));
        const StreamSummary sum = summarize(s, &b, options);
        CHECK(sum.jitter_slot == 0);
        CHECK(sum.clock_rate == 8000);
        CHECK(sum.codec == Codec::other);
        CHECK(sum.max_jitter_ms > 3 * ref.max_jitter / 48.0);
    }
    SECTION("a clock outside the candidates falls back to the smoothest, and says so") {
        const Binding b = make_binding(media_binding(ep("10.0.0.2:4000"), "c1", 0, {codec(111, "L16", 44100)}));
        const StreamSummary sum = summarize(s, &b, options);
        CHECK(sum.clock_unmatched);
        CHECK(sum.jitter_slot == 2);
        CHECK(sum.clock_rate == 44100);
    }
}

TEST_CASE("G.722 keeps the 8000 Hz RTP clock of RFC 3551", "[rtp][stream][jitter]") {
    const auto packets = jittery_voice(200, 160, 0, 9);
    const Stream s = run(packets);
    const StreamSummary sum = summarize(s, nullptr, options);
    CHECK(sum.clock_rate == 8000);
    CHECK(sum.codec == Codec::g722);
    CHECK(sum.max_jitter_ms == Approx(reference_jitter(packets, 8000).max_jitter / 8.0).epsilon(0.01));
}

TEST_CASE("counters: packets, payload octets, markers, gaps", "[rtp][stream]") {
    Stream s;
    observe_packet(s, make_rtp(0, 1, 0, 5, 160, true), Timestamp{kBaseUs});
    observe_packet(s, make_rtp(0, 2, 160, 5, 80), Timestamp{kBaseUs + 20'000});
    observe_packet(s, make_rtp(0, 3, 320, 5, 160, true), Timestamp{kBaseUs + 95'000});
    observe_packet(s, make_rtp(0, 4, 480, 5, 160), Timestamp{kBaseUs + 90'000});  // captured out of time order
    CHECK(s.packets == 4);
    CHECK(s.bytes == 560);
    CHECK(s.markers == 2);
    CHECK(s.first.us == kBaseUs);
    CHECK(s.last.us == kBaseUs + 95'000);
    CHECK(s.max_gap_us == 75'000);
}

TEST_CASE("summary: loss and MOS for known codecs", "[rtp][stream][mos]") {
    const auto stream_with = [](std::uint8_t pt, std::initializer_list<int> dropped) {
        Stream s;
        for (int i = 0; i <= 100; ++i) {
            if (std::find(dropped.begin(), dropped.end(), i) != dropped.end()) continue;
            observe_packet(s, make_rtp(pt, static_cast<std::uint16_t>(i), static_cast<std::uint32_t>(i * 160), 6),
                           Timestamp{kBaseUs + i * 20'000LL});
        }
        return s;
    };

    SECTION("G.711 without loss: R 93.2, MOS 4.409286") {
        const StreamSummary sum = summarize(stream_with(8, {}), nullptr, options);
        CHECK(sum.codec == Codec::pcma);
        CHECK(sum.expected == 100);
        CHECK(sum.r_factor == Approx(93.2).margin(1e-9));
        CHECK(sum.mos == Approx(4.409286).margin(1e-6));
    }
    SECTION("G.711 with 1 % random loss: MOS 4.328075") {
        const StreamSummary sum = summarize(stream_with(0, {50}), nullptr, options);
        CHECK(sum.lost == 1);
        CHECK(sum.loss_percent == Approx(1.0));
        CHECK(sum.burst_ratio == 1.0);
        CHECK(sum.r_factor == Approx(89.560153).margin(1e-6));
        CHECK(sum.mos == Approx(4.328075).margin(1e-6));
    }
    SECTION("G.711 without PLC, 1 %: MOS 3.833651") {
        QualityOptions no_plc;
        no_plc.g711_plc = false;
        const StreamSummary sum = summarize(stream_with(0, {50}), nullptr, no_plc);
        CHECK(sum.mos == Approx(3.833651).margin(1e-6));
    }
    SECTION("bursty loss: 5 in a row of 100 gives BurstR 4.75, MOS 3.823478") {
        const StreamSummary sum = summarize(stream_with(8, {40, 41, 42, 43, 44}), nullptr, options);
        CHECK(sum.loss_percent == Approx(5.0));
        CHECK(sum.burst_ratio == Approx(4.75));
        CHECK(sum.mos == Approx(3.823478).margin(1e-6));
    }
    SECTION("3 lost in 2 bursts: BurstR 1.455, MOS 4.122094") {
        const StreamSummary sum = summarize(stream_with(8, {10, 60, 61}), nullptr, options);
        CHECK(sum.burst_ratio == Approx(1.455));
        CHECK(sum.mos == Approx(4.122094).margin(1e-6));
    }
    SECTION("G.729 with 2 % random loss: Ie_eff 19, R 74.2, MOS 3.787287") {
        const StreamSummary sum = summarize(stream_with(18, {30, 70}), nullptr, options);
        CHECK(sum.codec == Codec::g729);
        CHECK(sum.r_factor == Approx(74.2).margin(1e-9));
        CHECK(sum.mos == Approx(3.787287).margin(1e-6));
    }
    SECTION("a reported RTT of 300 ms: Ta 150 ms, Idd 0.163531, MOS 4.406098") {
        Stream s = stream_with(8, {});
        s.receiver.mut().rtt_us = 300'000;
        const StreamSummary sum = summarize(s, nullptr, options);
        CHECK(sum.one_way_delay_ms == Approx(150.0));
        CHECK(sum.r_factor == Approx(93.036469).margin(1e-6));
        CHECK(sum.mos == Approx(4.406098).margin(1e-6));
    }
    SECTION("XR round trip is used when no RR gave an RTT") {
        Stream s = stream_with(8, {});
        s.receiver.mut().xr_round_trip_ms = 400;
        CHECK(summarize(s, nullptr, options).one_way_delay_ms == Approx(200.0));
    }
    SECTION("the codec named in SDP overrides the static table") {
        const Binding b = make_binding(media_binding(ep("10.0.0.2:4000"), "c1", 0, {codec(8, "G723", 8000)}));
        const StreamSummary sum = summarize(stream_with(8, {}), &b, options);
        CHECK(sum.codec == Codec::g723);
        CHECK(sum.r_factor == Approx(93.2 - 15.0).margin(1e-9));
    }
}

TEST_CASE("make_binding keeps rtpmap names and clocks, filling static ones", "[rtp][stream][binding]") {
    MediaBinding mb = media_binding(
        ep("10.1.1.1:5004"), "abc@host", 42,
        {codec(0, "", 0), codec(9, "G722", 8000), codec(101, "telephone-event", 8000), codec(111, "OPUS", 48000)});
    const Binding b = make_binding(mb);
    CHECK(b.call_id == "abc@host");
    CHECK(b.time.us == kBaseUs + 42);
    REQUIRE(b.codec_count == 4);
    CHECK(b.codec(0) == Codec::pcmu);
    CHECK(b.clock_rate(0) == 8000);
    CHECK(b.clock_rate(3) == 48000);
    CHECK(b.codec(1) == Codec::g722);
    CHECK(b.codec(2) == Codec::telephone_event);
    CHECK(b.codec(3) == Codec::opus);
    CHECK(b.find(111) == 3);
    CHECK(b.find(96) == -1);
    CHECK(sizeof(Binding) <= 40);  // a codec and its clock in one octet: 56 with an octet each, 48 with a
                                   // 16-byte Call-ID handle

    // Every codec with every clock code, and a rate with no code, come back as set.
    Binding all;
    for (std::size_t code = 0; code <= kClockRates.size(); ++code) {
        for (unsigned c = 0; c <= static_cast<unsigned>(Codec::other); ++c) {
            const std::uint8_t clock = code == kClockRates.size() ? kUnlistedClock : static_cast<std::uint8_t>(code);
            all.set_codec(code % kMaxBindingCodecs, static_cast<Codec>(c), clock);
            CHECK(all.codec(code % kMaxBindingCodecs) == static_cast<Codec>(c));
            CHECK(all.clock(code % kMaxBindingCodecs) == clock);
        }
    }
    const Binding unlisted = make_binding(media_binding(ep("10.1.1.1:5004"), "abc@host", 0, {codec(96, "AMR", 12345)}));
    CHECK(unlisted.codec(0) == Codec::other);
    CHECK(unlisted.clock(0) == kUnlistedClock);
    CHECK(unlisted.clock_rate(0) == 0);
}

TEST_CASE("meet_binding: telephone-event packets of several events before the binding become events",
          "[rtp][stream][binding]") {
    // PCMA with RFC 4733 events on 101, two events a packet (8 octets: not event-shaped), before
    // the binding: counted as voice of another payload type until the binding names them.
    Stream s;
    std::uint16_t seq = 1;
    std::uint32_t ts = 0;
    std::int64_t at = 0;
    const auto send = [&](std::uint8_t pt, std::size_t size, int count) {
        for (int i = 0; i < count; ++i, at += 20'000, ts += 160)
            observe_packet(s, make_rtp(pt, seq++, ts, 7, size), Timestamp{kBaseUs + at});
    };
    send(8, 160, 50);
    send(101, 8, 6);
    send(8, 160, 50);
    send(101, 8, 3);  // the stream is in an event when the binding comes
    CHECK(s.voice_packets() == 109);
    CHECK(s.payload_type_changes == 3);
    const Binding binding = make_binding(
        media_binding(ep("10.0.0.2:40000"), "ev@x", 0, {codec(8, "PCMA", 8000), codec(101, "telephone-event", 8000)}));
    meet_binding(s, binding);
    CHECK(s.event_packets == 9);
    CHECK(s.voice_packets() == 100);
    CHECK(s.payload_type_changes == 0);
    CHECK(s.voice_payload_type == 8);
    CHECK((s.flags & Stream::kCandidateClocks) == 0);
    CHECK(summarize(s, &binding, {}).codec == Codec::pcma);
    send(8, 160, 10);  // voice again, without a payload-type change
    CHECK(s.payload_type_changes == 0);
    CHECK(s.voice_packets() == 110);
}

namespace {

// PCMA with a 4-octet comfort noise packet on dynamic 105 (RFC 3389 3: a noise level and three
// reflection coefficients), events on 101 and on 100 (no rtpmap), and an opus stream some of
// whose packets are 4 octets; each packet given `binding` (null: none yet).
struct FourOctets {
    Stream pcma;
    Stream opus;
};
FourOctets play_four_octets(const Binding* binding) {
    FourOctets out;
    std::uint16_t seq = 1;
    std::uint32_t ts = 0;
    std::int64_t at = 0;
    const auto send = [&](Stream& s, std::uint8_t pt, std::size_t size, int count, std::uint32_t step) {
        for (int i = 0; i < count; ++i, at += 20'000, ts += step)
            observe_packet(s, make_rtp(pt, seq++, ts, 8, size), Timestamp{kBaseUs + at}, Timing::in_line, binding);
    };
    send(out.pcma, 8, 160, 50, 160);
    send(out.pcma, 105, 4, 3, 160);
    send(out.pcma, 8, 160, 50, 160);
    send(out.pcma, 101, 4, 5, 0);
    send(out.pcma, 100, 4, 2, 0);
    send(out.pcma, 8, 160, 10, 160);
    seq = 1;
    ts = 0;
    send(out.opus, 111, 80, 20, 960);
    send(out.opus, 111, 4, 5, 960);
    send(out.opus, 111, 80, 20, 960);
    return out;
}

Binding four_octets_binding() {
    return make_binding(media_binding(ep("10.0.0.2:40000"), "cn4@x", 0,
                                      {codec(8, "PCMA", 8000), codec(111, "opus", 48000), codec(105, "CN", 16000),
                                       codec(101, "telephone-event", 8000)}));
}

}  // namespace

TEST_CASE("a 4-octet packet of a dynamic type the binding names is what it names, not an event by its size",
          "[rtp][stream][binding]") {
    const Binding binding = four_octets_binding();
    const FourOctets bound = play_four_octets(&binding);
    CHECK(bound.pcma.comfort_noise_packets == 3);
    CHECK(bound.pcma.event_packets == 7);  // 101 names events; 100 no rtpmap: by their shape
    CHECK(bound.pcma.voice_packets() == 110);
    CHECK(bound.pcma.payload_type_changes == 0);
    CHECK(bound.opus.event_packets == 0);
    CHECK(bound.opus.comfort_noise_packets == 0);
    CHECK(bound.opus.voice_packets() == 45);
    CHECK(bound.opus.payload_type_changes == 0);
    CHECK(summarize(bound.opus, &binding, {}).max_jitter_ms == 0.0);
}

TEST_CASE("meet_binding: 4-octet packets of a dynamic type before the binding become what it names",
          "[rtp][stream][binding]") {
    // The same packets before the binding (events by their size) and then the binding: the same
    // counts as with the binding first.
    const Binding binding = four_octets_binding();
    const FourOctets bound = play_four_octets(&binding);
    FourOctets late = play_four_octets(nullptr);
    CHECK(late.pcma.event_packets == 10);
    CHECK(late.opus.event_packets == 5);
    CHECK_FALSE(meet_binding(late.pcma, binding));  // 100, in no slot, is named nothing: events still
    CHECK_FALSE(meet_binding(late.opus, binding));
    for (const auto& [name, was, is] :
         {std::tuple{"pcma", &bound.pcma, &late.pcma}, {"opus", &bound.opus, &late.opus}}) {
        INFO(name);
        CHECK(is->comfort_noise_packets == was->comfort_noise_packets);
        CHECK(is->event_packets == was->event_packets);
        CHECK(is->voice_packets() == was->voice_packets());
        CHECK(is->payload_type_changes == was->payload_type_changes);
        CHECK(is->voice_payload_type == was->voice_payload_type);
    }
}

namespace {

struct Run {
    std::uint8_t pt;
    std::size_t size;
    int count;
};

// `runs` of 20 ms packets on one stream, each packet given `binding` (null: none yet).
Stream play_runs(const std::vector<Run>& runs, const Binding* binding) {
    Stream s;
    std::uint16_t seq = 1;
    std::uint32_t ts = 0;
    std::int64_t at = 0;
    for (const Run& r : runs)
        for (int i = 0; i < r.count; ++i, at += 20'000, ts += 160)
            observe_packet(s, make_rtp(r.pt, seq++, ts, 9, r.size), Timestamp{kBaseUs + at}, Timing::in_line, binding);
    return s;
}

}  // namespace

TEST_CASE("meet_binding: payload-type changes are those the binding first would have counted",
          "[rtp][stream][binding]") {
    // Comfort noise (105) and events several to a packet (101) run as voice until the binding
    // names them; once it does, the changes left are those between the voice types around them.
    const Binding binding = make_binding(media_binding(ep("10.0.0.2:40000"), "changes@x", 0,
                                                       {codec(8, "PCMA", 8000), codec(0, "PCMU", 8000),
                                                        codec(105, "CN", 16000), codec(101, "telephone-event", 8000)}));
    struct Case {
        const char* name;
        std::vector<Run> runs;
    };
    const Case cases[] = {
        {"events straight after comfort noise, then a codec change",
         {{8, 160, 50}, {105, 1, 1}, {101, 8, 3}, {8, 160, 50}, {0, 160, 50}}},
        {"a codec change across comfort noise", {{8, 160, 50}, {105, 1, 1}, {0, 160, 50}}},
        {"a codec change across comfort noise and events", {{8, 160, 50}, {105, 1, 2}, {101, 8, 3}, {0, 160, 50}}},
        {"comfort noise then events, bound during the events", {{8, 160, 50}, {105, 1, 1}, {101, 8, 3}}},
        {"beginning in silence", {{105, 1, 1}, {101, 8, 2}, {0, 160, 50}, {105, 1, 1}, {0, 160, 50}}},
        {"back and forth",
         {{8, 160, 20}, {105, 1, 1}, {0, 160, 20}, {105, 1, 1}, {8, 160, 20}, {101, 8, 2}, {8, 160, 5}}},
    };
    for (const Case& c : cases) {
        INFO(c.name);
        const Stream early = play_runs(c.runs, &binding);
        Stream late = play_runs(c.runs, nullptr);
        meet_binding(late, binding);
        CHECK(late.payload_type_changes == early.payload_type_changes);
        CHECK(late.voice_payload_type == early.voice_payload_type);
        CHECK(late.comfort_noise_packets == early.comfort_noise_packets);
        CHECK(late.event_packets == early.event_packets);
        CHECK(late.voice_packets() == early.voice_packets());
    }
    // Any order of two voice codecs, comfort noise and events several to a packet (the two
    // dynamic types UnboundRuns notes), bound at the end.
    std::uint32_t state = 2026;
    for (int n = 0; n < 2000; ++n) {
        std::vector<Run> runs;
        const int count = 1 + static_cast<int>((state >> 16) % 7);
        for (int r = 0; r < count; ++r) {
            state = state * 1664525U + 1013904223U;
            const Run kinds[] = {{8, 160, 3}, {0, 160, 3}, {105, 1, 1}, {101, 8, 2}};
            runs.push_back(kinds[(state >> 20) % 4]);
        }
        const Stream early = play_runs(runs, &binding);
        Stream late = play_runs(runs, nullptr);
        meet_binding(late, binding);
        INFO("sequence " << n);
        REQUIRE(late.payload_type_changes == early.payload_type_changes);
        REQUIRE(late.voice_payload_type == early.voice_payload_type);
        REQUIRE(late.comfort_noise_packets == early.comfort_noise_packets);
        REQUIRE(late.event_packets == early.event_packets);
    }
}
