#include "export/exporter.hpp"

#include <prometheus/collectable.h>
#include <prometheus/exposer.h>

#include <CivetServer.h>
#include <arpa/inet.h>
#include <civetweb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace hepd::metrics {

namespace {

constexpr auto kKnockInterval = std::chrono::milliseconds(5);

// civetweb matches a handler's URI as a prefix and, failing that, as a case-insensitive pattern
// (/metricsXYZ, /METRICS were served), and prometheus-cpp's handler answers GET only (HEAD fell
// through to a 404). So every request is looked at first, in civetweb's begin_request callback:
// the path exactly, else 404; HEAD answered here; GET goes on to the handler. A callback gets no
// pointer of ours: each server's context is tied to its path when civetweb creates it
// (init_context, called from mg_start in the constructing thread).
struct ServedPaths {
    std::mutex mutex;
    std::vector<std::pair<const mg_context*, std::string>> paths;
};

ServedPaths& served_paths() {
    static ServedPaths paths;
    return paths;
}

// The Exporter being constructed in this thread: its path in, the context civetweb made out.
thread_local const std::string* starting_path = nullptr;
thread_local const mg_context* started_context = nullptr;

void on_init_context(const mg_context* context) {
    if (starting_path == nullptr) return;
    started_context = context;
    auto& served = served_paths();
    const std::lock_guard lock(served.mutex);
    std::erase_if(served.paths, [context](const auto& p) { return p.first == context; });
    served.paths.emplace_back(context, *starting_path);
}

void forget_context(const mg_context* context) {
    auto& served = served_paths();
    const std::lock_guard lock(served.mutex);
    std::erase_if(served.paths, [context](const auto& p) { return p.first == context; });
}

// 0: civetweb goes on to the handler; otherwise the request was answered here (with that status).
int on_begin_request(mg_connection* conn) {
    const mg_request_info* info = mg_get_request_info(conn);
    bool ours = false;
    {
        auto& served = served_paths();
        const std::lock_guard lock(served.mutex);
        const mg_context* context = mg_get_context(conn);
        for (const auto& [c, path] : served.paths) {
            if (c == context) ours = info->local_uri != nullptr && path == info->local_uri;
        }
    }
    if (!ours) {
        mg_send_http_error(conn, 404, "Not Found");
        return 404;
    }
    if (std::strcmp(info->request_method, "HEAD") == 0) {
        // GET's headers without the body (its length is known only once the scrape is made).
        mg_response_header_start(conn, 200);
        mg_response_header_add(conn, "Content-Type", "text/plain; charset=utf-8", -1);
        mg_response_header_send(conn);
        return 200;
    }
    return 0;
}

bool plain_path(const std::string& path) noexcept {
    if (path.empty() || path.front() != '/') return false;
    for (const char c : path) {
        const bool printable = c > ' ' && c < 0x7f;
        if (!printable || c == '?' || c == '#' || c == '%' || c == '\\') return false;
    }
    return true;
}

socklen_t to_sockaddr(const Endpoint& at, sockaddr_storage& storage) noexcept {
    storage = {};
    if (at.address.is_v4()) {
        auto* sin = reinterpret_cast<sockaddr_in*>(&storage);
        sin->sin_family = AF_INET;
        sin->sin_port = htons(at.port);
        std::memcpy(&sin->sin_addr, at.address.bytes().data(), 4);
        return sizeof(sockaddr_in);
    }
    auto* sin6 = reinterpret_cast<sockaddr_in6*>(&storage);
    sin6->sin6_family = AF_INET6;
    sin6->sin6_port = htons(at.port);
    std::memcpy(&sin6->sin6_addr, at.address.bytes().data(), 16);
    return sizeof(sockaddr_in6);
}

// civetweb only says "null context"; binding the same address ourselves names the real cause
// (in use, not a local address, permission) for the start-up error.
std::string bind_failure_reason(const Endpoint& at) {
    sockaddr_storage storage{};
    const socklen_t length = to_sockaddr(at, storage);
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

// Connects to the listening socket and hangs up at once; a wildcard address through loopback.
void knock(const Endpoint& listening) noexcept {
    Endpoint at = listening;
    if (at.address == IpAddress::v4(0u)) at.address = IpAddress::v4(0x7f000001u);
    if (at.address == IpAddress::v6(std::array<std::uint8_t, 16>{})) {
        std::array<std::uint8_t, 16> loopback{};
        loopback[15] = 1;
        at.address = IpAddress::v6(loopback);
    }
    sockaddr_storage storage{};
    const socklen_t length = to_sockaddr(at, storage);
    const int fd = ::socket(storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return;
    // A full backlog would make connect() wait for SYN retries.
    const timeval timeout{0, 100'000};
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
    // Refused, timed out or accepted: any outcome will do, the attempt is what wakes the poll.
    (void)::connect(fd, reinterpret_cast<const sockaddr*>(&storage), length);
    ::close(fd);
}

}  // namespace

bool serves_ipv6() noexcept {
    return mg_check_feature(8) != 0;  // 8: built with USE_IPV6
}

std::string listening_ports_spec(const Endpoint& at) {
    const std::string port = std::to_string(at.port);
    if (at.address.is_v4()) return at.address.to_string() + ":" + port;
    if (at.address == IpAddress{} || at.address == IpAddress::v6(std::array<std::uint8_t, 16>{})) return "+" + port;
    return "[" + at.address.to_string() + "]:" + port;
}

Exporter::Exporter(const ExporterOptions& options, std::shared_ptr<prometheus::Collectable> collectable)
    : local_(options.listen), path_(options.path), collectable_(std::move(collectable)) {
    const std::string where = options.listen.to_string();
    if (!plain_path(path_))
        throw ExporterError("metrics path \"" + path_ + "\": expected an absolute path such as /metrics");
    if (options.listen.address.empty()) throw ExporterError("metrics listen address is empty");
    if (!collectable_) throw ExporterError("no metrics to serve");
    if (options.listen.address.is_v6() && !serves_ipv6())
        throw ExporterError("cannot serve metrics on " + where +
                            ": the civetweb library in use was built without IPv6 support; listen on an IPv4 "
                            "address instead (0.0.0.0:" +
                            std::to_string(options.listen.port) + " for all)");
    CivetCallbacks callbacks;
    callbacks.init_context = on_init_context;
    callbacks.begin_request = on_begin_request;
    starting_path = &path_;
    started_context = nullptr;
    try {
        exposer_ = std::make_unique<prometheus::Exposer>(
            std::vector<std::string>{"listening_ports", listening_ports_spec(options.listen), "num_threads",
                                     std::to_string(options.threads == 0 ? 1 : options.threads), "request_timeout_ms",
                                     std::to_string(options.request_timeout.count())},
            &callbacks);
    } catch (const std::exception&) {
        starting_path = nullptr;
        if (started_context != nullptr) forget_context(started_context);
        throw ExporterError("cannot serve metrics on " + where + ": " + bind_failure_reason(options.listen));
    }
    starting_path = nullptr;
    context_ = started_context;
    exposer_->RegisterCollectable(collectable_, path_);
    const std::vector<int> ports = exposer_->GetListeningPorts();
    if (!ports.empty() && ports.front() > 0 && ports.front() <= 0xffff)
        local_.port = static_cast<std::uint16_t>(ports.front());
}

Exporter::~Exporter() { stop(); }

void Exporter::stop() noexcept {
    if (!exposer_) return;
    // civetweb (1.15) stops by raising a flag and joining its master thread, which polls the
    // listening socket in SOCKET_TIMEOUT_QUANTUM (2 s) steps and looks at the flag only when a
    // poll returns: up to 2 s for nothing. A connection makes the poll return; knocking until
    // the Exposer is gone lands one after the flag is raised (earlier knocks are accepted and
    // closed at once, as a scraper that hung up).
    std::atomic<bool> stopped{false};
    std::thread knocker;
    try {
        knocker = std::thread([this, &stopped] {
            while (!stopped.load(std::memory_order_acquire)) {
                knock(local_);
                std::this_thread::sleep_for(kKnockInterval);
            }
        });
    } catch (const std::system_error&) {
        // No thread to spare: the slow stop still stops.
    }
    exposer_.reset();
    stopped.store(true, std::memory_order_release);
    if (knocker.joinable()) knocker.join();
    forget_context(context_);
}

std::string Exporter::url() const { return "http://" + local_.to_string() + path_; }

}  // namespace hepd::metrics
