#pragma once
// HEP over UDP: several receive threads per listen address, each with its own SO_REUSEPORT
// socket, its own IngestPath (intake, per-sender buckets, counters) and its own DatagramSink
// (the thread's shard::Pipeline::Producer). A thread waits with poll(), then drains the socket
// with non-blocking recvmmsg calls of up to batch_size datagrams, processing each call's
// datagrams; partial batches are handed to the shards when the oldest datagram in them is
// max_batch_age old, not after every call, and under light traffic the thread reads only then
// (see UdpReceiver::Thread::run). Kernel drops (socket buffer overflow) are read from SO_MEMINFO
// after each drain.
#include "core/address.hpp"
#include "core/stats.hpp"
#include "ingest/ingest_path.hpp"

#include <boost/asio.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

namespace hepd::ingest {

struct UdpOptions {
    Endpoint listen;
    std::size_t threads = 1;               // receive threads (sockets) on this address, >= 1
    std::size_t batch_size = 64;           // datagrams per recvmmsg call, >= 1
    std::size_t receive_buffer_bytes = 0;  // SO_RCVBUF per socket; 0 keeps the kernel default
};

struct UdpSocketStats {
    StatCounter batches;         // receive calls that returned datagrams
    StatCounter kernel_drops;    // datagrams the kernel dropped on this socket (SO_MEMINFO)
    StatCounter receive_errors;  // receive calls failing for another reason than "nothing waiting"
};

// One UDP socket read in batches; the receive thread's reader, usable alone in tests.
class UdpBatchSocket {
public:
    // Any UDP payload fits: the 16-bit UDP length caps it at 65,527 bytes (65,507 over IPv4), so
    // the kernel never truncates a datagram into a slot.
    static constexpr std::size_t kSlotBytes = 65536;
    // Slots lie this far apart: 17 cache lines more than a slot, so that the heads of a batch's
    // datagrams (all that a typical one occupies) fall into different cache sets. At a stride of
    // exactly 64 KiB they all map to the same few sets and evict one another between the
    // kernel's copy and the decode.
    static constexpr std::size_t kSlotStride = kSlotBytes + std::size_t{17} * 64;

    // Opens and binds (v6_only on IPv6). Throws boost::system::system_error (start-up).
    UdpBatchSocket(boost::asio::io_context& io, const Endpoint& at, bool reuse_port, std::size_t receive_buffer_bytes,
                   std::size_t batch_size);
    ~UdpBatchSocket();
    UdpBatchSocket(const UdpBatchSocket&) = delete;
    UdpBatchSocket& operator=(const UdpBatchSocket&) = delete;

    // Reads the datagrams waiting now, at most batch_size, without blocking. The views are
    // valid until the next call. A call that drains the socket also brings kernel_drops up to date.
    std::span<const Packet> receive() noexcept;

    // Has the kernel stamp each datagram's arrival (SO_TIMESTAMPNS) so that receive() fills
    // Packet::waited_us, or stops it. A no-op when unchanged, or where the system has no such
    // stamps. Stamping costs every datagram about 12 % of the kernel's receive work: it is on
    // only while a sender's clock offset waits for an exact receive time.
    void stamp_arrivals(bool on) noexcept;
    bool stamps_arrivals() const noexcept { return stamping_; }

    boost::asio::ip::udp::socket& socket() noexcept { return socket_; }
    Endpoint local_endpoint() const;
    std::size_t batch_size() const noexcept { return batch_size_; }
    // Whether the kernel reports the socket's drops (SO_MEMINFO, Linux); without it kernel_drops stays 0.
    bool counts_kernel_drops() const noexcept { return counts_drops_; }
    // SO_RCVBUF as the kernel granted it (Asio undoes Linux's doubling: this is the size asked for).
    std::size_t receive_buffer_bytes() const;
    const UdpSocketStats& stats() const noexcept { return stats_; }

private:
    struct Native;  // recvmmsg headers and addresses

    boost::asio::ip::udp::socket socket_;
    std::size_t batch_size_;
    bool counts_drops_ = false;
    bool stamping_ = false;
    std::uint32_t last_drop_count_ = 0;
    std::unique_ptr<std::uint8_t[]> slots_;  // batch_size * kSlotStride, left uninitialised
    std::unique_ptr<Native> native_;
    std::vector<Packet> packets_;
    UdpSocketStats stats_;
};

class UdpReceiver {
public:
    // The sink for receive thread i (0 <= i < threads); called `threads` times in the
    // constructor. The sinks must outlive the receiver.
    using SinkFor = std::function<DatagramSink&(std::size_t thread)>;

    // Binds every socket (throws boost::system::system_error when it cannot: start-up).
    // SO_REUSEPORT is set only with more than one thread, so that a second hepd on the same
    // port fails to bind instead of silently taking half of the traffic.
    UdpReceiver(const UdpOptions& options, IngestControl& control, const IngestPathOptions& path_options,
                const SinkFor& sink_for, const Clock& wall);
    ~UdpReceiver();
    UdpReceiver(const UdpReceiver&) = delete;
    UdpReceiver& operator=(const UdpReceiver&) = delete;

    // Starts the receive threads. Datagrams arriving before wait in the socket buffers.
    void start();
    // Stops and joins the threads, then hands their partial batches over (idempotent; also done
    // by the destructor, so the sinks must still be usable then).
    void stop();

    Endpoint local_endpoint() const;
    std::size_t threads() const noexcept { return threads_.size(); }
    // Readable from any thread at any time (counters).
    const IngestPath& path(std::size_t thread) const noexcept;
    const UdpSocketStats& socket_stats(std::size_t thread) const noexcept;
    intake::IntakeStats merged_stats() const;
    std::uint64_t kernel_drops() const noexcept;
    bool counts_kernel_drops() const noexcept;
    std::size_t receive_buffer_bytes() const;

private:
    class Thread;
    std::vector<std::unique_ptr<Thread>> threads_;
    bool started_ = false;
};

}  // namespace hepd::ingest
