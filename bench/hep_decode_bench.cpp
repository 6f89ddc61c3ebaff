// HEP decode cost per message: a Kamailio siptrace INVITE (chunks 1,2,3,4,7,8,9,10,11,12,17,15
// with an ~800-byte SIP payload), a HEPv2 message, the TCP framer, and inflating chunk 0x10.
#include "hep/compression.hpp"
#include "hep/decoder.hpp"
#include "hep/encoder.hpp"
#include "hep/framer.hpp"
#include "hep/timestamp.hpp"

#include <benchmark/benchmark.h>
#include <zlib.h>

#include <string>
#include <vector>

using namespace hepd;
using namespace hepd::hep;

namespace {

const std::string invite =
    "INVITE sip:service@127.0.0.1:5070 SIP/2.0\r\n"
    "Record-Route: <sip:127.0.0.1;lr=on;ftag=18897SIPpTag001>\r\n"
    "Via: SIP/2.0/UDP 127.0.0.1;branch=z9hG4bKe0f4.5e3b8a6e7c9b1d2a5c0e4f1a2b3c4d5e.0\r\n"
    "Via: SIP/2.0/UDP 127.0.0.1:5061;rport=5061;branch=z9hG4bK-18897-1-0\r\n"
    "From: sipp <sip:sipp@127.0.0.1:5061>;tag=18897SIPpTag001\r\n"
    "To: service <sip:service@127.0.0.1:5070>\r\n"
    "Call-ID: 1-18897@127.0.0.1\r\n"
    "CSeq: 1 INVITE\r\n"
    "Contact: sip:sipp@127.0.0.1:5061\r\n"
    "Max-Forwards: 69\r\n"
    "User-Agent: sipp 3.6.1\r\n"
    "Supported: replaces, timer\r\n"
    "Content-Type: application/sdp\r\n"
    "Content-Length:   286\r\n"
    "\r\n"
    "v=0\r\n"
    "o=user1 53655765 2353687637 IN IP4 127.0.0.1\r\n"
    "s=-\r\n"
    "c=IN IP4 127.0.0.1\r\n"
    "t=0 0\r\n"
    "m=audio 6000 RTP/AVP 8 0 101\r\n"
    "a=rtpmap:8 PCMA/8000\r\n"
    "a=rtpmap:0 PCMU/8000\r\n"
    "a=rtpmap:101 telephone-event/8000\r\n"
    "a=fmtp:101 0-15\r\n"
    "a=ptime:20\r\n"
    "a=sendrecv\r\n"
    "a=rtcp:6001\r\n"
    "a=ssrc:1234567890 cname:sipp@127.0.0.1\r\n";

const std::string call_id = "1-18897@127.0.0.1";

Message kamailio_invite() {
    Message m;
    m.ip_family = family_ipv4;
    m.ip_protocol = 17;
    m.src = {IpAddress::v4(0x7f000001u), 5061};
    m.dst = {IpAddress::v4(0x7f000001u), 5060};
    m.seconds = 1'796'013'063;
    m.micros = 512'829;
    m.payload_type = 1;
    m.capture_id = 2001;
    m.correlation_id = as_bytes(call_id);
    m.payload = as_bytes(invite);
    for (const Field f : {Field::ip_family, Field::ip_protocol, Field::src_address, Field::dst_address, Field::src_port,
                          Field::dst_port, Field::seconds, Field::micros, Field::payload_type, Field::capture_id,
                          Field::correlation_id, Field::payload})
        m.mark(f);
    return m;
}

std::vector<std::uint8_t> encoded_invite() {
    std::vector<std::uint8_t> out;
    encode_v3(kamailio_invite(), out);
    return out;
}

void BM_decode_v3_kamailio_invite(benchmark::State& state) {
    const auto bytes = encoded_invite();
    for (auto _ : state) {
        auto r = decode(bytes);
        benchmark::DoNotOptimize(r);
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(bytes.size()));
    state.counters["message_bytes"] = static_cast<double>(bytes.size());
}
BENCHMARK(BM_decode_v3_kamailio_invite);

void BM_decode_into_v3_kamailio_invite(benchmark::State& state) {
    const auto bytes = encoded_invite();
    Message m;
    for (auto _ : state) {
        auto e = decode_into(bytes, m);
        benchmark::DoNotOptimize(e);
        benchmark::DoNotOptimize(m);
    }
}
BENCHMARK(BM_decode_into_v3_kamailio_invite);

void BM_decode_v2(benchmark::State& state) {
    std::vector<std::uint8_t> bytes;
    encode_legacy(kamailio_invite(), 2, bytes);
    for (auto _ : state) {
        auto r = decode(bytes);
        benchmark::DoNotOptimize(r);
    }
}
BENCHMARK(BM_decode_v2);

void BM_normalise_timestamp(benchmark::State& state) {
    const Message m = kamailio_invite();
    const Timestamp now{1'796'013'063'600'000};
    for (auto _ : state) {
        auto t = normalise_timestamp(m, now);
        benchmark::DoNotOptimize(t);
    }
}
BENCHMARK(BM_normalise_timestamp);

// Per frame: a buffer of 64 back-to-back INVITEs, cut one by one.
void BM_framer_next(benchmark::State& state) {
    const auto one = encoded_invite();
    std::vector<std::uint8_t> stream;
    for (int i = 0; i < 64; ++i) stream.insert(stream.end(), one.begin(), one.end());
    const StreamFramer framer;
    for (auto _ : state) {
        ByteSpan rest(stream);
        while (!rest.empty()) {
            const FrameStatus s = framer.next(rest);
            benchmark::DoNotOptimize(s);
            rest = rest.subspan(s.size);
        }
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * 64);
}
BENCHMARK(BM_framer_next);

void BM_inflate_zlib_invite(benchmark::State& state) {
    uLongf size = compressBound(static_cast<uLong>(invite.size()));
    std::vector<std::uint8_t> packed(size);
    compress2(packed.data(), &size, reinterpret_cast<const Bytef*>(invite.data()), static_cast<uLong>(invite.size()),
              6);
    packed.resize(size);
    std::vector<std::uint8_t> out(65536);
    Inflater inflater;
    for (auto _ : state) {
        auto r = inflater.inflate(packed, out);
        benchmark::DoNotOptimize(r);
    }
}
BENCHMARK(BM_inflate_zlib_invite);

}  // namespace
