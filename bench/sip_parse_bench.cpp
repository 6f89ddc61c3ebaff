// Full parse of typical SIP traffic: an INVITE with SDP (message + body), a 200 OK with SDP
// and a short BYE, as a dialog tracker would see them. Messages are modelled on what
// Kamailio/sipp and common desk phones send.
#include "sip/framing.hpp"
#include "sip/message.hpp"
#include "sip/sdp.hpp"

#include <benchmark/benchmark.h>

#include <string>

namespace {

using namespace hepd::sip;

std::string crlf(std::string_view lf_text) {
    std::string out;
    for (char c : lf_text) {
        if (c == '\n') out += '\r';
        out += c;
    }
    return out;
}

std::string with_length(std::string_view head, std::string_view body) {
    return crlf(head) + "Content-Length: " + std::to_string(crlf(body).size()) + "\r\n\r\n" + crlf(body);
}

const std::string kInviteSdp = R"(v=0
o=- 3918263846 3918263846 IN IP4 10.20.30.40
s=pjmedia
b=AS:84
t=0 0
a=X-nat:0
m=audio 40010 RTP/AVP 8 0 9 18 101
c=IN IP4 10.20.30.40
b=TIAS:64000
a=rtcp:40011 IN IP4 10.20.30.40
a=sendrecv
a=rtpmap:8 PCMA/8000
a=rtpmap:0 PCMU/8000
a=rtpmap:9 G722/8000
a=rtpmap:18 G729/8000
a=fmtp:18 annexb=no
a=rtpmap:101 telephone-event/8000
a=fmtp:101 0-16
a=ptime:20
)";

const std::string kInvite = with_length(R"(INVITE sip:+4930123456@voip.example.net;user=phone SIP/2.0
Via: SIP/2.0/UDP 10.0.0.1;branch=z9hG4bK7f3c.a0b2c4d6e8f0a1b2c3d4e5f6a7b8c9d0.0
Via: SIP/2.0/UDP 10.20.30.40:5060;rport=5060;received=198.51.100.7;branch=z9hG4bKPj6bd7d7b4-1c8e-4a4b-9c1f-2e0cf2a6e1d3
Record-Route: <sip:10.0.0.1;lr;ftag=f3a9c2d1e0>
Max-Forwards: 69
From: "Reception Desk" <sip:1001@voip.example.net>;tag=f3a9c2d1e0
To: <sip:+4930123456@voip.example.net;user=phone>
Contact: "Reception Desk" <sip:1001@10.20.30.40:5060;ob>
Call-ID: 5f1d3c2e-8a7b-4c6d-9e0f-1a2b3c4d5e6f
CSeq: 31412 INVITE
Route: <sip:10.0.0.2;lr>
Allow: PRACK, INVITE, ACK, BYE, CANCEL, UPDATE, INFO, SUBSCRIBE, NOTIFY, REFER, MESSAGE, OPTIONS
Supported: replaces, 100rel, timer, norefersub
Session-Expires: 1800
Min-SE: 90
User-Agent: Example SoftPhone 3.2.1
P-Asserted-Identity: "Reception Desk" <sip:1001@voip.example.net>
Content-Type: application/sdp
)",
                                        kInviteSdp);

const std::string kOkSdp = R"(v=0
o=root 1193455112 1193455113 IN IP4 192.0.2.50
s=Asterisk PBX 18.10.0
c=IN IP4 192.0.2.50
t=0 0
m=audio 17982 RTP/AVP 8 101
a=rtpmap:8 PCMA/8000
a=rtpmap:101 telephone-event/8000
a=fmtp:101 0-16
a=ptime:20
a=maxptime:150
a=sendrecv
)";

