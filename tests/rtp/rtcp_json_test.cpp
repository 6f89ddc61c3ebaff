// HEP RTCP-JSON (payload type 5) as rtpengine and Asterisk write it. The samples follow the
// format strings of rtpengine's daemon/rtcp.c homer_* handlers and the ast_json_pack() calls of
// Asterisk's rtcp_report_to_json (main/rtp_engine.c); the values are chosen by hand.
#include "rtp/rtcp_json.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <string>
#include <string_view>

using namespace hepd::rtp;

namespace {

// SR + SDES from rtpengine: "sender_information" first, the raw NTP fraction as "usec", a space
// before "packets", packets_lost as the unsigned 24-bit field (16777214 = -2), escaped SDES text.
const std::string_view rtpengine_sr =
    R"({ "sender_information":{"ntp_timestamp_sec":3913000000,"ntp_timestamp_usec":2147483648,"octets":160000,)"
    R"("rtp_timestamp":160000, "packets":1000},"ssrc":3581287122,"type":200,"report_count":1,"report_blocks":[)"
    R"({"source_ssrc":287454020,"highest_seq_no":66000,"fraction_lost":25,"ia_jitter":42,"packets_lost":16777214,)"
    R"("lsr":3070566400,"dlsr":344064}],"sdes_report_count":1,"sdes_information": [ {"sdes_chunk_ssrc":3581287122,)"
    R"("type":1,"text":"rtpengine \"a\\b\" \u00e9\n"} ] })";

const std::string_view rtpengine_rr_two =
    R"({ "ssrc":1,"type":201,"report_count":2,"report_blocks":[{"source_ssrc":2,"highest_seq_no":100,)"
    R"("fraction_lost":0,"ia_jitter":0,"packets_lost":0,"lsr":0,"dlsr":0},{"source_ssrc":4294967295,)"
    R"("highest_seq_no":4294967295,"fraction_lost":255,"ia_jitter":4294967295,"packets_lost":8388607,)"
    R"("lsr":4294967295,"dlsr":4294967295}] })";

// Asterisk: compact, SSRC packed as C int (3581287122 arrives as -713680174), NTP times and
// "lsr" as strings, "sender_information" null in a receiver report.
const std::string_view asterisk_sr =
    R"({"ssrc":-713680174,"type":200,"report_count":1,"sender_information":{"ntp_timestamp_sec":"1790000000",)"
    R"("ntp_timestamp_usec":"250000","rtp_timestamp":160000,"packets":1000,"octets":160000},"report_blocks":[)"
    R"({"source_ssrc":287454020,"fraction_lost":0,"packets_lost":0,"highest_seq_no":65800,"ia_jitter":17,)"
    R"("lsr":"3070566400","dlsr":65536}]})";

const std::string_view asterisk_rr =
    R"({"ssrc":12345,"type":201,"report_count":1,"sender_information":null,"report_blocks":[{"source_ssrc":-1,)"
    R"("fraction_lost":12,"packets_lost":3,"highest_seq_no":1234,"ia_jitter":80,"lsr":"0","dlsr":0}]})";

// Exact-size heap copy, so AddressSanitizer catches any read past the end.
hepd::Result<RtcpJsonReport, RtcpJsonError> parse_copy(std::string_view text) {
    std::unique_ptr<char[]> copy(new char[text.size() == 0 ? 1 : text.size()]);
    for (std::size_t i = 0; i < text.size(); ++i) copy[i] = text[i];
    return parse_rtcp_json(std::string_view(copy.get(), text.size()));
}

RtcpJsonError error_of(std::string_view text) {
    const auto r = parse_copy(text);
    REQUIRE_FALSE(r.ok());
    return r.error();
}

}  // namespace

TEST_CASE("rtpengine sender report with SDES", "[rtp][rtcp_json]") {
    const auto r = parse_copy(rtpengine_sr);
    REQUIRE(r.ok());
    CHECK(r->has_ssrc);
    CHECK(r->ssrc == 3581287122U);
    CHECK(r->type == 200);
    CHECK(r->report_count == 1);
    REQUIRE(r->has_sender_info);
    CHECK(r->sender_info == RtcpJsonSenderInfo{3913000000U, 2147483648U, 160000, 1000, 160000});
    REQUIRE(r->block_count == 1);
    CHECK(r->blocks_dropped == 0);
    CHECK(r->blocks[0] == RtcpJsonBlock{287454020U, 25, -2, 66000, 42, 3070566400U, 344064});
}

