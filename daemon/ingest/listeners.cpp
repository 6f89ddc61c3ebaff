#include "ingest/listeners.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>

namespace hepd::ingest {

namespace asio = boost::asio;
using asio::ip::tcp;
using asio::ip::udp;

std::string_view to_string(TcpCloseReason r) noexcept {
    switch (r) {
    case TcpCloseReason::peer_closed: return "peer_closed";
    case TcpCloseReason::bad_frame: return "bad_frame";
    case TcpCloseReason::idle_timeout: return "idle_timeout";
    case TcpCloseReason::too_many: return "too_many";
    case TcpCloseReason::error: return "error";
    case TcpCloseReason::shutdown: return "shutdown";
    }
    return "unknown";
}

Endpoint to_endpoint(const asio::ip::address& address, std::uint16_t port) {
    Endpoint e;
    e.port = port;
    if (address.is_v4()) {
        e.address = IpAddress::v4(address.to_v4().to_uint());
    } else {
        const auto b = address.to_v6().to_bytes();
        // A v4 peer on a dual-stack socket shows as ::ffff:a.b.c.d; report it as the v4 it is.
        if (address.to_v6().is_v4_mapped()) {
            e.address = IpAddress::v4(asio::ip::make_address_v4(asio::ip::v4_mapped, address.to_v6()).to_uint());
        } else {
            e.address = IpAddress::v6(std::span<const std::uint8_t, 16>(b.data(), 16));
        }
    }
    return e;
}

asio::ip::address to_asio(const IpAddress& address) {
    if (address.is_v6()) {
        asio::ip::address_v6::bytes_type b;
        std::memcpy(b.data(), address.bytes().data(), 16);
        return asio::ip::address_v6(b);
    }
    return asio::ip::address_v4(address.v4_host_order());
}

// ---- UDP ----

UdpListener::UdpListener(asio::io_context& io, const Endpoint& at, std::size_t receive_buffer_bytes,
                         MessageHandler handler)
    : socket_(io), buffer_(65536), handler_(std::move(handler)) {
    const udp::endpoint ep(to_asio(at.address), at.port);
    socket_.open(ep.protocol());
    if (ep.address().is_v6()) socket_.set_option(asio::ip::v6_only(true));
    if (receive_buffer_bytes > 0) {
        boost::system::error_code ignored;  // the kernel caps it at rmem_max; not fatal
        socket_.set_option(asio::socket_base::receive_buffer_size(static_cast<int>(receive_buffer_bytes)), ignored);
    }
    socket_.bind(ep);
    receive();
}

Endpoint UdpListener::local_endpoint() const {
    const auto ep = socket_.local_endpoint();
    return to_endpoint(ep.address(), ep.port());
}

void UdpListener::close() {
    boost::system::error_code ignored;
    socket_.close(ignored);
}

void UdpListener::receive() {
    socket_.async_receive_from(asio::buffer(buffer_), sender_, [this](boost::system::error_code ec, std::size_t n) {
        if (ec == asio::error::operation_aborted) return;
        if (!ec) handler_(ByteSpan(buffer_.data(), n), to_endpoint(sender_.address(), sender_.port()), Carrier::udp);
        receive();
    });
}

// ---- TCP ----

class TcpListener::Session : public std::enable_shared_from_this<Session> {
public:
    Session(tcp::socket socket, const hep::StreamFramer& framer, std::chrono::seconds idle_timeout,
            const MessageHandler& handler, std::shared_ptr<TcpStats> stats)
        : socket_(std::move(socket)),
          timer_(socket_.get_executor()),
          framer_(framer),
          idle_timeout_(idle_timeout),
          handler_(handler),
          stats_(std::move(stats)),
          buffer_(framer.max_frame() + kReadChunk) {
        boost::system::error_code ec;
        const auto remote = socket_.remote_endpoint(ec);
        if (!ec) peer_ = to_endpoint(remote.address(), remote.port());
    }

    void start() {
        ++stats_->open_connections;
        arm_timer();
        read();
    }

    void close(TcpCloseReason reason) {
        if (closed_) return;
        closed_ = true;
        --stats_->open_connections;
        ++stats_->closed[static_cast<std::size_t>(reason)];
        boost::system::error_code ignored;
        timer_.cancel();
        socket_.shutdown(tcp::socket::shutdown_both, ignored);
        socket_.close(ignored);
    }

private:
    static constexpr std::size_t kReadChunk = 16384;

