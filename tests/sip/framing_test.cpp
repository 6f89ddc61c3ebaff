#include "sip/framing.hpp"

#include "sip/message.hpp"

#include <catch2/catch.hpp>

#include <set>
#include <string>

using namespace hepd::sip;

namespace {

// 85 bytes: 23 + 19 + 17 + 19 + 2 of headers, 5 of body.
const std::string kMessage =
    "MESSAGE sip:a SIP/2.0\r\n"  // 23
    "Call-ID: stream-1\r\n"      // 19
    "CSeq: 1 MESSAGE\r\n"        // 17
    "Content-Length: 5\r\n"      // 19
    "\r\n"                       // 2
    "hello";                     // 5

void check_complete(const Frame& f, std::size_t skip, std::size_t length) {
    CHECK(f.status == FrameStatus::complete);
    CHECK(f.skip == skip);
    CHECK(f.length == length);
}

void check_error(const Frame& f, FramingError error) {
    CHECK(f.status == FrameStatus::error);
    CHECK(f.error == error);
}

}  // namespace

TEST_CASE("framing: one complete message", "[sip][framing]") {
    REQUIRE(kMessage.size() == 23 + 19 + 17 + 19 + 2 + 5);
    check_complete(message_length(kMessage), 0, 85);
    const auto parsed = parse_message(std::string_view(kMessage).substr(0, 85));
    REQUIRE(parsed.ok());
    CHECK(parsed->body == "hello");
}

TEST_CASE("framing: every prefix of a message needs more", "[sip][framing]") {
    for (std::size_t n = 0; n < kMessage.size(); ++n) {
        INFO("prefix " << n);
        const Frame f = message_length(kMessage.substr(0, n));
        CHECK(f.status == FrameStatus::need_more);
        CHECK(f.skip == 0);
    }
}

TEST_CASE("framing: two messages back to back, then the second", "[sip][framing]") {
    const std::string second = "BYE sip:a SIP/2.0\r\nCall-ID: stream-2\r\nCSeq: 2 BYE\r\nContent-Length: 0\r\n\r\n";
    const std::string stream = kMessage + second + "INV";
    check_complete(message_length(stream), 0, 85);
    const std::string rest = stream.substr(85);
    check_complete(message_length(rest), 0, second.size());
    CHECK(message_length(rest.substr(second.size())).status == FrameStatus::need_more);
}

TEST_CASE("framing: leading keep-alives are skipped", "[sip][framing]") {
    check_complete(message_length("\r\n\r\n" + kMessage), 4, 85);
    check_complete(message_length("\r\n" + kMessage), 2, 85);
    check_complete(message_length("\n" + kMessage), 1, 85);
    const Frame only = message_length("\r\n\r\n");
    CHECK(only.status == FrameStatus::need_more);
    CHECK(only.skip == 4);
    const Frame empty = message_length("");
    CHECK(empty.status == FrameStatus::need_more);
    CHECK(empty.skip == 0);
}

TEST_CASE("framing: bare LF, compact form, folding", "[sip][framing]") {
    check_complete(message_length("BYE sip:a SIP/2.0\nCall-ID: x\nl: 3\n\nabc"), 0, 38);
    check_complete(message_length("BYE sip:a SIP/2.0\r\ncontent-LENGTH:\r\n  2\r\n\r\nab"), 0, 45);
    // The empty line cut before its LF is not yet the end of the headers.
    CHECK(message_length("BYE sip:a SIP/2.0\r\nl: 0\r\n\r").status == FrameStatus::need_more);
    check_complete(message_length("BYE sip:a SIP/2.0\r\nl: 0\r\n\r\n"), 0, 27);
}

TEST_CASE("framing: Content-Length is mandatory and must be sane", "[sip][framing]") {
    check_error(message_length("BYE sip:a SIP/2.0\r\nCall-ID: x\r\n\r\n"), FramingError::missing_content_length);
    check_error(message_length("BYE sip:a SIP/2.0\r\nContent-Length: abc\r\n\r\n"), FramingError::bad_content_length);
    check_error(message_length("BYE sip:a SIP/2.0\r\nContent-Length: -1\r\n\r\n"), FramingError::bad_content_length);
    check_error(message_length("BYE sip:a SIP/2.0\r\nContent-Length: 1\r\nl: 2\r\n\r\nab"),
                FramingError::bad_content_length);
    // The same value twice is redundant, not conflicting.
    check_complete(message_length("BYE sip:a SIP/2.0\r\nContent-Length: 1\r\nl: 1\r\n\r\na"), 0, 47);
    check_error(message_length("BYE sip:a SIP/2.0\r\nno colon\r\nl: 0\r\n\r\n"), FramingError::bad_header_line);
    check_error(message_length("BYE sip:a SIP/2.0\r\n : x\r\nl: 0\r\n\r\n"), FramingError::bad_header_line);
}

TEST_CASE("framing: size limit on headers and on headers + body", "[sip][framing][limits]") {
    // "BYE sip:a SIP/2.0\r\n" 19 + "l: 100\r\n" 8 + "\r\n" 2 = 29 bytes of headers, 100 of body.
    const std::string head = "BYE sip:a SIP/2.0\r\nl: 100\r\n\r\n";
    REQUIRE(head.size() == 29);
    check_error(message_length(head, 128), FramingError::message_too_large);
    CHECK(message_length(head, 129).status == FrameStatus::need_more);
    check_complete(message_length(head + std::string(100, 'x'), 129), 0, 129);

    // A header section that never ends: need more until the limit, then an error.
    std::string endless = "BYE sip:a SIP/2.0\r\n";
    while (endless.size() < 200) endless += "X-Pad: 0123456789\r\n";
    CHECK(message_length(endless, 1000).status == FrameStatus::need_more);
    check_error(message_length(endless, 100), FramingError::message_too_large);
    // No line end at all within the limit.
    check_error(message_length(std::string(300, 'A'), 100), FramingError::message_too_large);
    CHECK(message_length(std::string(100, 'A'), 100).status == FrameStatus::need_more);
    // Keep-alive bytes do not count against the limit.
    check_complete(message_length("\r\n\r\n" + head + std::string(100, 'x'), 129), 4, 129);
}

TEST_CASE("framing: error names", "[sip][framing]") {
    std::set<std::string_view> names;
    for (auto e : {FramingError::missing_content_length, FramingError::bad_content_length,
                   FramingError::bad_header_line, FramingError::message_too_large})
        names.insert(to_string(e));
    CHECK(names.size() == 4);
    CHECK(names.count("message_too_large") == 1);
    CHECK(names.count("unknown") == 0);
}

TEST_CASE("catalogue: huge Content-Length on a stream is refused, the next message still frames",
          "[sip][framing][catalogue]") {
    const auto head = [](std::string_view length) {
        return "BYE sip:a SIP/2.0\r\nCall-ID: x\r\nContent-Length: " + std::string(length) + "\r\n\r\n";
    };
    // 2^32 - 1 is a number, but no buffer holds it: too large, at any limit below it.
    check_error(message_length(head("4294967295")), FramingError::message_too_large);
    check_error(message_length(head("4294967295"), 0xFFFF'FFFEULL), FramingError::message_too_large);
    // 2^32 and beyond do not fit the 32-bit field: not a Content-Length at all.
    for (const char* length :
         {"4294967296", "18446744073709551615", "18446744073709551616", "99999999999999999999999999999999999999"}) {
        INFO(length);
        check_error(message_length(head(length)), FramingError::bad_content_length);
    }
    // The framer keeps no state: the message after the refused one frames as usual.
    check_complete(message_length(kMessage), 0, kMessage.size());
}
