// The relay against real sockets on 127.0.0.1: UDP and TCP receivers in the test compare what
// arrives with what was pushed, byte for byte; a destination that is down, comes back, or
// closes the connection; a full queue.
#include "relay/relay.hpp"

#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <functional>
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
        const auto m = message(0, seq, seq == 1000 ? 65535 : 6 + seq % 1400);
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

TEST_CASE("relay: a full queue refuses and counts, never blocks; what fitted is sent", "[relay][queue_full]") {
    const Socket listener = bound(SOCK_STREAM);
    auto o = options_for(Transport::tcp, port_of(listener));
    o.queue_bytes = 128u << 10;
    Relay r(o);  // not started yet: nothing drains the queue
    std::vector<Bytes> accepted;
    Bytes want;
    std::uint64_t refused = 0;
    for (std::uint32_t seq = 0; seq < 200; ++seq) {
        auto m = message(0, seq, 1000);
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
    for (std::uint32_t seq = 0; seq < 50; ++seq) CHECK(r.producer(0).push(message(0, seq, 300)));
    REQUIRE(eventually([&] { return dropped(r, DropReason::not_connected) == 50; }));
    CHECK(r.figures().messages == 0);
    CHECK(dropped(r, DropReason::queue_full) == 0);

    // Back: the next attempt (at most reconnect_max later) connects.
    const Socket listener = bound(SOCK_STREAM, port);
    const Socket conn = accept_one(listener);
    REQUIRE(eventually([&] { return r.figures().connected == 1; }));
    Bytes want;
    for (std::uint32_t seq = 100; seq < 150; ++seq) {
        const auto m = message(0, seq, 300);
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
    const auto m1 = message(0, 1, 500);
    REQUIRE(r.producer(0).push(m1));
    CHECK(receive_stream(first, m1.size()) == m1);

    first.close();  // a collector restarted while no traffic flowed
    // The relay looks at an idle connection every second: it hears the close and connects again
    // before the next message, which goes to the new connection.
    const Socket second = accept_one(listener);
    REQUIRE(eventually([&] { return r.figures().reconnects == 1; }));
    const auto m2 = message(0, 2, 700);
    REQUIRE(r.producer(0).push(m2));
    CHECK(receive_stream(second, m2.size()) == m2);
    CHECK(eventually([&] { return r.figures().messages == 2; }));  // counted just after the send
    CHECK(r.figures().connected == 1);
    CHECK(dropped(r, DropReason::send_error) == 0);
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
