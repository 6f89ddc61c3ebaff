#include "intake/hep_intake.hpp"

#include "ingest/hep_message.hpp"

#include <catch2/catch.hpp>
#include <zlib.h>

using namespace hepd;
using namespace hepd::intake;

namespace {
const Timestamp kNow = Timestamp::from_parts(1'700'000'100, 0);
}

TEST_CASE("intake turns a HEPv3 SIP message into a datagram", "[ingest]") {
    HepIntake intake({});
    const auto bytes = test::encode(test::sip_message(test::kOptions));
    shard::Datagram d;
    REQUIRE(intake.accept(bytes, Carrier::udp, kNow, d));
    CHECK(d.kind == PayloadClass::sip);
    CHECK(d.time == Timestamp::from_parts(1'700'000'000, 250'000));
    CHECK(d.src.to_string() == "10.0.0.1:5060");
    CHECK(d.dst.to_string() == "10.0.0.2:5080");
    CHECK(d.transport == shard::Transport::udp);
    CHECK(d.capture_id == 2001);
    CHECK(as_text(d.payload) == test::kOptions);
    CHECK(intake.stats().packets[0][2] == 1);
    CHECK(intake.stats().bytes[0][2] == bytes.size());
    CHECK(intake.stats().accepted() == 1);
}

TEST_CASE("intake counts every refusal by reason and keeps received = accepted + drops", "[ingest]") {
    IntakeOptions options;
    options.auth_key = "secret";
    HepIntake intake(options);
    shard::Datagram d;

    auto good = test::sip_message(test::kOptions);
    good.auth_key = as_bytes("secret");
    good.mark(hep::Field::auth_key);
    auto wrong = good;
    wrong.auth_key = as_bytes("guess!");
    auto none = test::sip_message(test::kOptions);

    CHECK(intake.accept(test::encode(good), Carrier::tcp, kNow, d));
    CHECK_FALSE(intake.accept(test::encode(wrong), Carrier::udp, kNow, d));
    CHECK_FALSE(intake.accept(test::encode(none), Carrier::udp, kNow, d));
    const std::vector<std::uint8_t> garbage{'G', 'E', 'T', ' ', '/'};
    CHECK_FALSE(intake.accept(garbage, Carrier::udp, kNow, d));
    auto truncated = test::encode(good);
    truncated.resize(truncated.size() - 3);
    CHECK_FALSE(intake.accept(truncated, Carrier::udp, kNow, d));
    intake.count_drop(DropReason::rate_limit, test::encode(good), Carrier::udp);

    const auto& s = intake.stats();
    CHECK(s.dropped[static_cast<std::size_t>(DropReason::auth)] == 2);
    CHECK(s.dropped[static_cast<std::size_t>(DropReason::decode_error)] == 2);
    CHECK(s.dropped[static_cast<std::size_t>(DropReason::rate_limit)] == 1);
    CHECK(s.decode_errors[static_cast<std::size_t>(hep::DecodeError::not_hep)] == 1);
    CHECK(s.decode_errors[static_cast<std::size_t>(hep::DecodeError::length_mismatch)] == 1);
    CHECK(s.undecodable_packets[0] == 1);
    CHECK(s.accepted() == 1);
    std::uint64_t drops = 0;
    for (auto n : s.dropped) drops += n;
    CHECK(s.received() == 6);
    CHECK(s.received() == s.accepted() + drops);
}

TEST_CASE("intake inflates compressed payloads within the configured cap", "[ingest]") {
    const std::string sip(test::kOptions);
    std::vector<std::uint8_t> packed(compressBound(static_cast<uLong>(sip.size())));
    uLongf packed_len = static_cast<uLongf>(packed.size());
    REQUIRE(compress2(packed.data(), &packed_len, reinterpret_cast<const Bytef*>(sip.data()),
                      static_cast<uLong>(sip.size()), 6) == Z_OK);
    packed.resize(packed_len);
    auto m = test::sip_message("");
    m.payload = packed;
    m.compressed = true;

    shard::Datagram d;
    HepIntake roomy({});
    REQUIRE(roomy.accept(test::encode(m), Carrier::udp, kNow, d));
    CHECK(as_text(d.payload) == sip);

    IntakeOptions small;
    small.max_decompressed_bytes = 64;
    HepIntake tight(small);
    CHECK_FALSE(tight.accept(test::encode(m), Carrier::udp, kNow, d));
    CHECK(tight.stats().decode_errors[static_cast<std::size_t>(hep::DecodeError::decompressed_too_large)] == 1);
}

TEST_CASE("intake fixes wrong timestamps and counts the fix-up kind", "[ingest]") {
    HepIntake intake({});
    shard::Datagram d;
    auto ntp = test::sip_message(test::kOptions, 1'700'000'000U + 2'208'988'800U);
    REQUIRE(intake.accept(test::encode(ntp), Carrier::udp, kNow, d));
    CHECK(d.time == Timestamp::from_parts(1'700'000'000, 250'000));
    auto zero = test::sip_message(test::kOptions, 0);
    REQUIRE(intake.accept(test::encode(zero), Carrier::udp, kNow, d));
    CHECK(d.time == kNow);
    const auto& f = intake.stats().timestamp_fixups;
    CHECK(f[static_cast<std::size_t>(hep::TimestampFixup::ntp_epoch)] == 1);
    CHECK(f[static_cast<std::size_t>(hep::TimestampFixup::zero)] == 1);
}

TEST_CASE("configured payload types change the class", "[ingest]") {
    IntakeOptions options;
    REQUIRE(options.payload_types.set(200, "custom_log", PayloadClass::log));
    HepIntake intake(options);
    auto m = test::sip_message("a log line");
    m.payload_type = 200;
    shard::Datagram d;
    REQUIRE(intake.accept(test::encode(m), Carrier::udp, kNow, d));
    CHECK(d.kind == PayloadClass::log);
    CHECK(d.hep_payload_type == 200);
}

TEST_CASE("intake names the capture agent and counts packets by class and agent", "[ingest][agent]") {
    IntakeOptions options;
    options.agents = AgentMap({AgentRule::by_capture_id("kamailio", 2001), AgentRule::by_node_name("pbx", "pbx01"),
                               AgentRule::by_source("lan", *Cidr::parse("192.168.0.0/16"))});
    HepIntake intake(options);
    shard::Datagram d;

    auto kam = test::sip_message(test::kOptions);  // capture id 2001
    REQUIRE(intake.accept(test::encode(kam), Carrier::udp, kNow, d, *IpAddress::parse("192.168.1.1")));
    CHECK(d.agent == 1);

    auto pbx = test::sip_message(test::kOptions);
    pbx.capture_id = 7;
    pbx.node_name = as_bytes("pbx01");
    pbx.mark(hep::Field::node_name);
    REQUIRE(intake.accept(test::encode(pbx), Carrier::tcp, kNow, d, *IpAddress::parse("192.168.1.1")));
    CHECK(d.agent == 2);
    CHECK(d.capture_id == 7);

    auto lan = test::sip_message("a log line");
    lan.capture_id = 7;
    lan.payload_type = 100;  // log
    REQUIRE(intake.accept(test::encode(lan), Carrier::udp, kNow, d, *IpAddress::parse("192.168.200.1")));
    CHECK(d.agent == 3);
    CHECK(d.kind == PayloadClass::log);
    REQUIRE(intake.accept(test::encode(lan), Carrier::udp, kNow, d, *IpAddress::parse("172.16.0.1")));
    CHECK(d.agent == 0);
    REQUIRE(intake.accept(test::encode(lan), Carrier::udp, kNow, d));  // no sender given
    CHECK(d.agent == 0);

    const auto& s = intake.stats();
    const auto sip = static_cast<std::size_t>(PayloadClass::sip);
    const auto log = static_cast<std::size_t>(PayloadClass::log);
    CHECK(s.by_type[sip][1] == 1);
    CHECK(s.by_type[sip][2] == 1);
    CHECK(s.by_type[log][3] == 1);
    CHECK(s.by_type[log][0] == 2);
    CHECK(s.by_class(PayloadClass::sip) == 2);
    CHECK(s.by_class(PayloadClass::log) == 3);
    CHECK(s.packets[1][2] == 1);  // tcp, v3
    CHECK(s.packets[0][2] == 4);  // udp, v3
    CHECK(s.accepted() == 5);

    // Reconfigured agents apply to the next message.
    intake.set_agents(AgentMap({AgentRule::by_capture_id("edge", 7)}));
    REQUIRE(intake.accept(test::encode(lan), Carrier::udp, kNow, d));
    CHECK(d.agent == 1);
    CHECK(intake.agents().name(1) == "edge");
}

TEST_CASE("intake counts queue_full drops after the hand-over, keeping the invariant", "[ingest]") {
    HepIntake intake({});
    shard::Datagram d;
    const auto bytes = test::encode(test::sip_message(test::kOptions));
    for (int i = 0; i < 10; ++i) REQUIRE(intake.accept(bytes, Carrier::udp, kNow, d));
    intake.count_queue_full(4);
    intake.count_queue_full(0);
    const auto& s = intake.stats();
    CHECK(s.received() == 10);
    CHECK(s.by_class(PayloadClass::sip) == 10);  // all were classified and handed over
    CHECK(s.drops(DropReason::queue_full) == 4);
    CHECK(s.accepted() == 6);
    CHECK(s.dropped_total() == 4);
    CHECK(s.received() == s.accepted() + s.dropped_total());
}

TEST_CASE("intake auth key can change between packets", "[ingest]") {
    HepIntake intake({});
    shard::Datagram d;
    auto keyed = test::sip_message(test::kOptions);
    keyed.auth_key = as_bytes("new-key");
    keyed.mark(hep::Field::auth_key);
    const auto keyed_bytes = test::encode(keyed);
    const auto plain_bytes = test::encode(test::sip_message(test::kOptions));
    CHECK(intake.accept(plain_bytes, Carrier::udp, kNow, d));  // no key required yet
    intake.set_auth_key("new-key");
    CHECK_FALSE(intake.accept(plain_bytes, Carrier::udp, kNow, d));
    CHECK(intake.accept(keyed_bytes, Carrier::udp, kNow, d));
    intake.set_auth_key("new-kez");  // same length, last byte differs
    CHECK_FALSE(intake.accept(keyed_bytes, Carrier::udp, kNow, d));
    CHECK(intake.stats().drops(DropReason::auth) == 2);
}

TEST_CASE("intake stats merge adds every counter", "[ingest]") {
    HepIntake a({});
    HepIntake b({});
    shard::Datagram d;
    const auto bytes = test::encode(test::sip_message(test::kOptions));
    const std::vector<std::uint8_t> garbage{0x7f, 0, 0};
    REQUIRE(a.accept(bytes, Carrier::udp, kNow, d));
    REQUIRE(b.accept(bytes, Carrier::tcp, kNow, d));
    REQUIRE_FALSE(b.accept(garbage, Carrier::tcp, kNow, d));
    b.count_drop(DropReason::not_allowed, bytes, Carrier::udp);
    b.count_queue_full(1);

    IntakeStats total;
    total.merge(a.stats());
    total.merge(b.stats());
    CHECK(total.packets[0][2] == 2);
    CHECK(total.packets[1][2] == 1);
    CHECK(total.bytes[0][2] == 2 * bytes.size());
    CHECK(total.undecodable_packets[1] == 1);
    CHECK(total.decode_errors[static_cast<std::size_t>(hep::DecodeError::not_hep)] == 1);
    CHECK(total.drops(DropReason::not_allowed) == 1);
    CHECK(total.drops(DropReason::decode_error) == 1);
    CHECK(total.drops(DropReason::queue_full) == 1);
    CHECK(total.received() == 4);
    CHECK(total.accepted() == 1);
    CHECK(total.received() == total.accepted() + total.dropped_total());
    CHECK(value_of(total.packets[0][2]) == 2);
}
