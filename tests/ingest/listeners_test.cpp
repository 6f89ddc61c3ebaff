// HEP over TCP on real loopback sockets, port 0: every exchange is bounded in count and time.
// The io_context runs on the test thread, which is also the IngestPath's thread.
#include "ingest/listeners.hpp"

#include "hep_message.hpp"
#include "ingest_support.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

using namespace hepd;
using namespace hepd::ingest;
using hepd::test::CollectingSink;
using hepd::test::ip;
using hepd::test::run_until;
namespace asio = boost::asio;

namespace {

const Timestamp kWall = Timestamp::from_parts(1'700'000'100, 0);

struct TcpRig {
    explicit TcpRig(IngestPolicy policy = {}, std::size_t max_connections = 16,
                    std::chrono::milliseconds idle = std::chrono::milliseconds(0), std::size_t max_frame = 65535,
                    IngestPathOptions path_options = {})
        : steady(Timestamp{0}),
          wall(kWall),
          control(std::move(policy), steady),
          path(control, sink, wall, std::move(path_options)) {
        TcpOptions o;
        o.listen = Endpoint{ip("127.0.0.1"), 0};
        o.max_connections = max_connections;
        o.idle_timeout = idle;
        o.max_frame_bytes = max_frame;
        listener = std::make_unique<TcpListener>(io, o, path);
        const auto at = listener->local_endpoint();
        to = asio::ip::tcp::endpoint(to_asio(at.address), at.port);
    }

    asio::ip::tcp::socket connect() {
        asio::ip::tcp::socket s(io);
        s.connect(to);
        s.set_option(asio::ip::tcp::no_delay(true));
        return s;
    }
    std::uint64_t open() const { return static_cast<std::uint64_t>(listener->stats().open_connections.value()); }
    std::uint64_t closed(TcpCloseReason r) const { return listener->stats().closed[static_cast<std::size_t>(r)]; }

    asio::io_context io;
    ManualClock steady;
    ManualClock wall;
    IngestControl control;
    CollectingSink sink;
    IngestPath path;
    std::unique_ptr<TcpListener> listener;
    asio::ip::tcp::endpoint to;
};

std::vector<std::uint8_t> concat(const std::vector<std::vector<std::uint8_t>>& parts) {
    std::vector<std::uint8_t> out;
    for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
    return out;
}

// An OpenSIPS proto_hep style HEPv3 message written chunk by chunk: generic chunks, OpenSIPS'
// extra-correlation chunk 0x65, a vendor chunk that must be skipped, payload last.
class ChunkWriter {
public:
    ChunkWriter() { out_ = {'H', 'E', 'P', '3', 0, 0}; }
    ChunkWriter& chunk(std::uint16_t vendor, std::uint16_t type, std::vector<std::uint8_t> value) {
        const auto len = static_cast<std::uint16_t>(6 + value.size());
        const std::uint8_t head[6] = {static_cast<std::uint8_t>(vendor >> 8), static_cast<std::uint8_t>(vendor),
                                      static_cast<std::uint8_t>(type >> 8),   static_cast<std::uint8_t>(type),
                                      static_cast<std::uint8_t>(len >> 8),    static_cast<std::uint8_t>(len)};
        out_.insert(out_.end(), head, head + 6);
        out_.insert(out_.end(), value.begin(), value.end());
        return *this;
    }
    ChunkWriter& text(std::uint16_t type, std::string_view s) { return chunk(0, type, {s.begin(), s.end()}); }
    std::vector<std::uint8_t> done() {
        out_[4] = static_cast<std::uint8_t>(out_.size() >> 8);
        out_[5] = static_cast<std::uint8_t>(out_.size());
        return out_;
    }

private:
    std::vector<std::uint8_t> out_;
};

std::vector<std::uint8_t> opensips_message(std::string_view call_id, std::string_view sip) {
    return ChunkWriter()
        .chunk(0, 0x01, {2})                       // IPv4
        .chunk(0, 0x02, {6})                       // the SIP itself went over TCP
        .chunk(0, 0x03, {192, 0, 2, 10})           // src 192.0.2.10
        .chunk(0, 0x04, {192, 0, 2, 20})           // dst 192.0.2.20
        .chunk(0, 0x07, {0x13, 0xc4})              // src port 5060
        .chunk(0, 0x08, {0x13, 0xc5})              // dst port 5061
        .chunk(0, 0x09, {0x65, 0x53, 0xf1, 0x00})  // 1700000000
        .chunk(0, 0x0a, {0x00, 0x00, 0x03, 0xe8})  // 1000 µs
        .chunk(0, 0x0b, {1})                       // SIP
        .chunk(0, 0x0c, {0x00, 0x00, 0x00, 0x2a})  // capture id 42
        .text(0x11, call_id)
        .text(0x65, R"({"cid":"x"})")
        .chunk(0x0003, 0x0001, {0xde, 0xad})  // an OpenSIPS vendor chunk
        .text(0x0f, sip)
        .done();
}

constexpr std::string_view kInvite =
    "INVITE sip:b@192.0.2.20 SIP/2.0\r\nVia: SIP/2.0/TCP 192.0.2.10:5060;branch=z9hG4bK7\r\n"
    "Call-ID: abc@192.0.2.10\r\nCSeq: 1 INVITE\r\nFrom: <sip:a@x>;tag=9\r\nTo: <sip:b@y>\r\n"
    "Content-Length: 0\r\n\r\n";

}  // namespace

TEST_CASE("TCP: a frame split at every byte position is framed once", "[ingest][net][tcp]") {
    TcpRig rig;
    auto client = rig.connect();
    const auto one = test::encode(test::sip_message(test::kOptions));
    std::size_t expected = 0;
    for (std::size_t cut = 1; cut < one.size(); ++cut) {
        asio::write(client, asio::buffer(one.data(), cut));
        // Let the listener read the first part on its own before the rest arrives.
        rig.io.restart();
        rig.io.run_for(std::chrono::milliseconds(1));
        asio::write(client, asio::buffer(one.data() + cut, one.size() - cut));
        ++expected;
        INFO("cut at " << cut);
        REQUIRE(run_until(rig.io, [&] { return rig.sink.got.size() == expected; }));
    }
    CHECK(rig.sink.got.size() == one.size() - 1);
    for (const auto& d : rig.sink.got) CHECK(d.payload == test::kOptions);
    CHECK(rig.path.stats().packets[1][2] == one.size() - 1);  // tcp, v3
    CHECK(rig.open() == 1);
    CHECK(rig.path.stats().received() == rig.path.stats().accepted());
}

TEST_CASE("TCP: several frames per read, and a partial frame completed by the next read", "[ingest][net][tcp]") {
    TcpRig rig;
    auto client = rig.connect();
    std::vector<std::vector<std::uint8_t>> frames;
    for (std::uint32_t i = 0; i < 10; ++i) {
        auto m = test::sip_message(test::kOptions);
        m.capture_id = i;
        frames.push_back(test::encode(m));
    }
    auto all = concat(frames);
    asio::write(client, asio::buffer(all));
    REQUIRE(run_until(rig.io, [&] { return rig.sink.got.size() == 10; }));
    for (std::uint32_t i = 0; i < 10; ++i) CHECK(rig.sink.got[i].capture_id == i);
    // Reads batch the frames: far fewer flushes than frames.
    CHECK(rig.sink.flushes < 10);

    // Two and a half frames, then the rest.
    const std::size_t cut = frames[0].size() * 2 + frames[0].size() / 2;
    asio::write(client, asio::buffer(all.data(), cut));
    REQUIRE(run_until(rig.io, [&] { return rig.sink.got.size() == 12; }));
    asio::write(client, asio::buffer(all.data() + cut, all.size() - cut));
    REQUIRE(run_until(rig.io, [&] { return rig.sink.got.size() == 20; }));
    for (std::uint32_t i = 0; i < 10; ++i) CHECK(rig.sink.got[10 + i].capture_id == i);
    CHECK(rig.open() == 1);
}

TEST_CASE("TCP: OpenSIPS-style HEPv3 (vendor and extra-correlation chunks), several per segment",
          "[ingest][net][tcp]") {
    IngestPolicy policy;
    policy.agents = intake::AgentMap({intake::AgentRule::by_capture_id("opensips", 42)});
    TcpRig rig(std::move(policy));
    auto client = rig.connect();
    const auto a = opensips_message("abc@192.0.2.10", kInvite);
    const auto b = opensips_message("def@192.0.2.10", kInvite);
    // Header (6) + ten fixed chunks (7+7+10+10+8+8+10+10+7+10) + correlation id (6+14) +
    // extra correlation (6+11) + vendor chunk (6+2) + payload (6+len).
    CHECK(a.size() == 6 + 87 + 20 + 17 + 8 + 6 + kInvite.size());
    const auto both = concat({a, b, a});
    asio::write(client, asio::buffer(both));
    REQUIRE(run_until(rig.io, [&] { return rig.sink.got.size() == 3; }));
    const auto& d = rig.sink.got[1];
    CHECK(d.src == (Endpoint{ip("192.0.2.10"), 5060}));
    CHECK(d.dst == (Endpoint{ip("192.0.2.20"), 5061}));
    CHECK(d.time == Timestamp::from_parts(1'700'000'000, 1000));
    CHECK(d.kind == PayloadClass::sip);
    CHECK(d.capture_id == 42);
    CHECK(d.agent == 1);
    CHECK(d.correlation_id == "def@192.0.2.10");
    CHECK(d.payload == kInvite);
    CHECK(rig.sink.got[0].correlation_id == "abc@192.0.2.10");
    CHECK(rig.sink.got[2].correlation_id == "abc@192.0.2.10");
    CHECK(rig.path.stats().decode_errors[static_cast<std::size_t>(hep::DecodeError::bad_chunk_length)] == 0);
}

TEST_CASE("TCP: a broken stream closes that connection only, and is counted", "[ingest][net][tcp]") {
    TcpRig rig;
    const auto one = test::encode(test::sip_message(test::kOptions));
    auto good = rig.connect();
    auto bad = rig.connect();
    REQUIRE(run_until(rig.io, [&] { return rig.open() == 2; }));

    SECTION("not HEP at all") {
        const std::string http = "GET / HTTP/1.1\r\n\r\n";
        asio::write(bad, asio::buffer(http));
        REQUIRE(run_until(rig.io, [&] { return rig.open() == 1; }));
        CHECK(rig.listener->stats().frame_errors[static_cast<std::size_t>(hep::FramerError::not_hep)] == 1);
    }
    SECTION("a whole frame, then a length below the header size") {
        auto stream = one;
        const std::uint8_t broken[6] = {'H', 'E', 'P', '3', 0, 5};
        stream.insert(stream.end(), broken, broken + 6);
        asio::write(bad, asio::buffer(stream));
        REQUIRE(run_until(rig.io, [&] { return rig.open() == 1; }));
        CHECK(rig.listener->stats().frame_errors[static_cast<std::size_t>(hep::FramerError::length_too_small)] == 1);
        CHECK(rig.sink.got.size() == 1);  // the frame before the damage was kept
    }
    CHECK(rig.closed(TcpCloseReason::bad_frame) == 1);

    // The other connection is untouched and the closed one reads EOF.
    const auto before = rig.sink.got.size();
    asio::write(good, asio::buffer(one));
    REQUIRE(run_until(rig.io, [&] { return rig.sink.got.size() == before + 1; }));
    CHECK(rig.open() == 1);
    std::uint8_t byte;
    boost::system::error_code ec;
    bad.read_some(asio::buffer(&byte, 1), ec);
    CHECK(ec);
}

TEST_CASE("TCP: a frame over the configured maximum closes the stream", "[ingest][net][tcp]") {
    TcpRig rig({}, 16, std::chrono::milliseconds(0), 100);
    auto client = rig.connect();
    const auto big = test::encode(test::sip_message(test::kOptions));  // > 100 bytes
    REQUIRE(big.size() > 100);
    asio::write(client, asio::buffer(big));
    REQUIRE(run_until(rig.io, [&] { return rig.closed(TcpCloseReason::bad_frame) == 1; }));
    CHECK(rig.listener->stats().frame_errors[static_cast<std::size_t>(hep::FramerError::length_too_large)] == 1);
    CHECK(rig.sink.got.empty());
}

TEST_CASE("TCP: connections over the maximum are refused", "[ingest][net][tcp]") {
    // No idle timeout here: with one, a slow box could close the first connection before the
    // second arrives, and the second would be accepted (see the next test for the timeout).
    TcpRig rig({}, 1, std::chrono::milliseconds(0));
    auto first = rig.connect();
    REQUIRE(run_until(rig.io, [&] { return rig.open() == 1; }));
    auto second = rig.connect();
    REQUIRE(run_until(rig.io, [&] { return rig.closed(TcpCloseReason::too_many) == 1; }));
    CHECK(rig.open() == 1);
    CHECK(rig.listener->stats().accepted_connections == 1);
    // The refused one reads EOF (or a reset).
    std::uint8_t byte;
    boost::system::error_code ec;
    second.read_some(asio::buffer(&byte, 1), ec);
    CHECK(ec);
    // Room again once the first leaves: a new connection is accepted.
    first.close();
    REQUIRE(run_until(rig.io, [&] { return rig.open() == 0; }));
    CHECK(rig.closed(TcpCloseReason::peer_closed) == 1);
    auto third = rig.connect();
    REQUIRE(run_until(rig.io, [&] { return rig.open() == 1; }));
    CHECK(rig.listener->stats().accepted_connections == 2);
}

TEST_CASE("TCP: idle connections are closed after the idle timeout", "[ingest][net][tcp]") {
    constexpr auto kIdle = std::chrono::milliseconds(300);
    TcpRig rig({}, 1, kIdle);
    const auto began = std::chrono::steady_clock::now();
    auto first = rig.connect();
    REQUIRE(run_until(rig.io, [&] { return rig.open() == 1; }));
    // The idle timeout closes it, not before kIdle (a slow box may take longer); nothing else
    // closed it.
    REQUIRE(run_until(
        rig.io, [&] { return rig.open() == 0; }, kIdle + std::chrono::seconds(10)));
    CHECK(std::chrono::steady_clock::now() - began >= kIdle);
    CHECK(rig.closed(TcpCloseReason::idle_timeout) == 1);
    CHECK(rig.closed(TcpCloseReason::peer_closed) == 0);
    // Its slot is free again (the cap is 1): a new connection is accepted.
    auto second = rig.connect();
    REQUIRE(run_until(rig.io, [&] { return rig.open() == 1; }));
    CHECK(rig.listener->stats().accepted_connections == 2);
}

TEST_CASE("TCP: admission applies per connection and per frame", "[ingest][net][tcp]") {
    const auto one = test::encode(test::sip_message(test::kOptions));
    SECTION("a peer outside the allow list is refused at accept") {
        IngestPolicy policy;
        policy.allow = AllowList({*Cidr::parse("10.0.0.0/8")});
        TcpRig rig(std::move(policy));
        auto client = rig.connect();
        REQUIRE(run_until(rig.io, [&] { return rig.closed(TcpCloseReason::not_allowed) == 1; }));
        CHECK(rig.open() == 0);
        std::uint8_t byte;
        boost::system::error_code ec;
        client.read_some(asio::buffer(&byte, 1), ec);
        CHECK(ec);
        CHECK(rig.path.stats().received() == 0);
    }
    SECTION("per-sender limit over one read of 20 frames (frozen clock)") {
        IngestPolicy policy;
        policy.limits = RateLimits{0, 0, 1, 5};
        TcpRig rig(std::move(policy));
        auto client = rig.connect();
        std::vector<std::vector<std::uint8_t>> frames(20, one);
        asio::write(client, asio::buffer(concat(frames)));
        REQUIRE(run_until(rig.io, [&] { return rig.path.stats().received() == 20; }));
        CHECK(rig.path.stats().accepted() == 5);
        CHECK(rig.path.stats().drops(intake::DropReason::rate_limit) == 15);
        CHECK(rig.open() == 1);  // refusing frames does not close the stream
    }
}

TEST_CASE("TCP: closing the listener closes every connection", "[ingest][net][tcp]") {
    TcpRig rig;
    auto a = rig.connect();
    auto b = rig.connect();
    REQUIRE(run_until(rig.io, [&] { return rig.open() == 2; }));
    rig.listener->close();
    CHECK(rig.open() == 0);
    CHECK(rig.closed(TcpCloseReason::shutdown) == 2);
    rig.listener.reset();
    // Handlers still queued for the closed sessions run without touching the listener.
    rig.io.restart();
    rig.io.run_for(std::chrono::milliseconds(20));
    CHECK(rig.sink.got.empty());
}

TEST_CASE("TCP: partial batches wait for the flush timer, then go in one hand-over", "[ingest][net][tcp]") {
    // "No hand-over yet" after three round trips means something only if they took less than the
    // age bound. A loaded box (sanitizers, qemu) may stall longer: such an attempt proves nothing
    // and is tried again on a fresh rig with a longer age. A hand-over per read fails every one.
    const std::chrono::milliseconds ages[] = {std::chrono::milliseconds(300), std::chrono::milliseconds(1000),
                                              std::chrono::milliseconds(3000)};
    for (const auto age : ages) {
        IngestPathOptions po;
        po.max_batch_age = age;
        TcpRig rig({}, 16, std::chrono::milliseconds(0), 65535, po);
        const auto began = std::chrono::steady_clock::now();
        auto client = rig.connect();
        const auto one = test::encode(test::sip_message(test::kOptions));
        for (int i = 0; i < 3; ++i) {
            asio::write(client, asio::buffer(one));
            REQUIRE(run_until(rig.io, [&] { return rig.sink.got.size() == static_cast<std::size_t>(i + 1); }));
        }
        const auto flushes = rig.sink.flushes;
        const auto took = std::chrono::steady_clock::now() - began;
        if (took >= age) {
            UNSCOPED_INFO("three round trips took "
                          << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms, age bound "
                          << age.count() << " ms");
            continue;
        }
        CHECK(flushes == 0);  // three reads, no hand-over yet
        // Nothing more is sent: the timer hands the partial batch over by itself.
        REQUIRE(run_until(
            rig.io, [&] { return rig.sink.flushes > 0; }, age + std::chrono::seconds(5)));
        CHECK(rig.sink.flushes == 1);
        CHECK_FALSE(rig.path.holds_partial());
        rig.io.restart();
        rig.io.run_for(std::chrono::milliseconds(50));
        CHECK(rig.sink.flushes == 1);

        asio::write(client, asio::buffer(one));
        REQUIRE(run_until(rig.io, [&] { return rig.sink.got.size() == 4; }));
        rig.listener->close();  // shutdown hands over at once
        CHECK(rig.sink.flushes == 2);
        return;
    }
    FAIL("every attempt's round trips took longer than its age bound");
}

TEST_CASE("catalogue: a 65,535-byte HEP frame over TCP is framed, decoded and counted",
          "[ingest][net][tcp][catalogue]") {
    TcpRig rig;  // max_frame 65535, the HEPv3 length field's limit
    const auto big = test::sized_message(65'535);
    REQUIRE(big.bytes.size() == 65'535);
    const auto small = test::encode(test::sip_message(test::kOptions));
    auto client = rig.connect();
    asio::write(client, asio::buffer(concat({big.bytes, small})));
    REQUIRE(run_until(rig.io, [&] { return rig.sink.got.size() == 2; }));
    CHECK(rig.sink.got[0].payload == big.sip);
    CHECK(rig.sink.got[1].payload == test::kOptions);
    CHECK(rig.path.stats().packets[1][2] == 2);  // tcp, v3
    CHECK(rig.path.stats().bytes[1][2] == big.bytes.size() + small.size());
    CHECK(rig.path.stats().accepted() == 2);
    CHECK(rig.path.stats().dropped_total() == 0);
    for (const auto& n : rig.listener->stats().frame_errors) CHECK(n == 0);
    CHECK(rig.open() == 1);
}
