#include "ingest/hep_intake.hpp"

#include "hep_message.hpp"

#include <catch2/catch.hpp>
#include <zlib.h>

using namespace hepd;
using namespace hepd::ingest;

namespace {
const Timestamp kNow = Timestamp::from_parts(1'700'000'100, 0);
}

TEST_CASE("intake turns a HEPv3 SIP message into a datagram", "[ingest]") {
    HepIntake intake({});
    const auto bytes = test::encode(test::sip_message(test::kOptions));
    shard::Datagram d;
    REQUIRE(intake.accept(bytes, Carrier::udp, kNow, d));
    CHECK(d.kind == shard::PayloadKind::sip);
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
    REQUIRE(options.payload_types.set(200, "custom_log", hep::PayloadClass::log));
    HepIntake intake(options);
    auto m = test::sip_message("a log line");
    m.payload_type = 200;
    shard::Datagram d;
    REQUIRE(intake.accept(test::encode(m), Carrier::udp, kNow, d));
    CHECK(d.kind == shard::PayloadKind::log);
    CHECK(d.hep_payload_type == 200);
}
