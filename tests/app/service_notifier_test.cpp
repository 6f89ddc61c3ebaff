#include "app/service_notifier.hpp"

#include <catch2/catch.hpp>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>

using hepd::app::NotifyTarget;
using hepd::app::parse_notify_target;
using hepd::app::ServiceNotifier;
using namespace std::chrono_literals;

TEST_CASE("notify target: what the service manager's variables ask for", "[app][notify]") {
    const pid_t self = 4242;
    SECTION("unset: nothing to notify, not a problem") {
        const NotifyTarget t = parse_notify_target(nullptr, nullptr, nullptr, self);
        CHECK(t.address.empty());
        CHECK(t.problem.empty());
        CHECK(t.watchdog_interval == 0us);
        CHECK(parse_notify_target("", "1000000", nullptr, self).address.empty());
    }
    SECTION("a path, and an abstract name whose '@' becomes a NUL") {
        CHECK(parse_notify_target("/run/systemd/notify", nullptr, nullptr, self).address == "/run/systemd/notify");
        CHECK(parse_notify_target("@/org/systemd/notify", nullptr, nullptr, self).address ==
              std::string("\0/org/systemd/notify", 20));
    }
    SECTION("unusable names are refused with a reason") {
        for (const char* bad : {"notify", "vsock:2:1234", "@"}) {
            const NotifyTarget t = parse_notify_target(bad, nullptr, nullptr, self);
            CHECK(t.address.empty());
            CHECK_FALSE(t.problem.empty());
        }
        const std::string too_long = "/" + std::string(sizeof(sockaddr_un::sun_path), 'x');
        CHECK(parse_notify_target(too_long.c_str(), nullptr, nullptr, self).address.empty());
    }
    SECTION("the watchdog: WatchdogSec= for this process only") {
        CHECK(parse_notify_target("/n", "3000000", nullptr, self).watchdog_interval == 3s);
        CHECK(parse_notify_target("/n", "3000000", "4242", self).watchdog_interval == 3s);
        // Another process's watchdog (a child that inherited the environment), or nonsense.
        CHECK(parse_notify_target("/n", "3000000", "17", self).watchdog_interval == 0us);
        CHECK(parse_notify_target("/n", "3000000", "42x", self).watchdog_interval == 0us);
        for (const char* bad : {"0", "-5", "3s", "", "99999999999999999999999"})
            CHECK(parse_notify_target("/n", bad, nullptr, self).watchdog_interval == 0us);
        // No socket, no watchdog: there is nobody to pet it for.
        CHECK(parse_notify_target(nullptr, "3000000", nullptr, self).watchdog_interval == 0us);
    }
}

namespace {

// A bound datagram socket standing in for the service manager.
struct Manager {
    explicit Manager(const std::string& address) {
        fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        REQUIRE(fd >= 0);
        sockaddr_un at{};
        at.sun_family = AF_UNIX;
        std::memcpy(at.sun_path, address.data(), address.size());
        const auto length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + address.size());
        REQUIRE(::bind(fd, reinterpret_cast<const sockaddr*>(&at), length) == 0);
        timeval wait{2, 0};
        REQUIRE(::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof(wait)) == 0);
    }
    ~Manager() { ::close(fd); }
    Manager(const Manager&) = delete;
    Manager& operator=(const Manager&) = delete;

    std::string receive() const {
        char buffer[256];
        const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
        return n < 0 ? std::string("(nothing)") : std::string(buffer, static_cast<std::size_t>(n));
    }
    int fd = -1;
};

}  // namespace

TEST_CASE("notifier: states reach a manager on a path or an abstract socket", "[app][notify]") {
    SECTION("a path") {
        char dir[] = "/tmp/hepd-notify.XXXXXX";
        REQUIRE(::mkdtemp(dir) != nullptr);
        const std::string path = std::string(dir) + "/notify";
        {
            const Manager manager(path);
            ServiceNotifier notifier(parse_notify_target(path.c_str(), nullptr, nullptr, ::getpid()));
            REQUIRE(notifier.enabled());
            CHECK(notifier.notify("READY=1"));
            CHECK(notifier.notify("STOPPING=1"));
            CHECK(manager.receive() == "READY=1");
            CHECK(manager.receive() == "STOPPING=1");
        }
        ::unlink(path.c_str());
        ::rmdir(dir);
    }
    SECTION("an abstract name") {
        const std::string name = "@hepd-notify-test-" + std::to_string(::getpid());
        std::string address = name;
        address[0] = '\0';
        const Manager manager(address);
        ServiceNotifier notifier(parse_notify_target(name.c_str(), "1000000", nullptr, ::getpid()));
        CHECK(notifier.watchdog_interval() == 1s);
        CHECK(notifier.notify("WATCHDOG=1"));
        CHECK(manager.receive() == "WATCHDOG=1");
    }
    SECTION("nobody listening: a failure the daemon can report, not a crash") {
        ServiceNotifier notifier(parse_notify_target("/nonexistent/hepd/notify", nullptr, nullptr, ::getpid()));
        CHECK_FALSE(notifier.notify("READY=1"));
    }
    SECTION("no manager: nothing sent, nothing failed") {
        ServiceNotifier notifier;
        CHECK_FALSE(notifier.enabled());
        CHECK(notifier.notify("READY=1"));
    }
}
