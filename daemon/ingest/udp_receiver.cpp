#include "ingest/udp_receiver.hpp"

#include "core/log.hpp"
#include "core/thread_name.hpp"
#include "ingest/net_address.hpp"

#include <spdlog/spdlog.h>

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#if defined(__linux__)
#include <linux/sock_diag.h>  // SK_MEMINFO_DROPS
#endif

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <ctime>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

namespace hepd::ingest {

namespace asio = boost::asio;
using asio::ip::udp;

namespace {

void set_int_option(udp::socket& s, int level, int name, int value, const char* what) {
    if (::setsockopt(s.native_handle(), level, name, &value, sizeof value) != 0)
        throw boost::system::system_error(boost::system::error_code(errno, boost::system::system_category()), what);
}

bool try_int_option(udp::socket& s, int level, int name, int value) noexcept {
    return ::setsockopt(s.native_handle(), level, name, &value, sizeof value) == 0;
}

// The socket's cumulative count of datagrams the kernel dropped (a u32 that wraps); nullopt where
// the kernel (or an emulator) does not report it.
std::optional<std::uint32_t> read_kernel_drops(int fd) noexcept {
#if defined(__linux__) && defined(SO_MEMINFO)
    std::uint32_t info[SK_MEMINFO_VARS] = {};
    socklen_t size = sizeof info;
    if (::getsockopt(fd, SOL_SOCKET, SO_MEMINFO, info, &size) == 0 && size > SK_MEMINFO_DROPS * sizeof(std::uint32_t))
        return info[SK_MEMINFO_DROPS];
#else
    (void)fd;
#endif
    return std::nullopt;
}

}  // namespace

// ---- UdpBatchSocket ----

#if defined(__linux__) && defined(SO_TIMESTAMPNS)
#define HEPD_ARRIVAL_STAMPS 1
// Room for the one control message a stamped datagram carries.
constexpr std::size_t kControlBytes = CMSG_SPACE(sizeof(timespec));
#else
constexpr std::size_t kControlBytes = 0;
#endif

struct UdpBatchSocket::Native {
    explicit Native(std::size_t n)
        : addresses(n),
          iov(n),
          control((n * kControlBytes + sizeof(std::max_align_t) - 1) / sizeof(std::max_align_t))
#if defined(__linux__)
          ,
          headers(n)
#endif
    {
    }

