#include "gen/call_generator.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

namespace hepd::gen {

std::string_view to_string(ExpectedFinish finish) noexcept {
    switch (finish) {
    case ExpectedFinish::unknown: return "unknown";
    case ExpectedFinish::rebound: return "rebound";
    case ExpectedFinish::restarted: return "restarted";
    case ExpectedFinish::idle: return "idle";
    case ExpectedFinish::flushed: return "flushed";
    }
    return "unknown";
}

namespace {

constexpr std::int64_t kPacketUs = 20'000;
constexpr std::int64_t kPauseUs = 100'000;          // media pause around a re-INVITE
constexpr std::int64_t kRttUs = 20'000;             // the round trip every RTCP report implies
constexpr std::int64_t kFinalReportUs = 10'007;     // after a stream's last packet (odd: no ties)
constexpr std::int64_t kFirstReportUs = 3;          // added to the half interval (no ties)
constexpr std::uint32_t kPairsPerAddress = 13'000;  // media ports 10000 + 4k (+2 after a re-INVITE)
constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kLongAgo = std::numeric_limits<std::int64_t>::min() / 2;

enum Kind : std::uint8_t {
    invite,
    trying,
    ringing,
    progress,
    ok_invite,
    ack,
    reinvite,
    ok_reinvite,
    ack_reinvite,
    bye,
    ok_bye,  // completed
    busy,
    ack_busy,  // failed
    cancel,
    ok_cancel,
    terminated,
    ack_terminated,  // cancelled
    rtp,
    rtcp,
};

struct Event {
    std::int64_t t;
    std::uint32_t call;
    Kind kind;
    std::uint32_t a;  // rtp: segment; rtcp: report
    std::uint32_t b;  // rtp: index into the segment's wire
};

// The n-th packet of a segment (sent at send0 + n * 20 ms) as it arrived.
struct WirePacket {
    std::int64_t arrival;
    std::uint32_t n;
    bool duplicate;
};

// One sender's uninterrupted run within one call: source, destination and SSRC fixed.
struct Segment {
    std::uint32_t call = 0;
    Endpoint src;
    Endpoint dst;
    std::uint32_t ssrc = 0;
    std::int64_t send0 = 0;
    std::uint32_t count = 0;
    std::int64_t seq0 = 0;         // extended sequence number of packet 0
    std::int64_t ts0 = 0;          // extended RTP timestamp of packet 0
    bool continuation = false;     // sequence/timestamp carry on from the previous call's segment of this key
    bool superseded = false;       // abandoned by its own call (moved media, early media, old SSRC)
    std::vector<WirePacket> wire;  // captured packets, arrival order
    std::vector<WirePacket> full;  // every packet the receiver got (capture cut or not); RTCP only
    std::uint32_t stream = UINT32_MAX;

    std::int64_t last_send() const { return send0 + static_cast<std::int64_t>(count - 1) * kPacketUs; }
};

// What one sender on a media pair sends next (continue mode carries it across calls).
struct Sender {
    bool started = false;
    std::uint32_t ssrc = 0;
    std::int64_t next_seq = 0;
    std::int64_t last_ts = 0;
    std::int64_t last_send = 0;
};

struct Report {
    std::uint32_t segment = 0;
    std::int64_t t = 0;
    bool sr = false;
    std::uint32_t reporter_ssrc = 0;
    std::uint32_t rtp_ts = 0;  // SR sender info
    std::uint32_t packets = 0;
    std::uint32_t octets = 0;
    std::uint8_t fraction = 0;
    std::int32_t cumulative = 0;
    std::uint32_t highest = 0;
    std::uint32_t jitter = 0;
    std::uint32_t lsr = 0;
    std::uint32_t dlsr = 0;
    std::uint8_t loss_rate = 0;  // XR
    std::uint8_t r_factor = 93;
    std::uint8_t mos_x10 = 44;
};

struct Call {
    std::uint32_t index = 0;
    std::string call_id;
    std::string from_tag;
    std::string to_tag;
    Endpoint caller;
    Endpoint callee;
    Endpoint caller_media;
    Endpoint callee_media;
    Endpoint moved_media;  // the caller's media after a re-INVITE
    Endpoint early_media;  // the announcement address of the 183
    bool callee_hangs_up = false;
    int bye_cseq = 2;
};

IpAddress ip(std::uint8_t a, std::uint32_t n) {
    return IpAddress::v4((10U << 24) | (std::uint32_t{a} << 16) | (((n / 250) % 250) << 8) | (n % 250 + 1));
}

Endpoint media_endpoint(std::uint8_t net, std::uint32_t pair, std::uint16_t extra = 0) {
    return Endpoint{ip(net, pair / kPairsPerAddress),
                    static_cast<std::uint16_t>(10000 + 4 * (pair % kPairsPerAddress) + extra)};
}

// 20 ms of voice a packet at the codec's clock.
struct VoiceFormat {
    std::uint8_t payload_type;
    std::int64_t clock_hz;
    std::string_view rtpmap;  // encoding/clock[/channels]

