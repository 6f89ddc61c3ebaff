#include "intake/hep_intake.hpp"

#include "ingest/hep_message.hpp"
#include "support/counts.hpp"

#include <catch2/catch.hpp>
#include <zlib.h>

#include <map>
#include <string>

using namespace hepd;
using namespace hepd::intake;

namespace {
const Timestamp kNow = Timestamp::from_parts(1'700'000'100, 0);

using test::Counts;
using test::moved;

// Every intake counter, by "family/index", for comparing before and after hostile input.
Counts counts(const IntakeStats& s) {
    Counts out;
    for (std::size_t c = 0; c < kCarrierCount; ++c) {
        const std::string carrier(to_string(static_cast<Carrier>(c)));
        for (std::size_t v = 0; v < kHepVersionCount; ++v) {
            out["packets/" + carrier + "/v" + std::to_string(v + 1)] = s.packets[c][v];
            out["bytes/" + carrier + "/v" + std::to_string(v + 1)] = s.bytes[c][v];
        }
        out["undecodable/" + carrier] = s.undecodable_packets[c];
    }
    for (std::size_t e = 0; e < hep::decode_error_count; ++e)
        out["decode_error/" + std::string(hep::to_string(static_cast<hep::DecodeError>(e)))] = s.decode_errors[e];
    for (std::size_t r = 0; r < kDropReasonCount; ++r)
        out["dropped/" + std::string(to_string(static_cast<DropReason>(r)))] = s.dropped[r];
    for (std::size_t f = 0; f < hep::timestamp_fixup_count; ++f)
        out["fixup/" + std::to_string(f)] = s.timestamp_fixups[f];
    std::uint64_t by_type = 0;
    for (const auto& by_agent : s.by_type)
        for (const auto& n : by_agent) by_type += n;
    out["by_type"] = by_type;
    return out;
}

// After hostile input: the next valid packet is still decoded whole.
void check_next_packet_decodes(HepIntake& intake) {
    shard::Datagram d;
    const auto packet = test::encode(test::sip_message(test::kOptions));  // d's payload points into it
    REQUIRE(intake.accept(packet, Carrier::udp, kNow, d));
    CHECK(as_text(d.payload) == test::kOptions);
    CHECK(d.src.to_string() == "10.0.0.1:5060");
    CHECK(d.capture_id == 2001);
}

// `good` with a chunk header (vendor, type, declared length) inserted first, total length fixed.
std::vector<std::uint8_t> with_first_chunk(std::vector<std::uint8_t> good, std::uint16_t vendor, std::uint16_t length) {
    const std::uint8_t head[6] = {static_cast<std::uint8_t>(vendor >> 8), static_cast<std::uint8_t>(vendor), 0, 0x63,
                                  static_cast<std::uint8_t>(length >> 8), static_cast<std::uint8_t>(length)};
    good.insert(good.begin() + 6, head, head + 6);
    good[4] = static_cast<std::uint8_t>(good.size() >> 8);
    good[5] = static_cast<std::uint8_t>(good.size());
    return good;
}
}  // namespace

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

TEST_CASE("intake inflates compressed payloads within the configured cap", "[ingest][catalogue]") {
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

TEST_CASE("catalogue: HEP cut at every length is refused as truncated or length_mismatch, counted",
          "[ingest][catalogue]") {
    HepIntake intake({});
    const auto good = test::encode(test::sip_message(test::kOptions));
    const Counts before = counts(intake.stats());
    shard::Datagram d;
    std::uint64_t bytes_v3 = 0;
    for (std::size_t cut = 0; cut < good.size(); ++cut) {
        INFO("cut " << cut);
        CHECK_FALSE(intake.accept(std::span(good.data(), cut), Carrier::udp, kNow, d));
        if (cut >= 4) bytes_v3 += cut;
    }
    // Below the 4-byte magic nothing says HEP3 yet: truncated, but not a v3 packet. Below the
    // 6-byte header: truncated. From there on the header's total length is larger than the datagram.
    CHECK(moved(before, counts(intake.stats())) == Counts{{"undecodable/udp", 4},
                                                          {"packets/udp/v3", good.size() - 4},
                                                          {"bytes/udp/v3", bytes_v3},
                                                          {"decode_error/truncated", 6},
                                                          {"decode_error/length_mismatch", good.size() - 6},
                                                          {"dropped/decode_error", good.size()}});

    // HEPv2 (as Kamailio sends it): a cut inside the fixed header is truncated; the payload has
    // no length of its own, so a cut there is undetectable by design.
    HepIntake v2_intake({});
    // version, length, family, protocol, ports, addresses (16 bytes), then time and capture id (12).
    std::vector<std::uint8_t> v2 = {2, 28, 2, 17, 0x13, 0xc4, 0x13, 0xc5, 10, 0, 0, 1, 10, 0, 0, 2};
    v2.resize(28, 0);
    v2.insert(v2.end(), test::kOptions.begin(), test::kOptions.end());
    const Counts v2_before = counts(v2_intake.stats());
    for (std::size_t cut = 1; cut < 28; ++cut)
        CHECK_FALSE(v2_intake.accept(std::span(v2.data(), cut), Carrier::udp, kNow, d));
    CHECK_FALSE(v2_intake.accept(std::span(v2.data(), 28), Carrier::udp, kNow, d));  // header, no payload
    const Counts v2_moved = moved(v2_before, counts(v2_intake.stats()));
    CHECK(v2_moved.at("decode_error/truncated") == 27);
    CHECK(v2_moved.at("decode_error/missing_payload") == 1);
    CHECK(v2_moved.at("dropped/decode_error") == 28);
    CHECK(v2_moved.count("by_type") == 0);
    REQUIRE(v2_intake.accept(v2, Carrier::udp, kNow, d));
    CHECK(as_text(d.payload) == test::kOptions);

    check_next_packet_decodes(intake);
}

TEST_CASE("catalogue: HEP longer or shorter than its declared length is refused as length_mismatch",
          "[ingest][catalogue]") {
    HepIntake intake({});
    const auto good = test::encode(test::sip_message(test::kOptions));
    const Counts before = counts(intake.stats());
    shard::Datagram d;
    std::uint64_t bytes = 0;
    std::uint64_t n = 0;
    // Oversized: the datagram holds more than the header declares (trailing bytes, or a second
    // message glued on), up to the 65,535 bytes the length field can say.
    for (const std::size_t extra : {std::size_t{1}, std::size_t{6}, good.size(), 65'535 - good.size()}) {
        auto longer = good;
        longer.resize(good.size() + extra, 0xab);
        CHECK_FALSE(intake.accept(longer, Carrier::udp, kNow, d));
        bytes += longer.size();
        ++n;
    }
    // Declared beyond the datagram: every length from one past it to 65,535.
    for (std::size_t declared = good.size() + 1; declared <= 65'535; declared += 97) {
        auto lying = good;
        lying[4] = static_cast<std::uint8_t>(declared >> 8);
        lying[5] = static_cast<std::uint8_t>(declared);
        CHECK_FALSE(intake.accept(lying, Carrier::tcp, kNow, d));
        ++n;
    }
    const std::uint64_t tcp = n - 4;
    CHECK(moved(before, counts(intake.stats())) == Counts{{"packets/udp/v3", 4},
                                                          {"bytes/udp/v3", bytes},
                                                          {"packets/tcp/v3", tcp},
                                                          {"bytes/tcp/v3", tcp * good.size()},
                                                          {"decode_error/length_mismatch", n},
                                                          {"dropped/decode_error", n}});
    check_next_packet_decodes(intake);
}

TEST_CASE("catalogue: HEP chunk lengths 0..5 and past the end are refused as bad_chunk_length, counted",
          "[ingest][catalogue]") {
    HepIntake intake({});
    const auto good = test::encode(test::sip_message(test::kOptions));
    const Counts before = counts(intake.stats());
    shard::Datagram d;
    std::uint64_t n = 0;
    std::uint64_t bytes = 0;
    const auto refuse = [&](const std::vector<std::uint8_t>& bytes_in) {
        CHECK_FALSE(intake.accept(bytes_in, Carrier::udp, kNow, d));
        bytes += bytes_in.size();
        ++n;
    };
    // Vendor chunks are skipped by their length, so it is checked for them too.
    for (const std::uint16_t vendor : {std::uint16_t{0}, std::uint16_t{0x0003}}) {
        for (std::uint16_t length = 0; length <= 5; ++length) {
            INFO("vendor " << vendor << " length " << length);
            refuse(with_first_chunk(good, vendor, length));
        }
        // Past the end: one byte more than is left, and the largest length there is.
        const auto left = static_cast<std::uint16_t>(good.size() + 6 - 6);
        refuse(with_first_chunk(good, vendor, static_cast<std::uint16_t>(left + 1)));
        refuse(with_first_chunk(good, vendor, 0xffff));
    }
    // The last chunk cut short: 1..5 bytes of a chunk header at the end.
    for (std::size_t tail = 1; tail <= 5; ++tail) {
        auto cut = good;
        cut.resize(good.size() + tail, 0);
        cut[4] = static_cast<std::uint8_t>(cut.size() >> 8);
        cut[5] = static_cast<std::uint8_t>(cut.size());
        refuse(cut);
    }
    CHECK(moved(before, counts(intake.stats())) == Counts{{"packets/udp/v3", n},
                                                          {"bytes/udp/v3", bytes},
                                                          {"decode_error/bad_chunk_length", n},
                                                          {"dropped/decode_error", n}});
    // A chunk of exactly 6 (no value) is legal.
    const auto empty_chunk = with_first_chunk(good, 0, 6);  // d's payload points into it
    REQUIRE(intake.accept(empty_chunk, Carrier::udp, kNow, d));
    CHECK(as_text(d.payload) == test::kOptions);
    check_next_packet_decodes(intake);
}

TEST_CASE("catalogue: every unknown HEP version or magic is refused as not_hep, counted as undecodable",
          "[ingest][catalogue]") {
    HepIntake intake({});
    const auto good = test::encode(test::sip_message(test::kOptions));
    const Counts before = counts(intake.stats());
    shard::Datagram d;
    std::uint64_t n = 0;
    // Every first byte but the versions 1 and 2 and the two v3 magics' first letters.
    for (unsigned first = 0; first <= 255; ++first) {
        if (first == 1 || first == 2 || first == 'H' || first == 'E') continue;
        auto other = good;
        other[0] = static_cast<std::uint8_t>(first);
        INFO("first byte " << first);
        CHECK_FALSE(intake.accept(other, Carrier::udp, kNow, d));
        ++n;
    }
    // HEP and EEP with any version digit but 3.
    for (const char* magic : {"HEP", "EEP"}) {
        for (char version = '0'; version <= '9'; ++version) {
            if (version == '3') continue;
            auto other = good;
            std::copy(magic, magic + 3, other.begin());
            other[3] = static_cast<std::uint8_t>(version);
            CHECK_FALSE(intake.accept(other, Carrier::tcp, kNow, d));
            ++n;
        }
    }
    CHECK(moved(before, counts(intake.stats())) == Counts{{"undecodable/udp", n - 18},
                                                          {"undecodable/tcp", 18},
                                                          {"decode_error/not_hep", n},
                                                          {"dropped/decode_error", n}});
    check_next_packet_decodes(intake);
}

TEST_CASE("catalogue: a 65,535-byte HEP message is decoded whole", "[ingest][catalogue]") {
    HepIntake intake({});
    const auto big = test::sized_message(65'535);
    REQUIRE(big.bytes.size() == 65'535);
    shard::Datagram d;
    REQUIRE(intake.accept(big.bytes, Carrier::tcp, kNow, d));
    CHECK(as_text(d.payload) == big.sip);
    CHECK(intake.stats().packets[1][2] == 1);
    CHECK(intake.stats().bytes[1][2] == 65'535);
    CHECK(intake.stats().accepted() == 1);
    CHECK(intake.stats().dropped_total() == 0);
    check_next_packet_decodes(intake);
}

TEST_CASE("catalogue: a decompression bomb is refused as decompressed_too_large, counted", "[ingest][catalogue]") {
    // 16 MiB of zeros packs into about 16 KiB: far beyond the 64 KiB default cap once inflated.
    const std::vector<std::uint8_t> zeros(16u << 20, 0);
    std::vector<std::uint8_t> packed(compressBound(static_cast<uLong>(zeros.size())));
    uLongf packed_len = static_cast<uLongf>(packed.size());
    REQUIRE(compress2(packed.data(), &packed_len, zeros.data(), static_cast<uLong>(zeros.size()), 9) == Z_OK);
    packed.resize(packed_len);
    REQUIRE(packed.size() < 60'000);
    auto m = test::sip_message("");
    m.payload = packed;
    m.compressed = true;
    const auto bomb = test::encode(m);

    HepIntake intake({});
    const Counts before = counts(intake.stats());
    shard::Datagram d;
    CHECK_FALSE(intake.accept(bomb, Carrier::udp, kNow, d));
    CHECK(moved(before, counts(intake.stats())) == Counts{{"packets/udp/v3", 1},
                                                          {"bytes/udp/v3", bomb.size()},
                                                          {"decode_error/decompressed_too_large", 1},
                                                          {"dropped/decode_error", 1}});
    check_next_packet_decodes(intake);
}
