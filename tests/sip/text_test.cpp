#include "sip/text.hpp"

#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <tuple>
#include <vector>

using namespace hepd::sip::detail;

TEST_CASE("parse_uint boundaries", "[sip][text]") {
    CHECK(parse_uint<std::uint8_t>("255") == std::optional<std::uint8_t>(255));
    CHECK_FALSE(parse_uint<std::uint8_t>("256").has_value());
    CHECK(parse_uint<std::uint16_t>("65535") == std::optional<std::uint16_t>(65535));
    CHECK_FALSE(parse_uint<std::uint16_t>("65536").has_value());
    CHECK(parse_uint<std::uint32_t>("0004294967295") == std::optional<std::uint32_t>(4294967295u));
    CHECK_FALSE(parse_uint<std::uint32_t>("4294967296").has_value());
    CHECK(parse_uint<std::uint64_t>("18446744073709551615") == std::optional<std::uint64_t>(18446744073709551615ULL));
    CHECK_FALSE(parse_uint<std::uint64_t>("18446744073709551616").has_value());
    CHECK_FALSE(parse_uint<std::uint64_t>("99999999999999999999").has_value());
    CHECK(parse_uint<std::uint64_t>("9999999999999999999") == std::optional<std::uint64_t>(9999999999999999999ULL));
    CHECK_FALSE(parse_uint<std::uint64_t>("000000000000000000001").has_value());  // 21 digits
    CHECK_FALSE(parse_uint<std::uint32_t>("").has_value());
    CHECK_FALSE(parse_uint<std::uint32_t>("1a").has_value());
    CHECK_FALSE(parse_uint<std::uint32_t>(" 1").has_value());
    CHECK_FALSE(parse_uint<std::uint32_t>("+1").has_value());
    CHECK_FALSE(parse_uint<std::uint32_t>("1/").has_value());
    CHECK_FALSE(parse_uint<std::uint32_t>(":").has_value());
}

TEST_CASE("find_unquoted and next_list_item", "[sip][text]") {
    CHECK(find_unquoted("a,b", ',', true) == 1);
    CHECK(find_unquoted("\"a,b\",c", ',', true) == 5);
    CHECK(find_unquoted("<sip:a,b>,c", ',', true) == 9);
    CHECK(find_unquoted("<sip:a,b>,c", ',', false) == 6);
    CHECK(find_unquoted("\"a\\\",b\",c", ',', true) == 7);
    CHECK(find_unquoted("\"unterminated,", ',', true) == std::string_view::npos);
    CHECK(find_unquoted("", ',', true) == std::string_view::npos);
    CHECK(find_unquoted("abc", ',', true) == std::string_view::npos);

    std::string_view rest = " one , \"t,wo\" ,<th,ree>,";
    CHECK(next_list_item(rest) == "one");
    CHECK(next_list_item(rest) == "\"t,wo\"");
    CHECK(next_list_item(rest) == "<th,ree>");
    CHECK(rest.empty());
}

TEST_CASE("ItemSplitter: plain and quoted values split alike", "[sip][text]") {
    const auto split = [](std::string_view text, char sep, bool angle) {
        std::vector<std::string> items;
        ItemSplitter splitter(text, sep, angle);
        while (!splitter.done()) items.emplace_back(splitter.next());
        return items;
    };
    CHECK(split("a, b ,c", ',', true) == std::vector<std::string>{"a", "b", "c"});
    CHECK(split("a,,", ',', true) == std::vector<std::string>{"a", ""});
    CHECK(split(",a", ',', true) == std::vector<std::string>{"", "a"});
    CHECK(split("", ',', true).empty());
    CHECK(split("\"x,y\" <u,v>, w", ',', true) == std::vector<std::string>{"\"x,y\" <u,v>", "w"});
    CHECK(split("<u,v>, w", ',', false) == std::vector<std::string>{"<u", "v>", "w"});
    CHECK(split(";a=1;b=\"2;3\";c", ';', false) == std::vector<std::string>{"", "a=1", "b=\"2;3\"", "c"});
    CHECK(split("\"open, never closed", ',', true) == std::vector<std::string>{"\"open, never closed"});
}