    std::vector<sockaddr_storage> addresses;
    std::vector<iovec> iov;
    // kControlBytes a datagram, aligned for cmsghdr (CMSG_SPACE keeps every slot aligned).
    std::vector<std::max_align_t> control;
    unsigned char* control_at(std::size_t i) noexcept {
        return reinterpret_cast<unsigned char*>(control.data()) + i * kControlBytes;
    }
#if defined(__linux__)
    std::vector<mmsghdr> headers;
#endif
};

UdpBatchSocket::UdpBatchSocket(asio::io_context& io, const Endpoint& at, bool reuse_port,
                               std::size_t receive_buffer_bytes, std::size_t batch_size)
    : socket_(io),
      batch_size_(batch_size == 0 ? 1 : batch_size),
      slots_(new std::uint8_t[batch_size_ * kSlotStride]),
      native_(std::make_unique<Native>(batch_size_)) {
    const udp::endpoint ep(to_asio(at.address), at.port);
    socket_.open(ep.protocol());
    if (ep.address().is_v6()) socket_.set_option(asio::ip::v6_only(true));
    if (reuse_port) {
#if defined(SO_REUSEPORT)
        set_int_option(socket_, SOL_SOCKET, SO_REUSEPORT, 1, "SO_REUSEPORT");
#else
        throw std::runtime_error("several UDP receive threads need SO_REUSEPORT, which this system lacks");
#endif
    }
    if (receive_buffer_bytes > 0) {
        const int want = static_cast<int>(std::min<std::size_t>(receive_buffer_bytes, 0x7fffffff));
        // SO_RCVBUFFORCE passes net.core.rmem_max when the process may (CAP_NET_ADMIN); else the
        // plain option, which the kernel silently caps.
        bool set = false;
#if defined(SO_RCVBUFFORCE)
        set = try_int_option(socket_, SOL_SOCKET, SO_RCVBUFFORCE, want);
#endif
        if (!set) try_int_option(socket_, SOL_SOCKET, SO_RCVBUF, want);
    }
    counts_drops_ = read_kernel_drops(socket_.native_handle()).has_value();
    socket_.bind(ep);
    socket_.non_blocking(true);

    packets_.resize(batch_size_);
    Native& n = *native_;
    for (std::size_t i = 0; i < batch_size_; ++i) {
        n.iov[i].iov_base = slots_.get() + i * kSlotStride;
        n.iov[i].iov_len = kSlotBytes;
#if defined(__linux__)
        // Set up once; receive() resets only what the kernel writes back.
        msghdr& h = n.headers[i].msg_hdr;
        h = msghdr{};
        h.msg_name = &n.addresses[i];
        h.msg_iov = &n.iov[i];
        h.msg_iovlen = 1;
#endif
    }
}

UdpBatchSocket::~UdpBatchSocket() = default;

Endpoint UdpBatchSocket::local_endpoint() const {
    const auto ep = socket_.local_endpoint();
    return to_endpoint(ep.address(), ep.port());
}

std::size_t UdpBatchSocket::receive_buffer_bytes() const {
    asio::socket_base::receive_buffer_size size;
    socket_.get_option(size);
    return static_cast<std::size_t>(size.value());
}

void UdpBatchSocket::stamp_arrivals(bool on) noexcept {
#if defined(HEPD_ARRIVAL_STAMPS)
    if (on == stamping_) return;
    if (!try_int_option(socket_, SOL_SOCKET, SO_TIMESTAMPNS, on ? 1 : 0)) return;
    stamping_ = on;
    Native& n = *native_;
    for (std::size_t i = 0; i < batch_size_; ++i) n.headers[i].msg_hdr.msg_control = on ? n.control_at(i) : nullptr;
#else
    (void)on;
#endif
}

namespace {

#if defined(HEPD_ARRIVAL_STAMPS)
std::int64_t realtime_ns() noexcept {
    timespec t{};
    ::clock_gettime(CLOCK_REALTIME, &t);
    return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

// How long the datagram of `h` waited before `read_ns` (CLOCK_REALTIME, as the kernel's stamps);
// kNotStamped when it carries no stamp or one taken after `call_ns`, when the read began: the
// kernel stamps a datagram at the read when it arrived before stamping was on (the switch takes
// effect a little later), and such a stamp is the read time, not the arrival.
std::int64_t waited_us(msghdr& h, std::int64_t call_ns, std::int64_t read_ns) noexcept {
    for (cmsghdr* c = CMSG_FIRSTHDR(&h); c != nullptr; c = CMSG_NXTHDR(&h, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_TIMESTAMPNS) continue;
        timespec t{};
        std::memcpy(&t, CMSG_DATA(c), sizeof t);
        const std::int64_t arrived_ns = static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
        return arrived_ns < call_ns ? (read_ns - arrived_ns) / 1000 : Packet::kNotStamped;
    }
    return Packet::kNotStamped;
}
#endif

}  // namespace

std::span<const Packet> UdpBatchSocket::receive() noexcept {
    Native& n = *native_;
    const int fd = socket_.native_handle();
    std::size_t got = 0;
#if defined(__linux__)
    for (std::size_t i = 0; i < batch_size_; ++i) {
        msghdr& h = n.headers[i].msg_hdr;
        h.msg_namelen = sizeof(sockaddr_storage);
        h.msg_controllen = stamping_ ? kControlBytes : 0;
        h.msg_flags = 0;
        n.headers[i].msg_len = 0;
    }
#if defined(HEPD_ARRIVAL_STAMPS)
    const std::int64_t call_ns = stamping_ ? realtime_ns() : 0;
#endif
    int r;
    do {
        r = ::recvmmsg(fd, n.headers.data(), static_cast<unsigned>(batch_size_), MSG_DONTWAIT, nullptr);
    } while (r < 0 && errno == EINTR);
    if (r < 0) {
        if (errno != EAGAIN && errno != EWOULDBLOCK) stats_.receive_errors.add();
        r = 0;
    }
    got = static_cast<std::size_t>(r);
    for (std::size_t i = 0; i < got; ++i) {
        packets_[i].bytes =
            ByteSpan(slots_.get() + i * kSlotStride, std::min<std::size_t>(n.headers[i].msg_len, kSlotBytes));
        packets_[i].from = from_sockaddr(n.addresses[i]);
        packets_[i].waited_us = Packet::kNotStamped;
    }
#if defined(HEPD_ARRIVAL_STAMPS)
    if (stamping_ && got > 0) {
        const std::int64_t read_ns = realtime_ns();
        for (std::size_t i = 0; i < got; ++i) packets_[i].waited_us = waited_us(n.headers[i].msg_hdr, call_ns, read_ns);
    }
#endif
#else
    // Portable fallback: one recvmsg per datagram, still bounded by batch_size.
    for (; got < batch_size_; ++got) {
        msghdr h{};
        h.msg_name = &n.addresses[got];
        h.msg_namelen = sizeof(sockaddr_storage);
        h.msg_iov = &n.iov[got];
        h.msg_iovlen = 1;
        ssize_t r;
        do {
            r = ::recvmsg(fd, &h, MSG_DONTWAIT);
        } while (r < 0 && errno == EINTR);
        if (r < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK) stats_.receive_errors.add();
            break;
        }
        packets_[got].bytes =
            ByteSpan(slots_.get() + got * kSlotStride, std::min<std::size_t>(static_cast<std::size_t>(r), kSlotBytes));
        packets_[got].from = from_sockaddr(n.addresses[got]);
    }
#endif
    if (got > 0) stats_.batches.add();
    // The socket is drained: the kernel's drop count (SO_MEMINFO, one call per drain rather than
    // a control message per datagram) now covers everything dropped before what was just read.
    if (got < batch_size_ && counts_drops_) {
        if (const auto drops = read_kernel_drops(fd); drops && *drops != last_drop_count_) {
            // Unsigned difference: correct across the u32 wrap.
            stats_.kernel_drops.add(static_cast<std::uint32_t>(*drops - last_drop_count_));
            last_drop_count_ = *drops;
        }
    }
    return std::span<const Packet>(packets_.data(), got);
}

// ---- UdpReceiver ----

// The receive loop waits with poll() rather than Asio: it watches the socket only when it wants
// to read, and Asio's reactor would keep the socket in its epoll set and be woken by every
// datagram even while the thread means to sleep.
class UdpReceiver::Thread {
public:
    Thread(std::size_t index, const Endpoint& at, bool reuse_port, const UdpOptions& o, IngestControl& control,
           const IngestPathOptions& path_options, DatagramSink& sink, const Clock& wall)
        : index_(index),
          io_(1),
          socket_(io_, at, reuse_port, o.receive_buffer_bytes, o.batch_size),
          path_(control, sink, wall, path_options) {
        if (::pipe(wake_) != 0)
            throw boost::system::system_error(boost::system::error_code(errno, boost::system::system_category()),
                                              "pipe");
    }

