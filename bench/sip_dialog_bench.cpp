// A shard's SIP path, per message: parse + dialog table (+ SDP -> MediaBinding), for the
// messages of whole calls, each call with a new Call-ID. Packet time advances between calls so
// finished dialogs linger and retire as in production; expire() runs once per call, as a shard
// would call it per batch. Also reports the memory a tracked dialog costs.
//
// time_per_message (CPU seconds, e.g. "800n" = 800 ns) is the figure to read; items_per_second
// is messages per second.
#include "sip/dialog_table.hpp"
#include "sip/message.hpp"

#include <benchmark/benchmark.h>

#include <cstdio>
#include <string>
#include <vector>

namespace {

using namespace hepd;
using namespace hepd::sip;

std::string crlf(std::string_view lf_text) {
    std::string out;
    for (char c : lf_text) {
        if (c == '\n') out += '\r';
        out += c;
    }
    return out;
}

std::string with_body(std::string_view head, std::string_view body_lf) {
    const std::string body = crlf(body_lf);
    return crlf(head) + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

// Call-ID and tags carry the placeholder XXXXXXXX, rewritten for every call.
const char* const kSdpOffer = R"(v=0
o=- 3918263846 3918263846 IN IP4 10.20.30.40
s=pjmedia
t=0 0
m=audio 40010 RTP/AVP 8 0 9 18 101
c=IN IP4 10.20.30.40
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

const char* const kSdpAnswer = R"(v=0
o=root 1193455112 1193455113 IN IP4 192.0.2.50
s=Asterisk PBX 18.10.0
c=IN IP4 192.0.2.50
t=0 0
m=audio 17982 RTP/AVP 8 101
a=rtpmap:8 PCMA/8000
a=rtpmap:101 telephone-event/8000
a=fmtp:101 0-16
a=ptime:20
a=sendrecv
)";

constexpr const char* kHeadersFrom = "From: \"Reception Desk\" <sip:1001@voip.example.net>;tag=fXXXXXXXX\n";
constexpr const char* kCallId = "Call-ID: 5f1d3c2e-XXXXXXXX-4c6d-9e0f-1a2b3c4d5e6f\n";

struct Step {
    std::string text;
    bool from_caller;
    std::vector<std::size_t> holes;  // offsets of the XXXXXXXX placeholders
};

std::vector<Step> single_hop_call() {
    const std::string via = "Via: SIP/2.0/UDP 10.20.30.40:5060;rport;branch=z9hG4bKPjXXXXXXXX-1\n";
    const std::string to = "To: <sip:+4930123456@voip.example.net;user=phone>";
    const std::string to_tagged = to + ";tag=asXXXXXXXX\n";
    const std::string common = std::string(kHeadersFrom) + kCallId;
    std::vector<Step> steps = {
        {with_body(
             "INVITE sip:+4930123456@voip.example.net;user=phone SIP/2.0\n" + via + "Max-Forwards: 70\n" + common + to +
                 "\nCSeq: 31412 INVITE\n"
                 "Contact: <sip:1001@10.20.30.40:5060;ob>\n"
                 "Allow: PRACK, INVITE, ACK, BYE, CANCEL, UPDATE, INFO, SUBSCRIBE, NOTIFY, REFER, MESSAGE, OPTIONS\n"
                 "Supported: replaces, 100rel, timer, norefersub\nSession-Expires: 1800\nMin-SE: 90\n"
                 "User-Agent: Example SoftPhone 3.2.1\nContent-Type: application/sdp\n",
             kSdpOffer),
         true,
         {}},
        {with_body("SIP/2.0 100 Trying\n" + via + common + to + "\nCSeq: 31412 INVITE\n", ""), false, {}},
        {with_body("SIP/2.0 180 Ringing\n" + via + common + to_tagged +
                       "CSeq: 31412 INVITE\n"
                       "Contact: <sip:+4930123456@192.0.2.50:5060>\n",
                   ""),
         false,
         {}},
        {with_body("SIP/2.0 200 OK\n" + via + common + to_tagged +
                       "CSeq: 31412 INVITE\nServer: Asterisk PBX 18.10.0\n"
                       "Allow: INVITE, ACK, CANCEL, OPTIONS, BYE, REFER, SUBSCRIBE, NOTIFY, INFO, PUBLISH, MESSAGE\n"
                       "Supported: replaces, timer\nSession-Expires: 1800;refresher=uas\n"
                       "Contact: <sip:+4930123456@192.0.2.50:5060>\nContent-Type: application/sdp\n",
                   kSdpAnswer),
         false,
         {}},
        {with_body("ACK sip:+4930123456@192.0.2.50:5060 SIP/2.0\n"
                   "Via: SIP/2.0/UDP 10.20.30.40:5060;rport;branch=z9hG4bKPjXXXXXXXX-2\nMax-Forwards: 70\n" +
                       common + to_tagged + "CSeq: 31412 ACK\n",
                   ""),
         true,
         {}},
        {with_body("BYE sip:+4930123456@192.0.2.50:5060 SIP/2.0\n"
                   "Via: SIP/2.0/UDP 10.20.30.40:5060;rport;branch=z9hG4bKPjXXXXXXXX-3\nMax-Forwards: 70\n" +
                       common + to_tagged + "CSeq: 31413 BYE\nReason: Q.850;cause=16;text=\"Normal call clearing\"\n",
                   ""),
         true,
         {}},
        {with_body("SIP/2.0 200 OK\nVia: SIP/2.0/UDP 10.20.30.40:5060;rport;branch=z9hG4bKPjXXXXXXXX-3\n" + common +
                       to_tagged + "CSeq: 31413 BYE\n",
                   ""),
         false,
         {}},
    };
    for (Step& s : steps)
        for (std::size_t at = s.text.find("XXXXXXXX"); at != std::string::npos; at = s.text.find("XXXXXXXX", at + 8))
            s.holes.push_back(at);
    return steps;
}

void stamp(std::vector<Step>& steps, std::uint32_t n) {
    char hex[9];
    std::snprintf(hex, sizeof hex, "%08x", n);
    for (Step& s : steps)
        for (const std::size_t at : s.holes) s.text.replace(at, 8, hex, 8);
}

class CountingSink final : public MediaSink {
public:
    void on_media_binding(const MediaBinding& b) noexcept override { port_sum_ += b.media.port; }
    std::uint64_t port_sum_ = 0;
};

PacketMeta meta_for(bool from_caller, Timestamp t) {
    static const Endpoint caller = *parse_endpoint("10.20.30.40:5060");
    static const Endpoint callee = *parse_endpoint("192.0.2.50:5060");
    PacketMeta meta;
    meta.time = t;
    meta.src = from_caller ? caller : callee;
    meta.dst = from_caller ? callee : caller;
    meta.agent = 1;
    return meta;
}

// Arg: calls per second of packet time (how many finished dialogs linger at once: 32 s worth).
void BM_call_parse_and_table(benchmark::State& state) {
    std::vector<Step> steps = single_hop_call();
    CountingSink sink;
    DialogTable table(DialogConfig{}, &sink);
    const std::int64_t gap_us = 1'000'000 / state.range(0);
    std::int64_t t = 1'700'000'000'000'000;
    std::uint32_t n = 0;
    for (auto _ : state) {
        stamp(steps, ++n);
        for (std::size_t i = 0; i < steps.size(); ++i) {
            const Disposition d = table.process(
                steps[i].text, meta_for(steps[i].from_caller, Timestamp{t + 1000 * static_cast<std::int64_t>(i)}));
            if (d != Disposition::dialog_created && d != Disposition::dialog_updated)
                state.SkipWithError("not applied");
        }
        table.expire(Timestamp{t});
        t += gap_us;
    }
    const auto messages = static_cast<double>(state.iterations() * steps.size());
    state.SetItemsProcessed(static_cast<std::int64_t>(messages));
    state.counters["time_per_message"] =
        benchmark::Counter(messages, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
    state.counters["table_size"] = static_cast<double>(table.size());
    benchmark::DoNotOptimize(sink.port_sum_);
}

// The table alone: the seven messages are parsed once; their views see each new Call-ID because
// stamping rewrites the buffers in place.
void BM_call_table_only(benchmark::State& state) {
    std::vector<Step> steps = single_hop_call();
    std::vector<Message> parsed(steps.size());
    for (std::size_t i = 0; i < steps.size(); ++i)
        if (parse_message_into(steps[i].text, parsed[i])) state.SkipWithError("parse failed");
    CountingSink sink;
    DialogTable table(DialogConfig{}, &sink);
    const std::int64_t gap_us = 1'000'000 / state.range(0);
    std::int64_t t = 1'700'000'000'000'000;
    std::uint32_t n = 0;
    for (auto _ : state) {
        stamp(steps, ++n);
        for (std::size_t i = 0; i < steps.size(); ++i)
            table.process(parsed[i],
                          meta_for(steps[i].from_caller, Timestamp{t + 1000 * static_cast<std::int64_t>(i)}));
        table.expire(Timestamp{t});
        t += gap_us;
    }
    const auto messages = static_cast<double>(state.iterations() * steps.size());
    state.SetItemsProcessed(static_cast<std::int64_t>(messages));
    state.counters["time_per_message"] =
        benchmark::Counter(messages, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
    benchmark::DoNotOptimize(sink.port_sum_);
}

// Memory per tracked dialog: a table holding `Arg` answered calls (INVITE .. ACK).
void BM_memory_per_dialog(benchmark::State& state) {
    const auto calls = static_cast<std::uint32_t>(state.range(0));
    std::vector<Step> steps = single_hop_call();
    double bytes_per_dialog = 0;
    double key_heap_per_dialog = 0;
    for (auto _ : state) {
        DialogConfig config;
        config.max_dialogs = calls;
        DialogTable table(config);
        const std::size_t empty = table.memory_bytes();
        for (std::uint32_t n = 1; n <= calls; ++n) {
            stamp(steps, n);
            for (std::size_t i = 0; i < 5; ++i)
                table.process(steps[i].text, meta_for(steps[i].from_caller, Timestamp{1'700'000'000'000'000 + n}));
        }
        if (table.size() != calls) state.SkipWithError("calls missing");
        bytes_per_dialog = static_cast<double>(table.memory_bytes() - empty) / calls;
        std::size_t heap = 0;
        table.for_each([&](std::string_view call_id, std::string_view tag, const Dialog&) {
            heap += DialogKey(call_id, tag).heap_bytes();
        });
        key_heap_per_dialog = static_cast<double>(heap) / calls;
    }
    state.counters["bytes_per_dialog"] = bytes_per_dialog;
    state.counters["key_heap_bytes"] = key_heap_per_dialog;
    state.counters["sizeof_Dialog"] = static_cast<double>(sizeof(Dialog));
    state.counters["sizeof_entry"] = static_cast<double>(sizeof(LruTable<DialogKey, Dialog, DialogKeyHash>::Entry));
}

}  // namespace

BENCHMARK(BM_call_parse_and_table)->Arg(100)->Arg(1000);
BENCHMARK(BM_call_table_only)->Arg(1000);
BENCHMARK(BM_memory_per_dialog)->Arg(100'000)->Iterations(1)->Unit(benchmark::kMillisecond);
