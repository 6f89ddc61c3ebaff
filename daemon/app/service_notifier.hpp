#pragma once
// The service manager's notification protocol (sd_notify(3)): one datagram a state change
// ("READY=1", "WATCHDOG=1", "STOPPING=1") to the AF_UNIX socket named by $NOTIFY_SOCKET. systemd
// documents the protocol as stable for reimplementation; libsystemd would link six more shared
// libraries (gcrypt, lzma, zstd, lz4, cap, gpg-error) into a network-facing daemon for one
// sendto(), and cost every start about 3 ms of loading.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace hepd::app {

// What the environment asks for. Unset or unusable variables leave a part off: never an error,
// as a daemon started by hand has none of them.
struct NotifyTarget {
    std::string address;                            // sun_path bytes; a leading '\0' is abstract
    std::chrono::microseconds watchdog_interval{};  // WatchdogSec=; 0: no watchdog
    std::string problem;                            // why NOTIFY_SOCKET was set but is not used
};

// Pure: the variables' values (null when unset) and this process's id. An abstract socket is
// written "@name"; WATCHDOG_PID, when set, must name this process (the manager's main PID).
NotifyTarget parse_notify_target(const char* notify_socket, const char* watchdog_usec, const char* watchdog_pid,
                                 pid_t self);

class ServiceNotifier {
public:
    ServiceNotifier() = default;  // off
    explicit ServiceNotifier(NotifyTarget target);
    static ServiceNotifier from_environment();  // returned in place: no copy, no move
    ~ServiceNotifier();
    ServiceNotifier(const ServiceNotifier&) = delete;
    ServiceNotifier& operator=(const ServiceNotifier&) = delete;

    bool enabled() const noexcept { return !target_.address.empty(); }
    std::chrono::microseconds watchdog_interval() const noexcept { return target_.watchdog_interval; }
    const std::string& problem() const noexcept { return target_.problem; }

    // Sends one state; false (errno set) when the manager could not be told. Without a target it
    // does nothing and succeeds.
    bool notify(std::string_view state) noexcept;

private:
    NotifyTarget target_;
    int fd_ = -1;
};

}  // namespace hepd::app
