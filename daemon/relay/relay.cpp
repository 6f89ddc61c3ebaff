#include "relay/relay.hpp"

#include "core/log.hpp"
#include "core/thread_name.hpp"
#include "hep/decoder.hpp"
#include "hep/encoder.hpp"

#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

namespace hepd::relay {

namespace {

constexpr std::chrono::milliseconds kPollSlice{100};  // how long a blocking wait goes without looking at stop
// An idle TCP relay looks at its connection this often, so that a collector restarted while no
// traffic flowed is reconnected before the next message rather than lost to the dead socket.
constexpr std::chrono::microseconds kIdleCheck{1'000'000};

int poll_ms(std::chrono::steady_clock::duration d) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
    return static_cast<int>(std::clamp<std::int64_t>(ms, 0, kPollSlice.count()));
}

}  // namespace

Relay::Relay(RelayOptions options) : options_(std::move(options)) {
    if (options_.transport == Transport::tcp) reencoded_.reserve(65535);
    const std::size_t n = std::max<std::size_t>(options_.producers, 1);
    producers_.reserve(n);
    for (std::size_t i = 0; i < n; ++i) producers_.push_back(std::make_unique<Producer>(options_.queue_bytes, bell_));
}

Relay::~Relay() { stop(); }

std::string Relay::url() const {
    const bool v6 = options_.host.find(':') != std::string::npos;
    return std::string(to_string(options_.transport)) + "://" + (v6 ? "[" + options_.host + "]" : options_.host) + ":" +
           std::to_string(options_.port);
}

void Relay::start() {
    if (thread_.joinable()) return;
    thread_ = std::thread([this] {
        name_this_thread("hepd-relay-" + options_.name);  // after the destination
        run();
    });
}

void Relay::request_stop(Clock::time_point deadline) {
    {
        std::lock_guard lock(pause_mutex_);
        if (stopping()) return;  // the first deadline stands
        stop_deadline_.store(deadline.time_since_epoch().count(), std::memory_order_release);
        stop_.store(true, std::memory_order_release);
    }
    pause_cv_.notify_all();
    bell_.ring();
}

void Relay::stop() {
    request_stop(Clock::now() + kStopDrain);
    if (thread_.joinable()) thread_.join();
    if (fd_ >= 0) disconnect(false);
}

void Relay::stop_all(const std::vector<std::unique_ptr<Relay>>& relays, std::chrono::milliseconds drain) {
    const auto deadline = Clock::now() + drain;
    for (const auto& r : relays) r->request_stop(deadline);
    for (const auto& r : relays) r->stop();
}

bool Relay::past_stop_deadline() const noexcept { return stopping() && Clock::now() >= stop_deadline(); }

RelayFigures Relay::figures() const noexcept {
    RelayFigures f;
    f.messages = stats_.messages.value();
    f.bytes = stats_.bytes.value();
    for (std::size_t i = 0; i < kDropReasonCount; ++i) f.dropped[i] = stats_.dropped[i].value();
    for (const auto& p : producers_) {
        f.dropped[static_cast<std::size_t>(DropReason::queue_full)] += p->queue_full();
        f.queued_bytes += p->ring_.used_bytes();
    }
    f.connected = stats_.connected.value();
    f.reconnects = stats_.reconnects.value();
    f.connect_failures = stats_.connect_failures.value();
    return f;
}