TEST_CASE("rtpengine receiver report, extreme values", "[rtp][rtcp_json]") {
    const auto r = parse_copy(rtpengine_rr_two);
    REQUIRE(r.ok());
    CHECK(r->ssrc == 1);
    CHECK(r->type == 201);
    CHECK_FALSE(r->has_sender_info);
    REQUIRE(r->block_count == 2);
    CHECK(r->blocks[0] == RtcpJsonBlock{2, 0, 0, 100, 0, 0, 0});
    CHECK(r->blocks[1] == RtcpJsonBlock{4294967295U, 255, 8388607, 4294967295U, 4294967295U, 4294967295U, 4294967295U});
}

TEST_CASE("Asterisk sender and receiver reports", "[rtp][rtcp_json]") {
    const auto sr = parse_copy(asterisk_sr);
    REQUIRE(sr.ok());
    CHECK(sr->ssrc == 3581287122U);
    CHECK(sr->sender_info == RtcpJsonSenderInfo{1790000000U, 250000, 160000, 1000, 160000});
    REQUIRE(sr->block_count == 1);
    CHECK(sr->blocks[0] == RtcpJsonBlock{287454020U, 0, 0, 65800, 17, 3070566400U, 65536});

    const auto rr = parse_copy(asterisk_rr);
    REQUIRE(rr.ok());
    CHECK(rr->ssrc == 12345);
    CHECK_FALSE(rr->has_sender_info);
    REQUIRE(rr->block_count == 1);
    CHECK(rr->blocks[0] == RtcpJsonBlock{0xFFFF'FFFFU, 12, 3, 1234, 80, 0, 0});
}

TEST_CASE("empty report lists, null blocks, repeated keys", "[rtp][rtcp_json]") {
    const auto none = parse_copy(R"({ "ssrc":7,"type":201,"report_count":0,"report_blocks":[] })");
    REQUIRE(none.ok());
    CHECK(none->block_count == 0);

    const auto null_blocks = parse_copy(R"({"report_blocks":null})");
    REQUIRE(null_blocks.ok());
    CHECK_FALSE(null_blocks->has_ssrc);

    // A compound SR + RR: the first reporter stays, blocks accumulate.
    const auto twice = parse_copy(R"({"ssrc":1,"type":200,"report_blocks":[{"source_ssrc":10}],)"
                                  R"("ssrc":2,"type":201,"report_blocks":[{"source_ssrc":20}]})");
    REQUIRE(twice.ok());
    CHECK(twice->ssrc == 1);
    CHECK(twice->type == 200);
    REQUIRE(twice->block_count == 2);
    CHECK(twice->blocks[0].source_ssrc == 10);
    CHECK(twice->blocks[1].source_ssrc == 20);
}

TEST_CASE("unknown keys and values of every type are skipped", "[rtp][rtcp_json]") {
    const auto r =
        parse_copy(R"( {"x":[1,-2.5e+3,{"y":null,"z":[true,false]}],"ssrc":9,"s":"\u00e9\/\t","report_blocks":[)"
                   R"({"source_ssrc":5,"extra":{"deep":[[]]},"fraction_lost":1}]} )");
    REQUIRE(r.ok());
    CHECK(r->ssrc == 9);
    REQUIRE(r->block_count == 1);
    CHECK(r->blocks[0] == RtcpJsonBlock{5, 1, 0, 0, 0, 0, 0});
}

TEST_CASE("blocks without a source SSRC, not objects, or over 31 are dropped and counted", "[rtp][rtcp_json]") {
    const auto r = parse_copy(R"({"ssrc":1,"report_blocks":[{"fraction_lost":3},7,"x",{"source_ssrc":8}]})");
    REQUIRE(r.ok());
    CHECK(r->blocks_dropped == 3);
    REQUIRE(r->block_count == 1);
    CHECK(r->blocks[0].source_ssrc == 8);

    std::string many = R"({"ssrc":1,"report_blocks":[)";
    for (int i = 0; i < 40; ++i) many += (i ? "," : "") + std::string(R"({"source_ssrc":)") + std::to_string(i) + "}";
    many += "]}";
    const auto m = parse_copy(many);
    REQUIRE(m.ok());
    CHECK(m->block_count == 31);
    CHECK(m->blocks_dropped == 9);
    CHECK(m->blocks[30].source_ssrc == 30);
}

TEST_CASE("trailing whitespace and NUL octets are accepted, anything else is not", "[rtp][rtcp_json]") {
    CHECK(parse_copy(std::string_view("{\"ssrc\":1} \n\0\0", 15)).ok());
    CHECK(error_of(R"({"ssrc":1}})") == RtcpJsonError::syntax);
    CHECK(error_of(R"({"ssrc":1} x)") == RtcpJsonError::syntax);
}

TEST_CASE("errors by reason", "[rtp][rtcp_json]") {
    CHECK(error_of("") == RtcpJsonError::empty);
    CHECK(error_of(" \r\n\t") == RtcpJsonError::empty);
    CHECK(error_of(std::string_view("\0\0", 2)) == RtcpJsonError::empty);
    CHECK(error_of("[1]") == RtcpJsonError::not_object);
    CHECK(error_of("42") == RtcpJsonError::not_object);
    CHECK(error_of(R"({"foo":1})") == RtcpJsonError::not_rtcp);
    CHECK(error_of(R"({})") == RtcpJsonError::not_rtcp);
    CHECK(error_of(std::string(kMaxRtcpJsonSize + 1, ' ')) == RtcpJsonError::too_long);

    CHECK(error_of(R"({"ssrc":1.5})") == RtcpJsonError::bad_number);
    CHECK(error_of(R"({"ssrc":1e3})") == RtcpJsonError::bad_number);
    CHECK(error_of(R"({"ssrc":"abc"})") == RtcpJsonError::bad_number);
    CHECK(error_of(R"({"ssrc":""})") == RtcpJsonError::bad_number);
    CHECK(error_of(R"({"ssrc":"+5"})") == RtcpJsonError::bad_number);
    CHECK(error_of(R"({"ssrc":true})") == RtcpJsonError::bad_number);
    CHECK(error_of(R"({"ssrc":{}})") == RtcpJsonError::bad_number);
    CHECK(error_of(R"({"ssrc":4294967296})") == RtcpJsonError::bad_number);
    CHECK(error_of(R"({"ssrc":-2147483649})") == RtcpJsonError::bad_number);
    CHECK(error_of(R"({"ssrc":99999999999999999999999})") == RtcpJsonError::bad_number);
    CHECK(error_of(R"({"type":256})") == RtcpJsonError::bad_number);
    CHECK(error_of(R"({"report_blocks":[{"source_ssrc":1,"fraction_lost":-1}]})") == RtcpJsonError::bad_number);
    CHECK(error_of(R"({"report_blocks":[{"source_ssrc":1,"packets_lost":16777216}]})") == RtcpJsonError::bad_number);
    CHECK(error_of(R"({"report_blocks":[{"source_ssrc":1,"packets_lost":-8388609}]})") == RtcpJsonError::bad_number);
    CHECK(error_of(R"({"report_blocks":{}})") == RtcpJsonError::syntax);
    CHECK(error_of(R"({"sender_information":[]})") == RtcpJsonError::syntax);

    CHECK(error_of(R"({"ssrc":01})") == RtcpJsonError::syntax);
    CHECK(error_of(R"({"ssrc" 1})") == RtcpJsonError::syntax);
    CHECK(error_of(R"({"ssrc":1 "type":2})") == RtcpJsonError::syntax);
    CHECK(error_of(R"({ssrc:1})") == RtcpJsonError::syntax);
    CHECK(error_of(R"({"s":"\x"})") == RtcpJsonError::syntax);
    CHECK(error_of(R"({"s":"\u12G4"})") == RtcpJsonError::syntax);
    CHECK(error_of("{\"s\":\"a\nb\"}") == RtcpJsonError::syntax);
    CHECK(error_of(R"({"s":tru})") == RtcpJsonError::syntax);
    CHECK(error_of(R"({"s":-})") == RtcpJsonError::syntax);
    CHECK(error_of(R"({"s":1.})") == RtcpJsonError::syntax);
    CHECK(error_of(R"({"s":[1,]})") == RtcpJsonError::syntax);
    CHECK(error_of(std::string_view("{\"s\":\0}", 7)) == RtcpJsonError::syntax);

    std::string deep = R"({"x":)";
    for (int i = 0; i < 20; ++i) deep += "[";
    for (int i = 0; i < 20; ++i) deep += "]";
    deep += "}";
    CHECK(error_of(deep) == RtcpJsonError::too_deep);
    std::string ok_depth = R"({"ssrc":1,"x":)";
    for (int i = 0; i < 14; ++i) ok_depth += "[";
    for (int i = 0; i < 14; ++i) ok_depth += "]";
    ok_depth += "}";
    CHECK(parse_copy(ok_depth).ok());
}

// Integers are read in one pass when they are plain digits; everything else takes the general
// path. Both must agree at the edges between them.
TEST_CASE("integers at the edges of the one-pass read", "[rtp][rtcp_json]") {
    const auto ssrc_of = [](std::string_view text) {
        const auto r = parse_copy(text);
        REQUIRE(r.ok());
        return r.value().ssrc;
    };
    CHECK(ssrc_of(R"({"ssrc":0})") == 0);
    CHECK(ssrc_of(R"({"ssrc":7 })") == 7);
    CHECK(ssrc_of(R"({"ssrc":4294967295})") == 4294967295U);
    CHECK(ssrc_of(R"({"ssrc":-1})") == 4294967295U);  // C int packing
    CHECK(ssrc_of(R"({"ssrc":"00042"})") == 42);      // a string of digits, as Asterisk writes some
    CHECK(error_of(R"({"ssrc":000000000000000000})") == RtcpJsonError::syntax);
    CHECK(error_of(R"({"ssrc":123456789012345678})") == RtcpJsonError::bad_number);   // 18 digits
    CHECK(error_of(R"({"ssrc":1234567890123456789})") == RtcpJsonError::bad_number);  // 19
    CHECK(error_of(R"({"ssrc":4294967295.0})") == RtcpJsonError::bad_number);
    CHECK(error_of(R"({"ssrc":5E0})") == RtcpJsonError::bad_number);
    CHECK(error_of(R"({"ssrc":0.5})") == RtcpJsonError::bad_number);
    CHECK(error_of(R"({"ssrc":12)") == RtcpJsonError::truncated);
    CHECK(error_of(R"({"ssrc":0)") == RtcpJsonError::truncated);
    CHECK(error_of(R"({"ssrc":12x})") == RtcpJsonError::syntax);
    // Keys are strings too: escapes and control characters inside them.
    CHECK(ssrc_of(R"({"\u0073src":1,"ssrc":3})") == 3);
    CHECK(error_of("{\"ss\x01rc\":1}") == RtcpJsonError::syntax);
    CHECK(error_of(R"({"ssrc\)") == RtcpJsonError::truncated);
}

// A quote, an escape or a control character ends a string's plain run wherever it is, and bytes
// from 0x80 up (UTF-8) are plain.
TEST_CASE("string ends, escapes and control characters at every offset", "[rtp][rtcp_json]") {
    const auto with_note = [](const std::string& note) { return R"({"note":")" + note + R"(","ssrc":9})"; };
    for (std::size_t offset = 0; offset < 20; ++offset) {
        INFO("offset " << offset);
        const std::string plain(offset, 'a');
        const auto clean = parse_copy(with_note(plain));
        REQUIRE(clean.ok());
        CHECK(clean.value().ssrc == 9);
        CHECK(parse_copy(with_note(plain + "\\\"x" + plain)).ok());                  // \" inside
        CHECK(error_of(with_note(plain + "\"x" + plain)) == RtcpJsonError::syntax);  // the end, then x
        CHECK(parse_copy(with_note(plain + "\\\\" + plain)).ok());
        CHECK(parse_copy(with_note(plain + "\xc3\xa9\xff\x7f" + plain)).ok());
        for (const char control : {'\x00', '\x01', '\x0a', '\x1f'})
            CHECK(error_of(with_note(plain + std::string(1, control) + plain)) == RtcpJsonError::syntax);
        CHECK(error_of(R"({"note":")" + plain) == RtcpJsonError::truncated);
    }
}

TEST_CASE("every truncation of real samples is reported as truncated", "[rtp][rtcp_json][hostile]") {
    for (const std::string_view sample : {rtpengine_sr, rtpengine_rr_two, asterisk_sr, asterisk_rr}) {
        REQUIRE(parse_copy(sample).ok());
        for (std::size_t n = 1; n < sample.size(); ++n) {
            const auto r = parse_copy(sample.substr(0, n));
            INFO("prefix length " << n << ": " << sample.substr(0, n));
            REQUIRE_FALSE(r.ok());
            CHECK(r.error() == RtcpJsonError::truncated);
        }
    }
}

TEST_CASE("error names are snake_case and distinct", "[rtp][rtcp_json]") {
    CHECK(to_string(RtcpJsonError::empty) == "empty");
    CHECK(to_string(RtcpJsonError::bad_number) == "bad_number");
    CHECK(to_string(RtcpJsonError::not_rtcp) == "not_rtcp");
    CHECK(to_string(static_cast<RtcpJsonError>(kRtcpJsonErrorCount - 1)) != "unknown");
    CHECK(to_string(static_cast<RtcpJsonError>(kRtcpJsonErrorCount)) == "unknown");
}

// The scanner names known keys in place when they are written `"name":`, reads plain integers a
// word at a time, and skips white space only where there is some; the tests below pin what the
// general paths do wherever those shortcuts could part from them.

TEST_CASE("white space between any two tokens changes nothing", "[rtp][rtcp_json]") {
    // '~' marks every place where JSON allows white space.
    const std::string marked =
        R"(~{~"ssrc"~:~-713680174~,~"type"~:~200~,~"x"~:~[~1.5e3~,~{~"y"~:~null~}~,~"s\"t"~]~,)"
        R"(~"sender_information"~:~{~"ntp_timestamp_sec"~:~"1790000000"~,~"packets"~:~1000~}~,)"
        R"(~"report_blocks"~:~[~{~"source_ssrc"~:~287454020~,~"packets_lost"~:~16777214~,~"lsr"~:~0~})"
        R"(~,~{~"dlsr"~:~1~}~]~}~)";
    const auto with = [&](std::size_t only, const std::string& space) {
        std::string text;
        std::size_t mark = 0;
        for (const char c : marked) {
            if (c != '~') {
                text += c;
            } else if (only == std::string::npos || mark++ == only) {
                text += space;
            }
        }
        return text;
    };
    const auto compact = parse_copy(with(std::string::npos, ""));
    REQUIRE(compact.ok());
    CHECK(compact->ssrc == 3581287122U);
    CHECK(compact->type == 200);
    CHECK(compact->sender_info == RtcpJsonSenderInfo{1790000000U, 0, 0, 1000, 0});
    REQUIRE(compact->block_count == 1);
    CHECK(compact->blocks_dropped == 1);
    CHECK(compact->blocks[0] == RtcpJsonBlock{287454020U, 0, -2, 0, 0, 0, 0});
    const auto marks = static_cast<std::size_t>(std::count(marked.begin(), marked.end(), '~'));
    for (const std::string space : {"", " \n"}) {
        const std::string full = with(std::string::npos, space);
        for (std::size_t n = space.size() + 1; n <= full.rfind('}'); ++n) {
            INFO("prefix " << full.substr(0, n));
            CHECK(error_of(full.substr(0, n)) == RtcpJsonError::truncated);
        }
    }
    for (const std::string space : {" ", "\t", "\r\n", " \n\t\r  "}) {
        const auto everywhere = parse_copy(with(std::string::npos, space));
        REQUIRE(everywhere.ok());
        CHECK(static_cast<const RtcpJsonReportFields&>(*everywhere) ==
              static_cast<const RtcpJsonReportFields&>(*compact));
        CHECK(everywhere->blocks[0] == compact->blocks[0]);
        for (std::size_t only = 0; only < marks; ++only) {
            INFO("white space at mark " << only);
            const auto one = parse_copy(with(only, space));
            REQUIRE(one.ok());
            CHECK(static_cast<const RtcpJsonReportFields&>(*one) == static_cast<const RtcpJsonReportFields&>(*compact));
            CHECK(one->blocks[0] == compact->blocks[0]);
        }
    }
}

TEST_CASE("keys that look like known ones", "[rtp][rtcp_json]") {
    const auto ssrc_of = [](std::string_view text) {
        const auto r = parse_copy(text);
        REQUIRE(r.ok());
        return r.value().ssrc;
    };
    CHECK(ssrc_of(R"({"ssrc" :5})") == 5);
    CHECK(ssrc_of(R"({"ssrcx":5,"ssr":6,"ss":7,"SSRC":8,"ssrc":9})") == 9);
    CHECK(ssrc_of(R"({"\u0073src":5,"ss\"rc":6,"ssrc\\":7,"ssrc":9})") == 9);
    CHECK(ssrc_of(R"({"source_ssrc":5,"lsr":6,"packets":7,"ssrc":9})") == 9);  // other objects' keys
    // Keys of the top level, or of sender information, are unknown in a block, and the reverse.
    const auto r = parse_copy(R"({"ssrc":1,"sender_information":{"ssrc":2,"lsr":3,"octets":4},)"
                              R"("report_blocks":[{"source_ssrc":5,"ssrc":6,"octets":7,"lsr":8}]})");
    REQUIRE(r.ok());
    CHECK(r->ssrc == 1);
    CHECK(r->sender_info == RtcpJsonSenderInfo{0, 0, 0, 0, 4});
    REQUIRE(r->block_count == 1);
    CHECK(r->blocks[0] == RtcpJsonBlock{5, 0, 0, 0, 0, 8, 0});
    // A known key's value must be an integer, an unknown key's may be anything.
    CHECK(ssrc_of(R"({"ssrcx":{"ssrc":[1.5]},"ssrc":9})") == 9);
    CHECK(error_of(R"({"ssrc":[9]})") == RtcpJsonError::bad_number);
    CHECK(error_of(R"({"ssrc" 9})") == RtcpJsonError::syntax);
    CHECK(error_of(R"({"ssrc")") == RtcpJsonError::truncated);
    CHECK(error_of(R"({"ssrc":)") == RtcpJsonError::truncated);
    CHECK(error_of(R"({"ssrc": )") == RtcpJsonError::truncated);
    CHECK(error_of(R"({"report_blocks":[{"lsr")") == RtcpJsonError::truncated);
    CHECK(error_of(R"({"report_blocks":[{"lsr":)") == RtcpJsonError::truncated);
    CHECK(error_of(R"({"report_blocks":[{"lsr":1)") == RtcpJsonError::truncated);
    CHECK(error_of(R"({"ssrc":1,)") == RtcpJsonError::truncated);
    CHECK(error_of(R"({"ssrc":1,})") == RtcpJsonError::syntax);
    CHECK(error_of(R"({"ssrc":1,,"type":2})") == RtcpJsonError::syntax);
    CHECK(error_of(R"({"ssrc":1 , 'type':2})") == RtcpJsonError::syntax);
}

// Every length of integer, followed by each kind of octet, at offsets that put its end both more
// and less than a word from the end of the text.
TEST_CASE("integers of every length, and what follows them", "[rtp][rtcp_json]") {
    for (std::size_t digits = 1; digits <= 21; ++digits) {
        const std::string four = "4" + std::string(digits - 1, '0');  // 4, 40, ... fits 32 bits up to 10
        const bool fits = digits <= 10;
        for (std::size_t lead = 0; lead < 9; ++lead) {
            for (std::size_t pad = 0; pad < 10; ++pad) {
                const std::string head = R"({"n":")" + std::string(lead, 'a') + R"(","report_blocks":[{"source_ssrc":)";
                const auto text = [&](const std::string& after) { return head + four + after + std::string(pad, ' '); };
                INFO("digits " << digits << ", lead " << lead << ", pad " << pad);
                const auto r = parse_copy(text("}]}"));
                if (fits) {
                    REQUIRE(r.ok());
                    REQUIRE(r->block_count == 1);
                    CHECK(r->blocks[0].source_ssrc == std::stoul(four));
                } else {
                    REQUIRE_FALSE(r.ok());
                    CHECK(r.error() == RtcpJsonError::bad_number);
                }
                const auto number_error = fits ? RtcpJsonError::syntax : RtcpJsonError::bad_number;
                CHECK(error_of(text("")) == (fits ? RtcpJsonError::truncated : RtcpJsonError::bad_number));
                CHECK(error_of(text(".5}]}")) == RtcpJsonError::bad_number);
                CHECK(error_of(text("e1}]}")) == RtcpJsonError::bad_number);
                CHECK(error_of(text("E+1}]}")) == RtcpJsonError::bad_number);
                CHECK(error_of(text(".}]}")) == RtcpJsonError::syntax);
                CHECK(error_of(text("e}]}")) == RtcpJsonError::syntax);
                CHECK(error_of(text(".")) == (pad == 0 ? RtcpJsonError::truncated : RtcpJsonError::syntax));
                CHECK(error_of(text("x}]}")) == number_error);
                CHECK(error_of(text(":}]}")) == number_error);  // ':' and '/' flank the digits
                CHECK(error_of(text("/}]}")) == number_error);
                CHECK(error_of(text(std::string("\0}]}", 4))) == number_error);
                CHECK(error_of(text("\xff}]}")) == number_error);
                // Negative, as Asterisk packs SSRCs; -4000000000 is below INT32_MIN.
                const auto negative = parse_copy(head + "-" + four + "}]}" + std::string(pad, ' '));
                if (digits <= 9) {
                    REQUIRE(negative.ok());
                    CHECK(negative->blocks[0].source_ssrc == static_cast<std::uint32_t>(-std::stol(four)));
                } else {
                    REQUIRE_FALSE(negative.ok());
                    CHECK(negative.error() == RtcpJsonError::bad_number);
                }
                // A string of digits, leading zeros allowed, up to 19 digits.
                const auto quoted = parse_copy(head + "\"0" + four + "\"}]}" + std::string(pad, ' '));
                if (fits) {
                    REQUIRE(quoted.ok());
                    CHECK(quoted->blocks[0].source_ssrc == std::stoul(four));
                } else {
                    REQUIRE_FALSE(quoted.ok());
                    CHECK(quoted.error() == RtcpJsonError::bad_number);
                }
                CHECK(error_of(head + "\"" + four) == RtcpJsonError::truncated);
                CHECK(error_of(head + "\"" + four + "x\"}]}") == RtcpJsonError::bad_number);
                CHECK(error_of(head + "\"" + four + "\\\"}]}") == RtcpJsonError::truncated);
                // Unknown keys' numbers are checked as JSON, whatever their size.
                CHECK(parse_copy(R"({"ssrc":1,"x":)" + four + "}" + std::string(pad, ' ')).ok());
                CHECK(parse_copy(R"({"ssrc":1,"x":-)" + four + ".5e-7}" + std::string(pad, ' ')).ok());
                CHECK(error_of(R"({"ssrc":1,"x":)" + four + ".}" + std::string(pad, ' ')) == RtcpJsonError::syntax);
                CHECK(error_of(R"({"ssrc":1,"x":0)" + four + "}" + std::string(pad, ' ')) == RtcpJsonError::syntax);
            }
        }
    }
}

TEST_CASE("signs and zeros", "[rtp][rtcp_json]") {
    const auto ssrc_of = [](std::string_view text) {
        const auto r = parse_copy(text);
        REQUIRE(r.ok());
        return r.value().ssrc;
    };
    CHECK(ssrc_of(R"({"ssrc":-0})") == 0);
    CHECK(ssrc_of(R"({"ssrc":-2147483648})") == 0x8000'0000U);
    CHECK(ssrc_of(R"({"ssrc": -5 })") == 0xFFFF'FFFBU);
    CHECK(ssrc_of(R"({"ssrc":"-5"})") == 0xFFFF'FFFBU);
    CHECK(ssrc_of(R"({"ssrc":"0"})") == 0);
    CHECK(ssrc_of(R"({"ssrc":"0000000000000000001"})") == 1);  // 19 digits
    CHECK(error_of(R"({"ssrc":"00000000000000000001"})") == RtcpJsonError::bad_number);
    CHECK(error_of(R"({"ssrc":"1.5"})") == RtcpJsonError::bad_number);
    CHECK(error_of(R"({"ssrc":"\u0031"})") == RtcpJsonError::bad_number);
    CHECK(error_of(R"({"ssrc":-01})") == RtcpJsonError::syntax);
    CHECK(error_of(R"({"ssrc":- 1})") == RtcpJsonError::syntax);
    CHECK(error_of(R"({"ssrc":-)") == RtcpJsonError::truncated);
    CHECK(error_of(R"({"ssrc":-12)") == RtcpJsonError::truncated);
    CHECK(error_of(R"({"ssrc":--1})") == RtcpJsonError::syntax);
    CHECK(error_of(R"({"ssrc":+1})") == RtcpJsonError::syntax);
}
