#pragma once
// HEP over TCP (and the UDP receiver, see udp_receiver.hpp): an Asio acceptor and one session per
// sender connection; the byte stream is cut into messages by the HEP framer and every read's
// messages go through the IngestPath as one batch. Partial batches are handed to the shards by
// the listener's FlushTimer once the oldest datagram in them is max_batch_age old. Listeners
// sharing a path each keep a timer: any of them may hand the shared partial batches over, which
// only makes a hand-over earlier, never later than the bound.
#include "core/address.hpp"
#include "core/bytes.hpp"
#include "hep/framer.hpp"
#include "ingest/flush_timer.hpp"
#include "ingest/ingest_path.hpp"
#include "ingest/net_address.hpp"
#include "ingest/tcp_stats.hpp"
#include "ingest/udp_receiver.hpp"
#include "intake/hep_intake.hpp"

#include <boost/asio.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

namespace hepd::ingest {

struct TcpOptions {
    Endpoint listen;
    std::size_t max_connections = 1024;
    std::size_t max_frame_bytes = 65535;
    std::chrono::milliseconds idle_timeout{0};  // 0 = never close idle connections
};

class TcpListener {
public:
    // Binds and listens (throws boost::system::system_error at start-up). The io_context must be
    // run by exactly one thread, the one `path` belongs to; several listeners run by that thread
    // may share the path. `path` must outlive the listener.
    TcpListener(boost::asio::io_context& io, const TcpOptions& options, IngestPath& path);
    ~TcpListener();
    TcpListener(const TcpListener&) = delete;
    TcpListener& operator=(const TcpListener&) = delete;

    Endpoint local_endpoint() const;
    // Stops accepting, closes every connection and hands the path's partial batches over (from
    // the io_context's thread).
    void close();
    // Readable from any thread (counters).
    const TcpStats& stats() const noexcept { return *stats_; }

private:
    class Session;
    void accept();
    void accept_later();

    boost::asio::ip::tcp::acceptor acceptor_;
    boost::asio::steady_timer retry_;
    TcpOptions options_;
    hep::StreamFramer framer_;
    IngestPath& path_;
    FlushTimer flush_timer_;
    std::shared_ptr<TcpStats> stats_;
    std::vector<std::weak_ptr<Session>> sessions_;
    std::size_t sweep_at_ = 64;  // size of sessions_ at which ended ones are next swept out
    bool closed_ = false;
};

}  // namespace hepd::ingest
