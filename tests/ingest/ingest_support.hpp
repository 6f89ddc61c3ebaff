#pragma once
// Shared by the ingest tests: a sink that keeps copies, bounded waits, loopback helpers.
#include "ingest/ingest_path.hpp"
#include "ingest/net_address.hpp"

#include <boost/asio.hpp>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace hepd::test {

struct Captured {
    Timestamp time;
    Endpoint src;
    Endpoint dst;
    PayloadClass kind = PayloadClass::other;
    std::uint16_t agent = 0;
    std::uint32_t capture_id = 0;
    std::string correlation_id;
    std::string payload;
};

// Keeps a copy of every datagram. With drop_every = k, every k-th push is "lost" as a full
// shard queue would lose it (reported through dropped() at the next flush, as the Producer does).
class CollectingSink final : public ingest::DatagramSink {
public:
    explicit CollectingSink(std::uint64_t drop_every = 0) : drop_every_(drop_every) {}

    void push(const shard::Datagram& d) override {
        const auto n = pushes_.load(std::memory_order_relaxed) + 1;
        pushes_.store(n, std::memory_order_relaxed);
        if (drop_every_ != 0 && n % drop_every_ == 0) {
            ++pending_drops_;
            return;
        }
        got.push_back(Captured{d.time, d.src, d.dst, d.kind, d.agent, d.capture_id, std::string(d.correlation_id),
                               std::string(as_text(d.payload))});
        kept_.store(got.size(), std::memory_order_release);
    }
    void flush() override {
        ++flushes;
        dropped_.fetch_add(pending_drops_, std::memory_order_relaxed);
        pending_drops_ = 0;
    }
    std::uint64_t dropped() const noexcept override { return dropped_.load(std::memory_order_relaxed); }

    // Readable from another thread while the owner pushes.
    std::uint64_t kept() const noexcept { return kept_.load(std::memory_order_acquire); }

    std::vector<Captured> got;  // read it only after the receive thread stopped
    std::uint64_t flushes = 0;

private:
    std::uint64_t drop_every_;
    std::uint64_t pending_drops_ = 0;
    std::atomic<std::uint64_t> pushes_{0};
    std::atomic<std::uint64_t> dropped_{0};
    std::atomic<std::size_t> kept_{0};
};

// Polls `done` every millisecond for at most `limit`; returns its last value.
template <class Pred>
bool wait_until(Pred done, std::chrono::milliseconds limit = std::chrono::milliseconds(5000)) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done()) {
        if (std::chrono::steady_clock::now() >= deadline) return done();
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
}

// Runs `io` on this thread until `done` holds or `limit` passes.
template <class Pred>
bool run_until(boost::asio::io_context& io, Pred done,
               std::chrono::milliseconds limit = std::chrono::milliseconds(3000)) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done() && std::chrono::steady_clock::now() < deadline) {
        io.restart();
        io.run_for(std::chrono::milliseconds(2));
    }
    return done();
}

inline bool ipv6_loopback_available() {
    boost::asio::io_context io;
    boost::asio::ip::udp::socket s(io);
    boost::system::error_code ec;
    s.open(boost::asio::ip::udp::v6(), ec);
    if (ec) return false;
    s.bind({boost::asio::ip::address_v6::loopback(), 0}, ec);
    return !ec;
}

// A UDP socket bound to `from` (port 0), sending to `to`.
class UdpSender {
public:
    UdpSender(boost::asio::io_context& io, const IpAddress& from, const Endpoint& to)
        : socket_(io), to_(ingest::to_asio(to.address), to.port) {
        socket_.open(to_.protocol());
        socket_.bind({ingest::to_asio(from), 0});
    }
    void send(const std::vector<std::uint8_t>& bytes) { socket_.send_to(boost::asio::buffer(bytes), to_); }

private:
    boost::asio::ip::udp::socket socket_;
    boost::asio::ip::udp::endpoint to_;
};

inline IpAddress ip(std::string_view text) { return *IpAddress::parse(text); }

}  // namespace hepd::test