    ~Thread() {
        stop();
        ::close(wake_[0]);
        ::close(wake_[1]);
    }

    void start() {
        thread_ = std::thread([this] {
            name_this_thread("hepd-udp-" + std::to_string(index_));
            run();
        });
    }

    // Joins the thread, then hands over what it left in partial batches (from this thread:
    // the receive thread is gone).
    void stop() {
        if (thread_.joinable()) {
            stopping_.store(true, std::memory_order_release);
            const char byte = 1;
            while (::write(wake_[1], &byte, 1) < 0 && errno == EINTR) {
            }
            thread_.join();
        }
        if (path_.holds_partial()) path_.flush();
    }

    UdpBatchSocket& socket() noexcept { return socket_; }
    const UdpBatchSocket& socket() const noexcept { return socket_; }
    const IngestPath& path() const noexcept { return path_; }

private:
    using Clock = std::chrono::steady_clock;

    // A wake-up reads at most this many batches before it looks at the stop pipe and the
    // hand-over deadline again (the next poll returns at once when more is queued): 4,096
    // datagrams, a few ms of work. 16 capped the blind window at 20,000 datagrams/s near 50 ms
    // (two wake-ups per max_batch_age, each refilling the caches the shard works from); at 64 it
    // reaches max_batch_age there (about 3 % less CPU a packet, paired: bench/README.md).
    static constexpr int kRoundsPerWakeup = 64;