void Relay::run() {
    backoff_ = options_.reconnect_initial;
    next_attempt_ = Clock::now();
    while (true) {
        // Seen before the drain: everything pushed before stop() is sent (or dropped) below.
        const bool last_round = stopping();
        if (fd_ >= 0 && options_.transport == Transport::tcp && peer_closed()) disconnect(true);
        if (fd_ >= 0) note_stable();
        if (fd_ < 0 && !last_round && Clock::now() >= next_attempt_) connect_once();
        const bool worked = drain();
        if (last_round) {
            if (const auto n = stats_.dropped[static_cast<std::size_t>(DropReason::shutdown)].value(); n > 0)
                spdlog::warn("relay {}: {} messages still queued at the stop deadline were dropped", options_.name, n);
            break;
        }
        if (worked) pause(options_.drain_interval);  // let the next messages gather
        auto timeout = shard::Doorbell::kForever;
        if (fd_ < 0) {
            timeout = std::chrono::duration_cast<std::chrono::microseconds>(
                std::max(next_attempt_ - Clock::now(), Clock::duration::zero()));
        } else if (options_.transport == Transport::tcp) {
            timeout = kIdleCheck;
        }
        bell_.sleep_unless(
            [this] {
                if (stopping()) return true;
                return std::any_of(producers_.begin(), producers_.end(),
                                   [](const auto& p) { return p->ring_.has_message(); });
            },
            timeout);
    }
}

void Relay::pause(std::chrono::microseconds how_long) {
    std::unique_lock lock(pause_mutex_);
    pause_cv_.wait_for(lock, how_long, [this] { return stopping(); });
}

bool Relay::drain() {
    bool worked = false;
    for (auto& p : producers_) {
        MessageRing& ring = p->ring_;
        while (ring.has_message()) {
            send_one(ring.front());
            ring.pop();
            worked = true;
        }
    }
    // The round's last datagram: a refusal already back is pending on the socket (reading it
    // clears it); one that comes later is not seen (the next send retries past it).
    if (unsettled_) {
        int pending = 0;
        socklen_t len = sizeof pending;
        if (fd_ >= 0 && ::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &pending, &len) != 0) pending = 0;
        settle_datagram(pending != 0);
    }
    return worked;
}

bool Relay::send_one(ByteSpan message) {
    auto drop = [this](DropReason r) {
        stats_.dropped[static_cast<std::size_t>(r)].add();
        return false;
    };
    if (past_stop_deadline()) return drop(DropReason::shutdown);
    if (fd_ < 0) return drop(DropReason::not_connected);
    // UDP counts the datagram itself, one send late (send_datagram).
    if (options_.transport == Transport::udp) return send_datagram(message) || drop(DropReason::send_error);
    message = framable(message);
    if (message.empty()) return drop(DropReason::unframable);
    // A young connection may be one the collector accepts only to close it: a message written
    // after its close arrived would be lost yet counted relayed, so look before each write.
    if (!stable_ && peer_closed()) {
        disconnect(true);
        return drop(DropReason::not_connected);
    }
    switch (write_all(message)) {
    case Write::done: break;
    case Write::failed: disconnect(true); return drop(DropReason::send_error);
    case Write::out_of_time: disconnect(false); return drop(DropReason::shutdown);  // may leave a partial frame
    }
    stats_.messages.add();
    stats_.bytes.add(message.size());
    return true;
}

// A connected UDP socket reports an ICMP refusal (port or host unreachable) of an earlier datagram
// as the error of its next send, and that datagram is then not sent. So the refusal is counted
// against the datagram sent before (held unsettled until now) and the current one is sent again,
// once. True when the current datagram went out; it is then the unsettled one.
bool Relay::send_datagram(ByteSpan message) {
    ssize_t n = ::send(fd_, message.data(), message.size(), MSG_NOSIGNAL);
    if (n < 0 && (errno == ECONNREFUSED || errno == EHOSTUNREACH || errno == ENETUNREACH || errno == EHOSTDOWN)) {
        settle_datagram(true);
        n = ::send(fd_, message.data(), message.size(), MSG_NOSIGNAL);
    }
    settle_datagram(false);
    if (n < 0 || static_cast<std::size_t>(n) != message.size()) {
        if (spdlog::should_log(spdlog::level::debug))
            spdlog::debug("relay {}: send: {}", options_.name, error_text(errno));
        return false;
    }
    unsettled_ = true;
    unsettled_bytes_ = message.size();
    return true;
}