    std::int64_t samples_per_packet() const noexcept { return clock_hz / 50; }
    // RTP timestamp units in `us` microseconds, rounded down.
    std::int64_t units(std::int64_t us) const noexcept { return us * clock_hz / 1'000'000; }
};

VoiceFormat format_of(VoiceCodec codec) noexcept {
    if (codec == VoiceCodec::opus) return {111, 48000, "opus/48000/2"};
    return {8, 8000, "PCMA/8000"};
}

Endpoint rtcp_of(const Endpoint& media) { return Endpoint{media.address, static_cast<std::uint16_t>(media.port + 1)}; }

std::string host(const Endpoint& e) { return e.address.to_string(); }

std::string sdp(const VoiceFormat& voice, const Endpoint& media, std::uint32_t session, int version = 1) {
    const std::string a = host(media);
    const std::string pt = std::to_string(voice.payload_type);
    return "v=0\r\no=- " + std::to_string(session) + " " + std::to_string(version) + " IN IP4 " + a +
           "\r\ns=-\r\nc=IN IP4 " + a + "\r\nt=0 0\r\nm=audio " + std::to_string(media.port) + " RTP/AVP " + pt +
           " 101\r\na=rtpmap:" + pt + " " + std::string(voice.rtpmap) +
           "\r\na=rtpmap:101 telephone-event/8000\r\n"
           "a=fmtp:101 0-16\r\na=ptime:20\r\na=sendrecv\r\n";
}

struct SipText {
    std::string text;
    bool from_caller = true;
};

SipText render_sip(const Call& c, Kind kind, const VoiceFormat& voice) {
    const std::string caller = host(c.caller);
    const std::string callee = host(c.callee);
    const std::string uac_branch = "z9hG4bK-" + std::to_string(c.index) + "-";
    const std::string from = "From: \"Caller " + std::to_string(c.index) +
                             "\" <sip:" + std::to_string(1000 + c.index % 9000) + "@" + caller + ">;tag=" + c.from_tag +
                             "\r\n";
    const std::string to_plain = "To: <sip:" + std::to_string(2000 + c.index % 9000) + "@" + callee + ">";
    const std::string to = to_plain + ";tag=" + c.to_tag + "\r\n";
    const std::string cid = "Call-ID: " + c.call_id + "\r\n";
    const auto via_n = [&](int n) {
        return "Via: SIP/2.0/UDP " + caller + ":5060;branch=" + uac_branch + std::to_string(n) + ";rport\r\n";
    };
    const std::string via_invite = via_n(1);
    const std::string req_uri = "sip:" + std::to_string(2000 + c.index % 9000) + "@" + callee + ":5060";
    auto request = [&](const std::string& method, const std::string& via, const std::string& to_line, int cseq,
                       const std::string& body) {
        std::string s = method + " " + req_uri + " SIP/2.0\r\n" + via + "Max-Forwards: 70\r\n" + from + to_line + cid +
                        "CSeq: " + std::to_string(cseq) + " " + method + "\r\nContact: <sip:" + caller +
                        ":5060>\r\nUser-Agent: hepd-gen\r\n";
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
    case invite:
        return {request("INVITE", via_invite, to_plain + "\r\n", 1, sdp(voice, c.caller_media, c.index)), true};
    case trying: return {response("100 Trying", to_plain + "\r\n", "INVITE", 1, via_invite, "", ""), false};
    case ringing: return {response("180 Ringing", to, "INVITE", 1, via_invite, "", ""), false};
    case progress:
        return {
            response("183 Session Progress", to, "INVITE", 1, via_invite, "", sdp(voice, c.early_media, c.index + 2)),
            false};
    case ok_invite:
        return {response("200 OK", to, "INVITE", 1, via_invite, "", sdp(voice, c.callee_media, c.index + 1)), false};
    case ack: return {request("ACK", via_n(2), to, 1, ""), true};
    case reinvite: return {request("INVITE", via_n(4), to, 2, sdp(voice, c.moved_media, c.index, 2)), true};
    case ok_reinvite:
        return {response("200 OK", to, "INVITE", 2, via_n(4), "", sdp(voice, c.callee_media, c.index + 1, 2)), false};
    case ack_reinvite: return {request("ACK", via_n(5), to, 2, ""), true};
    case bye:
        if (c.callee_hangs_up) {
            // From and To swap roles for the callee's request.
            const std::string via =
                "Via: SIP/2.0/UDP " + callee + ":5060;branch=z9hG4bK-b" + std::to_string(c.index) + "\r\n";
            std::string s =
                "BYE sip:" + caller + ":5060 SIP/2.0\r\n" + via +
                "Max-Forwards: 70\r\nFrom: <sip:" + std::to_string(2000 + c.index % 9000) + "@" + callee +
                ">;tag=" + c.to_tag + "\r\nTo: <sip:" + std::to_string(1000 + c.index % 9000) + "@" + caller +
                ">;tag=" + c.from_tag + "\r\n" + cid +
                "CSeq: 1 BYE\r\nReason: Q.850;cause=16;text=\"Normal call clearing\"\r\nContent-Length: 0\r\n\r\n";
            return {s, false};
        } else {
            return {request("BYE", via_n(3), to, c.bye_cseq, ""), true};
        }
    case ok_bye:
        if (c.callee_hangs_up) {
            const std::string via =
                "Via: SIP/2.0/UDP " + callee + ":5060;branch=z9hG4bK-b" + std::to_string(c.index) + "\r\n";
            std::string s = "SIP/2.0 200 OK\r\n" + via + "From: <sip:" + std::to_string(2000 + c.index % 9000) + "@" +
                            callee + ">;tag=" + c.to_tag + "\r\nTo: <sip:" + std::to_string(1000 + c.index % 9000) +
                            "@" + caller + ">;tag=" + c.from_tag + "\r\n" + cid +
                            "CSeq: 1 BYE\r\nContent-Length: 0\r\n\r\n";
            return {s, true};
        } else {
            return {response("200 OK", to, "BYE", c.bye_cseq, via_n(3), "", ""), false};
        }
    case busy:
        return {
            response("486 Busy Here", to, "INVITE", 1, via_invite, "Reason: Q.850;cause=17;text=\"User busy\"\r\n", ""),
            false};
    case ack_busy: return {request("ACK", via_invite, to, 1, ""), true};
    case cancel: return {request("CANCEL", via_invite, to_plain + "\r\n", 1, ""), true};
    case ok_cancel: return {response("200 OK", to, "CANCEL", 1, via_invite, "", ""), false};
    case terminated: return {response("487 Request Terminated", to, "INVITE", 1, via_invite, "", ""), false};
    case ack_terminated: return {request("ACK", via_invite, to, 1, ""), true};
    case rtp:
    case rtcp: break;
    }
    return {};
}

// NTP (RFC 3550 section 4) of a Unix time in microseconds, and its middle 32 bits.
std::uint64_t ntp_of(std::int64_t unix_us) {
    const auto seconds = static_cast<std::uint64_t>(unix_us / 1'000'000 + 2'208'988'800LL) & 0xFFFF'FFFFU;
    const std::uint64_t fraction = (static_cast<std::uint64_t>(unix_us % 1'000'000) << 32) / 1'000'000;
    return (seconds << 32) | fraction;
}
std::uint32_t ntp_middle(std::int64_t unix_us) { return static_cast<std::uint32_t>(ntp_of(unix_us) >> 16); }

// The RTT a collector derives from a report block captured at `arrival_us` (RFC 3550 6.4.1).
std::uint32_t rtt_of(std::int64_t arrival_us, std::uint32_t lsr, std::uint32_t dlsr) {
    if (lsr == 0) return kNoRtt;
    const std::uint32_t compact = ntp_middle(arrival_us) - lsr - dlsr;
    if ((compact & 0x8000'0000U) != 0) return kNoRtt;
    return static_cast<std::uint32_t>((std::uint64_t{compact} * 1'000'000 + 0x8000) >> 16);
}

std::uint8_t mos_x10_of(double r) {
    const double mos = r <= 0 ? 1.0 : r >= 100 ? 4.5 : 1 + 0.035 * r + r * (r - 60) * (100 - r) * 7e-6;
    return static_cast<std::uint8_t>(std::lround(std::clamp(mos, 1.0, 4.5) * 10));
}

void put_report_block(std::vector<std::uint8_t>& out, std::uint32_t ssrc, const Report& r) {
    std::uint8_t b[24];
    store_be32(b, ssrc);
    const auto lost = static_cast<std::uint32_t>(r.cumulative) & 0x00FF'FFFFU;
    store_be32(b + 4, (std::uint32_t{r.fraction} << 24) | lost);
    store_be32(b + 8, r.highest);
    store_be32(b + 12, r.jitter);
    store_be32(b + 16, r.lsr);
    store_be32(b + 20, r.dlsr);
    out.insert(out.end(), b, b + sizeof b);
}

void put_header(std::vector<std::uint8_t>& out, std::size_t at, std::uint8_t count, std::uint8_t type) {
    const std::size_t bytes = out.size() - at;
    out[at] = static_cast<std::uint8_t>(0x80 | count);
    out[at + 1] = type;
    store_be16(out.data() + at + 2, static_cast<std::uint16_t>(bytes / 4 - 1));
}

void put32(std::vector<std::uint8_t>& out, std::uint32_t v) {
    std::uint8_t b[4];
    store_be32(b, v);
    out.insert(out.end(), b, b + 4);
}

std::string cname_of(const Endpoint& reporter) { return "hepd-gen@" + host(reporter); }

// SR or RR, SDES CNAME, and optionally XR VoIP metrics: one compound packet.
void render_rtcp(std::vector<std::uint8_t>& out, const Report& r, const Segment& s, bool xr) {
    out.clear();
    std::size_t at = out.size();
    out.resize(out.size() + 4);
    put32(out, r.reporter_ssrc);
    if (r.sr) {
        const std::uint64_t ntp = ntp_of(r.t);
        put32(out, static_cast<std::uint32_t>(ntp >> 32));
        put32(out, static_cast<std::uint32_t>(ntp));
        put32(out, r.rtp_ts);
        put32(out, r.packets);
        put32(out, r.octets);
    }
    put_report_block(out, s.ssrc, r);
    put_header(out, at, 1, r.sr ? 200 : 201);

    at = out.size();
    out.resize(out.size() + 4);
    put32(out, r.reporter_ssrc);
    const std::string cname = cname_of(s.dst);
    out.push_back(1);
    out.push_back(static_cast<std::uint8_t>(cname.size()));
    out.insert(out.end(), cname.begin(), cname.end());
    out.push_back(0);
    while ((out.size() - at) % 4 != 0) out.push_back(0);
    put_header(out, at, 1, 202);

    if (!xr) return;
    at = out.size();
    out.resize(out.size() + 4);
    put32(out, r.reporter_ssrc);
    const std::uint8_t block[36] = {
        // clang-format off
        7, 0, 0, 8,  // BT = VoIP metrics, 8 words
        static_cast<std::uint8_t>(s.ssrc >> 24), static_cast<std::uint8_t>(s.ssrc >> 16),
        static_cast<std::uint8_t>(s.ssrc >> 8), static_cast<std::uint8_t>(s.ssrc),
        r.loss_rate, 0, 0, 0,        // loss, discard, burst density, gap density
        0, 0, 0, 0,                  // burst duration, gap duration
        0, static_cast<std::uint8_t>(kRttUs / 1000), 0, 0,  // round trip delay (ms), end system delay
        127, 127, 127, 16,           // signal, noise, RERL, Gmin
        r.r_factor, 127, r.mos_x10, r.mos_x10,  // R, external R, MOS-LQ, MOS-CQ
        0, 0, 0, 40,                 // RX config, reserved, JB nominal
        0, 80, 0, 200,               // JB maximum, JB absolute maximum
        // clang-format on
    };
    out.insert(out.end(), block, block + sizeof block);
    put_header(out, at, 0, 207);
}

// The report as rtpengine renders it for HEP type 5 (daemon/rtcp.c, homer_* handlers).
std::string render_rtcp_json(const Report& r, const Segment& s) {
    char buf[1024];
    std::string json = "{";
    if (r.sr) {
        const std::uint64_t ntp = ntp_of(r.t);
        std::snprintf(buf, sizeof buf,
                      "\"sender_information\":{\"ntp_timestamp_sec\":%u,\"ntp_timestamp_usec\":%u,\"octets\":%u,"
                      "\"rtp_timestamp\":%u, \"packets\":%u},",
                      static_cast<unsigned>(ntp >> 32), static_cast<unsigned>(ntp & 0xFFFF'FFFFU), r.octets, r.rtp_ts,
                      r.packets);
        json += buf;
    }
    std::snprintf(
        buf, sizeof buf,
        "\"ssrc\":%u,\"type\":%u,\"report_count\":1,\"report_blocks\":[{\"source_ssrc\":%u,\"highest_seq_no\":%u,"
        "\"fraction_lost\":%u,\"ia_jitter\":%u,\"packets_lost\":%u,\"lsr\":%u,\"dlsr\":%u}],"
        "\"sdes_report_count\":1,\"sdes_information\": [ {\"sdes_chunk_ssrc\":%u,\"type\":1,\"text\":\"%s\"} ]}",
        r.reporter_ssrc, r.sr ? 200U : 201U, s.ssrc, r.highest, unsigned{r.fraction}, r.jitter,
        static_cast<unsigned>(r.cumulative) & 0x00FF'FFFFU, r.lsr, r.dlsr, r.reporter_ssrc, cname_of(s.dst).c_str());
    json += buf;
    return json;
}

bool applies(const Share& share, std::uint32_t i, std::mt19937_64& rng) {
    bool yes = share.every != 0 && i % share.every == share.every - 1;
    if (share.percent > 0 && std::uniform_real_distribution<double>(0.0, 1.0)(rng) < share.percent / 100) yes = true;
    return yes;
}

using BindingKey = std::pair<Endpoint, Endpoint>;  // (destination media, peer media)

class Generator {
public:
    explicit Generator(const CorpusOptions& o)
        : o_(o),
          rng_(o.seed),
          scenario_rng_(o.seed ^ 0x5CE7'A810'0000'0008ULL),
          per_direction_(static_cast<std::uint32_t>(std::llround(o.media_seconds * 50))),
          cut_(o.capture_from_us > 0 ? o.start.us + o.capture_from_us : kLongAgo),
          want_rtcp_(o.rtcp || o.rtcp_json),
          voice_(format_of(o.codec)) {
        const std::uint32_t pairs = o.stream_pairs != 0 ? o.stream_pairs : o.calls;
        senders_.resize(pairs);
        pair_free_.assign(pairs, kLongAgo);
        id_free_.assign(o.call_ids != 0 ? o.call_ids : o.calls, kLongAgo);
    }

    Truth run(const TaggedPacketSink& sink) {
        calls_.reserve(o_.calls);
        for (std::uint32_t i = 0; i < o_.calls; ++i) make_call(i);
        std::stable_sort(events_.begin(), events_.end(), [](const Event& a, const Event& b) { return a.t < b.t; });
        const auto first_seen =
            std::find_if(events_.begin(), events_.end(), [&](const Event& e) { return e.t >= cut_; });
        if (first_seen != events_.end()) {
            truth_.first = Timestamp{first_seen->t};
            truth_.last = Timestamp{events_.back().t};
        }
        build_streams();
        emit(sink);
        return std::move(truth_);
    }

private:
    // ---- calls -------------------------------------------------------------------------------

    void make_call(std::uint32_t i) {
        std::uniform_real_distribution<double> unit(0.0, 1.0);
        const std::uint32_t p = o_.stream_pairs != 0 ? i % o_.stream_pairs : i;
        const std::uint32_t k = o_.call_ids != 0 ? i % o_.call_ids : i;
        Call c;
        c.index = i;
        c.call_id = "gen-" + std::to_string(k) + "@hepd.test";
        c.from_tag = "ft" + std::to_string(i);
        c.to_tag = "tt" + std::to_string(i);
        c.caller = Endpoint{ip(1, i), 5060};
        c.callee = Endpoint{ip(2, i), 5060};
        c.caller_media = media_endpoint(3, p);
        c.callee_media = media_endpoint(4, p);
        c.moved_media = media_endpoint(3, p, 2);
        c.early_media = media_endpoint(5, p);
        c.callee_hangs_up = i % 3 == 0;

        const double r = unit(rng_);
        CallTruth ct;
        ct.call_id = c.call_id;
        ct.from_tag = c.from_tag;
        ct.index = i;
        ct.outcome = r < o_.failed_percent / 100                            ? CallOutcome::failed
                     : r < (o_.failed_percent + o_.cancelled_percent) / 100 ? CallOutcome::cancelled
                                                                            : CallOutcome::completed;
        const bool can_split = per_direction_ >= 2;
        const bool moves = applies(o_.reinvite, i, scenario_rng_) && ct.outcome == CallOutcome::completed && can_split;
        const bool early = applies(o_.early_media, i, scenario_rng_) && ct.outcome == CallOutcome::completed;
        const bool new_ssrc =
            applies(o_.ssrc_change, i, scenario_rng_) && ct.outcome == CallOutcome::completed && can_split;

        const std::int64_t nominal = o_.start.us + static_cast<std::int64_t>(i) * o_.call_interval_us;
        const std::int64_t t0 = std::max({nominal, pair_free_[p] + o_.reuse_gap_us, id_free_[k] + o_.reuse_gap_us});
        const bool visible = o_.sip && t0 >= cut_;
        visible_.push_back(visible);
        const std::int64_t pdd = 80'000 + (i % 7) * 30'000;
        const std::int64_t ring = 400'000 + (i % 5) * 100'000;
        ct.pdd_us = pdd;
        ct.early_media = early;
        std::int64_t end = t0;
        auto add = [&](std::int64_t t, Kind kind) {
            if (o_.sip) events_.push_back({t, i, kind, 0, 0});
            end = std::max(end, t);
        };
        add(t0, invite);
        add(t0 + 5'000, trying);
        add(t0 + pdd, early ? progress : ringing);
        const std::int64_t t_final = t0 + pdd + ring;
        const std::size_t first_segment = segments_.size();
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
            const std::uint32_t n = per_direction_;
            const std::uint32_t half = n / 2;
            Sender* senders = senders_[p].data();
            for (std::uint8_t d = 0; d < 2; ++d) {
                Sender& s = senders[d];
                const bool carries_on = start_call(s, p, d);
                const Endpoint& src = d == 0 ? c.caller_media : c.callee_media;
                const Endpoint& dst = d == 0 ? c.callee_media : c.caller_media;
                const bool split = moves || (d == 0 && new_ssrc);
                const std::uint32_t first_count = split ? half : n;
                add_segment(i, s, src, dst, media0 + d * 1'000, first_count, split, carries_on);
                if (!split) continue;
                if (d == 0 && new_ssrc) {
                    s.ssrc = 0x8000'0000U | static_cast<std::uint32_t>(scenario_rng_() & 0x7FFF'FFFFU);
                    s.next_seq = static_cast<std::int64_t>(scenario_rng_() & 0xFFFF);
                    s.last_ts = static_cast<std::int64_t>(scenario_rng_() & 0xFFFF'FFFFU);
                    s.last_send = kLongAgo;  // marks "new base", see add_segment
                }
                const Endpoint& src2 = moves && d == 0 ? c.moved_media : src;
                const Endpoint& dst2 = moves && d == 1 ? c.moved_media : dst;
                add_segment(i, s, src2, dst2, media0 + half * kPacketUs + (moves ? kPauseUs : 0) + d * 1'000, n - half,
                            false, !(d == 0 && new_ssrc));
            }
            if (early) {
                Sender& s = senders[2];
                const bool carries_on = start_call(s, p, 2);
                const std::int64_t send0 = t0 + pdd + 20'000;
                const auto count =
                    static_cast<std::uint32_t>(std::max<std::int64_t>(0, (t_final - 10'000 - send0) / kPacketUs + 1));
                if (count > 0) add_segment(i, s, c.early_media, c.caller_media, send0, count, true, carries_on);
            }
            if (moves) {
                const std::int64_t t_ri = media0 + half * kPacketUs + 10'000;
                add(t_ri, reinvite);
                add(t_ri + 20'000, ok_reinvite);
                add(t_ri + 30'000, ack_reinvite);
                ct.reinvites = 1;
                c.bye_cseq = 3;
                if (visible) {
                    bind(c.moved_media, c.callee_media, t_ri + 20'000, i);
                    bind(c.callee_media, c.moved_media, t_ri + 20'000, i);
                }
            }
            if (visible) {
                bind(c.caller_media, c.callee_media, t_final, i);
                bind(c.callee_media, c.caller_media, t_final, i);
                if (early) {
                    bind(c.caller_media, c.early_media, t0 + pdd, i);
                    bind(c.early_media, c.caller_media, t0 + pdd, i);
                }
            }
            const std::int64_t t_bye =
                media0 + static_cast<std::int64_t>(n - 1) * kPacketUs + (moves ? kPauseUs : 0) + 40'000;
            add(t_bye, bye);
            add(t_bye + 8'000, ok_bye);
            ct.duration_us = t_bye - t_final;
        }
        for (std::size_t s = first_segment; s < segments_.size(); ++s) {
            for (const WirePacket& w : segments_[s].wire) end = std::max(end, w.arrival);
            for (const WirePacket& w : segments_[s].full) end = std::max(end, w.arrival);
        }
        if (want_rtcp_) end = std::max(end, make_reports(first_segment, c));
        pair_free_[p] = end;
        id_free_[k] = end;
        if (visible) {
            truth_.calls.push_back(ct);
        } else {
            ++truth_.hidden_calls;
        }
        calls_.push_back(std::move(c));
    }

    // A call takes over the pair's sender: from the pair's base (restart, or first use) or from
    // where the previous call left it (continue).
    // Returns true when the call's first segment carries on from the previous call's.
    bool start_call(Sender& s, std::uint32_t p, std::uint8_t d) const {
        if (o_.media_reuse == MediaReuse::continue_ && s.started) return true;
        s.ssrc = d < 2 ? 0x1000'0000U + p * 2 + d : 0x3000'0000U + p;
        s.next_seq = (p % 4 == 0) ? 65500 : (p * 37 + d) % 30000;
        s.last_ts = static_cast<std::uint32_t>(s.ssrc * 7U);
        s.last_send = kLongAgo;  // new base: the first packet carries last_ts
        return false;
    }

    // Sends `count` packets 20 ms apart from send0, applies the impairments, and records the
    // segment (and its RTP events).
    void add_segment(std::uint32_t call, Sender& s, const Endpoint& src, const Endpoint& dst, std::int64_t send0,
                     std::uint32_t count, bool superseded, bool continuation) {
        std::uniform_real_distribution<double> unit(0.0, 1.0);
        Segment seg;
        seg.call = call;
        seg.src = src;
        seg.dst = dst;
        seg.ssrc = s.ssrc;
        seg.send0 = send0;
        seg.count = count;
        seg.seq0 = s.next_seq;
        seg.ts0 = s.last_send == kLongAgo ? s.last_ts : s.last_ts + voice_.units(send0 - s.last_send);
        seg.continuation = continuation;
        seg.superseded = superseded;
        s.started = true;
        s.next_seq = seg.seq0 + count;
        s.last_ts = seg.ts0 + static_cast<std::int64_t>(count - 1) * voice_.samples_per_packet();
        s.last_send = send0 + static_cast<std::int64_t>(count - 1) * kPacketUs;

        // Impairments spare the first three packets (probation) and the last two (loss after the
        // last packet received is invisible to any receiver), and the first three a capture
        // starting mid-stream sees.
        std::uint32_t visible_from = 0;
        if (cut_ > send0) {
            const auto margin = static_cast<std::int64_t>(o_.jitter_ms * 1000) + 2'000;
            visible_from = static_cast<std::uint32_t>(
                std::min<std::int64_t>(count, (cut_ - send0 - margin + kPacketUs - 1) / kPacketUs));
        }
        const auto inner = [&](std::uint32_t n) {
            return n >= 3 && n + 2 < count && !(n >= visible_from && n < visible_from + 3);
        };
        std::vector<std::int64_t> arrival(count);
        for (std::uint32_t n = 0; n < count; ++n)
            arrival[n] = send0 + n * kPacketUs +
                         static_cast<std::int64_t>(o_.jitter_ms > 0 ? unit(rng_) * o_.jitter_ms * 1000 : 0);
        for (std::uint32_t n = 0; n < count; ++n) {
            if (!inner(n)) continue;
            if (o_.reorder_percent > 0 && unit(rng_) < o_.reorder_percent / 100 && n + 1 < count && inner(n + 1)) {
                std::swap(arrival[n], arrival[n + 1]);
                ++n;
            }
        }
        std::vector<std::pair<std::int64_t, std::uint32_t>> wire;  // arrival, packet index (+ dup flag below)
        std::vector<bool> dup_of;
        for (std::uint32_t n = 0; n < count; ++n) {
            if (inner(n) && o_.loss_percent > 0 && unit(rng_) < o_.loss_percent / 100) continue;
            wire.emplace_back(arrival[n], n);
            if (inner(n) && o_.duplicate_percent > 0 && unit(rng_) < o_.duplicate_percent / 100)
                wire.emplace_back(arrival[n] + 500, n | 0x8000'0000U);
        }
        std::stable_sort(wire.begin(), wire.end(), [](const auto& a, const auto& b) {
            return a.first != b.first ? a.first < b.first : (a.second & 0x7FFF'FFFFU) < (b.second & 0x7FFF'FFFFU);
        });
        const auto index = static_cast<std::uint32_t>(segments_.size());
        for (const auto& [t, tagged] : wire) {
            const WirePacket w{t, tagged & 0x7FFF'FFFFU, (tagged & 0x8000'0000U) != 0};
            if (want_rtcp_) seg.full.push_back(w);
            if (t < cut_) continue;
            events_.push_back({t, call, rtp, index, static_cast<std::uint32_t>(seg.wire.size())});
            seg.wire.push_back(w);
        }
        segments_.push_back(std::move(seg));
    }

    void bind(const Endpoint& dst, const Endpoint& peer, std::int64_t t, std::uint32_t call) {
        bindings_[{dst, peer}].emplace_back(t, call);
    }

    // ---- RTCP ----------------------------------------------------------------------------------

    // Every receiver reports on each stream it gets, every rtcp_interval_us and once just after
    // the stream's last packet. Returns the time of the last report.
    std::int64_t make_reports(std::size_t first_segment, const Call& c) {
        const std::size_t first_report = reports_.size();
        for (std::size_t si = first_segment; si < segments_.size(); ++si) {
            const Segment& s = segments_[si];
            if (s.full.empty()) continue;
            // Arrival times relative to the first packet keep the doubles exact.
            const std::int64_t first = s.full.front().arrival;
            const std::int64_t last = s.full.back().arrival;
            std::vector<std::int64_t> times;
            for (std::int64_t t = first + o_.rtcp_interval_us / 2 + kFirstReportUs; t < last; t += o_.rtcp_interval_us)
                times.push_back(t);
            times.push_back(last + kFinalReportUs);
            // RFC 3550 A.3 / A.8 as the receiver computes them, over what arrived before each report.
            std::size_t j = 0;
            std::int64_t base = 0;
            std::int64_t max_ext = 0;
            std::int64_t received = 0;
            std::int64_t expected_prior = 0;
            std::int64_t received_prior = 0;
            double jitter = 0;
            double prev_transit = 0;
            for (const std::int64_t t : times) {
                for (; j < s.full.size() && s.full[j].arrival < t; ++j) {
                    const WirePacket& w = s.full[j];
                    const std::int64_t ext = s.seq0 + w.n;
                    const double transit =
                        static_cast<double>(w.arrival - first) * static_cast<double>(voice_.clock_hz) / 1e6 -
                        static_cast<double>(static_cast<std::int64_t>(w.n) * voice_.samples_per_packet());
                    if (j == 0) {
                        base = ext;
                        max_ext = ext;
                    } else {
                        jitter += (std::fabs(transit - prev_transit) - jitter) / 16.0;
                    }
                    prev_transit = transit;
                    max_ext = std::max(max_ext, ext);
                    ++received;
                }
                Report r;
                r.segment = static_cast<std::uint32_t>(si);
                r.t = t;
                const std::int64_t expected = max_ext - base + 1;
                const std::int64_t lost = expected - received;
                r.cumulative = static_cast<std::int32_t>(std::clamp<std::int64_t>(lost, -0x80'0000, 0x7F'FFFF));
                const std::int64_t expected_interval = expected - expected_prior;
                const std::int64_t lost_interval = expected_interval - (received - received_prior);
                expected_prior = expected;
                received_prior = received;
                r.fraction = expected_interval == 0 || lost_interval <= 0
                                 ? 0
                                 : static_cast<std::uint8_t>(
                                       std::min<std::int64_t>(255, (lost_interval << 8) / expected_interval));
                r.highest = static_cast<std::uint32_t>((base & 0xFFFF) + (max_ext - base));
                r.jitter = static_cast<std::uint32_t>(jitter);
                r.loss_rate =
                    lost > 0 ? static_cast<std::uint8_t>(std::min<std::int64_t>(255, lost * 256 / expected)) : 0;
                const double r_factor =
                    lost > 0
                        ? std::max(0.0, 93.0 - 2.5 * 100.0 * static_cast<double>(lost) / static_cast<double>(expected))
                        : 93.0;
                r.r_factor = static_cast<std::uint8_t>(std::lround(r_factor));
                r.mos_x10 = mos_x10_of(r_factor);
                reports_.push_back(r);
            }
        }
        // SR when the reporter also sends to the peer at that moment; LSR/DLSR from the peer's
        // last SR, received kRttUs/2 after it passed the capture point, and the report itself
        // captured kRttUs/2 after the reporter sent it: every round trip is kRttUs.
        std::sort(reports_.begin() + static_cast<std::ptrdiff_t>(first_report), reports_.end(),
                  [](const Report& a, const Report& b) { return a.t != b.t ? a.t < b.t : a.segment < b.segment; });
        std::map<BindingKey, std::vector<std::int64_t>> sr_sent;  // (reporter, peer) -> SR times
        std::int64_t last_time = 0;
        for (std::size_t ri = first_report; ri < reports_.size(); ++ri) {
            Report& r = reports_[ri];
            const Segment& s = segments_[r.segment];
            last_time = std::max(last_time, r.t);
            r.reporter_ssrc = 0x2000'0000U | (c.index & 0x0FFF'FFFFU);
            for (std::size_t si = first_segment; si < segments_.size(); ++si) {
                const Segment& back = segments_[si];
                if (back.src != s.dst) continue;
                r.reporter_ssrc = back.ssrc;
                if (back.dst != s.src || r.t < back.send0 || r.t > back.last_send() + kPacketUs) continue;
                r.sr = true;
                const auto sent =
                    static_cast<std::uint32_t>(std::min<std::int64_t>(back.count, (r.t - back.send0) / kPacketUs + 1));
                r.packets = sent;
                r.octets = sent * 160;
                r.rtp_ts = static_cast<std::uint32_t>(back.ts0 + voice_.units(r.t - back.send0));
                break;
            }
            const auto peer_sr = sr_sent.find({s.src, s.dst});
            if (peer_sr != sr_sent.end()) {
                for (auto it = peer_sr->second.rbegin(); it != peer_sr->second.rend(); ++it) {
                    if (*it > r.t - kRttUs) continue;
                    r.lsr = ntp_middle(*it);
                    r.dlsr = static_cast<std::uint32_t>(((r.t - *it - kRttUs) * 65536 + 500'000) / 1'000'000);
                    break;
                }
            }
            if (r.sr) sr_sent[{s.dst, s.src}].push_back(r.t);
            events_.push_back({r.t, c.index, rtcp, static_cast<std::uint32_t>(ri), 0});
        }
        return last_time;
    }

    // ---- streams -------------------------------------------------------------------------------

    // The first binding of (dst, peer) by a call other than `call` after `after`, or kNever.
    std::int64_t rebinding(const Endpoint& dst, const Endpoint& peer, std::int64_t after, std::uint32_t call) const {
        const auto it = bindings_.find({dst, peer});
        if (it == bindings_.end()) return kNever;
        std::int64_t best = kNever;
        for (const auto& [t, who] : it->second)
            if (who != call && t > after) best = std::min(best, t);
        return best;
    }

    void build_streams() {
        using Key = std::tuple<Endpoint, Endpoint, std::uint32_t>;
        std::map<Key, std::uint32_t> open;  // key -> last segment of the stream still open on it
        const std::int64_t idle = o_.stream_idle_timeout_us;
        auto close = [&](std::uint32_t seg, std::int64_t next_first) {
            const Segment& a = segments_[seg];
            StreamTruth& st = truth_.streams[a.stream];
            const std::int64_t last = a.wire.back().arrival;
            const std::int64_t rebound = rebinding(a.dst, a.src, last, a.call);
            ExpectedFinish f;
            if (rebound < next_first && rebound < last + idle) {
                f = ExpectedFinish::rebound;
            } else if (next_first != kNever && next_first < last + idle) {
                f = ExpectedFinish::restarted;
            } else if (next_first != kNever || last + idle <= truth_.last.us) {
                f = ExpectedFinish::idle;
            } else {
                f = ExpectedFinish::flushed;
            }
            st.finish = a.superseded ? ExpectedFinish::unknown : f;
        };
        for (std::uint32_t si = 0; si < segments_.size(); ++si) {
            Segment& b = segments_[si];
            if (b.wire.empty()) continue;
            const Key key{b.src, b.dst, b.ssrc};
            const auto it = open.find(key);
            if (it != open.end()) {
                const Segment& a = segments_[it->second];
                const std::int64_t last = a.wire.back().arrival;
                const std::int64_t next_first = b.wire.front().arrival;
                const bool merges = b.continuation && !a.superseded &&
                                    rebinding(a.dst, a.src, last, a.call) >= next_first && next_first < last + idle;
                if (merges) {
                    b.stream = a.stream;
                    ++truth_.streams[b.stream].calls;
                    it->second = si;
                    continue;
                }
                close(it->second, next_first);
            }
            StreamTruth st;
            const Call& c = calls_[b.call];
            const bool visible = visible_[b.call];
            st.call_id = visible ? c.call_id : std::string();
            st.call_index = b.call;
            st.src = b.src;
            st.dst = b.dst;
            st.ssrc = b.ssrc;
            b.stream = static_cast<std::uint32_t>(truth_.streams.size());
            truth_.streams.push_back(std::move(st));
            open[key] = si;
        }
        for (const auto& [key, seg] : open) close(seg, kNever);

        // Measurements over each stream's packets in arrival order (segments follow each other).
        struct Acc {
            std::int64_t origin_us = 0;  // arrival and timestamp of the first packet: relative
            std::int64_t origin_ts = 0;  // values keep the doubles exact
            std::int64_t min_ext = kNever;
            std::int64_t max_ext = std::numeric_limits<std::int64_t>::min();
            double jitter = 0;
            double prev_transit = 0;
            bool any = false;
        };
        std::vector<Acc> acc(truth_.streams.size());
        for (const Segment& s : segments_) {
            if (s.stream == UINT32_MAX) continue;
            StreamTruth& st = truth_.streams[s.stream];
            Acc& a = acc[s.stream];
            for (const WirePacket& w : s.wire) {
                const std::int64_t ext = s.seq0 + w.n;
                const std::int64_t ts = s.ts0 + static_cast<std::int64_t>(w.n) * voice_.samples_per_packet();
                if (!a.any) {
                    st.first = Timestamp{w.arrival};
                    a.origin_us = w.arrival;
                    a.origin_ts = ts;
                }
                const double transit =
                    static_cast<double>(w.arrival - a.origin_us) * static_cast<double>(voice_.clock_hz) / 1e6 -
                    static_cast<double>(ts - a.origin_ts);
                if (a.any) a.jitter += (std::fabs(transit - a.prev_transit) - a.jitter) / 16.0;
                a.prev_transit = transit;
                a.any = true;
                a.min_ext = std::min(a.min_ext, ext);
                a.max_ext = std::max(a.max_ext, ext);
                st.last = Timestamp{std::max(st.last.us, w.arrival)};
                ++st.received;
                if (w.duplicate) ++st.duplicates;
            }
        }
        for (std::size_t i = 0; i < truth_.streams.size(); ++i) {
            StreamTruth& st = truth_.streams[i];
            st.sent = static_cast<std::uint64_t>(acc[i].max_ext - acc[i].min_ext + 1);
            st.lost = st.sent - (st.received - st.duplicates);
            st.jitter_ms = acc[i].jitter / (static_cast<double>(voice_.clock_hz) / 1000.0);
        }
    }

    // ---- output --------------------------------------------------------------------------------

    void emit(const TaggedPacketSink& sink) {
        std::uint8_t packet[12 + 160];
        std::fill(std::begin(packet) + 12, std::end(packet),
                  std::uint8_t{0xd5});  // A-law silence (any codec: 160 bytes)
        std::vector<std::uint8_t> compound;
        for (const Event& e : events_) {
            if (e.t < cut_) continue;
            const Call& c = calls_[e.call];
            if (e.kind == rtp) {
                const Segment& s = segments_[e.a];
                const WirePacket& w = s.wire[e.b];
                packet[0] = 0x80;
                packet[1] = voice_.payload_type;
                store_be16(packet + 2, static_cast<std::uint16_t>(s.seq0 + w.n));
                store_be32(packet + 4, static_cast<std::uint32_t>(s.ts0 + static_cast<std::int64_t>(w.n) *
                                                                              voice_.samples_per_packet()));
                store_be32(packet + 8, s.ssrc);
                sink(Timestamp{e.t}, s.src, s.dst, ByteSpan(packet, sizeof packet), PacketInfo{PacketKind::rtp, {}});
                ++truth_.rtp_packets;
                continue;
            }
            if (e.kind == rtcp) {
                const Report& r = reports_[e.a];
                const Segment& s = segments_[r.segment];
                const Endpoint from = rtcp_of(s.dst);
                const Endpoint to = rtcp_of(s.src);
                if (o_.rtcp) {
                    render_rtcp(compound, r, s, o_.rtcp_xr);
                    sink(Timestamp{e.t}, from, to, ByteSpan(compound.data(), compound.size()),
                         PacketInfo{PacketKind::rtcp, {}});
                    ++truth_.rtcp_packets;
                }
                if (o_.rtcp_json) {
                    const std::string json = render_rtcp_json(r, s);
                    sink(Timestamp{e.t}, from, to, as_bytes(json), PacketInfo{PacketKind::rtcp_json, c.call_id});
                    ++truth_.rtcp_json_packets;
                }
                if (s.stream != UINT32_MAX) note_report(truth_.streams[s.stream], r);
                continue;
            }
            const SipText text = render_sip(c, e.kind, voice_);
            sink(Timestamp{e.t}, text.from_caller ? c.caller : c.callee, text.from_caller ? c.callee : c.caller,
                 as_bytes(text.text), PacketInfo{PacketKind::sip, {}});
            ++truth_.sip_packets;
        }
    }

    void note_report(StreamTruth& st, const Report& r) const {
        st.has_receiver = true;
        ReceiverTruth& v = st.receiver;
        v.reports += (o_.rtcp ? 1U : 0U) + (o_.rtcp_json ? 1U : 0U);
        v.fraction_lost = r.fraction;
        v.cumulative_lost = r.cumulative;
        v.highest_seq = r.highest;
        v.jitter = r.jitter;
        if (const std::uint32_t rtt = rtt_of(r.t, r.lsr, r.dlsr); rtt != kNoRtt) v.rtt_us = rtt;
        if (o_.rtcp && o_.rtcp_xr) {
            ++v.xr_reports;
            v.xr_loss_rate = r.loss_rate;
            v.xr_discard_rate = 0;
            v.xr_r_factor = r.r_factor;
            v.xr_mos_lq_x10 = r.mos_x10;
            v.xr_mos_cq_x10 = r.mos_x10;
            v.xr_round_trip_ms = static_cast<std::uint16_t>(kRttUs / 1000);
        }
    }

    const CorpusOptions& o_;
    std::mt19937_64 rng_;
    std::mt19937_64 scenario_rng_;
    std::uint32_t per_direction_;
    std::int64_t cut_;
    bool want_rtcp_;
    VoiceFormat voice_;
    Truth truth_;
    std::vector<Call> calls_;
    std::vector<Segment> segments_;
    std::vector<Event> events_;
    std::vector<Report> reports_;
    std::vector<std::array<Sender, 3>> senders_;  // per pair: caller, callee, early media
    std::vector<std::int64_t> pair_free_;
    std::vector<std::int64_t> id_free_;
    std::vector<bool> visible_;  // per call: its INVITE (with the offer) was captured
    std::map<BindingKey, std::vector<std::pair<std::int64_t, std::uint32_t>>> bindings_;
};

}  // namespace

Truth generate(const CorpusOptions& options, const TaggedPacketSink& sink) { return Generator(options).run(sink); }

Truth generate(const CorpusOptions& options, const PacketSink& sink) {
    if (options.rtcp_json)
        throw std::invalid_argument("RTCP-JSON travels in HEP: use the generate() overload with PacketInfo");
    return generate(options, TaggedPacketSink([&sink](Timestamp t, const Endpoint& s, const Endpoint& d, ByteSpan p,
                                                      const PacketInfo&) { sink(t, s, d, p); }));
}

}  // namespace hepd::gen
