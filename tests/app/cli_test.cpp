// Runs the real hepd binary: the command line is what operators touch first.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

struct Run {
    int status = -1;
    std::string output;  // stdout and stderr together
};

Run run(const std::string& args) {
    Run r;
    const std::string cmd = std::string(HEPD_BINARY) + " " + args + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    REQUIRE(p != nullptr);
    std::array<char, 4096> buf{};
    while (std::fgets(buf.data(), static_cast<int>(buf.size()), p) != nullptr) r.output += buf.data();
    const int st = pclose(p);
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return r;
}

std::string write_temp(const std::string& name, const std::string& text) {
    const auto path = (std::filesystem::temp_directory_path() / name).string();
    std::ofstream(path) << text;
    return path;
}

}  // namespace

TEST_CASE("hepd --version and --help", "[app]") {
    auto v = run("--version");
    CHECK(v.status == 0);
    CHECK(v.output.rfind("hepd 0.", 0) == 0);
    CHECK(v.output.find("commit") != std::string::npos);

    auto h = run("--help");
    CHECK(h.status == 0);
    for (const char* flag : {"--config", "--hep-listen", "--hep-rate-limit", "--metrics-listen", "--state-dir",
                             "--cores", "--log-level", "check-config", "0 means unlimited"}) {
        INFO(flag);
        CHECK(h.output.find(flag) != std::string::npos);
    }
    // Every subcommand has the same help, even where its arguments are missing.
    for (const char* args : {"-h", "pcap --help", "check-config --help", "snapshot show --help", "snapshot -h"}) {
        INFO(args);
        auto sub = run(args);
        CHECK(sub.status == 0);
        CHECK(sub.output == h.output);
    }
}

TEST_CASE("hepd check-config accepts the shipped configuration", "[app]") {
    auto r = run("check-config " HEPD_SOURCE_DIR "/config/hepd.yaml");
    CHECK(r.status == 0);
    CHECK(r.output.find("configuration ok") != std::string::npos);

    auto printed = run("check-config " HEPD_SOURCE_DIR "/config/hepd.yaml --print");
    CHECK(printed.status == 0);
    CHECK(printed.output.find("listen:") != std::string::npos);
}

TEST_CASE("a bad configuration names the key and the line, and exits 78", "[app]") {
    const auto unknown = write_temp("hepd_cli_unknown.yaml", "log_level: info\nhep:\n  udp:\n    bogus_key: 1\n");
    auto r = run("check-config " + unknown);
    CHECK(r.status == 78);
    CHECK(r.output.find("hep.udp.bogus_key") != std::string::npos);
    CHECK(r.output.find(":4:") != std::string::npos);

    const auto bad_type = write_temp("hepd_cli_type.yaml", "hep:\n  tcp:\n    max_connections: lots\n");
    auto t = run("check-config " + bad_type);
    CHECK(t.status == 78);
    CHECK(t.output.find("hep.tcp.max_connections") != std::string::npos);
    CHECK(t.output.find(":3:") != std::string::npos);

    auto flag = run("--cores many");
    CHECK(flag.status == 78);
    CHECK(flag.output.find("--cores") != std::string::npos);

    auto missing = run("check-config /nonexistent/hepd.yaml");
    CHECK(missing.status == 78);
}

TEST_CASE("usage errors exit 64", "[app]") {
    CHECK(run("--no-such-flag").status == 64);
    CHECK(run("--config").status == 64);
    CHECK(run("check-config").status == 64);
}

TEST_CASE("a port already in use is a clear start-up error", "[app]") {
    // Hold a UDP port on loopback, then ask hepd for the same one.
    const int fd = socket(AF_INET, SOCK_DGRAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    socklen_t len = sizeof addr;
    REQUIRE(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    const std::string at = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));

    auto r = run("--hep-listen " + at);
    close(fd);
    CHECK(r.status == 69);
    CHECK(r.output.find("cannot listen on " + at) != std::string::npos);
    CHECK(r.output.find("in use") != std::string::npos);
}

TEST_CASE("flags are checked together, not against a value another flag replaces", "[app]") {
    // The file's HEP address takes the port --metrics-listen asks for; --hep-listen moves it.
    const auto file = write_temp("hepd_cli_flags.yaml", "hep:\n  listen: [\"0.0.0.0:39070\"]\n");
    const std::string pcap = HEPD_SOURCE_DIR "/tests/pcap/data/sip_tcp.pcap";
    auto r =
        run("pcap " + pcap + " --config " + file + " --hep-listen 127.0.0.1:39071 --metrics-listen 127.0.0.1:39070");
    CHECK(r.status == 0);
    CHECK(r.output.find("clashes") == std::string::npos);
    // Without the second flag the clash stays, named after the flag that set the key.
    auto clash = run("pcap " + pcap + " --config " + file + " --metrics-listen 127.0.0.1:39070");
    CHECK(clash.status == 78);
    CHECK(clash.output.find("--metrics-listen: metrics.listen: 127.0.0.1:39070 clashes with HEP over TCP on "
                            "0.0.0.0:39070") != std::string::npos);
}

TEST_CASE("check-config refuses what the daemon could never start with", "[app]") {
    // Two HEP addresses the kernel would not bind together.
    const auto overlap =
        write_temp("hepd_cli_overlap.yaml", "hep:\n  listen: [\"0.0.0.0:39200\", \"127.0.0.1:39200\"]\n");
    auto r = run("check-config " + overlap);
    CHECK(r.status == 78);
    CHECK(r.output.find("hep.listen[1]: 127.0.0.1:39200 overlaps 0.0.0.0:39200") != std::string::npos);

    // An IPv6 metrics address: check-config and the daemon's start agree, whatever the civetweb
    // in use (Debian 12's has no IPv6: both refuse it with status 78; one with IPv6 serves).
    const auto state = (std::filesystem::temp_directory_path() / "hepd_cli_v6_state").string();
    const auto v6 = write_temp("hepd_cli_v6.yaml",
                               "hep:\n  listen: [\"127.0.0.1:0\"]\nmetrics:\n  listen: \"[::1]:0\"\n"
                               "state:\n  dir: \"" +
                                   state + "\"\n");
    auto check = run("check-config " + v6);
    auto start = run("--config " + v6 + " 2>&1 & p=$!; sleep 2; kill $p 2>/dev/null; wait $p; echo status=$?");
    INFO(check.output << start.output);
    if (check.status == 0) {
        CHECK(start.output.find("without IPv6") == std::string::npos);
    } else {
        CHECK(check.status == 78);
        CHECK(check.output.find("metrics.listen: cannot serve metrics on [::1]:0: the civetweb library in use was "
                                "built without IPv6 support") != std::string::npos);
        CHECK(start.output.find("status=78") != std::string::npos);
    }
}