void Relay::settle_datagram(bool refused) {
    if (!unsettled_) return;
    unsettled_ = false;
    if (refused) {
        stats_.dropped[static_cast<std::size_t>(DropReason::send_error)].add();
        return;
    }
    stats_.messages.add();
    stats_.bytes.add(unsettled_bytes_);
}

// The message as a stream receiver can cut it out of the byte stream (by the HEPv3 length), or an
// empty span. A v3 message goes as it is; a v1/v2 one is decoded and encoded again as v3 (its
// length byte and v2's two padding octets are all that is not carried over).
ByteSpan Relay::framable(ByteSpan message) {
    constexpr std::size_t v3_header = 6;
    if (message.size() >= v3_header && (message[0] == 'H' || message[0] == 'E') &&
        load_be16(message.data() + 4) == message.size())
        return message;
    hep::Message m;
    if (message.empty() || (message[0] != 1 && message[0] != 2) || hep::decode_into(message, m)) return {};
    reencoded_.clear();
    if (!hep::encode_v3(m, reencoded_)) return {};  // over 65,535 bytes as v3
    return {reencoded_.data(), reencoded_.size()};
}

Relay::Write Relay::write_all(ByteSpan message) {
    const auto deadline = Clock::now() + options_.write_timeout;
    std::size_t done = 0;
    while (done < message.size()) {
        const ssize_t n = ::send(fd_, message.data() + done, message.size() - done, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            done += static_cast<std::size_t>(n);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (!wait_fd(POLLOUT, deadline)) {
                if (past_stop_deadline()) return Write::out_of_time;
                spdlog::warn("relay {}: {} stopped reading for {} ms; reconnecting", options_.name, url(),
                             options_.write_timeout.count());
                return Write::failed;
            }
            continue;
        }
        spdlog::warn("relay {}: sending to {}: {}", options_.name, url(), error_text(errno));
        return Write::failed;
    }
    return Write::done;
}

// Waits until fd_ is ready for `events` or the deadline passed, in slices, so that a connection
// attempt ends at stop() (`give_up_on_stop`); a write in the last round waits at most until the
// stop deadline.
bool Relay::wait_fd(short events, Clock::time_point deadline, bool give_up_on_stop) {
    while (true) {
        const auto now = Clock::now();
        const auto until = std::min(deadline, stop_deadline());
        if (now >= until || (give_up_on_stop && stopping())) return false;
        pollfd p{fd_, events, 0};
        const int r = ::poll(&p, 1, poll_ms(until - now));
        if (r > 0) return (p.revents & events) != 0 || (p.revents & (POLLERR | POLLHUP)) != 0;
        if (r < 0 && errno != EINTR) return false;
    }
}

