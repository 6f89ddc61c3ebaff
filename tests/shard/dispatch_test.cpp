#include "shard/dispatch.hpp"

#include "core/hash.hpp"
#include "core/media_binding.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace hepd;
using namespace hepd::shard;

namespace {
Datagram sip(std::string_view text) {
    Datagram d;
    d.kind = PayloadClass::sip;
    d.payload = as_bytes(text);
    d.src = Endpoint{IpAddress::v4(0x0a000001U), 5060};
    return d;
}
}  // namespace

TEST_CASE("Call-ID is found in full and compact form, any case", "[shard][dispatch]") {
    CHECK(
        find_call_id("INVITE sip:b@x SIP/2.0\r\nVia: SIP/2.0/UDP h\r\nCall-ID: abc@host \r\nCSeq: 1 INVITE\r\n\r\n") ==
        "abc@host");
    CHECK(find_call_id("SIP/2.0 200 OK\r\ni:xyz\r\n\r\n") == "xyz");
    CHECK(find_call_id("BYE sip:a SIP/2.0\nCALL-ID:\tlf-only\nCSeq: 2 BYE\n\n") == "lf-only");
    // Not in the body, not a header that merely contains the name.
    CHECK(find_call_id("MESSAGE sip:a SIP/2.0\r\nX-Call-ID: no\r\n\r\nCall-ID: body") == "");
    CHECK(find_call_id("") == "");
    CHECK(find_call_id("garbage without lines") == "");
    // Blanks around the name, compact form with a blank before the colon, the value trimmed.
    CHECK(find_call_id("OPTIONS sip:a SIP/2.0\r\nFrom: <sip:a>\r\n  call-Id \t: \tspaced\t \r\n\r\n") == "spaced");
    CHECK(find_call_id("ACK sip:a SIP/2.0\r\nI : compact\r\n\r\n") == "compact");
    // Names that only begin like it; a header without a colon; a message with no headers at all.
    CHECK(find_call_id("BYE sip:a SIP/2.0\r\nCall-Info: <x>\r\nCall-IDs: no\r\nIn-Reply-To: no\r\n\r\n") == "");
    CHECK(find_call_id("BYE sip:a SIP/2.0\r\nCall-ID no colon\r\ni\r\n") == "");
    CHECK(find_call_id("BYE sip:a SIP/2.0\r\n") == "");
    CHECK(find_call_id("BYE sip:a SIP/2.0\r\nCall-ID: last-line-unterminated") == "last-line-unterminated");
}

TEST_CASE("a dialog's messages share one shard; its QoS and log records follow the correlation id",
          "[shard][dispatch]") {
    const std::string invite = "INVITE sip:b@x SIP/2.0\r\nCall-ID: call-42@pbx\r\nCSeq: 1 INVITE\r\n\r\n";
    const std::string bye = "BYE sip:a@x SIP/2.0\r\ni: call-42@pbx\r\nCSeq: 2 BYE\r\n\r\n";
    Datagram qos;
    qos.kind = PayloadClass::qos;
    qos.correlation_id = "call-42@pbx";
    for (std::size_t n : {1, 2, 3, 4, 8, 14}) {
        const auto s = shard_of(sip(invite), n);
        CHECK(s < n);
        CHECK(shard_of(sip(bye), n) == s);
        CHECK(shard_of(qos, n) == s);
        CHECK(shard_of_call("call-42@pbx", n) == s);
    }
}

TEST_CASE("every RTCP report lands beside the stream it describes, whatever its correlation id", "[shard][dispatch]") {
    // The reporter b receives a stream on 50000; its reports leave from 50001 (or 50000 with
    // rtcp-mux), raw or as RTCP-JSON with the Call-ID in the correlation id.
    const Endpoint b{IpAddress::v4(0xc0a80002U), 50000};
    for (const PayloadClass kind : {PayloadClass::rtcp, PayloadClass::rtcp_json}) {
        for (const std::uint16_t port : {std::uint16_t{50000}, std::uint16_t{50001}}) {
            Datagram report;
            report.kind = kind;
            report.src = Endpoint{b.address, port};
            report.correlation_id = "call-42@pbx";
            for (std::size_t n : {2, 3, 4, 8, 14}) CHECK(shard_of(report, n) == shard_of_media(b, n));
        }
    }
}

TEST_CASE("RTP goes by destination media address, raw RTCP by its reporter", "[shard][dispatch]") {
    const Endpoint a{IpAddress::v4(0xc0a80001U), 40000};
    const Endpoint b{IpAddress::v4(0xc0a80002U), 50000};
    Datagram rtp;
    rtp.kind = PayloadClass::rtp;
    rtp.src = a;
    rtp.dst = b;
    Datagram rtcp;  // b reports on what it receives from a: b's RTCP port is 50001
    rtcp.kind = PayloadClass::rtcp;
    rtcp.src = Endpoint{b.address, 50001};
    rtcp.dst = Endpoint{a.address, 40001};
    for (std::size_t n : {2, 4, 7}) {
        CHECK(shard_of(rtp, n) == shard_of_media(b, n));
        CHECK(shard_of(rtcp, n) == shard_of(rtp, n));
        CHECK(shard_of_media(Endpoint{b.address, 50001}, n) == shard_of_media(b, n));
    }
    CHECK(media_key(Endpoint{b.address, 50001}) == b);
}
