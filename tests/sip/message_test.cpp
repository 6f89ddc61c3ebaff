#include "sip/message.hpp"

#include "parse_depth_check.hpp"
#include "sip/sdp.hpp"
#include "test_util.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <iterator>
#include <optional>
#include <set>
#include <string>
#include <vector>

using namespace hepd::sip;
using hepd::sip::test::crlf;
using hepd::sip::test::keep;

namespace {

// 253 bytes, counted line by line: 5+63+5+22+7+31+22+22+35+17+12+12.
const std::string kInviteSdp = crlf(R"(v=0
o=alice 2890844526 2890844526 IN IP4 pc33.atlanta.example.com
s=-
c=IN IP4 192.0.2.101
t=0 0
m=audio 49172 RTP/AVP 0 8 101
a=rtpmap:0 PCMU/8000
a=rtpmap:8 PCMA/8000
a=rtpmap:101 telephone-event/8000
a=fmtp:101 0-16
a=ptime:20
a=sendrecv
)");

const std::string kInvite = crlf(R"(INVITE sip:bob@biloxi.example.com SIP/2.0
Via: SIP/2.0/UDP pc33.atlanta.example.com:5060;branch=z9hG4bK776asdhds;rport
Max-Forwards: 70
To: Bob <sip:bob@biloxi.example.com>
From: "Alice A." <sip:alice@atlanta.example.com>;tag=1928301774
Call-ID: a84b4c76e66710@pc33.atlanta.example.com
CSeq: 314159 INVITE
Contact: <sip:alice@pc33.atlanta.example.com>
User-Agent: Example UA/1.0
Content-Type: application/sdp
Content-Length: 253

)") + kInviteSdp;

Message parse_ok(std::string input) {
    const std::string_view text = keep(std::move(input));
    auto result = parse_message(text);
    INFO("input: " << text);
    REQUIRE(result.ok());
    return result.value();
}

ParseError parse_error(std::string_view text) {
    auto result = parse_message(text);
    INFO("input: " << text);
    REQUIRE_FALSE(result.ok());
    return result.error();
}

std::string response(std::string_view status_line, std::string_view extra_headers = "") {
    return crlf(std::string(status_line) + R"(
Via: SIP/2.0/UDP pc33.atlanta.example.com:5060;branch=z9hG4bK776asdhds;received=192.0.2.101
To: Bob <sip:bob@biloxi.example.com>;tag=a6c85cf
From: "Alice A." <sip:alice@atlanta.example.com>;tag=1928301774
Call-ID: a84b4c76e66710@pc33.atlanta.example.com
CSeq: 314159 INVITE
)" + std::string(extra_headers) +
                "Content-Length: 0\n\n");
}

}  // namespace

TEST_CASE("INVITE with SDP: every extracted field", "[sip][message]") {
    REQUIRE(kInviteSdp.size() == 253);
    const Message m = parse_ok(kInvite);

    CHECK(m.kind == MessageKind::request);
    CHECK(m.is_request());
    CHECK_FALSE(m.is_response());
    CHECK(m.method == Method::invite);
    CHECK(m.method_text == "INVITE");
    CHECK(m.request_uri == "sip:bob@biloxi.example.com");
    CHECK(m.status_code == 0);
    CHECK(m.reason_phrase.empty());
    CHECK(m.start_line == "INVITE sip:bob@biloxi.example.com SIP/2.0");

    CHECK(m.call_id == "a84b4c76e66710@pc33.atlanta.example.com");
    CHECK(m.cseq.number == 314159);
    CHECK(m.cseq.method == Method::invite);
    CHECK(m.cseq.method_text == "INVITE");
    CHECK_FALSE(m.cseq_method_mismatch);

    CHECK(m.from.display_name == "Alice A.");
    CHECK(m.from.uri == "sip:alice@atlanta.example.com");
    CHECK(m.from.tag == "1928301774");
    CHECK(m.from.has_tag);
    CHECK(m.from.params == ";tag=1928301774");
    CHECK(m.from.angle_brackets);
    CHECK(m.from.valid);
    CHECK(m.from.raw == R"("Alice A." <sip:alice@atlanta.example.com>;tag=1928301774)");

    CHECK(m.to.display_name == "Bob");
    CHECK(m.to.uri == "sip:bob@biloxi.example.com");
    CHECK(m.to.tag.empty());
    CHECK_FALSE(m.to.has_tag);
    CHECK(m.to.params.empty());
    CHECK(m.to.valid);

    CHECK(m.contact.uri == "sip:alice@pc33.atlanta.example.com");
    CHECK(m.contact.display_name.empty());
    CHECK(m.contact.angle_brackets);

    CHECK(m.via_count == 1);
    CHECK(m.top_via.valid);
    CHECK(m.top_via.protocol_name == "SIP");
    CHECK(m.top_via.protocol_version == "2.0");
    CHECK(m.top_via.transport_text == "UDP");
    CHECK(m.top_via.transport == Transport::udp);
    CHECK(m.top_via.host == "pc33.atlanta.example.com");
    CHECK(m.top_via.port == 5060);
    CHECK(m.top_via.branch == "z9hG4bK776asdhds");
    CHECK(m.top_via.received.empty());
    CHECK(m.top_via.has_rport);
    CHECK(m.top_via.rport == 0);
    CHECK(m.top_via.params == ";branch=z9hG4bK776asdhds;rport");

    REQUIRE(m.max_forwards.has_value());
    CHECK(*m.max_forwards == 70);
    CHECK(m.user_agent == "Example UA/1.0");
    CHECK(m.server.empty());
    CHECK(m.content_type == "application/sdp");
    REQUIRE(m.content_length.has_value());
    CHECK(*m.content_length == 253);
    CHECK(m.body_bytes_present == 253);
    CHECK(m.body == kInviteSdp);
    CHECK_FALSE(m.body_truncated);
    CHECK_FALSE(m.body_excess);
    CHECK_FALSE(m.content_length_invalid);
    CHECK_FALSE(m.headers_unterminated);
    CHECK(m.raw == kInvite);
    CHECK(m.reason.protocol == ReasonProtocol::none);
    CHECK(m.reason_count == 0);

    CHECK(m.header_count == 10);
    CHECK(m.header_overflow == 0);
    CHECK(m.headers()[0].name == "Via");
    CHECK(m.headers()[0].id == HeaderId::via);
    CHECK(m.headers()[9].name == "Content-Length");
    CHECK(m.headers()[9].value == "253");

    // The body is the SDP that the SDP parser reads.
    const auto sdp = parse_sdp(m.body);
    REQUIRE(sdp.ok());
    CHECK(sdp->media_count == 1);
    CHECK(sdp->media[0].port == 49172);
    CHECK(sdp->connection.address == "192.0.2.101");
}

TEST_CASE("parse_message_into reuses a Message and resets it", "[sip][message]") {
    Message m;
    REQUIRE_FALSE(parse_message_into(kInvite, m).has_value());
    CHECK(m.method == Method::invite);
    const std::string bye = crlf(R"(BYE sip:alice@pc33.atlanta.example.com SIP/2.0
Call-ID: other-call
CSeq: 2 BYE

)");
    REQUIRE_FALSE(parse_message_into(bye, m).has_value());
    CHECK(m.method == Method::bye);
    CHECK(m.call_id == "other-call");
    CHECK(m.via_count == 0);
    CHECK_FALSE(m.top_via.valid);
    CHECK_FALSE(m.from.valid);
    CHECK(m.content_type.empty());
    CHECK_FALSE(m.content_length.has_value());
    CHECK(m.header_count == 2);
    const auto error = parse_message_into("garbage", m);
    REQUIRE(error.has_value());
    CHECK(*error == ParseError::bad_start_line);
}

TEST_CASE("responses: status code, reason phrase, method from CSeq", "[sip][message]") {
    struct Case {
        const char* line;
        std::uint16_t code;
        const char* phrase;
    };
    const Case cases[] = {
        {"SIP/2.0 100 Trying", 100, "Trying"},
        {"SIP/2.0 180 Ringing", 180, "Ringing"},
        {"SIP/2.0 183 Session Progress", 183, "Session Progress"},
        {"SIP/2.0 200 OK", 200, "OK"},
        {"SIP/2.0 486 Busy Here", 486, "Busy Here"},
        {"SIP/2.0 487 Request Terminated", 487, "Request Terminated"},
        {"SIP/2.0 503 Service Unavailable", 503, "Service Unavailable"},
        {"SIP/2.0 699 ", 699, ""},
        {"SIP/2.0 200", 200, ""},
        {"sip/2.0 200 ok", 200, "ok"},
    };
    for (const Case& c : cases) {
        const std::string text = response(c.line);
        const Message m = parse_ok(text);
        INFO(c.line);
        CHECK(m.kind == MessageKind::response);
        CHECK(m.status_code == c.code);
        CHECK(m.reason_phrase == c.phrase);
        CHECK(m.method == Method::invite);
        CHECK(m.method_text == "INVITE");
        CHECK(m.request_uri.empty());
        CHECK(m.to.tag == "a6c85cf");
        CHECK(m.top_via.received == "192.0.2.101");
        CHECK_FALSE(m.cseq_method_mismatch);
        CHECK(m.body.empty());
    }
}