    // What a queued datagram costs the socket buffer beyond its payload (the kernel charges the
    // buffer with its whole skb): a conservative estimate for the blind windows below.
    static constexpr std::size_t kQueuedOverheadBytes = 1024;

    // Partial batches are handed over when the oldest datagram in them is max_batch_age old.
    // Until then the thread need not wake for every datagram: it may stop watching the socket
    // for a while and read, when it next wakes, everything that came meanwhile (a few wake-ups
    // per max_batch_age instead of one per datagram). While it does not watch, the socket buffer
    // must hold what arrives, and the buffer granted may be small (a hardened unit cannot raise
    // it above net.core.rmem_max, 208 KiB by default). So the blind wait adapts to what it finds:
    // it doubles (up to the hand-over) while a wake-up finds traffic filling less than a quarter
    // of the buffer, halves when it finds more than half, and drops to watching (below 1 ms) when the
    // kernel dropped a datagram. Each window of partial batches starts watching for 1 ms.
    // With nothing pending the thread waits for readability without a timeout.
    void run() {
        const int fd = socket_.socket().native_handle();
        const auto max_age = std::chrono::duration_cast<Clock::duration>(path_.max_batch_age());
        const double budget = static_cast<double>(socket_.receive_buffer_bytes());
        constexpr Clock::duration kFirstBlind = std::chrono::milliseconds(1);
        Clock::time_point due{};
        Clock::duration blind_for = kFirstBlind;
        bool backlog = false;  // the last wake-up left datagrams in the socket: read on at once
        while (true) {
            int timeout_ms = -1;
            bool watch = true;
            if (backlog) {
                timeout_ms = 0;
            } else if (path_.holds_partial()) {
                const auto now = Clock::now();
                auto until = due;
                if (blind_for >= std::chrono::milliseconds(1)) {
                    until = std::min(due, now + blind_for);
                    watch = false;
                }
                const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - now);
                timeout_ms = static_cast<int>(std::max<std::int64_t>(left.count(), 0));
            }
            pollfd fds[2] = {{wake_[0], POLLIN, 0}, {watch ? fd : -1, POLLIN, 0}};
            const int r = ::poll(fds, 2, timeout_ms);
            if (r < 0) {
                if (errno != EINTR) {
                    log_throttled(failure_log_, steady_.now(), spdlog::level::err, [&](auto level, std::uint64_t more) {
                        spdlog::log(level, "hep udp receive thread {}: poll: {} ({} more suppressed)", index_,
                                    error_text(errno), more);
                    });
                    // Not a busy loop on a persistent failure: stop() and the hand-over still
                    // come through the checks below.
                    std::this_thread::sleep_for(std::chrono::milliseconds(1));
                }
                if (stopping_.load(std::memory_order_acquire)) return;
                fds[0].revents = 0;
                fds[1].revents = 0;
            }
            if (fds[0].revents != 0) return;                      // stop()
            if (backlog && fds[1].revents == 0) backlog = false;  // read by then after all
            const auto woke = Clock::now();
            const bool was_pending = path_.holds_partial();
            if (fds[1].revents != 0 || (was_pending && !watch)) {
                const std::uint64_t drops_before = socket_.stats().kernel_drops;
                const auto [datagrams, bytes, more] = drain();
                backlog = more;
                if (was_pending && !watch) {
                    const double found = static_cast<double>(bytes + datagrams * kQueuedOverheadBytes);
                    if (socket_.stats().kernel_drops != drops_before) {
                        blind_for = Clock::duration::zero();
                    } else if (more || found > budget / 2) {
                        blind_for /= 2;
                    } else if (datagrams > 0 && found < budget / 4) {
                        // Only traffic is evidence: a quiet spell says nothing of the next burst.
                        blind_for = std::min<Clock::duration>(blind_for * 2, path_.read_window());
                    }
                }
            }
            if (was_pending && woke >= due) {
                if (path_.holds_partial()) path_.flush();
            } else if (!was_pending && path_.holds_partial()) {
                due = woke + max_age;
                blind_for =
                    std::max<Clock::duration>(blind_for, std::min<Clock::duration>(kFirstBlind, path_.read_window()));
            }
        }
    }