    void arm_timer() {
        if (idle_timeout_.count() == 0) return;
        timer_.expires_after(idle_timeout_);
        timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
            if (!ec) self->close(TcpCloseReason::idle_timeout);
        });
    }

    void read() {
        socket_.async_read_some(asio::buffer(buffer_.data() + used_, buffer_.size() - used_),
                                [self = shared_from_this()](boost::system::error_code ec, std::size_t n) {
                                    self->on_read(ec, n);
                                });
    }

    void on_read(boost::system::error_code ec, std::size_t n) {
        if (closed_) return;
        if (ec) {
            close(ec == asio::error::eof || ec == asio::error::connection_reset ? TcpCloseReason::peer_closed
                                                                                : TcpCloseReason::error);
            return;
        }
        used_ += n;
        std::size_t offset = 0;
        while (true) {
            const auto status = framer_.next(ByteSpan(buffer_.data() + offset, used_ - offset));
            if (status.is_frame()) {
                handler_(ByteSpan(buffer_.data() + offset, status.size), peer_, Carrier::tcp);
                offset += status.size;
                continue;
            }
            if (status.is_error()) {
                ++stats_->frame_errors[static_cast<std::size_t>(status.error)];
                spdlog::debug("hep tcp {}: {}; closing the connection", peer_.to_string(), hep::to_string(status.error));
                close(TcpCloseReason::bad_frame);
                return;
            }
            break;  // need more
        }
        // Keep the partial frame at the front; the buffer always has room for a whole max frame.
        if (offset > 0) {
            std::memmove(buffer_.data(), buffer_.data() + offset, used_ - offset);
            used_ -= offset;
        }
        arm_timer();
        read();
    }

    tcp::socket socket_;
    asio::steady_timer timer_;
    const hep::StreamFramer& framer_;
    std::chrono::seconds idle_timeout_;
    const MessageHandler& handler_;
    std::shared_ptr<TcpStats> stats_;
    std::vector<std::uint8_t> buffer_;
    std::size_t used_ = 0;
    Endpoint peer_;
    bool closed_ = false;
};

TcpListener::TcpListener(asio::io_context& io, const Endpoint& at, std::size_t max_connections,
                         std::size_t max_frame_bytes, std::chrono::seconds idle_timeout, MessageHandler handler)
    : io_(io),
      acceptor_(io),
      max_connections_(max_connections),
      framer_(max_frame_bytes),
      idle_timeout_(idle_timeout),
      handler_(std::move(handler)),
      stats_(std::make_shared<TcpStats>()) {
    const tcp::endpoint ep(to_asio(at.address), at.port);
    acceptor_.open(ep.protocol());
    acceptor_.set_option(asio::socket_base::reuse_address(true));
    if (ep.address().is_v6()) acceptor_.set_option(asio::ip::v6_only(true));
    acceptor_.bind(ep);
    acceptor_.listen(asio::socket_base::max_listen_connections);
    accept();
}

TcpListener::~TcpListener() { close(); }

Endpoint TcpListener::local_endpoint() const {
    const auto ep = acceptor_.local_endpoint();
    return to_endpoint(ep.address(), ep.port());
}

void TcpListener::close() {
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    for (auto& weak : sessions_)
        if (auto s = weak.lock()) s->close(TcpCloseReason::shutdown);
    sessions_.clear();
}

void TcpListener::accept() {
    acceptor_.async_accept([this](boost::system::error_code ec, tcp::socket socket) {
        if (ec == asio::error::operation_aborted) return;
        if (!ec) {
            std::erase_if(sessions_, [](const auto& w) { return w.expired(); });
            if (stats_->open_connections >= max_connections_) {
                ++stats_->closed[static_cast<std::size_t>(TcpCloseReason::too_many)];
                boost::system::error_code ignored;
                socket.close(ignored);
            } else {
                auto session = std::make_shared<Session>(std::move(socket), framer_, idle_timeout_, handler_, stats_);
                sessions_.push_back(session);
                session->start();
            }
        }
        accept();
    });
}

} // namespace hepd::ingest