// A collector that closed or reset the connection shows as readable: hear it before sending into
// a dead socket (the first sends after a close would vanish without an error).
bool Relay::peer_closed() {
    pollfd p{fd_, static_cast<short>(POLLIN | POLLRDHUP), 0};
    if (::poll(&p, 1, 0) <= 0) return false;
    if ((p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0) return true;
    if ((p.revents & POLLIN) != 0) {
        // Collectors send nothing back; read and forget whatever one does.
        std::array<std::uint8_t, 4096> scratch{};
        const ssize_t n = ::recv(fd_, scratch.data(), scratch.size(), MSG_DONTWAIT);
        return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
    }
    return false;
}

bool Relay::connect_once() {
    const bool tcp = options_.transport == Transport::tcp;
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = tcp ? SOCK_STREAM : SOCK_DGRAM;
    hints.ai_flags = AI_NUMERICSERV;
    addrinfo* found = nullptr;
    const std::string port = std::to_string(options_.port);
    std::string failure;
    if (const int rc = ::getaddrinfo(options_.host.c_str(), port.c_str(), &hints, &found); rc != 0) {
        failure = std::string("cannot resolve: ") + ::gai_strerror(rc);
        found = nullptr;
    }
    for (addrinfo* a = found; a != nullptr && fd_ < 0; a = a->ai_next) {
        const int fd =
            ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | (tcp ? SOCK_NONBLOCK : 0), a->ai_protocol);
        if (fd < 0) {
            failure = error_text(errno);
            continue;
        }
        int rc = ::connect(fd, a->ai_addr, a->ai_addrlen);
        if (rc < 0 && errno == EINPROGRESS) {
            fd_ = fd;  // wait_fd polls fd_
            const bool ready = wait_fd(POLLOUT, Clock::now() + options_.connect_timeout, true);
            fd_ = -1;
            int so_error = 0;
            socklen_t len = sizeof so_error;
            if (!ready) {
                so_error = ETIMEDOUT;
            } else if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len) != 0) {
                so_error = errno;
            }
            rc = so_error == 0 ? 0 : -1;
            errno = so_error;
        }
        if (rc == 0) {
            fd_ = fd;
        } else {
            failure = error_text(errno);
            ::close(fd);
        }
    }
    if (found != nullptr) ::freeaddrinfo(found);

    const auto now = Clock::now();
    if (fd_ < 0) {
        stats_.connect_failures.add();
        // Said once per outage; the attempts in between show in hepd_relay_connect_failures_total.
        if (!outage_logged_) {
            spdlog::warn("relay {}: cannot connect to {} ({}); retrying with back-off up to {} s", options_.name, url(),
                         failure, std::chrono::duration<double>(options_.reconnect_max).count());
            outage_logged_ = true;
        }
        next_attempt_ = now + backoff_;
        backoff_ = std::min(backoff_ * 2, options_.reconnect_max);
        return false;
    }
    stats_.connected.set(1);
    if (ever_connected_) stats_.reconnects.add();
    // Within a logged outage the connection is announced once it has held (note_stable): a
    // collector that closes every connection at once would otherwise log each attempt. The
    // back-off is not reset here either, for the same collector.
    if (!outage_logged_)
        spdlog::info("relay {}: {} {}", options_.name, ever_connected_ ? "reconnected to" : "relaying to", url());
    ever_connected_ = true;
    connected_at_ = now;
    stable_ = !tcp;  // a UDP socket is never lost
    return true;
}

// A TCP connection that held for stable_after ends the outage: the back-off starts again.
void Relay::note_stable() {
    if (stable_ || Clock::now() - connected_at_ < options_.stable_after) return;
    stable_ = true;
    backoff_ = options_.reconnect_initial;
    if (outage_logged_) spdlog::info("relay {}: reconnected to {}", options_.name, url());
    outage_logged_ = false;
}

void Relay::disconnect(bool lost) {
    ::close(fd_);
    fd_ = -1;
    stats_.connected.set(0);
    if (!lost) return;
    const auto now = Clock::now();
    const auto held = now - connected_at_;
    const bool was_stable = stable_ || held >= options_.stable_after;
    stable_ = false;
    if (was_stable) {
        spdlog::warn("relay {}: connection to {} lost{}", options_.name, url(), stopping() ? "" : "; reconnecting");
        outage_logged_ = false;  // a failure to reconnect is a new outage, said once
        // The first retry comes at once: a collector restart is the common cause.
        next_attempt_ = now;
        backoff_ = options_.reconnect_initial;
        return;
    }
    // Closed right after it was made: a failed attempt, retried with the growing back-off.
    stats_.connect_failures.add();
    if (!outage_logged_) {
        spdlog::warn(
            "relay {}: {} closed the connection (heard {} ms after connecting, within the {} s a connection "
            "must hold); retrying with back-off up to {} s",
            options_.name, url(), std::chrono::duration_cast<std::chrono::milliseconds>(held).count(),
            std::chrono::duration<double>(options_.stable_after).count(),
            std::chrono::duration<double>(options_.reconnect_max).count());
        outage_logged_ = true;
    }
    next_attempt_ = now + backoff_;
    backoff_ = std::min(backoff_ * 2, options_.reconnect_max);
}

}  // namespace hepd::relay
