#pragma once
// Asio HEP listeners: UDP (one message per datagram) and TCP (a byte stream cut by the HEP
// framer). Both hand each message to a callback on the io_context's thread.
#include "core/address.hpp"
#include "core/bytes.hpp"
#include "hep/framer.hpp"
#include "ingest/hep_intake.hpp"

#include <boost/asio.hpp>

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

namespace hepd::ingest {

// Called once per HEP message with the bytes, the sender and the carrier.
using MessageHandler = std::function<void(ByteSpan bytes, const Endpoint& from, Carrier carrier)>;

enum class TcpCloseReason : std::uint8_t { peer_closed, bad_frame, idle_timeout, too_many, error, shutdown };
inline constexpr std::size_t kTcpCloseReasonCount = 6;
std::string_view to_string(TcpCloseReason r) noexcept;

struct TcpStats {
    std::uint64_t open_connections = 0;
    std::array<std::uint64_t, kTcpCloseReasonCount> closed{};
    std::array<std::uint64_t, hep::framer_error_count> frame_errors{};
};

class UdpListener {
public:
    // Throws boost::system::system_error when the address cannot be bound (start-up).
    UdpListener(boost::asio::io_context& io, const Endpoint& at, std::size_t receive_buffer_bytes,
                MessageHandler handler);
    Endpoint local_endpoint() const;
    void close();

private:
    void receive();

    boost::asio::ip::udp::socket socket_;
    boost::asio::ip::udp::endpoint sender_;
    std::vector<std::uint8_t> buffer_;
    MessageHandler handler_;
};

class TcpListener {
public:
    TcpListener(boost::asio::io_context& io, const Endpoint& at, std::size_t max_connections,
                std::size_t max_frame_bytes, std::chrono::seconds idle_timeout, MessageHandler handler);
    ~TcpListener();
    Endpoint local_endpoint() const;
    void close();
    const TcpStats& stats() const noexcept { return *stats_; }

private:
    class Session;
    void accept();

    boost::asio::io_context& io_;
    boost::asio::ip::tcp::acceptor acceptor_;
    std::size_t max_connections_;
    hep::StreamFramer framer_;
    std::chrono::seconds idle_timeout_;
    MessageHandler handler_;
    std::shared_ptr<TcpStats> stats_;
    std::vector<std::weak_ptr<Session>> sessions_;
};

Endpoint to_endpoint(const boost::asio::ip::address& address, std::uint16_t port);
boost::asio::ip::address to_asio(const IpAddress& address);

} // namespace hepd::ingest
