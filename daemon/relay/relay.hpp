#pragma once
// The HEP relay to one downstream collector (HOMER heplify-server, Kamailio sipcapture, another
// hepd): every HEP message the receive threads accepted is forwarded as it was received, byte for
// byte, over UDP or TCP. One exception: HEPv1/v2 carry no total length, and stream receivers frame
// HEP by the v3 one, so for a TCP destination such a message is re-encoded as HEPv3 (every field
// the decoder reads is kept) or, when that is impossible, dropped as unframable.
//
// Each receive thread owns a Producer: a preallocated MessageRing it copies accepted messages
// into (one memcpy; no allocation, lock or system call on the receive path; a full ring drops and
// counts queue_full). One sender thread per destination drains the rings and sends. While the
// destination is down (TCP not connected, or its name does not resolve) queued messages are
// dropped as not_connected rather than held: a relay that holds would replay stale traffic in a
// burst, and a downstream collector times its calls by arrival as much as by capture time.
// Connections are retried with exponential back-off, capped. The back-off starts again from
// reconnect_initial only once a connection has held for stable_after: a collector that accepts and
// closes at once (at its connection limit, a load balancer without a backend) is a failed attempt.
//
// The sender drains at most every drain_interval while traffic flows, so a busy relay wakes a few
// hundred times a second, not once per packet; an idle one sleeps on its doorbell.
#include "core/bytes.hpp"
#include "relay/message_ring.hpp"
#include "relay/relay_stats.hpp"
#include "shard/doorbell.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace hepd::relay {

enum class Transport : std::uint8_t { udp, tcp };
constexpr std::string_view to_string(Transport t) noexcept { return t == Transport::tcp ? "tcp" : "udp"; }

struct RelayOptions {
    std::string name;  // the `destination` metric label
    std::string host;  // a literal address or a name (resolved at every connection attempt)
    std::uint16_t port = 9060;
    Transport transport = Transport::udp;
    // Ring size per producer, at least kMinQueueBytes: a HEP message (at most 65,535 bytes)
    // always fits an empty ring.
    std::size_t queue_bytes = 4u << 20;
    std::size_t producers = 1;  // receive threads
    std::chrono::milliseconds reconnect_initial{100};
    std::chrono::milliseconds reconnect_max{10000};
    std::chrono::milliseconds connect_timeout{3000};
    // A TCP connection closed sooner than this after it was made counts as a failed attempt (the
    // back-off goes on growing); one that held this long resets the back-off when it is lost.
    std::chrono::milliseconds stable_after{5000};
    // A TCP message not written whole within this (the collector stopped reading) breaks the
    // connection: it is counted send_error and the relay reconnects.
    std::chrono::milliseconds write_timeout{5000};
    std::chrono::microseconds drain_interval{2000};
};

class Relay {
public:
    using Clock = std::chrono::steady_clock;

    // At stop, what is still queued is sent for at most this long, for all destinations together
    // (stop_all), then dropped and counted (shutdown): a slow collector must not hold hepd's exit
    // and final snapshot past systemd's TimeoutStopSec.
    static constexpr std::chrono::milliseconds kStopDrain{2000};

    // The receive thread's side; push() is called from that thread only.
    // A record is at most half its ring: two of the largest HEP messages with their headers.
    static constexpr std::size_t kMinQueueBytes = 2 * (65535 + MessageRing::kHeaderBytes + 3);

    class Producer {
    public:
        Producer(std::size_t queue_bytes, shard::Doorbell& bell)
            : ring_(std::max(queue_bytes, kMinQueueBytes)), bell_(bell) {}
        // Copies `message` into the queue and wakes the sender if it sleeps; false (and counted
        // as queue_full) when the queue has no room.
        bool push(ByteSpan message) noexcept {
            if (!ring_.try_push(message)) {
                queue_full_.add();
                return false;
            }
            bell_.ring();
            return true;
        }
        std::uint64_t queue_full() const noexcept { return queue_full_.value(); }

    private:
        friend class Relay;
        MessageRing ring_;
        shard::Doorbell& bell_;
        StatCounter queue_full_;
    };

    explicit Relay(RelayOptions options);
    ~Relay();
    Relay(const Relay&) = delete;
    Relay& operator=(const Relay&) = delete;

    // Starts the sender thread (which connects at once).
    void start();
    // Asks the sender to finish and returns at once: what is queued is sent until `deadline`, the
    // rest dropped (shutdown). The producers must not push any more.
    void request_stop(Clock::time_point deadline);
    // request_stop(now + kStopDrain) unless asked already; then joins the sender and closes the
    // connection (idempotent).
    void stop();
    // Stops every relay with one deadline for them all.
    static void stop_all(const std::vector<std::unique_ptr<Relay>>& relays,
                         std::chrono::milliseconds drain = kStopDrain);

    Producer& producer(std::size_t i) noexcept { return *producers_[i]; }
    std::size_t producers() const noexcept { return producers_.size(); }
    const RelayOptions& options() const noexcept { return options_; }
    // "tcp://host:port" for logs.
    std::string url() const;
    // Readable from any thread at any time.
    RelayFigures figures() const noexcept;

private:
    enum class Write : std::uint8_t { done, failed, out_of_time };

    void run();
    bool connect_once();
    void disconnect(bool lost);
    void note_stable();
    bool peer_closed();
    bool drain();
    bool send_one(ByteSpan message);
    ByteSpan framable(ByteSpan message);
    bool send_datagram(ByteSpan message);
    void settle_datagram(bool refused);
    Write write_all(ByteSpan message);
    bool past_stop_deadline() const noexcept;
    Clock::time_point stop_deadline() const noexcept {
        return Clock::time_point(Clock::duration(stop_deadline_.load(std::memory_order_acquire)));
    }
    bool wait_fd(short events, Clock::time_point deadline, bool give_up_on_stop = false);
    void pause(std::chrono::microseconds how_long);
    bool stopping() const noexcept { return stop_.load(std::memory_order_acquire); }

    RelayOptions options_;
    shard::Doorbell bell_;
    std::vector<std::unique_ptr<Producer>> producers_;
    SenderStats stats_;
    std::atomic<bool> stop_{false};
    std::atomic<Clock::rep> stop_deadline_{Clock::time_point::max().time_since_epoch().count()};
    std::mutex pause_mutex_;
    std::condition_variable pause_cv_;
    std::thread thread_;

    // Sender thread only.
    int fd_ = -1;
    bool ever_connected_ = false;
    bool outage_logged_ = false;  // the current outage was logged: its further attempts are not
    bool stable_ = false;         // the connection has held for stable_after
    Clock::time_point connected_at_{};
    std::chrono::milliseconds backoff_{0};
    Clock::time_point next_attempt_{};
    std::vector<std::uint8_t> reencoded_;  // a v1/v2 message as v3, for TCP
    // UDP: the last datagram sent, counted once the next send (or the end of the round) tells
    // whether it was refused.
    bool unsettled_ = false;
    std::size_t unsettled_bytes_ = 0;
};

}  // namespace hepd::relay
