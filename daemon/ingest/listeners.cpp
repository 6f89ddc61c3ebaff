#include "ingest/listeners.hpp"

#include "ingest/handler_memory.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <memory>

namespace hepd::ingest {

namespace asio = boost::asio;
using asio::ip::tcp;

class TcpListener::Session : public std::enable_shared_from_this<Session> {
public:
    Session(tcp::socket socket, const Endpoint& peer, const hep::StreamFramer& framer,
            std::chrono::milliseconds idle_timeout, IngestPath& path, FlushTimer& flush_timer,
            std::shared_ptr<TcpStats> stats)
        : socket_(std::move(socket)),
          timer_(socket_.get_executor()),
          framer_(framer),
          idle_timeout_(idle_timeout),
          path_(path),
          flush_timer_(flush_timer),
          stats_(std::move(stats)),
          peer_(peer),
          buffer_size_(framer.max_frame() + kReadChunk),
          buffer_(std::make_unique_for_overwrite<std::uint8_t[]>(buffer_size_)) {
        frames_.reserve(kFramesPerBatch);
    }

    void start() {
        stats_->open_connections.add(1);
        stats_->accepted_connections.add();
        last_read_ = Clock::now();
        arm_timer();
        read();
    }

    void close(TcpCloseReason reason) {
        if (closed_) return;
        closed_ = true;
        stats_->open_connections.add(-1);
        stats_->closed[static_cast<std::size_t>(reason)].add();
        boost::system::error_code ignored;
        timer_.cancel();
        socket_.shutdown(tcp::socket::shutdown_both, ignored);
        socket_.close(ignored);
    }

private:
    // Room after a maximal partial frame, so one read always fits.
    static constexpr std::size_t kReadChunk = 16384;
    // A read of small frames goes through the path in slices of at most this many, so that the
    // frame list is allocated once (with the session) and never grows on the packet path.
    static constexpr std::size_t kFramesPerBatch = 256;

    using Clock = asio::steady_timer::clock_type;

    // Reads only note their time; the timer checks it when it fires (re-arming the timer on every
    // read would cost a timer update per read).
    void arm_timer() {
        if (idle_timeout_.count() <= 0) return;
        timer_.expires_at(last_read_ + idle_timeout_);
        timer_.async_wait(with_memory(timer_memory_, [self = shared_from_this()](boost::system::error_code ec) {
            if (ec || self->closed_) return;
            if (Clock::now() - self->last_read_ >= self->idle_timeout_) {
                self->close(TcpCloseReason::idle_timeout);
                return;
            }
            self->arm_timer();
        }));
    }

    void read() {
        socket_.async_read_some(
            asio::buffer(buffer_.get() + used_, buffer_size_ - used_),
            with_memory(read_memory_, [self = shared_from_this()](boost::system::error_code ec, std::size_t n) {
                self->on_read(ec, n);
            }));
    }

    void on_read(boost::system::error_code ec, std::size_t n) {
        if (closed_) return;  // the listener may be gone: touch nothing but this session
        if (ec) {
            close(ec == asio::error::eof || ec == asio::error::connection_reset ? TcpCloseReason::peer_closed
                                                                                : TcpCloseReason::error);
            return;
        }
        used_ += n;
        std::size_t offset = 0;
        bool broken = false;
        while (true) {
            const auto status = framer_.next(ByteSpan(buffer_.get() + offset, used_ - offset));
            if (status.is_frame()) {
                if (frames_.size() == kFramesPerBatch) process_frames();
                frames_.push_back(Packet{ByteSpan(buffer_.get() + offset, status.size), peer_});
                offset += status.size;
                continue;
            }
            if (status.is_error()) {
                stats_->frame_errors[static_cast<std::size_t>(status.error)].add();
                if (spdlog::should_log(spdlog::level::debug))
                    spdlog::debug("hep tcp {}: {}; closing the connection", peer_.to_string(),
                                  hep::to_string(status.error));
                broken = true;
            }
            break;  // need more, or broken
        }
        // The messages before a framing error are whole and are kept.
        process_frames();
        flush_timer_.after_process();
        if (broken) {
            close(TcpCloseReason::bad_frame);
            return;
        }
        // Keep the partial frame at the front; the buffer always has room for a whole max frame.
        if (offset > 0) {
            std::memmove(buffer_.get(), buffer_.get() + offset, used_ - offset);
            used_ -= offset;
        }
        last_read_ = Clock::now();
        read();
    }

