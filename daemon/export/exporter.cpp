#include "export/exporter.hpp"

#include <prometheus/collectable.h>
#include <prometheus/exposer.h>

#if defined(HEPD_HAVE_CIVETWEB_H)
#include <civetweb.h>
#endif

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <array>
#include <cstring>
#include <system_error>
#include <vector>

namespace hepd::metrics {

namespace {

bool civetweb_has_ipv6() noexcept {
#if defined(HEPD_HAVE_CIVETWEB_H)
    return mg_check_feature(8) != 0;  // 8: built with USE_IPV6
#else
    return true;  // unknown: let the bind tell
#endif
}

bool plain_path(const std::string& path) noexcept {
    if (path.empty() || path.front() != '/') return false;
    for (const char c : path) {
        const bool printable = c > ' ' && c < 0x7f;
        if (!printable || c == '?' || c == '#' || c == '%' || c == '\\') return false;
    }
    return true;
}

// civetweb only says "null context"; binding the same address ourselves names the real cause
// (in use, not a local address, permission) for the start-up error.
std::string bind_failure_reason(const Endpoint& at) {
    sockaddr_storage storage{};
    socklen_t length = 0;
    if (at.address.is_v4()) {
        auto* sin = reinterpret_cast<sockaddr_in*>(&storage);
        sin->sin_family = AF_INET;
        sin->sin_port = htons(at.port);
        std::memcpy(&sin->sin_addr, at.address.bytes().data(), 4);
        length = sizeof(sockaddr_in);
    } else {
        auto* sin6 = reinterpret_cast<sockaddr_in6*>(&storage);
        sin6->sin6_family = AF_INET6;
        sin6->sin6_port = htons(at.port);
        std::memcpy(&sin6->sin6_addr, at.address.bytes().data(), 16);
        length = sizeof(sockaddr_in6);
    }
    const int fd = ::socket(storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return std::system_category().message(errno);
    const int on = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);  // as civetweb does
    const int rc = ::bind(fd, reinterpret_cast<const sockaddr*>(&storage), length);
    const int error = errno;
    ::close(fd);
    if (rc != 0) return std::system_category().message(error);
    return "the HTTP server (civetweb) did not start";
}

} // namespace

std::string listening_ports_spec(const Endpoint& at) {
    const std::string port = std::to_string(at.port);
    if (at.address.is_v4()) return at.address.to_string() + ":" + port;
    if (at.address == IpAddress{} || at.address == IpAddress::v6(std::array<std::uint8_t, 16>{}))
        return "+" + port;
    return "[" + at.address.to_string() + "]:" + port;
}

Exporter::Exporter(const ExporterOptions& options, std::shared_ptr<prometheus::Collectable> collectable)
    : local_(options.listen), path_(options.path), collectable_(std::move(collectable)) {
    const std::string where = options.listen.to_string();
    if (!plain_path(path_))
        throw ExporterError("metrics path \"" + path_ + "\": expected an absolute path such as /metrics");
    if (options.listen.address.empty()) throw ExporterError("metrics listen address is empty");
    if (!collectable_) throw ExporterError("no metrics to serve");
    if (options.listen.address.is_v6() && !civetweb_has_ipv6())
        throw ExporterError("cannot serve metrics on " + where +
                            ": the civetweb library in use was built without IPv6 support; listen on an IPv4 "
                            "address instead (0.0.0.0:" + std::to_string(options.listen.port) + " for all)");
    try {
        exposer_ = std::make_unique<prometheus::Exposer>(
            std::vector<std::string>{"listening_ports", listening_ports_spec(options.listen), "num_threads",
                                     std::to_string(options.threads == 0 ? 1 : options.threads)});
    } catch (const std::exception&) {
        throw ExporterError("cannot serve metrics on " + where + ": " + bind_failure_reason(options.listen));
    }
    exposer_->RegisterCollectable(collectable_, path_);
    const std::vector<int> ports = exposer_->GetListeningPorts();
    if (!ports.empty() && ports.front() > 0 && ports.front() <= 0xffff)
        local_.port = static_cast<std::uint16_t>(ports.front());
}

Exporter::~Exporter() { stop(); }

void Exporter::stop() noexcept { exposer_.reset(); }

std::string Exporter::url() const { return "http://" + local_.to_string() + path_; }

} // namespace hepd::metrics