TEST_CASE("Reason header: Q.850 cause and text, preferred over SIP", "[sip][message][reason]") {
    SECTION("486 with a single Q.850 reason") {
        const Message m = parse_ok(response("SIP/2.0 486 Busy Here", "Reason: Q.850;cause=17;text=\"User busy\"\n"));
        CHECK(m.reason.protocol == ReasonProtocol::q850);
        CHECK(m.reason.protocol_text == "Q.850");
        CHECK(m.reason.has_cause);
        CHECK(m.reason.cause == 17);
        CHECK(m.reason.text == "User busy");
        CHECK(m.reason_count == 1);
    }
    SECTION("SIP reason first, Q.850 second on one line") {
        const Message m = parse_ok(response(
            "SIP/2.0 487 Request Terminated",
            "Reason: SIP;cause=200;text=\"Call completed elsewhere\", Q.850;cause=31;text=\"Normal, unspecified\"\n"));
        CHECK(m.reason.protocol == ReasonProtocol::q850);
        CHECK(m.reason.cause == 31);
        CHECK(m.reason.text == "Normal, unspecified");
        CHECK(m.reason_count == 2);
    }
    SECTION("Q.850 and SIP reasons on separate lines, Q.850 first") {
        const Message m =
            parse_ok(response("SIP/2.0 503 Service Unavailable", "Reason: q.850 ;cause=34\nReason: SIP ;cause=503\n"));
        CHECK(m.reason.protocol == ReasonProtocol::q850);
        CHECK(m.reason.protocol_text == "q.850");
        CHECK(m.reason.cause == 34);
        CHECK(m.reason.text.empty());
        CHECK(m.reason_count == 2);
    }
    SECTION("only a SIP reason") {
        const Message m =
            parse_ok(response("SIP/2.0 200 OK", "Reason: SIP;cause=200;text=\"Call completed; elsewhere\"\n"));
        CHECK(m.reason.protocol == ReasonProtocol::sip);
        CHECK(m.reason.cause == 200);
        CHECK(m.reason.text == "Call completed; elsewhere");
    }
    SECTION("unknown protocol, cause that is not a number") {
        const Message m = parse_ok(response("SIP/2.0 500 Server Error", "Reason: preemption ;cause=x\n"));
        CHECK(m.reason.protocol == ReasonProtocol::other);
        CHECK(m.reason.protocol_text == "preemption");
        CHECK_FALSE(m.reason.has_cause);
        CHECK(m.reason.cause == 0);
    }
    SECTION("parse_reason directly") {
        const Reason r = parse_reason(R"(Q.850;cause=16;text="Normal call clearing")");
        CHECK(r.protocol == ReasonProtocol::q850);
        CHECK(r.cause == 16);
        CHECK(r.text == "Normal call clearing");
        CHECK(parse_reason("").protocol == ReasonProtocol::none);
        CHECK(parse_reason(";cause=16").protocol == ReasonProtocol::none);
        // Beyond Q.850's 0..127 a number still counts (as "other"), kept below kNoCause.
        CHECK(parse_reason("Q.850;cause=99999").has_cause);
        CHECK(parse_reason("Q.850;cause=99999").cause == 0xfffe);
        CHECK_FALSE(parse_reason("Q.850;cause=1x").has_cause);
    }
}

