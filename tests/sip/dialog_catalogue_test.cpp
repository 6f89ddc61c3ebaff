// Bad-input catalogue (tests/CATALOGUE.md), SIP items: each hostile message gives one counted
// error or defect, and a confirmed call that was there before is untouched and still ends.
#include "dialog_test_util.hpp"
#include "support/counts.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <map>
#include <string>

using namespace hepd;
using namespace hepd::sip;
using namespace hepd::sip::test;

namespace {

using hepd::test::Counts;
using hepd::test::moved;

// Every counter a bad message could move, by "family/reason".
Counts counts(const DialogStats& s) {
    Counts out;
    for (std::size_t i = 0; i < kParseErrorCount; ++i)
        out["parse_error/" + std::string(to_string(static_cast<ParseError>(i)))] = s.parse_errors[i].value();
    for (std::size_t i = 0; i < kSdpErrorCount; ++i)
        out["sdp_error/" + std::string(to_string(static_cast<SdpError>(i)))] = s.sdp_errors[i].value();
    for (std::size_t i = 0; i < kDialogAnomalyCount; ++i)
        out["anomaly/" + std::string(to_string(static_cast<DialogAnomaly>(i)))] = s.anomalies[i].value();
    for (std::size_t i = 0; i < kMessageDefectCount; ++i)
        out["defect/" + std::string(to_string(static_cast<MessageDefect>(i)))] = s.defects[i].value();
    std::uint64_t requests = 0;
    for (const auto& by_method : s.requests)
        for (const auto& c : by_method) requests += c.value();
    out["requests"] = requests;
    out["dialogs_created"] = s.dialogs_created.value();
    out["media_bindings"] = s.media_bindings.value();
    return out;
}

// A table holding one confirmed call that no catalogue message belongs to.
struct Bystander {
    Harness h;
    Sip call;
    Counts before;

    Bystander() {
        call.call_id = "bystander@example.net";
        REQUIRE(h.send(call, A, B, ms(0)) == Disposition::dialog_created);
        h.send(call.with_to_tag("b").resp(200), B, A, ms(10));
        h.send(call.with_to_tag("b").req("ACK", "z9hG4bK-ack", 1), A, B, ms(20));
        REQUIRE(h.dialog(call.call_id)->state == DialogState::confirmed);
        before = counts(h.stats());
    }

    Disposition feed(std::string_view text) {
        PacketMeta meta;
        meta.time = ms(100);
        meta.src = ep(A);
        meta.dst = ep(B);
        meta.agent = 1;
        return h.table.process(text, meta);
    }

    Counts moved_since_setup() const { return moved(before, counts(h.stats())); }

    // The bystander call is still confirmed, and its BYE still ends it.
    void check_untouched() {
        const Dialog* d = h.dialog(call.call_id);
        REQUIRE(d != nullptr);
        CHECK(d->state == DialogState::confirmed);
        CHECK(h.send(call.with_to_tag("b").req("BYE", "z9hG4bK-bye", 2), A, B, ms(200)) == Disposition::dialog_updated);
        CHECK(h.dialog(call.call_id)->state == DialogState::terminated);
    }
};

Sip other_call() {
    Sip s;
    s.call_id = "hostile@example.net";
    s.from_tag = "hostile-tag";
    s.body.clear();
    return s;
}

}  // namespace

