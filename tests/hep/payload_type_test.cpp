#include "hep/payload_type.hpp"

#include <catch2/catch.hpp>

using namespace hepd;
using namespace hepd::hep;

TEST_CASE("built-in payload types follow what senders send", "[hep][payload_type]") {
    const PayloadTypeTable t;
    struct Row {
        int code;
        std::string_view name;
        PayloadClass cls;
    };
    const Row rows[] = {
        {1, "sip", PayloadClass::sip},
        {4, "rtp", PayloadClass::rtp},
        {5, "rtcp_json", PayloadClass::rtcp_json},
        {0x10, "iax", PayloadClass::other},
        {32, "qos_report", PayloadClass::qos},
        {34, "rtp_agent_stats", PayloadClass::qos},
        {35, "rtcp_xr", PayloadClass::rtcp},
        {53, "dns", PayloadClass::other},
        {54, "isup", PayloadClass::other},
        {0x3d, "rtpengine_ng", PayloadClass::other},
        {99, "qos_json", PayloadClass::qos},
        {100, "log", PayloadClass::log},
    };
    int named = 0;
    for (int code = 0; code < 256; ++code) {
        CAPTURE(code);
        const auto c = static_cast<std::uint8_t>(code);
        const Row* row = nullptr;
        for (const auto& r : rows)
            if (r.code == code) row = &r;
        if (row != nullptr) {
            ++named;
            CHECK(t.known(c));
            CHECK(t.name(c) == row->name);
            CHECK(t.payload_class(c) == row->cls);
        } else {
            CHECK_FALSE(t.known(c));
            CHECK(t.name(c) == "unknown");
            CHECK(t.payload_class(c) == PayloadClass::other);
        }
    }
    CHECK(named == 12);
}

TEST_CASE("configuration adds and overrides payload types", "[hep][payload_type]") {
    PayloadTypeTable t;
    REQUIRE(t.set(2, "xmpp", PayloadClass::other));
    CHECK(t.known(2));
    CHECK(t.name(2) == "xmpp");
    // Override: some agent sends raw RTCP as 5.
    REQUIRE(t.set(5, "rtcp", PayloadClass::rtcp));
    CHECK(t.name(5) == "rtcp");
    CHECK(t.payload_class(5) == PayloadClass::rtcp);
    // Shorter name over a longer one leaves no tail behind.
    REQUIRE(t.set(34, "ra", PayloadClass::qos));
    CHECK(t.name(34) == "ra");
    REQUIRE(t.set(255, std::string(31, 'z'), PayloadClass::log));
    CHECK(t.name(255) == std::string(31, 'z'));

    // Rejected names change nothing.
    CHECK_FALSE(t.set(1, "", PayloadClass::other));
    CHECK_FALSE(t.set(1, std::string(32, 'a'), PayloadClass::other));
    CHECK_FALSE(t.set(1, "Sip", PayloadClass::other));
    CHECK_FALSE(t.set(1, "si p", PayloadClass::other));
    CHECK_FALSE(t.set(1, "sip-x", PayloadClass::other));
    CHECK(t.name(1) == "sip");
    CHECK(t.payload_class(1) == PayloadClass::sip);

    // A copy is independent (a plain value handed to each shard).
    PayloadTypeTable copy = t;
    REQUIRE(copy.set(2, "changed", PayloadClass::log));
    CHECK(t.name(2) == "xmpp");
}

TEST_CASE("payload classes round-trip through their names", "[hep][payload_type]") {
    const std::pair<PayloadClass, std::string_view> all[] = {
        {PayloadClass::sip, "sip"},    {PayloadClass::rtp, "rtp"},
        {PayloadClass::rtcp, "rtcp"},  {PayloadClass::rtcp_json, "rtcp_json"},
        {PayloadClass::qos, "qos"},    {PayloadClass::log, "log"},
        {PayloadClass::other, "other"}};
    STATIC_REQUIRE(std::size(all) == kPayloadClassCount);
    for (const auto& [cls, name] : all) {
        CHECK(to_string(cls) == name);
        CHECK(parse_payload_class(name) == cls);
    }
    CHECK_FALSE(parse_payload_class("SIP").has_value());
    CHECK_FALSE(parse_payload_class("").has_value());
    CHECK_FALSE(parse_payload_class("rtcp_xr").has_value());
}