TEST_CASE("BYE, CANCEL, ACK, REGISTER, OPTIONS and extension methods", "[sip][message]") {
    const Message bye = parse_ok(crlf(R"(BYE sip:alice@pc33.atlanta.example.com SIP/2.0
Via: SIP/2.0/TCP 192.0.2.4:5061;branch=z9hG4bKnashds10
Max-Forwards: 70
From: Bob <sip:bob@biloxi.example.com>;tag=a6c85cf
To: Alice <sip:alice@atlanta.example.com>;tag=1928301774
Call-ID: a84b4c76e66710
CSeq: 231 BYE
Content-Length: 0

)"));
    CHECK(bye.method == Method::bye);
    CHECK(bye.cseq.number == 231);
    CHECK(bye.top_via.transport == Transport::tcp);
    CHECK(bye.top_via.host == "192.0.2.4");
    CHECK(bye.top_via.port == 5061);
    CHECK(bye.from.tag == "a6c85cf");
    CHECK(bye.to.tag == "1928301774");
    CHECK(bye.content_length == 0u);
    CHECK(bye.body.empty());
    CHECK(bye.body_bytes_present == 0);

    const Message cancel = parse_ok(crlf(R"(CANCEL sip:bob@biloxi.example.com SIP/2.0
Via: SIP/2.0/UDP pc33.atlanta.example.com;branch=z9hG4bK776asdhds
Call-ID: a84b4c76e66710
CSeq: 314159 CANCEL
From: <sip:alice@atlanta.example.com>;tag=1928301774
To: <sip:bob@biloxi.example.com>

)"));
    CHECK(cancel.method == Method::cancel);
    CHECK(cancel.cseq.method == Method::cancel);
    CHECK(cancel.top_via.port == 0);
    CHECK(cancel.from.display_name.empty());
    CHECK(cancel.from.uri == "sip:alice@atlanta.example.com");

    const Message ack = parse_ok(crlf(R"(ACK sip:bob@192.0.2.4 SIP/2.0
Via: SIP/2.0/UDP pc33.atlanta.example.com;branch=z9hG4bKnashds9
Call-ID: a84b4c76e66710
CSeq: 314159 ACK
Content-Length: 0

)"));
    CHECK(ack.method == Method::ack);
    CHECK(ack.request_uri == "sip:bob@192.0.2.4");
    CHECK(ack.cseq.method == Method::ack);

    const Message reg = parse_ok(crlf(R"(REGISTER sip:registrar.biloxi.example.com SIP/2.0
Via: SIP/2.0/UDP bobspc.biloxi.example.com:5060;branch=z9hG4bKnashds7
Max-Forwards: 70
To: Bob <sip:bob@biloxi.example.com>
From: Bob <sip:bob@biloxi.example.com>;tag=456248
Call-ID: 843817637684230@998sdasdh09
CSeq: 1826 REGISTER
Contact: <sip:bob@192.0.2.4>;expires=7200
Expires: 7200
Content-Length: 0

)"));
    CHECK(reg.method == Method::register_);
    CHECK(reg.method_text == "REGISTER");
    CHECK(reg.contact.uri == "sip:bob@192.0.2.4");
    CHECK(reg.contact.params == ";expires=7200");
    CHECK(reg.find_header("expires") == std::optional<std::string_view>("7200"));

    const std::string minimal = "OPTIONS sip:x SIP/2.0\r\nCall-ID: c\r\nCSeq: 1 OPTIONS\r\n\r\n";
    CHECK(parse_ok(minimal).method == Method::options);

    const Message custom = parse_ok("FOO-BAR sip:x SIP/2.0\r\nCall-ID: c\r\nCSeq: 7 FOO-BAR\r\n\r\n");
    CHECK(custom.method == Method::other);
    CHECK(custom.method_text == "FOO-BAR");
    CHECK(custom.cseq.method == Method::other);
    CHECK(custom.cseq.method_text == "FOO-BAR");

    // Method names are case-sensitive: a lower-case "invite" is an extension method.
    const Message lower = parse_ok("invite sip:x SIP/2.0\r\nCall-ID: c\r\nCSeq: 1 invite\r\n\r\n");
    CHECK(lower.method == Method::other);
    CHECK(lower.method_text == "invite");
}

TEST_CASE("method names map both ways", "[sip][method]") {
    const std::pair<const char*, Method> all[] = {
        {"INVITE", Method::invite},
        {"ACK", Method::ack},
        {"BYE", Method::bye},
        {"CANCEL", Method::cancel},
        {"REGISTER", Method::register_},
        {"OPTIONS", Method::options},
        {"SUBSCRIBE", Method::subscribe},
        {"NOTIFY", Method::notify},
        {"PUBLISH", Method::publish},
        {"MESSAGE", Method::message},
        {"INFO", Method::info},
        {"PRACK", Method::prack},
        {"UPDATE", Method::update},
        {"REFER", Method::refer},
    };
    STATIC_REQUIRE(std::size(all) + 1 == kMethodCount);
    for (const auto& [name, method] : all) {
        CHECK(parse_method(name) == method);
        CHECK(to_string(method) == name);
    }
    CHECK(parse_method("") == Method::other);
    CHECK(parse_method("INVITEX") == Method::other);
    CHECK(parse_method("Invite") == Method::other);
    CHECK(parse_method("BYF") == Method::other);
    CHECK(to_string(Method::other) == "other");
}

TEST_CASE("CSeq method that differs from the request method is flagged", "[sip][message]") {
    const Message m = parse_ok("BYE sip:x SIP/2.0\r\nCall-ID: c\r\nCSeq: 2 INVITE\r\n\r\n");
    CHECK(m.cseq_method_mismatch);
    CHECK(m.method == Method::bye);
}

TEST_CASE("compact header forms", "[sip][message][compact]") {
    const std::string text = crlf(R"(INVITE sip:bob@biloxi.example.com SIP/2.0
v: SIP/2.0/UDP 192.0.2.1:5060;branch=z9hG4bKcompact
i: compact-call@192.0.2.1
f: <sip:alice@atlanta.example.com>;tag=ff
t: sip:bob@biloxi.example.com
m: <sip:alice@192.0.2.1>
CSeq: 1 INVITE
c: text/plain
k: timer
s: hello
e: gzip
o: presence
u: dialog
r: <sip:carol@example.com>
b: <sip:bob@example.com>
x: 1800;refresher=uac
y: abc
j: *;audio
a: *;video
d: proxy
l: 5

hello)");
    const Message m = parse_ok(text);
    CHECK(m.call_id == "compact-call@192.0.2.1");
    CHECK(m.from.uri == "sip:alice@atlanta.example.com");
    CHECK(m.from.tag == "ff");
    CHECK(m.to.uri == "sip:bob@biloxi.example.com");
    CHECK_FALSE(m.to.angle_brackets);
    CHECK(m.contact.uri == "sip:alice@192.0.2.1");
    CHECK(m.top_via.branch == "z9hG4bKcompact");
    CHECK(m.via_count == 1);
    CHECK(m.content_type == "text/plain");
    CHECK(m.content_length == 5u);
    CHECK(m.body == "hello");

    const std::pair<const char*, const char*> lookups[] = {
        {"Supported", "timer"},
        {"Subject", "hello"},
        {"Content-Encoding", "gzip"},
        {"Event", "presence"},
        {"Allow-Events", "dialog"},
        {"Refer-To", "<sip:carol@example.com>"},
        {"Referred-By", "<sip:bob@example.com>"},
        {"Session-Expires", "1800;refresher=uac"},
        {"Identity", "abc"},
        {"Reject-Contact", "*;audio"},
        {"Accept-Contact", "*;video"},
        {"Request-Disposition", "proxy"},
        {"call-id", "compact-call@192.0.2.1"},
        {"CONTENT-LENGTH", "5"},
    };
    for (const auto& [name, value] : lookups) {
        INFO(name);
        const auto found = m.find_header(name);
        REQUIRE(found.has_value());
        CHECK(*found == value);
    }
    // And the other way round: a compact name finds the compact field.
    CHECK(m.find_header("k") == std::optional<std::string_view>("timer"));
    CHECK(m.find_header("I") == std::optional<std::string_view>("compact-call@192.0.2.1"));
}

TEST_CASE("header_id knows full and compact names in any case", "[sip][message][compact]") {
    const std::pair<const char*, HeaderId> full[] = {
        {"Via", HeaderId::via},
        {"From", HeaderId::from},
        {"To", HeaderId::to},
        {"Call-ID", HeaderId::call_id},
        {"CSeq", HeaderId::cseq},
        {"Contact", HeaderId::contact},
        {"Content-Length", HeaderId::content_length},
        {"Content-Type", HeaderId::content_type},
        {"Max-Forwards", HeaderId::max_forwards},
        {"User-Agent", HeaderId::user_agent},
        {"Server", HeaderId::server},
        {"Reason", HeaderId::reason},
        {"Supported", HeaderId::supported},
        {"Subject", HeaderId::subject},
        {"Content-Encoding", HeaderId::content_encoding},
        {"Event", HeaderId::event},
        {"Allow-Events", HeaderId::allow_events},
        {"Refer-To", HeaderId::refer_to},
        {"Referred-By", HeaderId::referred_by},
        {"Session-Expires", HeaderId::session_expires},
        {"Identity", HeaderId::identity},
        {"Reject-Contact", HeaderId::reject_contact},
        {"Accept-Contact", HeaderId::accept_contact},
        {"Request-Disposition", HeaderId::request_disposition},
        {"Route", HeaderId::route},
        {"Record-Route", HeaderId::record_route},
        {"Allow", HeaderId::allow},
        {"Require", HeaderId::require},
        {"Expires", HeaderId::expires},
    };
    for (const auto& [name, id] : full) {
        INFO(name);
        CHECK(header_id(name) == id);
        CHECK(to_string(id) == name);
        std::string upper(name);
        for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        CHECK(header_id(upper) == id);
    }
    const std::pair<char, HeaderId> compact[] = {
        {'i', HeaderId::call_id},
        {'f', HeaderId::from},
        {'t', HeaderId::to},
        {'v', HeaderId::via},
        {'m', HeaderId::contact},
        {'l', HeaderId::content_length},
        {'c', HeaderId::content_type},
        {'k', HeaderId::supported},
        {'s', HeaderId::subject},
        {'e', HeaderId::content_encoding},
        {'o', HeaderId::event},
        {'u', HeaderId::allow_events},
        {'r', HeaderId::refer_to},
        {'b', HeaderId::referred_by},
        {'x', HeaderId::session_expires},
        {'y', HeaderId::identity},
        {'j', HeaderId::reject_contact},
        {'a', HeaderId::accept_contact},
        {'d', HeaderId::request_disposition},
    };
    for (const auto& [letter, id] : compact) {
        INFO(letter);
        CHECK(header_id(std::string(1, letter)) == id);
        CHECK(header_id(std::string(1, static_cast<char>(letter - 'a' + 'A'))) == id);
    }
    CHECK(header_id("") == HeaderId::other);
    CHECK(header_id("z") == HeaderId::other);
    CHECK(header_id("X-Custom") == HeaderId::other);
    CHECK(header_id("Via2") == HeaderId::other);
    CHECK(header_id("Call_ID") == HeaderId::other);
    // Same length, first and last letter as a known name, different elsewhere.
    CHECK(header_id("Content_Length") == HeaderId::other);
    CHECK(header_id("Content-Lxngth") == HeaderId::other);
    CHECK(header_id("Cxntent-Length") == HeaderId::other);
    CHECK(header_id("Request-Dispositxon") == HeaderId::other);
    CHECK(header_id("Cxll-ID") == HeaderId::other);
    CHECK(header_id("Call-\xc9"
                    "D") == HeaderId::other);
    CHECK(header_id("rEQUEST-dISPOSITION") == HeaderId::request_disposition);
    CHECK(header_id("cONTENT-lENGTH") == HeaderId::content_length);
    CHECK(to_string(HeaderId::other).empty());
}

TEST_CASE("folded header lines are joined", "[sip][message][folding]") {
    const std::string text =
        "INVITE sip:bob@example.com SIP/2.0\r\n"
        "Via: SIP/2.0/UDP 192.0.2.1:5060\r\n"
        " ;branch=z9hG4bKfolded\r\n"
        "Subject: I know you're there,\r\n"
        "\tpick up the phone\r\n"
        "   and talk to me!\r\n"
        "From: \"Alice\"\r\n <sip:alice@example.com>\r\n ;tag=ft\r\n"
        "Call-ID:\r\n folded-call-id\r\n"
        "CSeq: 9\r\n INVITE\r\n"
        "\r\n";
    const Message m = parse_ok(text);
    CHECK(m.top_via.branch == "z9hG4bKfolded");
    CHECK(m.top_via.host == "192.0.2.1");
    CHECK(m.top_via.port == 5060);
    CHECK(m.top_via.valid);
    CHECK(m.from.display_name == "Alice");
    CHECK(m.from.uri == "sip:alice@example.com");
    CHECK(m.from.tag == "ft");
    CHECK(m.call_id == "folded-call-id");
    CHECK(m.cseq.number == 9);
    CHECK(m.cseq.method == Method::invite);
    const auto subject = m.find_header("Subject");
    REQUIRE(subject.has_value());
    // Zero-copy: the view keeps the fold's line break and leading white space.
    CHECK(*subject == "I know you're there,\r\n\tpick up the phone\r\n   and talk to me!");
    CHECK(m.header_count == 5);
    CHECK(m.headers()[0].folded);
    CHECK(m.headers()[1].folded);
    CHECK(m.headers()[4].folded);
}

TEST_CASE("repeated headers, Via lines and comma-joined Via values", "[sip][message][via]") {
    const std::string text = crlf(R"(SIP/2.0 200 OK
Via: SIP/2.0/UDP proxy2.example.com:5060;branch=z9hG4bK721e.1, SIP/2.0/UDP proxy1.example.com;branch=z9hG4bK721e.0
Via: SIP/2.0/TCP client.example.com:5060;branch=z9hG4bK74bf9;received=192.0.2.1
v: SIP/2.0/UDP last.example.com;branch=z9hG4bKlast
From: <sip:a@example.com>;tag=1
From: <sip:second@example.com>;tag=2
To: <sip:b@example.com>;tag=3
Call-ID: first
Call-ID: second
CSeq: 5 INVITE
CSeq: 6 BYE
Record-Route: <sip:p1.example.com;lr>
Record-Route: <sip:p2.example.com;lr>
Content-Length: 0

)");
    const Message m = parse_ok(text);
    CHECK(m.via_count == 4);
    CHECK(m.top_via.host == "proxy2.example.com");
    CHECK(m.top_via.port == 5060);
    CHECK(m.top_via.branch == "z9hG4bK721e.1");
    CHECK(m.top_via.raw == "SIP/2.0/UDP proxy2.example.com:5060;branch=z9hG4bK721e.1");
    // The first occurrence of a single-valued header wins.
    CHECK(m.from.uri == "sip:a@example.com");
    CHECK(m.call_id == "first");
    CHECK(m.cseq.number == 5);
    CHECK(m.method == Method::invite);
    CHECK(m.count_headers("Via") == 3);
    CHECK(m.count_headers("v") == 3);
    CHECK(m.count_headers("Record-Route") == 2);
    CHECK(m.count_headers("X-Absent") == 0);
    CHECK(m.find_header("Record-Route") == std::optional<std::string_view>("<sip:p1.example.com;lr>"));
}

TEST_CASE("mixed-case header names and odd spacing", "[sip][message]") {
    const std::string text =
        "INVITE sip:x@example.com SIP/2.0\r\n"
        "vIA  :SIP/2.0/UDP   10.0.0.1:5070 ;branch=z9hG4bKmix\r\n"
        "CALL-id:\t mixed-case-call \t\r\n"
        "cseq :  77   INVITE  \r\n"
        "fRoM: <sip:a@example.com> ;TAG=xyz\r\n"
        "CONTENT-length: 0\r\n"
        "\r\n";
    const Message m = parse_ok(text);
    CHECK(m.call_id == "mixed-case-call");
    CHECK(m.cseq.number == 77);
    CHECK(m.cseq.method_text == "INVITE");
    CHECK(m.top_via.host == "10.0.0.1");
    CHECK(m.top_via.port == 5070);
    CHECK(m.top_via.branch == "z9hG4bKmix");
    CHECK(m.from.tag == "xyz");
    CHECK(m.content_length == 0u);
    CHECK(m.headers()[0].name == "vIA");
}

TEST_CASE("bare LF line ends", "[sip][message]") {
    const std::string text =
        "SIP/2.0 180 Ringing\n"
        "Via: SIP/2.0/UDP 192.0.2.1;branch=z9hG4bKlf\n"
        "From: <sip:a@example.com>;tag=1\n"
        "To: <sip:b@example.com>;tag=2\n"
        "Call-ID: lf-only\n"
        "CSeq: 1 INVITE\n"
        "Content-Length: 4\n"
        "\n"
        "body";
    const Message m = parse_ok(text);
    CHECK(m.status_code == 180);
    CHECK(m.reason_phrase == "Ringing");
    CHECK(m.call_id == "lf-only");
    CHECK(m.to.tag == "2");
    CHECK(m.body == "body");
    CHECK(m.body_bytes_present == 4);

    // Mixed: CRLF and LF in one message, and the empty line as a bare LF.
    const Message mixed = parse_ok("BYE sip:x SIP/2.0\r\nCall-ID: mix\nCSeq: 3 BYE\r\n\nrest");
    CHECK(mixed.call_id == "mix");
    CHECK(mixed.body == "rest");
}

TEST_CASE("leading CRLF keep-alives are skipped", "[sip][message]") {
    const Message m = parse_ok("\r\n\r\nBYE sip:x SIP/2.0\r\nCall-ID: k\r\nCSeq: 3 BYE\r\n\r\n");
    CHECK(m.start_line == "BYE sip:x SIP/2.0");
    CHECK(m.raw.substr(0, 3) == "BYE");
    CHECK(parse_error("\r\n\r\n") == ParseError::empty);
    CHECK(parse_error("") == ParseError::empty);
    CHECK(parse_error("\n") == ParseError::empty);
}

TEST_CASE("display names and name-addr forms", "[sip][message][name_addr]") {
    SECTION("quoted display name with ';', '>', '<', ',' and escaped quotes") {
        const NameAddr na =
            parse_name_addr(R"("Smith; J. <boss>, \"the\" one" <sip:js@example.com;transport=tcp>;tag=88;x=y)");
        CHECK(na.valid);
        CHECK(na.display_name == R"(Smith; J. <boss>, \"the\" one)");
        CHECK(na.uri == "sip:js@example.com;transport=tcp");
        CHECK(na.params == ";tag=88;x=y");
        CHECK(na.tag == "88");
        CHECK(na.angle_brackets);
    }
    SECTION("unquoted multi-word display name") {
        const NameAddr na = parse_name_addr("Alice Liddell   <sip:alice@example.com>");
        CHECK(na.display_name == "Alice Liddell");
        CHECK(na.uri == "sip:alice@example.com");
        CHECK(na.params.empty());
        CHECK_FALSE(na.has_tag);
    }
    SECTION("addr-spec: the first ';' starts header parameters") {
        const NameAddr na = parse_name_addr("sip:carol@chicago.example.com;tag=887s");
        CHECK(na.valid);
        CHECK(na.uri == "sip:carol@chicago.example.com");
        CHECK(na.tag == "887s");
        CHECK_FALSE(na.angle_brackets);
        CHECK(na.display_name.empty());
    }
    SECTION("angle brackets without display name, params with spaces") {
        const NameAddr na = parse_name_addr("<tel:+15551234567> ; tag = abc ");
        CHECK(na.uri == "tel:+15551234567");
        CHECK(na.tag == "abc");
        CHECK(na.params == "; tag = abc");
    }
    SECTION("empty quoted display name") {
        const NameAddr na = parse_name_addr(R"("" <sip:anon@anonymous.invalid>;tag=1)");
        CHECK(na.valid);
        CHECK(na.display_name.empty());
        CHECK(na.uri == "sip:anon@anonymous.invalid");
    }
    SECTION("tag without value") {
        const NameAddr na = parse_name_addr("<sip:a@b>;tag");
        CHECK(na.has_tag);
        CHECK(na.tag.empty());
    }
    SECTION("wildcard contact") {
        const NameAddr na = parse_name_addr("*");
        CHECK(na.valid);
        CHECK(na.uri == "*");
    }
    SECTION("malformed values") {
        CHECK_FALSE(parse_name_addr("").valid);
        CHECK_FALSE(parse_name_addr("   ").valid);
        CHECK_FALSE(parse_name_addr(R"("unterminated <sip:a@b>)").valid);
        CHECK_FALSE(parse_name_addr(R"("Quoted" sip:a@b)").valid);
        CHECK_FALSE(parse_name_addr("<sip:a@b").valid);
        CHECK_FALSE(parse_name_addr("<>").valid);
        CHECK_FALSE(parse_name_addr("<sip:a@b> garbage").valid);
        CHECK_FALSE(parse_name_addr("Bob sip:a@b").valid);
    }
    SECTION("in a message: malformed From is a flag, not an error") {
        const Message m = parse_ok(
            "BYE sip:x SIP/2.0\r\nFrom: \"broken <sip:a@b>\r\nTo: <sip:b@c\r\n"
            "Contact: <sip:c@d>, <sip:e@f>\r\nCall-ID: c\r\nCSeq: 1 BYE\r\n\r\n");
        CHECK(m.from_malformed);
        CHECK_FALSE(m.from.valid);
        CHECK(m.to_malformed);
        CHECK_FALSE(m.contact_malformed);
        CHECK(m.contact.uri == "sip:c@d");
    }
    SECTION("Contact list: first of several, quoted comma inside display name") {
        const Message m = parse_ok(
            "SIP/2.0 200 OK\r\nCall-ID: c\r\nCSeq: 1 REGISTER\r\n"
            "Contact: \"Doe, John\" <sip:j@a>;expires=60, <sip:k@b>\r\n\r\n");
        CHECK(m.contact.display_name == "Doe, John");
        CHECK(m.contact.uri == "sip:j@a");
        CHECK(m.contact.params == ";expires=60");
    }
}

TEST_CASE("Via parsing: IPv6, received/rport, spacing, transports", "[sip][message][via]") {
    SECTION("IPv6 sent-by with port") {
        const Via v = parse_via("SIP/2.0/TCP [2001:db8::9:1]:5061;branch=z9hG4bKv6;received=2001:db8::9:255");
        CHECK(v.valid);
        CHECK(v.transport == Transport::tcp);
        CHECK(v.host == "2001:db8::9:1");
        CHECK(v.port == 5061);
        CHECK(v.branch == "z9hG4bKv6");
        CHECK(v.received == "2001:db8::9:255");
    }
    SECTION("IPv6 sent-by without port") {
        const Via v = parse_via("SIP/2.0/UDP [::1];branch=z9hG4bKx");
        CHECK(v.valid);
        CHECK(v.host == "::1");
        CHECK(v.port == 0);
    }
    SECTION("rport with a value, received") {
        const Via v = parse_via("SIP/2.0/UDP 10.1.1.1:5062;received=203.0.113.7;rport=40123;branch=z9hG4bKr");
        CHECK(v.has_rport);
        CHECK(v.rport == 40123);
        CHECK(v.received == "203.0.113.7");
        CHECK(v.branch == "z9hG4bKr");
    }
    SECTION("LWS around slashes and the colon (RFC 3261 section 25.1 allows it)") {
        const Via v =
            parse_via("SIP / 2.0 / UDP first.example.com : 4000;ttl=16;maddr=224.2.0.1;branch=z9hG4bKa7c6a8dlze.1");
        CHECK(v.valid);
        CHECK(v.protocol_name == "SIP");
        CHECK(v.protocol_version == "2.0");
        CHECK(v.transport_text == "UDP");
        CHECK(v.host == "first.example.com");
        CHECK(v.port == 4000);
        CHECK(v.branch == "z9hG4bKa7c6a8dlze.1");
        CHECK(find_param(v.params, "maddr") == std::optional<std::string_view>("224.2.0.1"));
    }
    SECTION("transports") {
        CHECK(parse_via("SIP/2.0/TLS h").transport == Transport::tls);
        CHECK(parse_via("SIP/2.0/SCTP h").transport == Transport::sctp);
        CHECK(parse_via("SIP/2.0/WS h").transport == Transport::ws);
        CHECK(parse_via("SIP/2.0/wss h").transport == Transport::wss);
        CHECK(parse_via("SIP/2.0/udp h").transport == Transport::udp);
        const Via odd = parse_via("SIP/2.0/QUIC h");
        CHECK(odd.valid);
        CHECK(odd.transport == Transport::unknown);
        CHECK(odd.transport_text == "QUIC");
        CHECK(to_string(Transport::tls) == "tls");
    }
    SECTION("malformed") {
        CHECK_FALSE(parse_via("").valid);
        CHECK_FALSE(parse_via("SIP/2.0/UDP").valid);
        CHECK_FALSE(parse_via("SIP/2.0 host").valid);
        CHECK_FALSE(parse_via("SIP/2.0/UDPhost").valid);
        CHECK_FALSE(parse_via("SIP/2.0/UDP [::1;branch=x").valid);
        CHECK_FALSE(parse_via("SIP/2.0/UDP host:99999").valid);
        CHECK_FALSE(parse_via("SIP/2.0/UDP host:").valid);
        CHECK_FALSE(parse_via("SIP/2.0/UDP host junk").valid);
        CHECK_FALSE(parse_via("SIP/2.0/UDP host;rport=x").valid);
        const Via partial = parse_via("SIP/2.0/UDP host:99999");
        CHECK(partial.host == "host");
        CHECK(partial.port == 0);
    }
    SECTION("in a message: malformed top Via is a flag") {
        const Message m = parse_ok("BYE sip:x SIP/2.0\r\nVia: nonsense\r\nCall-ID: c\r\nCSeq: 1 BYE\r\n\r\n");
        CHECK(m.via_malformed);
        CHECK(m.via_count == 1);
    }
    SECTION("empty elements of a Via list are not counted") {
        const Message m = parse_ok(
            "BYE sip:x SIP/2.0\r\nVia: , SIP/2.0/UDP a;branch=z9hG4bK1 ,,\r\nCall-ID: c\r\nCSeq: 1 BYE\r\n\r\n");
        CHECK(m.via_count == 1);
        CHECK(m.top_via.host == "a");
    }
}

TEST_CASE("Via and name-addr corners of the word scans and the first-parameter shortcut", "[sip][message][via]") {
    SECTION("branch and host of every length around a word, with and without what follows") {
        const std::string chars = "z9hG4bK-0123456789abcdefgh";
        for (std::size_t n = 0; n <= 20; ++n) {
            const std::string value = chars.substr(0, n);
            const std::string host = "h" + chars.substr(7, n % 13) + ".x";
            for (const std::string& tail : {std::string(), std::string(";rport"), std::string(";received=1.2.3.4")}) {
                const std::string text = "SIP/2.0/UDP " + host + ":5060;branch=" + value + tail;
                INFO(text);
                const Via v = parse_via(text);
                CHECK(v.valid);
                CHECK(v.host == host);
                CHECK(v.port == 5060);
                CHECK(v.branch == value);
                CHECK(find_param(v.params, "branch") == std::optional<std::string_view>(v.branch));
                CHECK(v.has_rport == (tail == ";rport"));
                CHECK(v.received == (tail.empty() || tail == ";rport" ? "" : "1.2.3.4"));
            }
        }
    }
    SECTION("branch values the shortcut must leave to the parameter walk") {
        const auto branch = [](std::string_view text) { return std::string(parse_via(text).branch); };
        CHECK(branch("SIP/2.0/UDP h;branch=z9hG4bK1 ;rport") == "z9hG4bK1");
        CHECK(branch("SIP/2.0/UDP h;branch=\"z9;x\";rport") == "z9;x");
        CHECK(branch("SIP/2.0/UDP h;Branch=Z9;branch=b") == "Z9");
        CHECK(branch("SIP/2.0/UDP h;branch =a") == "a");
        CHECK(branch("SIP/2.0/UDP h;branch=a\"b;c\";rport") == "a\"b;c\"");
        CHECK(branch("SIP/2.0/UDP h;branch=;rport") == "");
        CHECK(branch("SIP/2.0/UDP h;branch=a\x01;rport") == "a\x01");
        CHECK(branch("SIP/2.0/UDP h;branchx=a;branch=b") == "b");
        const Via later = parse_via("SIP/2.0/UDP h;branch=a;branch=b;rport=7;received=r;rport=8");
        CHECK(later.branch == "a");
        CHECK(later.rport == 7);
        CHECK(later.received == "r");
        CHECK_FALSE(parse_via("SIP/2.0/UDP h;branch=a;rport=x").valid);
    }
    SECTION("sent-protocol spellings next to the usual one") {
        for (std::string_view text : {"SIP/2.0/UDP h:1", "SIP/2.0/UDP   h:1", "SIP/2.0/UDP \r\n h:1",
                                      "SIP/2.0/UDP\th:1", "SIP/2.0/udp h:1", "SIP / 2.0 / UDP h:1"}) {
            INFO(text);
            const Via v = parse_via(text);
            CHECK(v.valid);
            CHECK(v.protocol_name == "SIP");
            CHECK(v.protocol_version == "2.0");
            CHECK(v.transport == Transport::udp);
            CHECK(v.transport_text.size() == 3);
            CHECK(v.host == "h");
            CHECK(v.port == 1);
        }
        CHECK_FALSE(parse_via("SIP/2.0/UDP ").valid);
        CHECK_FALSE(parse_via("SIP/2.0/UDP  ").valid);
        CHECK(parse_via("SIP/2.0/UDPX h").transport == Transport::unknown);
        CHECK(parse_via("SIP/2.0/UDPX h").transport_text == "UDPX");
        CHECK(parse_via("SIP/2.0/UDP ;branch=b").host.empty());
        CHECK_FALSE(parse_via("SIP/2.0/UDP ;branch=b").valid);
    }
    SECTION("hosts and ports") {
        CHECK(parse_via("SIP/2.0/UDP host\x01name:5060;branch=b").host == "host\x01name");
        CHECK(parse_via("SIP/2.0/UDP h0123456789abcdef\x7f\x80:1").host == "h0123456789abcdef\x7f\x80");
        CHECK(parse_via("SIP/2.0/UDP abcdefghijklmnop ;branch=b").host == "abcdefghijklmnop");
        CHECK(parse_via("SIP/2.0/UDP abcdefghijklmnop\t:\t7").port == 7);
        CHECK(parse_via("SIP/2.0/UDP h:0005060;branch=b").port == 5060);
        CHECK(parse_via("SIP/2.0/UDP h:000000;branch=b").valid);
        CHECK(parse_via("SIP/2.0/UDP h:65535").port == 65535);
        CHECK(parse_via("SIP/2.0/UDP h:0").valid);
        CHECK_FALSE(parse_via("SIP/2.0/UDP h:65536").valid);
        CHECK_FALSE(parse_via("SIP/2.0/UDP h:99999").valid);
        CHECK_FALSE(parse_via("SIP/2.0/UDP h:123456").valid);
        CHECK_FALSE(parse_via("SIP/2.0/UDP h:00065536").valid);
        CHECK_FALSE(parse_via("SIP/2.0/UDP h:123456789012345678901").valid);
        CHECK(parse_via("SIP/2.0/UDP [2001:db8::1];branch=b").host == "2001:db8::1");
        CHECK(parse_via("SIP/2.0/UDP [2001:db8::1];branch=b").branch == "b");
    }
    SECTION("tags of every length around a word, and the shapes left to the walk") {
        const std::string chars = "0123456789abcdefghijklmn";
        for (std::size_t n = 0; n <= 20; ++n) {
            const std::string tag = chars.substr(0, n);
            for (const std::string& head :
                 {std::string("<sip:b@h>"), std::string("\"Caller 12345678\" <sip:a@h>"), std::string("sip:c@h")}) {
                for (const std::string& tail : {std::string(), std::string(";x=y")}) {
                    const std::string text = head + ";tag=" + tag + tail;
                    INFO(text);
                    const NameAddr na = parse_name_addr(text);
                    CHECK(na.valid);
                    CHECK(na.has_tag);
                    CHECK(na.tag == tag);
                    CHECK(na.params == ";tag=" + tag + tail);
                }
            }
        }
        const auto tag = [](std::string_view text) { return std::string(parse_name_addr(text).tag); };
        CHECK(tag("<sip:a@h>;TAG=Ab") == "Ab");
        CHECK(tag("<sip:a@h>;tag=a ;x") == "a");
        CHECK(tag("<sip:a@h>;tag=\"a;b\"") == "a;b");
        CHECK(tag("<sip:a@h>;x=1;tag=t") == "t");
        CHECK(tag("<sip:a@h>;tags=1;tag=t") == "t");
        CHECK(tag("<sip:a@h>;tag") == "");
        CHECK(parse_name_addr("<sip:a@h>;tag").has_tag);
        CHECK_FALSE(parse_name_addr("<sip:a@h>;tagx=1").has_tag);
        CHECK_FALSE(parse_name_addr("<sip:a@h> x;tag=1").valid);
    }
    SECTION("quoted display names around a word, escapes, unterminated") {
        for (std::size_t n = 0; n <= 18; ++n) {
            const std::string name = std::string("Caller 0123456789ab").substr(0, n);
            // The views point into the text, so it has to outlive the checks.
            const std::string plain = "\"" + name + "\" <sip:a@h>;tag=1";
            const NameAddr na = parse_name_addr(plain);
            CHECK(na.valid);
            CHECK(na.display_name == name);
            const std::string with_escapes = "\"" + name + "\\\"q\\\\\" <sip:a@h>";
            const NameAddr escaped = parse_name_addr(with_escapes);
            CHECK(escaped.valid);
            CHECK(escaped.display_name == name + "\\\"q\\\\");
            CHECK_FALSE(parse_name_addr("\"" + name + " <sip:a@h>").valid);
            CHECK_FALSE(parse_name_addr("\"" + name + "\\\" <sip:a@h>").valid);
        }
        CHECK(parse_name_addr(R"("a\\" <sip:a@h>)").display_name == R"(a\\)");
        CHECK_FALSE(parse_name_addr(R"("abc\)").valid);
        CHECK_FALSE(parse_name_addr("\"").valid);
    }
}

TEST_CASE("find_param", "[sip][message]") {
    const std::string_view params = R"(;branch=z9hG4bK1 ; lr ;Received = 1.2.3.4;text="a;b=c";empty=)";
    CHECK(find_param(params, "branch") == std::optional<std::string_view>("z9hG4bK1"));
    CHECK(find_param(params, "BRANCH") == std::optional<std::string_view>("z9hG4bK1"));
    CHECK(find_param(params, "received") == std::optional<std::string_view>("1.2.3.4"));
    CHECK(find_param(params, "text") == std::optional<std::string_view>("a;b=c"));
    CHECK(find_param(params, "b") == std::nullopt);  // inside the quoted string
    const auto lr = find_param(params, "lr");
    REQUIRE(lr.has_value());
    CHECK(lr->empty());
    const auto empty = find_param(params, "empty");
    REQUIRE(empty.has_value());
    CHECK(empty->empty());
    CHECK(find_param(params, "missing") == std::nullopt);
    CHECK(find_param("", "x") == std::nullopt);
    CHECK(find_param(";;;", "x") == std::nullopt);
}

TEST_CASE("CSeq parsing", "[sip][message]") {
    const auto ok = parse_cseq(" 4711   REGISTER ");
    REQUIRE(ok.has_value());
    CHECK(ok->number == 4711);
    CHECK(ok->method == Method::register_);
    CHECK(ok->method_text == "REGISTER");
    const auto max = parse_cseq("4294967295 ACK");
    REQUIRE(max.has_value());
    CHECK(max->number == 4294967295u);
    CHECK_FALSE(parse_cseq("4294967296 ACK").has_value());
    CHECK_FALSE(parse_cseq("INVITE").has_value());
    CHECK_FALSE(parse_cseq("12").has_value());
    CHECK_FALSE(parse_cseq("12INVITE").has_value());
    CHECK_FALSE(parse_cseq("-1 INVITE").has_value());
    CHECK_FALSE(parse_cseq("1 INVITE BYE").has_value());
    CHECK_FALSE(parse_cseq("").has_value());

    CHECK(parse_error("BYE sip:x SIP/2.0\r\nCall-ID: c\r\nCSeq: x BYE\r\n\r\n") == ParseError::bad_cseq);
    CHECK(parse_error("BYE sip:x SIP/2.0\r\nCall-ID: c\r\nCSeq:\r\n\r\n") == ParseError::bad_cseq);
    // The first CSeq decides; a good second one does not rescue a bad first one.
    CHECK(parse_error("BYE sip:x SIP/2.0\r\nCall-ID: c\r\nCSeq: x\r\nCSeq: 1 BYE\r\n\r\n") == ParseError::bad_cseq);
}

TEST_CASE("Content-Length against the body actually present", "[sip][message][body]") {
    const std::string head = "INVITE sip:x SIP/2.0\r\nCall-ID: c\r\nCSeq: 1 INVITE\r\n";
    SECTION("body shorter than declared: flag, body clamped") {
        const Message m = parse_ok(head + "Content-Length: 10\r\n\r\nabcd");
        CHECK(m.content_length == 10u);
        CHECK(m.body_bytes_present == 4);
        CHECK(m.body == "abcd");
        CHECK(m.body_truncated);
        CHECK_FALSE(m.body_excess);
        CHECK(m.raw == head + "Content-Length: 10\r\n\r\nabcd");
    }
    SECTION("body longer than declared: flag, body cut at the declared length") {
        const Message m = parse_ok(head + "Content-Length: 2\r\n\r\nabcd");
        CHECK(m.content_length == 2u);
        CHECK(m.body_bytes_present == 4);
        CHECK(m.body == "ab");
        CHECK(m.body_excess);
        CHECK_FALSE(m.body_truncated);
        CHECK(m.raw == head + "Content-Length: 2\r\n\r\nab");
    }
    SECTION("absent: the rest of the datagram is the body") {
        const Message m = parse_ok(head + "\r\nxyz");
        CHECK_FALSE(m.content_length.has_value());
        CHECK_FALSE(m.content_length_invalid);
        CHECK(m.body == "xyz");
        CHECK(m.body_bytes_present == 3);
        CHECK_FALSE(m.body_truncated);
        CHECK_FALSE(m.body_excess);
    }
    SECTION("not a number: flag, treated as absent") {
        const Message m = parse_ok(head + "Content-Length: ten\r\n\r\nxyz");
        CHECK_FALSE(m.content_length.has_value());
        CHECK(m.content_length_invalid);
        CHECK(m.body == "xyz");
    }
    SECTION("too large for 32 bits") {
        const Message m = parse_ok(head + "Content-Length: 4294967296\r\n\r\n");
        CHECK(m.content_length_invalid);
    }
    SECTION("huge declared length on a tiny message") {
        const Message m = parse_ok(head + "Content-Length: 4294967295\r\n\r\nq");
        CHECK(m.content_length == 4294967295u);
        CHECK(m.body == "q");
        CHECK(m.body_truncated);
    }
    SECTION("no empty line at all, input ends on a line end") {
        const Message m = parse_ok(head + "Content-Length: 0\r\n");
        CHECK(m.headers_unterminated);
        CHECK(m.body.empty());
        CHECK(m.body_bytes_present == 0);
    }
    SECTION("empty line cut before its LF") {
        const Message m = parse_ok(head + "\r");
        CHECK_FALSE(m.headers_unterminated);
        CHECK(m.body.empty());
    }
}

TEST_CASE("Max-Forwards, User-Agent, Server", "[sip][message]") {
    const Message m = parse_ok(crlf(R"(SIP/2.0 200 OK
Call-ID: c
CSeq: 1 OPTIONS
Server: kamailio (5.6.3 (x86_64/linux))
User-Agent: should-not-be-in-a-response-but-is
Max-Forwards: 0

)"));
    CHECK(m.server == "kamailio (5.6.3 (x86_64/linux))");
    CHECK(m.user_agent == "should-not-be-in-a-response-but-is");
    CHECK(m.max_forwards == 0u);
    CHECK_FALSE(parse_ok("BYE sip:x SIP/2.0\r\nCall-ID: c\r\nCSeq: 1 BYE\r\nMax-Forwards: lots\r\n\r\n")
                    .max_forwards.has_value());
}

TEST_CASE("start line errors", "[sip][message][errors]") {
    const std::string headers = "\r\nCall-ID: c\r\nCSeq: 1 INVITE\r\n\r\n";
    CHECK(parse_error("INVITE sip:x SIP/3.0" + headers) == ParseError::unsupported_version);
    CHECK(parse_error("GET / HTTP/1.1" + headers) == ParseError::unsupported_version);
    CHECK(parse_error("HTTP/1.1 200 OK" + headers) == ParseError::bad_start_line);
    CHECK(parse_error("SIP/2.1 200 OK" + headers) == ParseError::unsupported_version);
    CHECK(parse_error("SIP/2.0" + headers) == ParseError::bad_start_line);
    CHECK(parse_error("SIP/2.0 99 Low" + headers) == ParseError::bad_status_code);
    CHECK(parse_error("SIP/2.0 700 High" + headers) == ParseError::bad_status_code);
    CHECK(parse_error("SIP/2.0 2000 Long" + headers) == ParseError::bad_status_code);
    CHECK(parse_error("SIP/2.0 20x OK" + headers) == ParseError::bad_status_code);
    CHECK(parse_error("SIP/2.0 200OK" + headers) == ParseError::bad_status_code);
    CHECK(parse_error("SIP/2.0  " + headers) == ParseError::bad_status_code);
    CHECK(parse_error("INVITE sip:x" + headers) == ParseError::bad_start_line);
    CHECK(parse_error("INVITE" + headers) == ParseError::bad_start_line);
    CHECK(parse_error("INVITE sip:x SIP/2.0 extra" + headers) == ParseError::bad_start_line);
    CHECK(parse_error("INV@TE sip:x SIP/2.0" + headers) == ParseError::bad_start_line);
    CHECK(parse_error("INVITE sip:x SIP2.0" + headers) == ParseError::bad_start_line);
    CHECK(parse_error(std::string("\x01\x02\x03", 3) + headers) == ParseError::bad_start_line);
    CHECK(parse_error("   " + headers) == ParseError::bad_start_line);
    // Tabs and repeated spaces between request-line elements are tolerated.
    const Message m = parse_ok("INVITE \t sip:x  SIP/2.0" + headers);
    CHECK(m.request_uri == "sip:x");
}

TEST_CASE("header section errors", "[sip][message][errors]") {
    const std::string start = "INVITE sip:x SIP/2.0\r\n";
    CHECK(parse_error(start + "Call-ID: c\r\nCSeq: 1 INVITE\r\nno colon here\r\n\r\n") ==
          ParseError::header_without_colon);
    // A body glued to the headers without the empty line is caught the same way.
    CHECK(parse_error(start + "Call-ID: c\r\nCSeq: 1 INVITE\r\nv=0\r\n") == ParseError::header_without_colon);
    CHECK(parse_error(start + ": value\r\nCall-ID: c\r\nCSeq: 1 INVITE\r\n\r\n") == ParseError::bad_header_name);
    CHECK(parse_error(start + "Call ID: c\r\nCSeq: 1 INVITE\r\n\r\n") == ParseError::bad_header_name);
    CHECK(parse_error(start + " folded-first: x\r\nCall-ID: c\r\nCSeq: 1 INVITE\r\n\r\n") ==
          ParseError::bad_header_name);
    CHECK(parse_error(start + "Call-ID: c\r\nCSeq: 1 INV") == ParseError::truncated_headers);
    CHECK(parse_error(start + "Call-ID: c\r\nCSeq: 1 INVITE\r\nSubject: a\r\n b") == ParseError::truncated_headers);
    CHECK(parse_error("INVITE sip:x SIP/2.0") == ParseError::truncated_headers);
    CHECK(parse_error(start + "CSeq: 1 INVITE\r\n\r\n") == ParseError::missing_call_id);
    CHECK(parse_error(start + "Call-ID:   \r\nCSeq: 1 INVITE\r\n\r\n") == ParseError::missing_call_id);
    CHECK(parse_error(start + "Call-ID: c\r\n\r\n") == ParseError::missing_cseq);
    CHECK(parse_error(start + "\r\n") == ParseError::missing_call_id);
    // Headers after the empty line are body, so they do not count.
    CHECK(parse_error(start + "Call-ID: c\r\n\r\nCSeq: 1 INVITE\r\n") == ParseError::missing_cseq);
}

TEST_CASE("header storage overflow and the header line limit", "[sip][message][limits]") {
    std::string text = "MESSAGE sip:x SIP/2.0\r\n";
    for (std::size_t i = 0; i < kMaxStoredHeaders; ++i)
        text += "X-Fill-" + std::to_string(i) + ": " + std::to_string(i) + "\r\n";
    text += "Call-ID: late-call\r\nCSeq: 12 MESSAGE\r\nX-Late: late value\r\nX-Late: second\r\n\r\n";
    const Message m = parse_ok(text);
    CHECK(m.header_count == kMaxStoredHeaders);
    CHECK(m.header_overflow == 4);
    // Well-known headers beyond the stored ones are still extracted...
    CHECK(m.call_id == "late-call");
    CHECK(m.cseq.number == 12);
    // ...and the generic lookup still finds the unstored ones.
    CHECK(m.find_header("X-Late") == std::optional<std::string_view>("late value"));
    CHECK(m.find_header("i") == std::optional<std::string_view>("late-call"));
    CHECK(m.find_header("X-Fill-63") == std::optional<std::string_view>("63"));
    CHECK(m.count_headers("X-Late") == 2);
    CHECK(m.find_header("X-Nope") == std::nullopt);
    CHECK(m.overflow_text == "Call-ID: late-call\r\nCSeq: 12 MESSAGE\r\nX-Late: late value\r\nX-Late: second\r\n");

    std::string many = "MESSAGE sip:x SIP/2.0\r\nCall-ID: c\r\nCSeq: 1 MESSAGE\r\n";
    for (std::size_t i = 2; i < kMaxHeaderLines; ++i) many += "X: y\r\n";
    CHECK(parse_ok(many + "\r\n").header_overflow == kMaxHeaderLines - kMaxStoredHeaders);
    CHECK(parse_error(many + "X: one too many\r\n\r\n") == ParseError::too_many_headers);
}

TEST_CASE("error names are distinct snake_case", "[sip][message][errors]") {
    std::set<std::string_view> names;
    for (std::size_t i = 0; i < kParseErrorCount; ++i) {
        const std::string_view name = to_string(static_cast<ParseError>(i));
        CHECK(name != "unknown");
        for (char c : name) CHECK(((c >= 'a' && c <= 'z') || c == '_'));
        names.insert(name);
    }
    CHECK(names.size() == kParseErrorCount);
    CHECK(to_string(ParseError::missing_call_id) == "missing_call_id");
}

TEST_CASE("truncating a valid message at every length never crashes", "[sip][message][hostile]") {
    // Where the cut falls decides the error: inside the start line, inside a header line, or on
    // a line boundary before Call-ID/CSeq were seen; after the empty line the body is short.
    const std::size_t header_end = kInvite.find("\r\n\r\n") + 4;
    const std::size_t call_id_line_end = kInvite.find("\r\n", kInvite.find("Call-ID:")) + 2;
    const std::size_t cseq_line_end = kInvite.find("\r\n", kInvite.find("CSeq:")) + 2;
    const std::size_t start_line_end = kInvite.find("\r\n") + 2;
    for (std::size_t n = 0; n <= kInvite.size(); ++n) {
        const std::string cut = kInvite.substr(0, n);
        INFO("length " << n);
        const auto result = parse_message(cut);
        if (n == 0) {
            REQUIRE_FALSE(result.ok());
            CHECK(result.error() == ParseError::empty);
        } else if (n < start_line_end) {
            REQUIRE_FALSE(result.ok());
            // A cut start line is still a start line; only its completeness is in question.
            const ParseError e = result.error();
            CHECK((e == ParseError::truncated_headers || e == ParseError::bad_start_line ||
                   e == ParseError::unsupported_version));
        } else if (n < header_end - 1) {
            if (n >= std::max(call_id_line_end, cseq_line_end) && kInvite[n - 1] == '\n') {
                // Cut on a line boundary after both required headers: accepted, unterminated.
                REQUIRE(result.ok());
                CHECK(result->headers_unterminated);
                CHECK(result->call_id == "a84b4c76e66710@pc33.atlanta.example.com");
            } else {
                REQUIRE_FALSE(result.ok());
                const ParseError e = result.error();
                if (kInvite[n - 1] == '\n') {
                    CHECK((e == ParseError::missing_call_id || e == ParseError::missing_cseq));
                } else {
                    CHECK(e == ParseError::truncated_headers);
                }
            }
        } else {
            REQUIRE(result.ok());
            CHECK(result->call_id == "a84b4c76e66710@pc33.atlanta.example.com");
            const std::size_t body = n >= header_end ? n - header_end : 0;
            CHECK(result->body_bytes_present == body);
            CHECK(result->body.size() == body);
            CHECK(result->body_truncated == (body < 253));
            CHECK_FALSE(result->body_excess);
        }
    }
}

TEST_CASE("hostile bytes: NULs, lone CRs, high bytes", "[sip][message][hostile]") {
    // A NUL in the header section refuses the message (a C-string reader would see "a"), one in
    // the body is kept.
    std::string with_nul = "BYE sip:x SIP/2.0\r\nCall-ID: a";
    with_nul += '\0';
    with_nul += "b\r\nCSeq: 1 BYE\r\nX-Bin: \xff\xfe\r\n\r\n";
    CHECK(parse_error(with_nul) == ParseError::nul_in_headers);
    std::string body_nul = "BYE sip:x SIP/2.0\r\nCall-ID: ab\r\nCSeq: 1 BYE\r\nX-Bin: \xff\xfe\r\nl: 3\r\n\r\n";
    body_nul += std::string("x\0y", 3);
    const Message m = parse_ok(body_nul);
    CHECK(m.call_id == "ab");
    CHECK(m.body == std::string_view("x\0y", 3));
    CHECK(m.find_header("X-Bin") == std::optional<std::string_view>("\xff\xfe"));
    // A lone CR is not a line end: it stays inside the value.
    const Message cr = parse_ok("BYE sip:x SIP/2.0\r\nCall-ID: a\rb\r\nCSeq: 1 BYE\r\n\r\n");
    CHECK(cr.call_id == "a\rb");
    CHECK(parse_error(std::string(1000, '\xff')) == ParseError::bad_start_line);
    CHECK(parse_error(std::string(1000, ':')) == ParseError::bad_start_line);
}

TEST_CASE("dialog depth: what the dialog table reads is what a full parse gives", "[sip][message][depth]") {
    using hepd::sip::test::dialog_depth_agrees;
    std::vector<std::string> messages{kInvite};
    // Real messages of Kamailio and sipp.
    for (const char* name : {"kamailio_100_trying.sip", "kamailio_ack.sip", "kamailio_invite_sdp.sip",
                             "sipp_uac_bye.sip", "sipp_uas_180_ringing.sip", "sipp_uas_200_ok_sdp.sip"})
        messages.emplace_back(hepd::sip::test::read_data(name));
    // The corners of the top Via and of the header array.
    const std::string tail = "Call-ID: c1\r\nCSeq: 7 INVITE\r\nContact: <sip:a@h>, \"B\" <sip:b@h>\r\n\r\n";
    messages.push_back(crlf("INVITE sip:x SIP/2.0\nVia: ,\nv: SIP/2.0/TCP h2;branch=z9hG4bK2\n") + tail);
    messages.push_back(crlf("INVITE sip:x SIP/2.0\nVia: SIP/2.0/UDP h:5060;rport=x;branch=z9hG4bK3\n") + tail);
    messages.push_back(crlf("INVITE sip:x SIP/2.0\nVia: SIP/2.0/UDP h;branch=z9hG4bK4;rport=x\n") + tail);
    messages.push_back(crlf("INVITE sip:x SIP/2.0\nVia: SIP/2.0 h;branch=z9hG4bK5\nVia: SIP/2.0/UDP g;branch=6\n") +
                       tail);
    messages.push_back(crlf("INVITE sip:x SIP/2.0\nVia: SIP/2.0/UDP [2001:db8::1]:5062 ;received=1.2.3.4; "
                            "BRANCH=\"z9hG4bK7\",SIP/2.0/UDP g\n f: <sip:a@h>;tag=1\nt: <sip:b@h>\n") +
                       tail);
    messages.push_back(crlf("INVITE sip:x SIP/2.0\nVia: SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bK-1234-5-0;rport\n"
                            "From: \"Alice\" <sip:alice@10.0.0.1:5060>;tag=abc123\nTo: <sip:bob@example.com>\n") +
                       tail);
    messages.push_back(crlf("INVITE sip:x SIP/2.0\nVia: SIP/2.0/UDP h:0005060;branch=\"b;1\";rport\n"
                            "From: \"A\\\"\" <sip:a@h>;tag=\"t;1\"\nTo: sip:b@h;tag=\n") +
                       tail);
    std::string many = "OPTIONS sip:x SIP/2.0\r\nVia: SIP/2.0/UDP h;branch=z9hG4bK8\r\n";
    for (int i = 0; i < 80; ++i) many += "X-Filler-" + std::to_string(i) + ": " + std::to_string(i) + "\r\n";
    many += "Route: <sip:r@h>\r\n" + tail;
    messages.push_back(many);

    for (const std::string& message : messages) {
        INFO(message);
        CHECK(dialog_depth_agrees(message));
        // And every prefix of it: the errors, the unterminated headers and the truncated bodies.
        for (std::size_t n = 0; n < message.size(); ++n) {
            if (!dialog_depth_agrees(std::string_view(message).substr(0, n))) FAIL("differs at length " << n);
        }
    }
    // Not worked out at dialog depth: the Contact, the Via count, the stored header array.
    Message m;
    REQUIRE_FALSE(parse_message_into(kInvite, m, ParseDepth::dialog));
    CHECK(m.top_via.branch == "z9hG4bK776asdhds");
    CHECK_FALSE(m.contact.valid);
    CHECK(m.via_count == 0);
    CHECK(m.header_count == 0);
    CHECK(m.find_header("Max-Forwards") == std::optional<std::string_view>("70"));
}

TEST_CASE("header lines of every length: names, colons and line ends on both sides of each 16-byte block",
          "[sip][message][hostile]") {
    // The header walk looks for the line end and the colon sixteen bytes at a time and leaves the
    // last stretch of the text to memchr; every split of a line between the two must agree.
    const std::string start = "INVITE sip:x SIP/2.0\r\n";
    for (std::size_t pad = 0; pad < 40; ++pad) {
        const std::string name = "X-" + std::string(pad, 'n');
        const std::string call_id = "c" + std::string(pad, 'c');
        for (std::size_t value_size = 0; value_size < 20; ++value_size) {
            const std::string value(value_size, 'v');
            const std::string text = start + name + ":" + value + "\r\nCall-ID: " + call_id +
                                     "\r\nCSeq: 1 INVITE\r\nSubject:" + value + "\r\n\r\n";
            const Message m = parse_ok(text);
            CHECK(m.find_header(name) == std::optional<std::string_view>(value));
            CHECK(m.call_id == call_id);
            CHECK(m.find_header("Subject") == std::optional<std::string_view>(value));
            // Blanks between the name and the colon.
            std::string spaced = text;
            spaced.insert(spaced.find(name) + name.size(), std::string(pad % 5, ' '));
            CHECK(parse_ok(spaced).find_header(name) == std::optional<std::string_view>(value));
            // The last header's colon gone, or a name with a byte no token has.
            std::string no_colon = text;
            no_colon.erase(no_colon.rfind("Subject:") + 7, 1);
            CHECK(parse_error(no_colon) == ParseError::header_without_colon);
            std::string bad_name = text;
            bad_name.insert(bad_name.find(name) + 1, 1, '@');
            CHECK(parse_error(bad_name) == ParseError::bad_header_name);
            // Cut before the empty line: complete headers, unterminated.
            CHECK(parse_ok(text.substr(0, text.size() - 2)).headers_unterminated);
        }
    }
}
