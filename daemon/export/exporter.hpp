#pragma once
// Serves a Collectable over HTTP (prometheus-cpp's Exposer, civetweb underneath). Construction
// binds the socket and starts serving; every start-up problem is an ExporterError naming the
// address, so main can report it and exit.
#include "core/address.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

struct mg_context;

namespace prometheus {
class Collectable;
class Exposer;
}  // namespace prometheus

namespace hepd::metrics {

class ExporterError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct ExporterOptions {
    // 0.0.0.0 or a local IPv4 address; an IPv6 address needs a civetweb built with IPv6, and
    // [::] then means every address of both families. Port 0 picks a free port (tests).
    Endpoint listen{IpAddress::v4(0u), 9469};
    std::string path = "/metrics";
    // HTTP worker threads. Scrapes are rare and short, but civetweb gives each connection a
    // worker until its request has come: a client that connects and sends nothing holds one
    // for the request timeout, so a scrape waits only when more clients than this idle at once.
    std::size_t threads = 4;
    // How long a connection may take to send its request (civetweb's default, 30 s, let two
    // idle connections hold every scrape past Prometheus' 10 s scrape timeout).
    std::chrono::milliseconds request_timeout{3000};
};

// Whether the civetweb library in use serves IPv6 (Debian 12's is built without); true when it
// cannot be asked. The configuration is checked against it (config::Capabilities).
bool serves_ipv6() noexcept;

class Exporter {
public:
    // Throws ExporterError when the path is not a plain absolute path, the address is empty, or
    // the address cannot be listened on (in use, not local, IPv6 unsupported).
    Exporter(const ExporterOptions& options, std::shared_ptr<prometheus::Collectable> collectable);
    ~Exporter();
    Exporter(const Exporter&) = delete;
    Exporter& operator=(const Exporter&) = delete;

    // The address actually listened on (the real port when 0 was asked for).
    Endpoint local_endpoint() const noexcept { return local_; }
    // "http://0.0.0.0:9469/metrics"
    std::string url() const;
    // Stops serving and waits for scrapes in progress (without one, it returns in a few tens of
    // milliseconds rather than up to civetweb's 2 s poll quantum); call before the sources the
    // collectable reads are destroyed. Idempotent; the destructor does it too.
    void stop() noexcept;

private:
    Endpoint local_;
    std::string path_;
    std::shared_ptr<prometheus::Collectable> collectable_;  // the Exposer keeps only a weak_ptr
    std::unique_ptr<prometheus::Exposer> exposer_;
    const mg_context* context_ = nullptr;  // civetweb's, to which requests are matched (exporter.cpp)
};

// civetweb's "listening_ports" form of an endpoint: "0.0.0.0:9469", "[::1]:9469", "+9469" (the
// IPv6 wildcard, dual-stack).
std::string listening_ports_spec(const Endpoint& at);

}  // namespace hepd::metrics