TEST_CASE("for_each_param finds the elements ItemSplitter finds", "[sip][text]") {
    // for_each_param splits in one pass of its own; the splitter (with '=' found in each
    // trimmed element) is the reference.
    using Param = std::tuple<std::string, std::string, bool>;
    const auto reference = [](std::string_view params) {
        std::vector<Param> out;
        ItemSplitter items(params, ';', false);
        while (!items.done()) {
            const std::string_view item = items.next();
            if (item.empty()) continue;
            const std::size_t eq = item.find('=');
            if (eq == std::string_view::npos) {
                out.emplace_back(std::string(item), "", false);
            } else {
                out.emplace_back(std::string(rtrim_lws(item.substr(0, eq))),
                                 std::string(unquote(trim_lws(item.substr(eq + 1)))), true);
            }
        }
        return out;
    };
    const auto walked = [](std::string_view params) {
        std::vector<Param> out;
        for_each_param(params, [&](std::string_view name, std::string_view value, bool has_value) {
            out.emplace_back(std::string(name), std::string(value), has_value);
            return false;
        });
        return out;
    };
    for (const char* text : {";branch=z9hG4bK-0-1;rport", R"(;text="a;b=c";x)", R"(;q="unterminated;x=1)",
                             R"(;e="a\";b";c)", R"(;e="a\)", ";;; ;", " ; a = 1 ; b", ";a=\"\"", "x=\"", ""})
        CHECK(walked(text) == reference(text));
    std::mt19937 rng(11);
    const std::string alphabet = "ab=;;\"\\ \r\n<>";
    std::uniform_int_distribution<std::size_t> length(0, 24);
    std::uniform_int_distribution<std::size_t> pick(0, alphabet.size() - 1);
    for (int n = 0; n < 20000; ++n) {
        std::string text;
        const std::size_t size = length(rng);
        for (std::size_t i = 0; i < size; ++i) text += alphabet[pick(rng)];
        INFO("'" << text << "'");
        REQUIRE(walked(text) == reference(text));
    }
    // Stops at the first element the callback takes.
    int calls = 0;
    for_each_param(";a;b;c", [&](std::string_view name, std::string_view, bool) {
        ++calls;
        return name == "b";
    });
    CHECK(calls == 2);
}

TEST_CASE("find_first_of2 agrees with a byte loop in every lane and the tail", "[sip][text]") {
    const auto naive = [](std::string_view s, std::size_t i, char a, char b, bool controls) {
        for (; i < s.size(); ++i)
            if (s[i] == a || s[i] == b || (controls && static_cast<unsigned char>(s[i]) < '!')) return i;
        return s.size();
    };
    // Fillers with letters, bytes >= 0x80, '!' (just above the control range) and DEL.
    const std::string fillers[] = {"abcdefghijklmnopqrstuvwxyz012", std::string("\x80\xff!\x7f#~\xa0\xc9", 8) + "zz"};
    const char stops[] = {';', '"', ' ', '\t', '\r', '\n', '\0', '\x1f', '\\', ':'};
    for (const std::string& filler : fillers) {
        std::string base;
        while (base.size() < 19) base += filler;
        base.resize(19);
        CHECK(find_first_of2<true>(base, 0, ';', '"') == naive(base, 0, ';', '"', true));
        for (std::size_t n = 0; n <= base.size(); ++n) {
            for (std::size_t at = 0; at < n; ++at) {
                for (char stop : stops) {
                    std::string s = base.substr(0, n);
                    s[at] = stop;
                    // A second stop after the first one must not hide it (borrows run upwards).
                    if (at + 1 < n) s[at + 1] = '\0';
                    for (std::size_t from = 0; from <= n; ++from) {
                        INFO("n " << n << " at " << at << " stop " << int(stop) << " from " << from);
                        CHECK(find_first_of2<true>(s, from, ';', '"') == naive(s, from, ';', '"', true));
                        CHECK(find_first_of2<false>(s, from, '"', '\\') == naive(s, from, '"', '\\', false));
                        CHECK(find_first_of2<true>(s, from, ':', ';') == naive(s, from, ':', ';', true));
                    }
                }
            }
        }
    }
}

TEST_CASE("plain_first_param_end takes only what for_each_param reports untouched", "[sip][text]") {
    const auto first_value = [](std::string_view params) {
        std::string_view found;
        for_each_param(params, [&](std::string_view, std::string_view value, bool) {
            found = value;
            return true;
        });
        return found;
    };
    for (std::string_view params : {";tag=abc", ";tag=abc;x", ";tag=", ";tag=;x", ";tag=0123456789abcdef;y=1",
                                    ";tag=01234567", ";tag=0123456789a"}) {
        INFO(params);
        const std::size_t end = plain_first_param_end(params, ";tag=");
        REQUIRE(end != std::string_view::npos);
        const std::string_view value = params.substr(5, end - 5);
        CHECK(value == first_value(params));
        CHECK(value.data() == first_value(params).data());
    }
    for (std::string_view params : {";tag", ";TAG=a", "; tag=a", ";tag =a", ";tag= a", ";tag=a ", ";tag=a\t;x",
                                    ";tag=\"a;b\"", ";tag=a\"b", ";tags=a", "", ";tag=abcdefgh\r\n x"})
        CHECK(plain_first_param_end(params, ";tag=") == std::string_view::npos);
}