TEST_CASE("catalogue: SIP with 10,000 headers is refused as too_many_headers", "[sip][dialog][catalogue]") {
    Bystander t;
    std::string extra;
    for (int i = 0; i < 10'000; ++i) extra += "X-Header-" + std::to_string(i) + ": value\r\n";
    const std::string text = other_call().with_extra(extra).text();
    CHECK(t.feed(text) == Disposition::parse_error);
    CHECK(t.moved_since_setup() == Counts{{"parse_error/too_many_headers", 1}});
    CHECK(t.h.table.size() == 1);
    CHECK(t.h.table.transactions().size() == 0);
    t.check_untouched();
}

TEST_CASE("catalogue: unterminated lines: a cut line is refused, a missing empty line is a defect",
          "[sip][dialog][catalogue]") {
    Bystander t;
    const std::string full = other_call().text();
    REQUIRE(full.ends_with("Content-Length: 0\r\n\r\n"));

    // The last header line has no line end: nothing says the value is complete.
    CHECK(t.feed(std::string_view(full).substr(0, full.size() - 4)) == Disposition::parse_error);
    CHECK(t.moved_since_setup() == Counts{{"parse_error/truncated_headers", 1}});
    CHECK(t.h.table.size() == 1);

    // Complete lines but no empty line: used (a dialog starts), counted as a defect.
    CHECK(t.feed(std::string_view(full).substr(0, full.size() - 2)) == Disposition::dialog_created);
    CHECK(t.moved_since_setup() == Counts{{"parse_error/truncated_headers", 1},
                                          {"defect/headers_unterminated", 1},
                                          {"requests", 1},
                                          {"dialogs_created", 1}});
    CHECK(t.h.dialog("hostile@example.net", "hostile-tag") != nullptr);
    t.check_untouched();
}

TEST_CASE("catalogue: NUL bytes in the header section are refused as nul_in_headers, in a body kept",
          "[sip][dialog][catalogue]") {
    Bystander t;
    // "bystander@example.net\0x" reads as the bystander's Call-ID to a C-string consumer: it
    // must not become a dialog of its own.
    Sip smuggled = other_call();
    smuggled.call_id = std::string("bystander@example.net") + '\0' + "x";
    CHECK(t.feed(smuggled.text()) == Disposition::parse_error);
    std::string in_start_line = other_call().text();
    in_start_line[in_start_line.find("bob")] = '\0';
    CHECK(t.feed(in_start_line) == Disposition::parse_error);
    Sip in_other_header = other_call();
    in_other_header.extra = std::string("User-Agent: phone") + '\0' + "\r\n";
    CHECK(t.feed(in_other_header.text()) == Disposition::parse_error);
    CHECK(t.moved_since_setup() == Counts{{"parse_error/nul_in_headers", 3}});
    CHECK(t.h.table.size() == 1);

    // A binary body is legal: the message is used.
    Sip binary = other_call();
    binary.content_type = "application/octet-stream";
    binary.body = std::string("\0\1\0\2", 4);
    CHECK(t.feed(binary.text()) == Disposition::dialog_created);
    CHECK(t.moved_since_setup() == Counts{{"parse_error/nul_in_headers", 3}, {"requests", 1}, {"dialogs_created", 1}});
    t.check_untouched();
}

TEST_CASE("catalogue: huge Content-Length over UDP is used and counted as a defect", "[sip][dialog][catalogue]") {
    Bystander t;
    const std::string base = other_call().text();
    const auto with_length = [&](std::string_view value, std::string_view call_id) {
        std::string text = base;
        text.replace(text.find("Content-Length: 0"), 17, "Content-Length: " + std::string(value));
        text.replace(text.find("hostile@example.net"), 19, call_id);
        return text;
    };
    // 2^32 - 1 is a number: the body is short of it.
    CHECK(t.feed(with_length("4294967295", "cl-max@x")) == Disposition::dialog_created);
    // 2^32 and 2^64 are not 32-bit numbers: the rest of the datagram is the body.
    CHECK(t.feed(with_length("4294967296", "cl-2-32@x")) == Disposition::dialog_created);
    CHECK(t.feed(with_length("18446744073709551616", "cl-2-64@x")) == Disposition::dialog_created);
    CHECK(t.feed(with_length("99999999999999999999999999999999", "cl-long@x")) == Disposition::dialog_created);
    CHECK(t.moved_since_setup() == Counts{{"defect/body_truncated", 1},
                                          {"defect/content_length_invalid", 3},
                                          {"requests", 4},
                                          {"dialogs_created", 4}});
    CHECK(t.h.table.size() == 5);
    t.check_untouched();
}

TEST_CASE("catalogue: SDP with 1,000 media lines keeps 8 sections and is counted", "[sip][dialog][catalogue]") {
    Bystander t;
    RecordingSink& sink = t.h.sink;
    const std::size_t bindings_before = sink.got.size();
    std::string sdp = "v=0\no=- 1 1 IN IP4 192.0.2.7\ns=-\nc=IN IP4 192.0.2.7\nt=0 0\n";
    for (int i = 0; i < 1000; ++i) sdp += "m=audio " + std::to_string(20'000 + 2 * i) + " RTP/AVP 0\n";
    std::string formats;
    for (int pt = 0; pt < 100; ++pt) formats += " " + std::to_string(pt);
    sdp += "m=audio 4000 RTP/AVP" + formats + "\n";  // the 1,001st: ignored with the rest
    Sip offer = other_call();
    offer.body = sdp;
    CHECK(t.feed(offer.text()) == Disposition::dialog_created);
    const Counts got = t.moved_since_setup();
    CHECK(got.at("defect/sdp_media_overflow") == 1);
    CHECK(got.count("defect/sdp_formats_overflow") == 0);  // only in an ignored section

    // 100 formats in one of the first 8 sections: the formats beyond 32 are the defect.
    Sip wide = other_call();
    wide.call_id = "wide@example.net";
    wide.body = "v=0\no=- 1 1 IN IP4 192.0.2.8\ns=-\nc=IN IP4 192.0.2.8\nt=0 0\nm=audio 4000 RTP/AVP" + formats + "\n";
    CHECK(t.feed(wide.text()) == Disposition::dialog_created);
    const Counts after = t.moved_since_setup();
    CHECK(after.at("defect/sdp_formats_overflow") == 1);
    CHECK(after.at("defect/sdp_media_overflow") == 1);
    for (const auto& [name, value] : after) {
        INFO(name);
        CHECK((name.starts_with("defect/") || name == "requests" || name == "dialogs_created" ||
               name == "media_bindings"));
    }
    CHECK(after.at("dialogs_created") == 2);
    // Bindings only for the sections kept: at most 8 from the first offer, 1 from the second.
    CHECK(sink.got.size() - bindings_before == after.at("media_bindings"));
    CHECK(after.at("media_bindings") <= 9);
    t.check_untouched();
}