    // Reads and processes what waits (at most kRoundsPerWakeup receive calls).
    struct Drained {
        std::size_t datagrams = 0;
        std::size_t bytes = 0;
        bool more = false;  // stopped at kRoundsPerWakeup: the socket may hold more
    };
    Drained drain() {
        std::size_t got = 0;
        std::size_t bytes = 0;
        for (int round = 0; round < kRoundsPerWakeup; ++round) {
            const auto packets = socket_.receive();
            if (packets.empty()) break;
            got += packets.size();
            for (const auto& p : packets) bytes += p.bytes.size();
            try {
                path_.process(packets, intake::Carrier::udp);
                socket_.stamp_arrivals(path_.wants_arrival_times());
            } catch (const std::exception& e) {
                // Only the sink can throw (allocation failure); the batch is lost, the thread lives.
                log_throttled(failure_log_, steady_.now(), spdlog::level::err, [&](auto level, std::uint64_t more) {
                    spdlog::log(level, "hep udp receive thread {}: batch lost: {} ({} more suppressed)", index_,
                                e.what(), more);
                });
            }
            if (packets.size() < socket_.batch_size()) return {got, bytes, false};
        }
        return {got, bytes, got > 0};
    }

    std::size_t index_;
    asio::io_context io_;  // owns the socket; never run
    UdpBatchSocket socket_;
    IngestPath path_;
    int wake_[2] = {-1, -1};             // stop() writes to [1], the loop polls [0]
    std::atomic<bool> stopping_{false};  // also set by stop(), for when poll() itself fails
    std::thread thread_;
    SteadyClock steady_;
    LogThrottle failure_log_;
};

UdpReceiver::UdpReceiver(const UdpOptions& options, IngestControl& control, const IngestPathOptions& path_options,
                         const SinkFor& sink_for, const Clock& wall) {
    const std::size_t n = options.threads == 0 ? 1 : options.threads;
    const bool reuse_port = n > 1;
    Endpoint at = options.listen;
    for (std::size_t i = 0; i < n; ++i) {
        threads_.push_back(
            std::make_unique<Thread>(i, at, reuse_port, options, control, path_options, sink_for(i), wall));
        // Port 0 asks the kernel for a port; the other sockets join the one it chose.
        if (i == 0) at.port = threads_[0]->socket().local_endpoint().port;
    }
    const std::size_t granted = receive_buffer_bytes();
    if (options.receive_buffer_bytes > 0 && granted < options.receive_buffer_bytes) {
        spdlog::warn("hep udp {}: SO_RCVBUF of {} bytes requested, the kernel granted {}; raise net.core.rmem_max",
                     local_endpoint().to_string(), options.receive_buffer_bytes, granted);
    }
    if (!counts_kernel_drops()) {
        // qemu-user, for one, does not emulate the option: say so rather than report 0 drops.
        spdlog::warn(
            "hep udp {}: SO_MEMINFO unavailable, hepd_udp_kernel_drops_total stays 0; "
            "watch RcvbufErrors in /proc/net/snmp instead",
            local_endpoint().to_string());
    }
}

UdpReceiver::~UdpReceiver() { stop(); }

void UdpReceiver::start() {
    if (started_) return;
    started_ = true;
    for (auto& t : threads_) t->start();
}

void UdpReceiver::stop() {
    for (auto& t : threads_) t->stop();
}

Endpoint UdpReceiver::local_endpoint() const { return threads_.front()->socket().local_endpoint(); }

const IngestPath& UdpReceiver::path(std::size_t thread) const noexcept { return threads_[thread]->path(); }

const UdpSocketStats& UdpReceiver::socket_stats(std::size_t thread) const noexcept {
    return threads_[thread]->socket().stats();
}

intake::IntakeStats UdpReceiver::merged_stats() const {
    intake::IntakeStats total;
    for (const auto& t : threads_) total.merge(t->path().stats());
    return total;
}

std::uint64_t UdpReceiver::kernel_drops() const noexcept {
    std::uint64_t n = 0;
    for (const auto& t : threads_) n += t->socket().stats().kernel_drops.value();
    return n;
}

bool UdpReceiver::counts_kernel_drops() const noexcept { return threads_.front()->socket().counts_kernel_drops(); }

std::size_t UdpReceiver::receive_buffer_bytes() const { return threads_.front()->socket().receive_buffer_bytes(); }

}  // namespace hepd::ingest
