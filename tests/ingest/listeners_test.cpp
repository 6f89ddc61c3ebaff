// Real sockets on loopback, port 0: every exchange is bounded in count and time.
#include "ingest/listeners.hpp"

#include "hep_message.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <vector>

using namespace hepd;
using namespace hepd::ingest;
namespace asio = boost::asio;

namespace {

struct Received {
    std::vector<std::vector<std::uint8_t>> messages;
    std::vector<Carrier> carriers;
    MessageHandler handler() {
        return [this](ByteSpan b, const Endpoint&, Carrier c) {
            messages.emplace_back(b.begin(), b.end());
            carriers.push_back(c);
        };
    }
};

// Runs the io_context until `done` holds or two seconds pass.
template <class Pred>
void run_until(asio::io_context& io, Pred done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (!done() && std::chrono::steady_clock::now() < deadline) {
        io.restart();
        io.run_for(std::chrono::milliseconds(5));
    }
}

bool ipv6_loopback_available() {
    asio::io_context io;
    asio::ip::udp::socket s(io);
    boost::system::error_code ec;
    s.open(asio::ip::udp::v6(), ec);
    if (ec) return false;
    s.bind({asio::ip::address_v6::loopback(), 0}, ec);
    return !ec;
}

} // namespace

TEST_CASE("UDP listener receives one HEP message per datagram (IPv4 and IPv6)", "[ingest][net]") {
    std::vector<std::string> hosts{"127.0.0.1"};
    if (ipv6_loopback_available()) hosts.emplace_back("::1");
    for (const auto& host : hosts) {
        asio::io_context io;
        Received got;
        UdpListener listener(io, Endpoint{*IpAddress::parse(host), 0}, 1 << 20, got.handler());
        const auto at = listener.local_endpoint();
        REQUIRE(at.port != 0);

        asio::ip::udp::socket sender(io);
        const asio::ip::udp::endpoint to(to_asio(at.address), at.port);
        sender.open(to.protocol());
        const auto bytes = test::encode(test::sip_message(test::kOptions));
        for (int i = 0; i < 3; ++i) sender.send_to(asio::buffer(bytes), to);
        run_until(io, [&] { return got.messages.size() == 3; });
        INFO(host);
        REQUIRE(got.messages.size() == 3);
        CHECK(got.messages[2] == bytes);
        CHECK(got.carriers[0] == Carrier::udp);
    }
}

TEST_CASE("TCP listener frames split and concatenated HEP messages", "[ingest][net]") {
    asio::io_context io;
    Received got;
    TcpListener listener(io, Endpoint{IpAddress::v4(0x7f000001U), 0}, 16, 65535, std::chrono::seconds(0),
                         got.handler());
    const auto at = listener.local_endpoint();

    asio::ip::tcp::socket client(io);
    client.connect({to_asio(at.address), at.port});
    const auto one = test::encode(test::sip_message(test::kOptions));

    // Three frames in one write, then one frame dribbled a byte at a time.
    std::vector<std::uint8_t> three;
    for (int i = 0; i < 3; ++i) three.insert(three.end(), one.begin(), one.end());
    asio::write(client, asio::buffer(three));
    run_until(io, [&] { return got.messages.size() == 3; });
    for (std::size_t i = 0; i < one.size(); ++i) {
        asio::write(client, asio::buffer(&one[i], 1));
        io.restart();
        io.poll();
    }
    run_until(io, [&] { return got.messages.size() == 4; });
    REQUIRE(got.messages.size() == 4);
    for (const auto& m : got.messages) CHECK(m == one);
    CHECK(got.carriers[3] == Carrier::tcp);
    CHECK(listener.stats().open_connections == 1);
}

TEST_CASE("a broken TCP stream closes that connection only, and is counted", "[ingest][net]") {
    asio::io_context io;
    Received got;
    TcpListener listener(io, Endpoint{IpAddress::v4(0x7f000001U), 0}, 16, 65535, std::chrono::seconds(0),
                         got.handler());
    const auto at = listener.local_endpoint();
    const asio::ip::tcp::endpoint to(to_asio(at.address), at.port);
    const auto one = test::encode(test::sip_message(test::kOptions));

    asio::ip::tcp::socket good(io);
    asio::ip::tcp::socket bad(io);
    good.connect(to);
    bad.connect(to);
    run_until(io, [&] { return listener.stats().open_connections == 2; });
    const std::string http = "GET / HTTP/1.1\r\n\r\n";
    asio::write(bad, asio::buffer(http));
    run_until(io, [&] { return listener.stats().open_connections == 1; });
    CHECK(listener.stats().closed[static_cast<std::size_t>(TcpCloseReason::bad_frame)] == 1);
    CHECK(listener.stats().frame_errors[static_cast<std::size_t>(hep::FramerError::not_hep)] == 1);

    asio::write(good, asio::buffer(one));
    run_until(io, [&] { return got.messages.size() == 1; });
    CHECK(got.messages.size() == 1);
    CHECK(listener.stats().open_connections == 1);
}

TEST_CASE("TCP listener refuses connections over the maximum and closes idle ones", "[ingest][net]") {
    asio::io_context io;
    Received got;
    TcpListener listener(io, Endpoint{IpAddress::v4(0x7f000001U), 0}, 1, 65535, std::chrono::seconds(1),
                         got.handler());
    const auto at = listener.local_endpoint();
    const asio::ip::tcp::endpoint to(to_asio(at.address), at.port);
    asio::ip::tcp::socket first(io);
    asio::ip::tcp::socket second(io);
    first.connect(to);
    run_until(io, [&] { return listener.stats().open_connections == 1; });
    second.connect(to);
    run_until(io, [&] { return listener.stats().closed[static_cast<std::size_t>(TcpCloseReason::too_many)] == 1; });
    CHECK(listener.stats().closed[static_cast<std::size_t>(TcpCloseReason::too_many)] == 1);
    CHECK(listener.stats().open_connections == 1);
    // The idle timeout (1 s) closes the first connection.
    run_until(io, [&] { return listener.stats().open_connections == 0; });
    CHECK(listener.stats().closed[static_cast<std::size_t>(TcpCloseReason::idle_timeout)] == 1);
}
