#include "gen/call_generator.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

namespace hepd::gen {

namespace {

enum Kind : std::uint8_t {
    invite, trying, ringing, ok_invite, ack, bye, ok_bye,  // completed call
    busy, ack_busy,                                        // failed call
    cancel, ok_cancel, terminated, ack_terminated,         // cancelled call
    rtp,
};

struct Event {
    std::int64_t t;
    std::uint32_t call;
    Kind kind;
    std::uint8_t dir;  // media: 0 caller -> callee, 1 callee -> caller
    std::uint32_t n;   // media packet index
};

struct Call {
    std::uint32_t index;
    std::string call_id;
    std::string from_tag;
    std::string to_tag;
    Endpoint caller;
    Endpoint callee;
    Endpoint caller_media;
    Endpoint callee_media;
    std::uint32_t ssrc[2];
    std::uint16_t seq_base[2];
    bool callee_hangs_up;
};

IpAddress ip(std::uint8_t a, std::uint32_t n) {
    return IpAddress::v4((10U << 24) | (std::uint32_t{a} << 16) | (((n / 250) % 250) << 8) | (n % 250 + 1));
}

std::string host(const Endpoint& e) { return e.address.to_string(); }

std::string sdp(const Endpoint& media, std::uint32_t session) {
    const std::string a = host(media);
    return "v=0\r\no=- " + std::to_string(session) + " 1 IN IP4 " + a + "\r\ns=-\r\nc=IN IP4 " + a +
           "\r\nt=0 0\r\nm=audio " + std::to_string(media.port) +
           " RTP/AVP 8 101\r\na=rtpmap:8 PCMA/8000\r\na=rtpmap:101 telephone-event/8000\r\n"
           "a=fmtp:101 0-16\r\na=ptime:20\r\na=sendrecv\r\n";
}

struct SipText {
    std::string text;
    bool from_caller = true;
};

SipText render_sip(const Call& c, Kind kind) {
    const std::string caller = host(c.caller);
    const std::string callee = host(c.callee);
    const std::string uac_branch = "z9hG4bK-" + std::to_string(c.index) + "-";
    const std::string from = "From: \"Caller " + std::to_string(c.index) + "\" <sip:" + std::to_string(1000 + c.index % 9000) +
                             "@" + caller + ">;tag=" + c.from_tag + "\r\n";
    const std::string to_plain = "To: <sip:" + std::to_string(2000 + c.index % 9000) + "@" + callee + ">";
    const std::string to = to_plain + ";tag=" + c.to_tag + "\r\n";
    const std::string cid = "Call-ID: " + c.call_id + "\r\n";
    const std::string via_invite = "Via: SIP/2.0/UDP " + caller + ":5060;branch=" + uac_branch + "1;rport\r\n";
    const std::string req_uri = "sip:" + std::to_string(2000 + c.index % 9000) + "@" + callee + ":5060";
    auto request = [&](const std::string& method, const std::string& via, const std::string& to_line, int cseq,
                       const std::string& body) {
        std::string s = method + " " + req_uri + " SIP/2.0\r\n" + via + "Max-Forwards: 70\r\n" + from + to_line + cid +
                        "CSeq: " + std::to_string(cseq) + " " + (method == "ACK" && cseq == 1 ? "ACK" : method) +
                        "\r\nContact: <sip:" + caller + ":5060>\r\nUser-Agent: hepd-gen\r\n";
        if (!body.empty()) s += "Content-Type: application/sdp\r\n";
        s += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
        return s;
    };
    auto response = [&](const std::string& status, const std::string& to_line, const std::string& method, int cseq,
                        const std::string& via, const std::string& extra, const std::string& body) {
        std::string s = "SIP/2.0 " + status + "\r\n" + via + from + to_line + cid + "CSeq: " + std::to_string(cseq) +
                        " " + method + "\r\n" + extra;
        if (!body.empty()) s += "Contact: <sip:" + callee + ":5060>\r\nContent-Type: application/sdp\r\n";
        s += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
        return s;
    };
    switch (kind) {
    case invite: return {request("INVITE", via_invite, to_plain + "\r\n", 1, sdp(c.caller_media, c.index)), true};
    case trying: return {response("100 Trying", to_plain + "\r\n", "INVITE", 1, via_invite, "", ""), false};
    case ringing: return {response("180 Ringing", to, "INVITE", 1, via_invite, "", ""), false};
    case ok_invite: return {response("200 OK", to, "INVITE", 1, via_invite, "", sdp(c.callee_media, c.index + 1)), false};
    case ack: {
        const std::string via = "Via: SIP/2.0/UDP " + caller + ":5060;branch=" + uac_branch + "2;rport\r\n";
        return {request("ACK", via, to, 1, ""), true};
    }
    case bye:
        if (c.callee_hangs_up) {
            // From and To swap roles for the callee's request.
            const std::string via = "Via: SIP/2.0/UDP " + callee + ":5060;branch=z9hG4bK-b" + std::to_string(c.index) + "\r\n";
            std::string s = "BYE sip:" + caller + ":5060 SIP/2.0\r\n" + via + "Max-Forwards: 70\r\nFrom: <sip:" +
                            std::to_string(2000 + c.index % 9000) + "@" + callee + ">;tag=" + c.to_tag + "\r\nTo: <sip:" +
                            std::to_string(1000 + c.index % 9000) + "@" + caller + ">;tag=" + c.from_tag + "\r\n" + cid +
                            "CSeq: 1 BYE\r\nReason: Q.850;cause=16;text=\"Normal call clearing\"\r\nContent-Length: 0\r\n\r\n";
            return {s, false};
        } else {
            const std::string via = "Via: SIP/2.0/UDP " + caller + ":5060;branch=" + uac_branch + "3;rport\r\n";
            return {request("BYE", via, to, 2, ""), true};
        }
    case ok_bye:
        if (c.callee_hangs_up) {
            const std::string via = "Via: SIP/2.0/UDP " + callee + ":5060;branch=z9hG4bK-b" + std::to_string(c.index) + "\r\n";
            std::string s = "SIP/2.0 200 OK\r\n" + via + "From: <sip:" + std::to_string(2000 + c.index % 9000) + "@" +
                            callee + ">;tag=" + c.to_tag + "\r\nTo: <sip:" + std::to_string(1000 + c.index % 9000) + "@" +
                            caller + ">;tag=" + c.from_tag + "\r\n" + cid + "CSeq: 1 BYE\r\nContent-Length: 0\r\n\r\n";
            return {s, true};
        } else {
            const std::string via = "Via: SIP/2.0/UDP " + caller + ":5060;branch=" + uac_branch + "3;rport\r\n";
            return {response("200 OK", to, "BYE", 2, via, "", ""), false};
        }
    case busy:
        return {response("486 Busy Here", to, "INVITE", 1, via_invite,
                         "Reason: Q.850;cause=17;text=\"User busy\"\r\n", ""),
                false};
    case ack_busy: return {request("ACK", via_invite, to, 1, ""), true};
    case cancel: return {request("CANCEL", via_invite, to_plain + "\r\n", 1, ""), true};
    case ok_cancel: return {response("200 OK", to, "CANCEL", 1, via_invite, "", ""), false};
    case terminated: return {response("487 Request Terminated", to, "INVITE", 1, via_invite, "", ""), false};
    case ack_terminated: return {request("ACK", via_invite, to, 1, ""), true};
    case rtp: break;
    }
    return {};
}

} // namespace

Truth generate(const CorpusOptions& o, const PacketSink& sink) {
    std::mt19937_64 rng(o.seed);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    const std::uint32_t per_direction = static_cast<std::uint32_t>(std::llround(o.media_seconds * 50));

    Truth truth;
    std::vector<Call> calls;
    std::vector<Event> events;
    calls.reserve(o.calls);
    for (std::uint32_t i = 0; i < o.calls; ++i) {
        Call c;
        c.index = i;
        c.call_id = "gen-" + std::to_string(o.call_ids ? i % o.call_ids : i) + "@hepd.test";
        c.from_tag = "ft" + std::to_string(i);
        c.to_tag = "tt" + std::to_string(i);
        c.caller = Endpoint{ip(1, i), 5060};
        c.callee = Endpoint{ip(2, i), 5060};
        const std::uint32_t p = o.stream_pairs ? i % o.stream_pairs : i;
        c.caller_media = Endpoint{ip(3, p / 20000), static_cast<std::uint16_t>(10000 + 2 * (p % 20000))};
        c.callee_media = Endpoint{ip(4, p / 20000), static_cast<std::uint16_t>(10000 + 2 * (p % 20000))};
        for (int d = 0; d < 2; ++d) {
            c.ssrc[d] = static_cast<std::uint32_t>(0x10000000U + p * 2 + static_cast<std::uint32_t>(d));
            // A quarter of the streams start just below the wrap so sequence wrap is always exercised.
            c.seq_base[d] = static_cast<std::uint16_t>(p % 4 == 0 ? 65500 : (p * 37 + d) % 30000);
        }
        c.callee_hangs_up = i % 3 == 0;

        const double r = unit(rng);
        CallTruth ct;
        ct.call_id = c.call_id;
        ct.from_tag = c.from_tag;
        ct.outcome = r < o.failed_percent / 100 ? CallOutcome::failed
                     : r < (o.failed_percent + o.cancelled_percent) / 100 ? CallOutcome::cancelled
                                                                          : CallOutcome::completed;
        const std::int64_t t0 = o.start.us + static_cast<std::int64_t>(i) * o.call_interval_us;
        const std::int64_t pdd = 80'000 + (i % 7) * 30'000;
        const std::int64_t ring = 400'000 + (i % 5) * 100'000;
        ct.pdd_us = pdd;
        auto add = [&](std::int64_t t, Kind k) {
            events.push_back({t, i, k, 0, 0});
            ++truth.sip_packets;
        };
        add(t0, invite);
        add(t0 + 5'000, trying);
        add(t0 + pdd, ringing);
        const std::int64_t t_final = t0 + pdd + ring;
        if (ct.outcome == CallOutcome::failed) {
            ct.final_code = 486;
            add(t_final, busy);
            add(t_final + 5'000, ack_busy);
        } else if (ct.outcome == CallOutcome::cancelled) {
            ct.final_code = 487;
            add(t_final, cancel);
            add(t_final + 5'000, ok_cancel);
            add(t_final + 7'000, terminated);
            add(t_final + 10'000, ack_terminated);
        } else {
            add(t_final, ok_invite);
            add(t_final + 15'000, ack);
            ct.setup_us = pdd + ring;
            const std::int64_t media0 = t_final + 40'000;
            for (std::uint8_t d = 0; d < 2; ++d) {
                StreamTruth st;
                st.call_id = c.call_id;
                st.src = d == 0 ? c.caller_media : c.callee_media;
                st.dst = d == 0 ? c.callee_media : c.caller_media;
                st.ssrc = c.ssrc[d];
                st.sent = per_direction;
                std::vector<std::int64_t> arrival(per_direction);
                for (std::uint32_t n = 0; n < per_direction; ++n)
                    arrival[n] = media0 + n * 20'000 + d * 1'000 +
                                 static_cast<std::int64_t>(o.jitter_ms > 0 ? unit(rng) * o.jitter_ms * 1000 : 0);
                // Impairments spare the first three packets (probation) and the last two (loss
                // after the last packet received is invisible to any receiver).
                for (std::uint32_t n = 3; n + 2 < per_direction; ++n) {
                    if (o.reorder_percent > 0 && unit(rng) < o.reorder_percent / 100 && n + 3 < per_direction) {
                        std::swap(arrival[n], arrival[n + 1]);
                        ++n;
                    }
                }
                std::vector<std::pair<std::int64_t, std::uint32_t>> wire;  // arrival, packet index
                for (std::uint32_t n = 0; n < per_direction; ++n) {
                    const bool inner = n >= 3 && n + 2 < per_direction;
                    if (inner && o.loss_percent > 0 && unit(rng) < o.loss_percent / 100) {
                        ++st.lost;
                        continue;
                    }
                    wire.emplace_back(arrival[n], n);
                    if (inner && o.duplicate_percent > 0 && unit(rng) < o.duplicate_percent / 100) {
                        wire.emplace_back(arrival[n] + 500, n);
                        ++st.duplicates;
                    }
                }
                std::stable_sort(wire.begin(), wire.end());
                // RFC 3550 A.8 over the arrival order, in 8 kHz timestamp units.
                double jitter = 0;
                double prev_transit = 0;
                bool first = true;
                for (const auto& [t, n] : wire) {
                    const double transit = static_cast<double>(t) * 8000.0 / 1e6 - static_cast<double>(n) * 160.0;
                    if (!first) jitter += (std::fabs(transit - prev_transit) - jitter) / 16.0;
                    prev_transit = transit;
                    first = false;
                    events.push_back({t, i, rtp, d, n});
                }
                st.received = wire.size();
                st.jitter_ms = jitter / 8.0;
                truth.rtp_packets += wire.size();
                truth.streams.push_back(st);
            }
            const std::int64_t t_bye = media0 + static_cast<std::int64_t>(per_direction) * 20'000 + 20'000;
            add(t_bye, bye);
            add(t_bye + 8'000, ok_bye);
            ct.duration_us = t_bye - t_final;
        }
        truth.calls.push_back(ct);
        calls.push_back(std::move(c));
    }

    std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) { return a.t < b.t; });
    if (!events.empty()) {
        truth.first = Timestamp{events.front().t};
        truth.last = Timestamp{events.back().t};
    }

    std::uint8_t packet[12 + 160];
    std::fill(std::begin(packet) + 12, std::end(packet), std::uint8_t{0xd5});  // A-law silence
    for (const Event& e : events) {
        const Call& c = calls[e.call];
        if (e.kind == rtp) {
            packet[0] = 0x80;
            packet[1] = 8;
            store_be16(packet + 2, static_cast<std::uint16_t>(c.seq_base[e.dir] + e.n));
            store_be32(packet + 4, c.ssrc[e.dir] * 7U + e.n * 160U);
            store_be32(packet + 8, c.ssrc[e.dir]);
            const Endpoint& src = e.dir == 0 ? c.caller_media : c.callee_media;
            const Endpoint& dst = e.dir == 0 ? c.callee_media : c.caller_media;
            sink(Timestamp{e.t}, src, dst, ByteSpan(packet, sizeof packet));
            continue;
        }
        const SipText s = render_sip(c, e.kind);
        sink(Timestamp{e.t}, s.from_caller ? c.caller : c.callee, s.from_caller ? c.callee : c.caller, as_bytes(s.text));
    }
    return truth;
}

} // namespace hepd::gen