const std::string kOk = with_length(R"(SIP/2.0 200 OK
Via: SIP/2.0/UDP 10.0.0.1;branch=z9hG4bK7f3c.a0b2c4d6e8f0a1b2c3d4e5f6a7b8c9d0.0, SIP/2.0/UDP 10.20.30.40:5060;rport=5060;received=198.51.100.7;branch=z9hG4bKPj6bd7d7b4-1c8e-4a4b-9c1f-2e0cf2a6e1d3
Record-Route: <sip:10.0.0.1;lr;ftag=f3a9c2d1e0>
From: "Reception Desk" <sip:1001@voip.example.net>;tag=f3a9c2d1e0
To: <sip:+4930123456@voip.example.net;user=phone>;tag=as4c1f2a7b
Call-ID: 5f1d3c2e-8a7b-4c6d-9e0f-1a2b3c4d5e6f
CSeq: 31412 INVITE
Server: Asterisk PBX 18.10.0
Allow: INVITE, ACK, CANCEL, OPTIONS, BYE, REFER, SUBSCRIBE, NOTIFY, INFO, PUBLISH, MESSAGE
Supported: replaces, timer
Session-Expires: 1800;refresher=uas
Contact: <sip:+4930123456@192.0.2.50:5060>
Content-Type: application/sdp
)",
                                    kOkSdp);

const std::string kBye = crlf(R"(BYE sip:+4930123456@192.0.2.50:5060 SIP/2.0
Via: SIP/2.0/UDP 10.20.30.40:5060;rport;branch=z9hG4bKPj0a1b2c3d
Max-Forwards: 70
From: "Reception Desk" <sip:1001@voip.example.net>;tag=f3a9c2d1e0
To: <sip:+4930123456@voip.example.net;user=phone>;tag=as4c1f2a7b
Call-ID: 5f1d3c2e-8a7b-4c6d-9e0f-1a2b3c4d5e6f
CSeq: 31413 BYE
Reason: Q.850;cause=16;text="Normal call clearing"
Content-Length: 0

)");

// The per-packet path: one reused Message and SessionDescription, as a shard would hold them.
void parse_full(benchmark::State& state, const std::string& text) {
    Message message;
    SessionDescription sdp;
    for (auto _ : state) {
        const auto error = parse_message_into(text, message);
        if (error) state.SkipWithError("parse failed");
        if (!message.body.empty() && parse_sdp_into(message.body, sdp)) state.SkipWithError("sdp failed");
        benchmark::DoNotOptimize(message.call_id.data());
        benchmark::DoNotOptimize(sdp.media[0].port);
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * text.size()));
}

void BM_invite_with_sdp(benchmark::State& state) { parse_full(state, kInvite); }
void BM_ok_200_with_sdp(benchmark::State& state) { parse_full(state, kOk); }
void BM_bye(benchmark::State& state) { parse_full(state, kBye); }

// The convenience API that returns Result<Message> / Result<SessionDescription> by value.
void BM_invite_with_sdp_by_value(benchmark::State& state) {
    for (auto _ : state) {
        auto message = parse_message(kInvite);
        if (!message.ok()) state.SkipWithError("parse failed");
        auto sdp = parse_sdp(message->body);
        if (!sdp.ok()) state.SkipWithError("sdp failed");
        benchmark::DoNotOptimize(sdp->media[0].port);
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kInvite.size()));
}

void BM_invite_sdp_only(benchmark::State& state) {
    const auto message = parse_message(kInvite);
    SessionDescription sdp;
    for (auto _ : state) {
        if (parse_sdp_into(message->body, sdp)) state.SkipWithError("sdp failed");
        benchmark::DoNotOptimize(sdp.media[0].port);
    }
}

void BM_invite_message_length(benchmark::State& state) {
    for (auto _ : state) {
        const Frame frame = message_length(kInvite);
        benchmark::DoNotOptimize(frame.length);
    }
}

}  // namespace

BENCHMARK(BM_invite_with_sdp);
BENCHMARK(BM_ok_200_with_sdp);
BENCHMARK(BM_bye);
BENCHMARK(BM_invite_with_sdp_by_value);
BENCHMARK(BM_invite_sdp_only);
BENCHMARK(BM_invite_message_length);
