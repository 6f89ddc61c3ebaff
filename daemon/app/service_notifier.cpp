#include "app/service_notifier.hpp"

#include "core/decimal.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace hepd::app {

NotifyTarget parse_notify_target(const char* notify_socket, const char* watchdog_usec, const char* watchdog_pid,
                                 pid_t self) {
    NotifyTarget t;
    const std::string_view socket = notify_socket == nullptr ? std::string_view{} : notify_socket;
    if (socket.empty()) return t;  // not started by a service manager, or told not to notify
    if (socket.front() != '/' && socket.front() != '@') {
        t.problem = "NOTIFY_SOCKET is neither a path nor an abstract name (@name)";
        return t;
    }
    if (socket.size() < 2 || socket.size() >= sizeof(sockaddr_un::sun_path)) {
        t.problem = "NOTIFY_SOCKET is empty or longer than a socket address holds";
        return t;
    }
    t.address = std::string(socket);
    if (socket.front() == '@') t.address[0] = '\0';

    // Both set by the manager for its main process only: a child that inherited them must not
    // pet the watchdog in its parent's name.
    const auto usec = parse_decimal<std::uint64_t>(watchdog_usec == nullptr ? "" : watchdog_usec);
    if (!usec || *usec == 0) return t;
    if (watchdog_pid != nullptr && parse_decimal<long long>(watchdog_pid) != static_cast<long long>(self)) return t;
    t.watchdog_interval = std::chrono::microseconds(static_cast<std::int64_t>(*usec));
    return t;
}

ServiceNotifier::ServiceNotifier(NotifyTarget target) : target_(std::move(target)) {
    if (enabled()) fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
}

// Read once, when the daemon is built: before any of its threads exist.
ServiceNotifier ServiceNotifier::from_environment() {
    // NOLINTBEGIN(concurrency-mt-unsafe)
    const char* socket = std::getenv("NOTIFY_SOCKET");
    const char* usec = std::getenv("WATCHDOG_USEC");
    const char* pid = std::getenv("WATCHDOG_PID");
    // NOLINTEND(concurrency-mt-unsafe)
    return ServiceNotifier(parse_notify_target(socket, usec, pid, ::getpid()));
}

ServiceNotifier::~ServiceNotifier() {
    if (fd_ >= 0) ::close(fd_);
}

bool ServiceNotifier::notify(std::string_view state) noexcept {
    if (!enabled()) return true;
    if (fd_ < 0) return false;  // socket() failed; errno was set then
    sockaddr_un to{};
    to.sun_family = AF_UNIX;
    std::memcpy(to.sun_path, target_.address.data(), target_.address.size());
    // An abstract name is exactly its bytes: the length excludes the unused rest of sun_path.
    const auto length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + target_.address.size() +
                                               (target_.address[0] == '\0' ? 0 : 1));
    ssize_t sent = -1;
    do {
        sent = ::sendto(fd_, state.data(), state.size(), MSG_NOSIGNAL, reinterpret_cast<const sockaddr*>(&to), length);
    } while (sent < 0 && errno == EINTR);
    return sent == static_cast<ssize_t>(state.size());
}

}  // namespace hepd::app
