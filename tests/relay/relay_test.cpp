// The relay against real sockets on 127.0.0.1: UDP and TCP receivers in the test compare what
// arrives with what was pushed, byte for byte; a destination that is down, comes back, or
// closes the connection; a full queue.
#include "relay/relay.hpp"

#include "hep/decoder.hpp"
#include "hep/encoder.hpp"
#include "hep/framer.hpp"
#include "support/captured_log.hpp"

#include <catch2/catch.hpp>
#include <spdlog/spdlog.h>

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace hepd;
using relay::DropReason;
using relay::Relay;
using relay::RelayOptions;
using relay::Transport;
using Bytes = std::vector<std::uint8_t>;

namespace {

constexpr auto kDeadline = std::chrono::seconds(10);  // generous: only a broken relay waits this long

std::uint64_t dropped(const Relay& r, DropReason reason) {
    return r.figures().dropped[static_cast<std::size_t>(reason)];
}

// Polls `done` until it holds or the deadline passes.
bool eventually(const std::function<bool()>& done) {
    const auto until = std::chrono::steady_clock::now() + kDeadline;
    while (std::chrono::steady_clock::now() < until) {
        if (done()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return done();
}

// A message that tells where it came from: producer, sequence number, then filler.
Bytes message(std::size_t producer, std::uint32_t seq, std::size_t size) {
    Bytes m(size);
    for (std::size_t i = 0; i < size; ++i) m[i] = static_cast<std::uint8_t>((seq * 131 + producer * 7 + i) & 0xff);
    if (size >= 5) {
        m[0] = static_cast<std::uint8_t>(producer);
        for (int b = 0; b < 4; ++b) m[1 + b] = static_cast<std::uint8_t>(seq >> (8 * b));
    }
    return m;
}

// The same as a HEPv3 frame (magic and total length in front), which a TCP relay sends as it is:
// TCP destinations get only what a HEP stream receiver can frame.
Bytes framed(std::size_t producer, std::uint32_t seq, std::size_t size) {
    Bytes m = message(producer, seq, size);
    REQUIRE(size >= 6);
    m[0] = 'H';
    m[1] = 'E';
    m[2] = 'P';
    m[3] = '3';
    m[4] = static_cast<std::uint8_t>(size >> 8);
    m[5] = static_cast<std::uint8_t>(size & 0xff);
    return m;
}

class Socket {
public:
    explicit Socket(int fd) : fd_(fd) { REQUIRE(fd_ >= 0); }
    ~Socket() { close(); }
    Socket(Socket&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
    Socket(const Socket&) = delete;
    Socket& operator=(const Socket&) = delete;
    int fd() const noexcept { return fd_; }
    void close() {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
    }

private:
    int fd_;
};

sockaddr_in loopback(std::uint16_t port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

Socket bound(int type, std::uint16_t port = 0) {
    Socket s(::socket(AF_INET, type | SOCK_CLOEXEC, 0));
    const int one = 1;
    ::setsockopt(s.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    auto a = loopback(port);
    REQUIRE(::bind(s.fd(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    if (type == SOCK_STREAM) REQUIRE(::listen(s.fd(), 16) == 0);
    return s;
}

std::uint16_t port_of(const Socket& s) {
    sockaddr_in a{};
    socklen_t len = sizeof a;
    REQUIRE(::getsockname(s.fd(), reinterpret_cast<sockaddr*>(&a), &len) == 0);
    return ntohs(a.sin_port);
}

// A port nobody listens on (bound, then released).
std::uint16_t unused_port(int type) { return port_of(bound(type)); }

bool readable(int fd, int timeout_ms) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, timeout_ms) > 0;
}

// Receives datagrams until `count` arrived or nothing comes for the deadline.
std::vector<Bytes> receive_datagrams(const Socket& s, std::size_t count) {
    std::vector<Bytes> got;
    Bytes buffer(70000);
    while (got.size() < count && readable(s.fd(), static_cast<int>(kDeadline.count() * 1000))) {
        const ssize_t n = ::recv(s.fd(), buffer.data(), buffer.size(), 0);
        if (n < 0) break;
        got.emplace_back(buffer.begin(), buffer.begin() + n);
    }
    return got;
}

Socket accept_one(const Socket& listener) {
    REQUIRE(readable(listener.fd(), static_cast<int>(kDeadline.count() * 1000)));
    return Socket(::accept(listener.fd(), nullptr, nullptr));
}

// Reads the stream until `size` bytes arrived (or the deadline, or the end).
Bytes receive_stream(const Socket& s, std::size_t size) {
    Bytes got;
    Bytes buffer(65536);
    while (got.size() < size && readable(s.fd(), static_cast<int>(kDeadline.count() * 1000))) {
        const ssize_t n = ::recv(s.fd(), buffer.data(), buffer.size(), 0);
        if (n <= 0) break;
        got.insert(got.end(), buffer.begin(), buffer.begin() + n);
    }
    return got;
}

// A SIP message as an agent sends it over HEP `version` (1, 2 or 3).
Bytes hep_message(std::uint8_t version, std::uint32_t seq, std::size_t payload_size = 0, bool v6 = false) {
    static const std::string sip = "OPTIONS sip:alice@example.net SIP/2.0\r\nCall-ID: relay-";
    std::string text = sip + std::to_string(seq) + "\r\nContent-Length: 0\r\n\r\n";
    if (payload_size > text.size()) text.resize(payload_size, 'x');
    hep::Message m;
    m.ip_family = v6 ? hep::family_ipv6 : hep::family_ipv4;
    m.ip_protocol = 17;
    if (v6) {
        std::array<std::uint8_t, 16> a{0x20, 0x01, 0x0d, 0xb8};
        a[15] = 1;
        m.src.address = IpAddress::v6(a);
        a[15] = 2;
        m.dst.address = IpAddress::v6(a);
    } else {
        m.src.address = IpAddress::v4(0x0a000001);
        m.dst.address = IpAddress::v4(0x0a000002);
    }
    m.src.port = 5060;
    m.dst.port = static_cast<std::uint16_t>(5000 + seq);
    m.payload_type = 1;
    m.payload = ByteSpan(reinterpret_cast<const std::uint8_t*>(text.data()), text.size());
    for (const auto f :
         {hep::Field::ip_family, hep::Field::ip_protocol, hep::Field::src_address, hep::Field::dst_address,
          hep::Field::src_port, hep::Field::dst_port, hep::Field::payload_type, hep::Field::payload})
        m.mark(f);
    if (version != 1) {
        m.seconds = 1700000000 + seq;
        m.micros = seq * 1000;
        m.capture_id = 2001;
        for (const auto f : {hep::Field::seconds, hep::Field::micros, hep::Field::capture_id}) m.mark(f);
    }
    Bytes out;
    REQUIRE((version == 3 ? hep::encode_v3(m, out) : hep::encode_legacy(m, version, out)));
    return out;
}

// Cuts a TCP relay's stream the way a HEP receiver does (hepd's own framer); stops at the first
// frame that does not cut.
std::vector<Bytes> frames_of(const Bytes& stream, bool& clean) {
    const hep::StreamFramer framer;
    std::vector<Bytes> frames;
    std::size_t at = 0;
    clean = true;
    while (at < stream.size()) {
        const auto st = framer.next(ByteSpan(stream.data() + at, stream.size() - at));
        if (!st.is_frame()) {
            clean = false;
            break;
        }
        frames.emplace_back(stream.begin() + static_cast<std::ptrdiff_t>(at),
                            stream.begin() + static_cast<std::ptrdiff_t>(at + st.size));
        at += st.size;
    }
    return frames;
}

RelayOptions options_for(Transport t, std::uint16_t port, std::size_t producers = 1) {
    RelayOptions o;
    o.name = "downstream";
    o.host = "127.0.0.1";
    o.port = port;
    o.transport = t;
    o.producers = producers;
    o.queue_bytes = 1u << 20;
    o.reconnect_initial = std::chrono::milliseconds(20);
    o.reconnect_max = std::chrono::milliseconds(200);
    return o;
}

}  // namespace

// Byte vectors print as a size and a checksum-free summary: Catch would spell out every byte.
namespace Catch {
template <>
struct StringMaker<Bytes> {
    static std::string convert(const Bytes& b) {
        std::string head;
        for (std::size_t i = 0; i < b.size() && i < 8; ++i) head += std::to_string(b[i]) + " ";
        return std::to_string(b.size()) + " bytes: " + head + (b.size() > 8 ? "..." : "");
    }
};
template <>
struct StringMaker<std::vector<Bytes>> {
    static std::string convert(const std::vector<Bytes>& v) { return std::to_string(v.size()) + " messages"; }
};
}  // namespace Catch

TEST_CASE("relay over UDP: each message one datagram, byte for byte, from every producer", "[relay][udp]") {
    const Socket receiver = bound(SOCK_DGRAM);
    Relay r(options_for(Transport::udp, port_of(receiver), 2));
    r.start();
    REQUIRE(eventually([&] { return r.figures().connected == 1; }));

    const std::vector<std::size_t> sizes{5, 6, 7, 100, 1500, 9000, 65000};
    std::vector<Bytes> sent;
    std::vector<Bytes> got;
    std::uint64_t bytes = 0;
    for (std::uint32_t seq = 0; seq < 40; ++seq) {
        for (std::size_t p = 0; p < 2; ++p) {
            sent.push_back(message(p, seq, sizes[seq % sizes.size()]));
            bytes += sent.back().size();
            REQUIRE(r.producer(p).push(sent.back()));
        }
        // Read as they come: the receive buffer must not overflow, this test is about bytes.
        for (auto& m : receive_datagrams(receiver, 2)) got.push_back(std::move(m));
    }
    REQUIRE(got.size() == sent.size());
    // Each producer's messages arrive in its order; the two producers interleave freely.
    for (std::size_t p = 0; p < 2; ++p) {
        std::vector<Bytes> want;
        std::vector<Bytes> from_p;
        for (const auto& m : sent)
            if (m[0] == p) want.push_back(m);
        for (const auto& m : got)
            if (m[0] == p) from_p.push_back(m);
        CHECK(from_p == want);
    }
    r.stop();
    const auto f = r.figures();
    CHECK(f.messages == sent.size());
    CHECK(f.bytes == bytes);
    for (std::size_t i = 0; i < relay::kDropReasonCount; ++i) CHECK(f.dropped[i] == 0);
    CHECK(f.connect_failures == 0);
    CHECK(f.reconnects == 0);
}

TEST_CASE("relay over TCP: the stream is the messages back to back, byte for byte", "[relay][tcp]") {
    const Socket listener = bound(SOCK_STREAM);
    Relay r(options_for(Transport::tcp, port_of(listener)));
    r.start();
    const Socket conn = accept_one(listener);
    REQUIRE(eventually([&] { return r.figures().connected == 1; }));

    Bytes want;
    std::uint32_t count = 0;
    std::uint64_t refused = 0;  // pushes that found the queue full (on a loaded machine), counted as drops
    for (std::uint32_t seq = 0; seq < 2000; ++seq) {
        const auto m = framed(0, seq, seq == 1000 ? 65535 : 6 + seq % 1400);
        // Pushes wait for room: a full queue is another test's subject.
        REQUIRE(eventually([&] {
            if (r.producer(0).push(m)) return true;
            ++refused;
            return false;
        }));
        want.insert(want.end(), m.begin(), m.end());
        ++count;
    }
    const Bytes got = receive_stream(conn, want.size());
    CHECK(got.size() == want.size());
    CHECK(got == want);
    REQUIRE(eventually([&] { return r.figures().messages == count; }));
    const auto f = r.figures();
    CHECK(f.bytes == want.size());
    CHECK(dropped(r, DropReason::queue_full) == refused);
    CHECK(dropped(r, DropReason::send_error) == 0);
    CHECK(dropped(r, DropReason::not_connected) == 0);
}

TEST_CASE("relay over TCP: HEPv1/v2 messages go as HEPv3, so that the stream still frames", "[relay][tcp][degraded]") {
    // v1/v2 carry no total length and stream receivers frame by the v3 one: sent as received, one
    // v2 message would end the downstream connection and lose what followed it.
    const Socket listener = bound(SOCK_STREAM);
    Relay r(options_for(Transport::tcp, port_of(listener)));
    r.start();
    const Socket conn = accept_one(listener);
    REQUIRE(eventually([&] { return r.figures().connected == 1; }));

    std::vector<Bytes> pushed;
    for (std::uint32_t seq = 0; seq < 60; ++seq) {
        const std::uint8_t version = seq % 3 == 0 ? 3 : seq % 3 == 1 ? 2 : 1;
        pushed.push_back(hep_message(version, seq, 0, seq % 4 == 1));
    }
    // Not re-encodable (v3 adds chunk headers: over 65,535 bytes) and not HEP at all: dropped.
    const Bytes too_long = hep_message(2, 1000, 65500);
    const Bytes junk(100, 0x00);
    std::vector<Bytes> want;  // the messages as decoded from what was pushed, as v3
    std::uint64_t want_bytes = 0;
    for (std::size_t i = 0; i < pushed.size(); ++i) {
        REQUIRE(eventually([&] { return r.producer(0).push(pushed[i]); }));
        if (i == 10) REQUIRE(r.producer(0).push(too_long));
        if (i == 20) REQUIRE(r.producer(0).push(junk));
        auto m = hep::decode(pushed[i]);
        REQUIRE(m);
        m->version = 3;
        Bytes v3;
        REQUIRE(hep::encode_v3(*m, v3));
        want_bytes += v3.size();
        want.push_back(std::move(v3));
    }
    const Bytes stream = receive_stream(conn, want_bytes);
    bool clean = false;
    const auto frames = frames_of(stream, clean);
    CHECK(clean);
    REQUIRE(frames.size() == want.size());
    for (std::size_t i = 0; i < frames.size(); ++i) {
        const auto got = hep::decode(frames[i]);
        REQUIRE(got);
        auto expected = hep::decode(pushed[i]);
        REQUIRE(expected);
        expected->version = 3;  // everything else as the agent sent it
        CHECK(*got == *expected);
        if (pushed[i][0] == 'H') CHECK(frames[i] == pushed[i]);  // v3 stays byte for byte
    }
    REQUIRE(eventually([&] { return r.figures().messages == pushed.size(); }));
    const auto f = r.figures();
    CHECK(f.bytes == want_bytes);
    CHECK(dropped(r, DropReason::unframable) == 2);
    CHECK(dropped(r, DropReason::send_error) == 0);
    CHECK(dropped(r, DropReason::not_connected) == 0);
    CHECK(f.connected == 1);
    CHECK(f.reconnects == 0);
}

TEST_CASE("relay over UDP: HEPv1/v2 messages go byte for byte as received", "[relay][udp]") {
    const Socket receiver = bound(SOCK_DGRAM);
    Relay r(options_for(Transport::udp, port_of(receiver)));
    r.start();
    REQUIRE(eventually([&] { return r.figures().connected == 1; }));
    const std::vector<Bytes> sent{hep_message(1, 1), hep_message(2, 2), hep_message(3, 3), hep_message(2, 4, 0, true)};
    for (const auto& m : sent) REQUIRE(r.producer(0).push(m));
    CHECK(receive_datagrams(receiver, sent.size()) == sent);
    r.stop();
    CHECK(r.figures().messages == sent.size());
}

TEST_CASE("relay: a full queue refuses and counts, never blocks; what fitted is sent", "[relay][queue_full]") {
    const Socket listener = bound(SOCK_STREAM);
    auto o = options_for(Transport::tcp, port_of(listener));
    o.queue_bytes = 128u << 10;
    Relay r(o);  // not started yet: nothing drains the queue
    std::vector<Bytes> accepted;
    Bytes want;
    std::uint64_t refused = 0;
    for (std::uint32_t seq = 0; seq < 200; ++seq) {
        auto m = framed(0, seq, 1000);
        if (r.producer(0).push(m)) {
            want.insert(want.end(), m.begin(), m.end());
            accepted.push_back(std::move(m));
        } else {
            ++refused;
        }
    }
    CHECK(accepted.size() == 130);  // 131,072 bytes hold 130 records of 1004 (1000 bytes + a 4-byte length)
    CHECK(refused == 70);
    CHECK(dropped(r, DropReason::queue_full) == refused);
    CHECK(r.figures().queued_bytes == 130 * 1004);

    r.start();  // connects, then sends what waited
    const Socket conn = accept_one(listener);
    CHECK(receive_stream(conn, want.size()) == want);
    REQUIRE(eventually([&] { return r.figures().messages == accepted.size(); }));
    CHECK(r.figures().queued_bytes == 0);
    CHECK(dropped(r, DropReason::queue_full) == refused);
    CHECK(dropped(r, DropReason::not_connected) == 0);
}

TEST_CASE("relay over TCP: destination down, then back: drops counted, then relayed", "[relay][tcp][degraded]") {
    const std::uint16_t port = unused_port(SOCK_STREAM);
    Relay r(options_for(Transport::tcp, port));
    r.start();
    REQUIRE(eventually([&] { return r.figures().connect_failures >= 2; }));  // back-off: it keeps trying
    CHECK(r.figures().connected == 0);

    // Down: pushing still succeeds at once (the receive threads never wait); the sender drops.
    for (std::uint32_t seq = 0; seq < 50; ++seq) CHECK(r.producer(0).push(framed(0, seq, 300)));
    REQUIRE(eventually([&] { return dropped(r, DropReason::not_connected) == 50; }));
    CHECK(r.figures().messages == 0);
    CHECK(dropped(r, DropReason::queue_full) == 0);

    // Back: the next attempt (at most reconnect_max later) connects.
    const Socket listener = bound(SOCK_STREAM, port);
    const Socket conn = accept_one(listener);
    REQUIRE(eventually([&] { return r.figures().connected == 1; }));
    Bytes want;
    for (std::uint32_t seq = 100; seq < 150; ++seq) {
        const auto m = framed(0, seq, 300);
        CHECK(r.producer(0).push(m));
        want.insert(want.end(), m.begin(), m.end());
    }
    CHECK(receive_stream(conn, want.size()) == want);
    REQUIRE(eventually([&] { return r.figures().messages == 50; }));
    CHECK(dropped(r, DropReason::not_connected) == 50);
    CHECK(r.figures().reconnects == 0);  // the first connection: nothing was lost before it
}

TEST_CASE("relay over TCP: the collector closes the connection; the relay reconnects", "[relay][tcp][degraded]") {
    const Socket listener = bound(SOCK_STREAM);
    Relay r(options_for(Transport::tcp, port_of(listener)));
    r.start();
    Socket first = accept_one(listener);
    REQUIRE(eventually([&] { return r.figures().connected == 1; }));
    const auto m1 = framed(0, 1, 500);
    REQUIRE(r.producer(0).push(m1));
    CHECK(receive_stream(first, m1.size()) == m1);

    first.close();  // a collector restarted while no traffic flowed
    // The relay looks at an idle connection every second: it hears the close and connects again
    // before the next message, which goes to the new connection.
    const Socket second = accept_one(listener);
    REQUIRE(eventually([&] { return r.figures().reconnects == 1; }));
    const auto m2 = framed(0, 2, 700);
    REQUIRE(r.producer(0).push(m2));
    CHECK(receive_stream(second, m2.size()) == m2);
    CHECK(eventually([&] { return r.figures().messages == 2; }));  // counted just after the send
    CHECK(r.figures().connected == 1);
    CHECK(dropped(r, DropReason::send_error) == 0);
}

TEST_CASE("relay over TCP: a collector that accepts and closes at once gets back-off, not a connection a message",
          "[relay][tcp][degraded]") {
    // A collector at its connection limit, a load balancer without a backend: every connection
    // is accepted, then closed at once.
    const Socket listener = bound(SOCK_STREAM);
    std::atomic<bool> done{false};
    std::atomic<int> connections{0};
    std::thread collector([&] {
        while (!done.load()) {
            if (!readable(listener.fd(), 20)) continue;
            const int fd = ::accept(listener.fd(), nullptr, nullptr);
            if (fd < 0) continue;
            ++connections;
            ::close(fd);
        }
    });
    std::uint64_t pushed = 0;
    std::chrono::steady_clock::duration took{};
    std::vector<std::string> log;
    {
        const hepd::test::CapturedLog captured(spdlog::level::info);
        Relay r(options_for(Transport::tcp, port_of(listener)));  // back-off 20 ms, doubling up to 200 ms
        const auto start = std::chrono::steady_clock::now();
        r.start();
        for (std::uint32_t seq = 0; seq < 400; ++seq) {
            if (r.producer(0).push(framed(0, seq, 300))) ++pushed;
            std::this_thread::sleep_for(std::chrono::milliseconds(2));  // a steady trickle of traffic
        }
        REQUIRE(eventually([&] { return r.figures().queued_bytes == 0; }));
        r.stop();
        took = std::chrono::steady_clock::now() - start;
        const auto f = r.figures();
        // Every message is relayed or counted; while the back-off runs they are not_connected.
        CHECK(f.messages + dropped(r, DropReason::not_connected) + dropped(r, DropReason::send_error) == pushed);
        CHECK(dropped(r, DropReason::not_connected) >= pushed / 2);
        CHECK(f.connect_failures + 1 >= static_cast<std::uint64_t>(connections.load()));
        log = captured.lines();
    }
    done = true;
    collector.join();
    // Attempts at 0, 20, 60, 140, 300 ms, then every 200 ms at most: a handful, not one a message.
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(took).count();
    INFO("connections " << connections.load() << " in " << ms << " ms, " << pushed << " messages");
    CHECK(connections.load() <= 6 + ms / 200);
    // One outage: said once, not twice a message.
    INFO(log.size() << " log lines, the first: " << (log.empty() ? "" : log.front()));
    CHECK(log.size() <= 3);
}

TEST_CASE("relay over UDP: nobody listening: every message is sent or counted", "[relay][udp][degraded]") {
    const std::uint16_t port = unused_port(SOCK_DGRAM);
    Relay r(options_for(Transport::udp, port));
    r.start();
    for (std::uint32_t seq = 0; seq < 100; ++seq) {
        CHECK(r.producer(0).push(message(0, seq, 200)));
        std::this_thread::sleep_for(std::chrono::milliseconds(1));  // let the ICMP errors come back
    }
    r.stop();
    const auto f = r.figures();
    CHECK(f.messages + f.dropped[static_cast<std::size_t>(DropReason::send_error)] == 100);
    CHECK(f.dropped[static_cast<std::size_t>(DropReason::send_error)] > 0);  // port unreachable, reported
}

namespace {

// A TCP collector that reads slowly (16 KiB every 10 ms, about 1.6 MB/s, through a small receive
// buffer) until the relay closes the connection or the test ends.
class SlowCollector {
public:
    SlowCollector() : listener_(bound(SOCK_STREAM)) {
        const int small = 16 << 10;
        ::setsockopt(listener_.fd(), SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
        thread_ = std::thread([this] {
            // No Catch assertions on this thread: Catch is not thread-safe.
            while (!done_.load() && !readable(listener_.fd(), 100)) {
            }
            const int conn = done_.load() ? -1 : ::accept(listener_.fd(), nullptr, nullptr);
            if (conn < 0) return;
            connected_ = true;
            Bytes buffer(16 << 10);
            while (!done_.load()) {
                if (!readable(conn, 100)) continue;
                if (::recv(conn, buffer.data(), buffer.size(), 0) <= 0) break;
                std::this_thread::sleep_for(std::chrono::milliseconds(10));  // the collector's pace
            }
            ::close(conn);
        });
    }
    ~SlowCollector() {
        done_ = true;
        thread_.join();
    }
    SlowCollector(const SlowCollector&) = delete;
    SlowCollector& operator=(const SlowCollector&) = delete;
    std::uint16_t port() const { return port_of(listener_); }
    bool connected() const { return connected_.load(); }

private:
    Socket listener_;
    std::atomic<bool> connected_{false};
    std::atomic<bool> done_{false};
    std::thread thread_;
};

// Queues 12 MB for the slow collector: some 7 s of its reading.
std::uint64_t fill_for_slow_collector(Relay& r) {
    std::uint64_t pushed = 0;
    for (std::uint32_t seq = 0; seq < 200; ++seq) pushed += r.producer(0).push(framed(0, seq, 60000)) ? 1 : 0;
    return pushed;
}

}  // namespace

TEST_CASE("relay: stop() against a slow TCP collector ends within the drain deadline, the rest counted",
          "[relay][tcp][degraded]") {
    // hepd stops its relays before its final snapshot, within systemd's TimeoutStopSec.
    SlowCollector collector;
    auto o = options_for(Transport::tcp, collector.port());
    o.queue_bytes = 16u << 20;
    Relay r(o);
    r.start();
    REQUIRE(eventually([&] { return collector.connected() && r.figures().connected == 1; }));
    const std::uint64_t pushed = fill_for_slow_collector(r);
    CHECK(pushed == 200);
    const auto start = std::chrono::steady_clock::now();
    r.stop();  // sends for at most relay::kStopDrain (2 s)
    const auto took = std::chrono::steady_clock::now() - start;
    CHECK(took < std::chrono::milliseconds(3500));
    const auto f = r.figures();
    CHECK(dropped(r, DropReason::shutdown) > 0);
    CHECK(f.messages + dropped(r, DropReason::shutdown) == pushed);
    CHECK(dropped(r, DropReason::send_error) == 0);
    CHECK(dropped(r, DropReason::not_connected) == 0);
    CHECK(f.queued_bytes == 0);
}

TEST_CASE("relay: stop_all gives all destinations one drain deadline together", "[relay][tcp][degraded]") {
    SlowCollector first;
    SlowCollector second;
    std::vector<std::unique_ptr<Relay>> relays;
    for (const auto* c : {&first, &second}) {
        auto o = options_for(Transport::tcp, c->port());
        o.queue_bytes = 16u << 20;
        relays.push_back(std::make_unique<Relay>(o));
        relays.back()->start();
    }
    REQUIRE(eventually([&] { return first.connected() && second.connected(); }));
    REQUIRE(eventually([&] { return relays[0]->figures().connected == 1 && relays[1]->figures().connected == 1; }));
    std::vector<std::uint64_t> pushed;
    for (auto& r : relays) pushed.push_back(fill_for_slow_collector(*r));
    const auto start = std::chrono::steady_clock::now();
    Relay::stop_all(relays, std::chrono::milliseconds(1000));
    const auto took = std::chrono::steady_clock::now() - start;
    CHECK(took < std::chrono::milliseconds(1800));  // one after the other would take 2 s
    for (std::size_t i = 0; i < relays.size(); ++i) {
        const auto f = relays[i]->figures();
        CHECK(dropped(*relays[i], DropReason::shutdown) > 0);
        CHECK(f.messages + dropped(*relays[i], DropReason::shutdown) == pushed[i]);
    }
}

TEST_CASE("relay over UDP: a refusal counts against the datagram it answers, the next datagram still goes",
          "[relay][udp][degraded]") {
    // A connected UDP socket reports an ICMP refusal as the error of its next send, which the
    // kernel then does not send.
    const std::uint16_t port = unused_port(SOCK_DGRAM);
    Relay r(options_for(Transport::udp, port));
    // Queued before the sender starts: all of them go in its first round, back to back.
    constexpr std::uint64_t kRefused = 20;
    for (std::uint32_t seq = 0; seq < kRefused; ++seq) REQUIRE(r.producer(0).push(message(0, seq, 200)));
    r.start();
    REQUIRE(eventually([&] { return r.figures().queued_bytes == 0; }));
    REQUIRE(eventually([&] { return r.figures().messages + dropped(r, DropReason::send_error) == kRefused; }));
    // Nobody listens: each datagram is refused (on loopback the refusal is back before the next
    // send), and counted as such, not every other one.
    CHECK(dropped(r, DropReason::send_error) == kRefused);
    CHECK(r.figures().messages == 0);

    // The collector comes up: from the next message on, everything arrives and counts as relayed.
    const Socket receiver = bound(SOCK_DGRAM, port);
    std::vector<Bytes> sent;
    for (std::uint32_t seq = 100; seq < 110; ++seq) {
        sent.push_back(message(0, seq, 200));
        REQUIRE(r.producer(0).push(sent.back()));
    }
    CHECK(receive_datagrams(receiver, sent.size()) == sent);
    r.stop();
    CHECK(r.figures().messages == sent.size());
    CHECK(dropped(r, DropReason::send_error) == kRefused);
}

TEST_CASE("relay: stop() sends what is queued before it returns", "[relay][udp]") {
    const Socket receiver = bound(SOCK_DGRAM);
    Relay r(options_for(Transport::udp, port_of(receiver)));
    r.start();
    REQUIRE(eventually([&] { return r.figures().connected == 1; }));
    for (std::uint32_t seq = 0; seq < 20; ++seq) REQUIRE(r.producer(0).push(message(0, seq, 100)));
    r.stop();
    CHECK(r.figures().messages == 20);
    CHECK(receive_datagrams(receiver, 20).size() == 20);
}

TEST_CASE("relay: a name that does not resolve is not_connected, retried", "[relay][degraded]") {
    auto o = options_for(Transport::udp, 9);
    o.host = "relay-test.invalid";  // RFC 6761: never resolves
    Relay r(o);
    r.start();
    REQUIRE(eventually([&] { return r.figures().connect_failures >= 1; }));
    REQUIRE(r.producer(0).push(message(0, 1, 50)));
    REQUIRE(eventually([&] { return dropped(r, DropReason::not_connected) == 1; }));
    CHECK(r.figures().connected == 0);
    CHECK(r.url() == "udp://relay-test.invalid:9");
}

TEST_CASE("relay: the smallest queue allowed takes the largest HEP message", "[relay]") {
    // hepd.yaml allows queue_bytes down to 128 KiB; a HEP message may be 65,535 bytes.
    RelayOptions o;
    o.host = "127.0.0.1";
    o.port = 9;
    o.queue_bytes = 128u << 10;
    Relay relay(o);
    const std::vector<std::uint8_t> largest(65535, 0x48);
    CHECK(relay.producer(0).push(ByteSpan(largest)));
    CHECK(relay.producer(0).push(ByteSpan(largest)));
}