    void process_frames() {
        if (frames_.empty()) return;
        try {
            path_.process(frames_, intake::Carrier::tcp);
        } catch (const std::exception& e) {
            spdlog::error("hep tcp {}: {} messages lost: {}", peer_.to_string(), frames_.size(), e.what());
        }
        frames_.clear();
    }

    tcp::socket socket_;
    asio::steady_timer timer_;
    const hep::StreamFramer& framer_;
    std::chrono::milliseconds idle_timeout_;
    IngestPath& path_;
    FlushTimer& flush_timer_;
    std::shared_ptr<HandlerMemory> read_memory_ = std::make_shared<HandlerMemory>();
    std::shared_ptr<HandlerMemory> timer_memory_ = std::make_shared<HandlerMemory>();
    std::shared_ptr<TcpStats> stats_;
    Endpoint peer_;
    // Left uninitialised: a connection's pages become resident as its bytes arrive (a zeroed
    // buffer cost every idle connection 80 KiB at once: 900 of them, 77 MB).
    std::size_t buffer_size_;
    std::unique_ptr<std::uint8_t[]> buffer_;
    std::vector<Packet> frames_;
    std::size_t used_ = 0;
    Clock::time_point last_read_{};
    bool closed_ = false;
};

TcpListener::TcpListener(asio::io_context& io, const TcpOptions& options, IngestPath& path)
    : acceptor_(io),
      retry_(io),
      options_(options),
      framer_(options.max_frame_bytes),
      path_(path),
      flush_timer_(io, path),
      stats_(std::make_shared<TcpStats>()) {
    const tcp::endpoint ep(to_asio(options.listen.address), options.listen.port);
    acceptor_.open(ep.protocol());
    acceptor_.set_option(asio::socket_base::reuse_address(true));
    if (ep.address().is_v6()) acceptor_.set_option(asio::ip::v6_only(true));
    acceptor_.bind(ep);
    acceptor_.listen(asio::socket_base::max_listen_connections);
    accept();
}

TcpListener::~TcpListener() {
    // close() hands over the last partial batch, which may fail to allocate: log it, since a
    // destructor must not throw.
    try {
        close();
    } catch (const std::exception& e) {
        spdlog::error("hep tcp listener: closing: {}", e.what());
    }
}

Endpoint TcpListener::local_endpoint() const {
    const auto ep = acceptor_.local_endpoint();
    return to_endpoint(ep.address(), ep.port());
}

void TcpListener::close() {
    closed_ = true;
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    retry_.cancel();
    for (auto& weak : sessions_)
        if (auto s = weak.lock()) s->close(TcpCloseReason::shutdown);
    sessions_.clear();
    flush_timer_.flush_now();
}

void TcpListener::accept_later() {
    // Out of descriptors (or similar): retrying at once would spin on the same error.
    retry_.expires_after(std::chrono::milliseconds(100));
    retry_.async_wait([this](boost::system::error_code ec) {
        if (!ec && !closed_) accept();
    });
}

void TcpListener::accept() {
    acceptor_.async_accept([this](boost::system::error_code ec, tcp::socket socket) {
        if (ec == asio::error::operation_aborted || closed_) return;
        if (ec) {
            stats_->accept_errors.add();
            spdlog::debug("hep tcp accept: {}", ec.message());
            accept_later();
            return;
        }
        boost::system::error_code peer_ec;
        const auto remote = socket.remote_endpoint(peer_ec);
        const Endpoint peer = peer_ec ? Endpoint{} : to_endpoint(remote.address(), remote.port());
        // Ended sessions are forgotten in sweeps, each when the list has doubled since the last:
        // sweeping on every accept would make a connect storm quadratic in max_connections.
        if (sessions_.size() >= sweep_at_) {
            std::erase_if(sessions_, [](const auto& w) { return w.expired(); });
            sweep_at_ = std::max<std::size_t>(64, 2 * sessions_.size());
        }
        auto refuse = [&](TcpCloseReason reason) {
            stats_->closed[static_cast<std::size_t>(reason)].add();
            boost::system::error_code ignored;
            socket.close(ignored);
        };
        if (peer_ec) {
            refuse(TcpCloseReason::error);
        } else if (!path_.allows(peer.address)) {
            refuse(TcpCloseReason::not_allowed);
        } else if (static_cast<std::size_t>(std::max<std::int64_t>(stats_->open_connections.value(), 0)) >=
                   options_.max_connections) {
            refuse(TcpCloseReason::too_many);
        } else {
            auto session = std::make_shared<Session>(std::move(socket), peer, framer_, options_.idle_timeout, path_,
                                                     flush_timer_, stats_);
            sessions_.push_back(session);
            session->start();
        }
        accept();
    });
}

}  // namespace hepd::ingest
