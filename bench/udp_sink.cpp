// The floor of any UDP collector on this machine, for bench/daemon_load.py: one thread receives
// datagrams as hepd's receive thread does and throws them away. Whatever CPU it spends a packet is
// the kernel's receive and copy plus the thread's wake-ups, which no collector avoids; a
// collector's figure above it is its own work.
//   udp_sink --listen HOST:PORT [--rcvbuf BYTES] [--max-blind-us N]
// As hepd (ingest/udp_receiver.cpp): recvmmsg of 64 into 64 KiB slots, an 8 MiB SO_RCVBUF, and
// once traffic flows the thread stops watching the socket for a while and reads what came
// meanwhile, the window doubling (up to --max-blind-us, hepd's max_batch_age: 100 ms) while a
// wake-up finds less than a quarter of the buffer filled and halving when it finds more than half
// or more than 64 receive calls can take (then it reads on at once).
// A blind wake-up that finds nothing goes back to waiting for the socket, so an idle sink costs
// nothing. SIGUSR1 prints {"packets": N, "bytes": B} and a newline on stdout; SIGTERM or SIGINT
// ends it.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr std::size_t kBatch = 64;         // hepd's hep.udp.batch_size default
constexpr std::size_t kSlotBytes = 65536;  // a whole UDP datagram, as hepd's slots
volatile std::sig_atomic_t report_requested = 0;
volatile std::sig_atomic_t stop_requested = 0;

void on_report(int /*signal*/) { report_requested = 1; }
void on_stop(int /*signal*/) { stop_requested = 1; }

[[noreturn]] void usage_error(const char* why) {
    std::fprintf(stderr, "udp_sink: %s\nusage: udp_sink --listen HOST:PORT [--rcvbuf BYTES] [--max-blind-us N]\n", why);
    std::exit(2);
}

// Handlers without SA_RESTART: a signal interrupts the blocking recvmmsg (EINTR).
void install(int signal, void (*handler)(int)) {
    struct sigaction sa {};
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    sigaction(signal, &sa, nullptr);
}

}  // namespace

int main(int argc, char** argv) {
    std::string listen;
    int rcvbuf = 8 << 20;  // hepd's hep.udp.receive_buffer_bytes default
    long max_blind_us = 100000;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (i + 1 >= argc) usage_error("missing value");
        if (arg == "--listen") {
            listen = argv[++i];
        } else if (arg == "--rcvbuf") {
            rcvbuf = std::atoi(argv[++i]);
        } else if (arg == "--max-blind-us") {
            max_blind_us = std::atol(argv[++i]);
        } else {
            usage_error("unknown option");
        }
    }
    const auto colon = listen.rfind(':');
    if (colon == std::string::npos) usage_error("--listen HOST:PORT is required");
    sockaddr_in at{};
    at.sin_family = AF_INET;
    at.sin_port = htons(static_cast<std::uint16_t>(std::atoi(listen.c_str() + colon + 1)));
    if (inet_pton(AF_INET, listen.substr(0, colon).c_str(), &at.sin_addr) != 1) usage_error("bad IPv4 address");

    const int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0) {
        std::perror("udp_sink: socket");
        return 1;
    }
    // As hepd: SO_RCVBUFFORCE when root, else the capped SO_RCVBUF.
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf) != 0)
        (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    if (bind(fd, reinterpret_cast<const sockaddr*>(&at), sizeof at) != 0) {
        std::perror("udp_sink: bind");
        return 1;
    }
    install(SIGUSR1, on_report);
    install(SIGTERM, on_stop);
    install(SIGINT, on_stop);

    std::vector<std::uint8_t> slots(kBatch * kSlotBytes);
    std::vector<iovec> iov(kBatch);
    std::vector<sockaddr_storage> from(kBatch);
    std::vector<mmsghdr> headers(kBatch);
    for (std::size_t i = 0; i < kBatch; ++i) {
        iov[i] = iovec{slots.data() + i * kSlotBytes, kSlotBytes};
        headers[i].msg_hdr.msg_name = &from[i];
        headers[i].msg_hdr.msg_iov = &iov[i];
        headers[i].msg_hdr.msg_iovlen = 1;
    }
    int granted = 0;
    socklen_t granted_size = sizeof granted;
    getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &granted, &granted_size);
    const double budget = granted;
    constexpr long kFirstBlindUs = 1000;
    constexpr double kQueuedOverheadBytes = 1024;  // hepd's estimate of a queued datagram's skb
    constexpr int kRoundsPerWakeup = 64;           // hepd's
    std::uint64_t packets = 0;
    std::uint64_t bytes = 0;
    long blind_us = kFirstBlindUs;
    bool watch = true;     // wait for the socket; else sleep blind_us, then read
    bool backlog = false;  // the last wake-up left datagrams in the socket: read on at once
    while (stop_requested == 0) {
        if (!watch && !backlog) usleep(static_cast<useconds_t>(blind_us));
        std::size_t found = 0;
        std::size_t found_bytes = 0;
        backlog = true;  // unless a round finds the socket drained
        for (int round = 0; round < kRoundsPerWakeup; ++round) {
            for (auto& h : headers) h.msg_hdr.msg_namelen = sizeof(sockaddr_storage);
            const int flags = watch && round == 0 ? MSG_WAITFORONE : MSG_DONTWAIT;
            const int n = recvmmsg(fd, headers.data(), kBatch, flags, nullptr);
            if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                std::perror("udp_sink: recvmmsg");
                return 1;
            }
            if (n <= 0) {  // EAGAIN: drained; EINTR: a signal, looked at below
                backlog = false;
                break;
            }
            found += static_cast<std::size_t>(n);
            for (int i = 0; i < n; ++i) found_bytes += headers[static_cast<std::size_t>(i)].msg_len;
            if (static_cast<std::size_t>(n) < kBatch) {
                backlog = false;
                break;
            }
        }
        packets += found;
        bytes += found_bytes;
        // A signal cuts the wait short; what came until then is counted first.
        if (report_requested != 0) {
            report_requested = 0;
            std::printf("{\"packets\": %llu, \"bytes\": %llu}\n", static_cast<unsigned long long>(packets),
                        static_cast<unsigned long long>(bytes));
            std::fflush(stdout);
        }
        if (found == 0) {
            watch = true;  // a quiet spell: wait for the next datagram
            continue;
        }
        const double filled = static_cast<double>(found_bytes) + static_cast<double>(found) * kQueuedOverheadBytes;
        if (backlog || filled > budget / 2) {
            blind_us /= 2;
        } else if (filled < budget / 4) {
            blind_us = std::min(std::max(blind_us, kFirstBlindUs) * 2, max_blind_us);
        }
        watch = blind_us < kFirstBlindUs;
    }
    close(fd);
    return 0;
}
