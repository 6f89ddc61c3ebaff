// HEP load generator: replays generated SIP calls as HEPv3 to a collector at a target rate.
//   hepd_load --to HOST:PORT [--tcp] [--rate PPS] [--duration S] [--calls N] [--media-seconds S]
//             [--rtcp-every N] [--batch N] [--senders N] [--capture-id N] [--auth-key KEY] [--seed S]
//             [--pcap-out FILE]
//
// Each SIP packet of bench/gen/call_generator becomes a HEPv3 message of type 1 (SIP); raw RTP is
// not sent, but every --rtcp-every media packets of a stream (and at its end) the receiving side
// reports on it as rtpengine does: an RTCP-JSON message of type 5 whose correlation id is the
// Call-ID. The corpus is encoded once and replayed in cycles; each cycle rewrites the Call-IDs
// ("gen-" becomes a cycle tag), so every cycle is a fresh set of calls. A message's capture time
// is its send time, as a real agent's is: a cycle of 200 calls spans about 12 s in the corpus and
// goes out in 0.11 s at 20k/s, so the corpus' own times would run 100 times faster than the
// receiver's clock (a sender whose clock the collector steps every second). Sending is
// token-paced (--rate 0: as fast as possible) over UDP (sendmmsg, one socket per --senders, round
// robin) or TCP (one connection per --senders). Prints one JSON object: offered and sent packets,
// achieved rate, errors. --pcap-out writes the same packets (rate x duration of them, the same
// cycles) to a pcap file instead of sending them, as UDP from 127.0.0.1 to --to, frame and
// capture times paced at --rate: `hepd pcap` on that file does offline exactly the work a daemon
// does live, which is how bench/daemon_load.py compares them.
#include "core/address.hpp"
#include "core/bytes.hpp"
#include "core/time.hpp"
#include "gen/call_generator.hpp"
#include "hep/encoder.hpp"
#include "hep/message.hpp"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using namespace hepd;

namespace {

constexpr int kExitUsage = 64;

struct Options {
    Endpoint to;
    bool tcp = false;
    double rate = 10'000;  // packets per second; 0 = unpaced
    double duration = 10;  // seconds
    std::uint32_t calls = 1000;
    double media_seconds = 10;
    std::uint32_t rtcp_every = 250;  // media packets between reports (250 = 5 s at 20 ms)
    std::size_t batch = 32;
    std::size_t senders = 1;
    std::uint32_t capture_id = 2001;
    std::string auth_key;
    std::uint64_t seed = 1;
    std::string pcap_out;  // write instead of sending
};

// One encoded HEP message and the places a cycle rewrites.
struct Encoded {
    Timestamp time;  // in the corpus: its order
    std::vector<std::uint8_t> bytes;
    std::size_t seconds_at = 0;           // offset of the chunk 0x09 value
    std::size_t micros_at = 0;            // offset of the chunk 0x0a value
    std::vector<std::size_t> call_id_at;  // offsets of "gen-" in Call-IDs
};

struct StreamKey {
    Endpoint src;
    Endpoint dst;
    friend auto operator<=>(const StreamKey&, const StreamKey&) = default;
};

// Receiver-side view of one RTP stream, as an RTCP receiver report sees it (RFC 3550 A.3, A.8).
struct StreamState {
    std::uint32_t ssrc = 0;
    std::uint32_t first_ext = 0;
    std::uint32_t highest_ext = 0;
    std::uint32_t cycles = 0;
    std::uint16_t last_seq = 0;
    std::uint64_t received = 0;
    std::uint64_t expected_prior = 0;
    std::uint64_t received_prior = 0;
    double jitter = 0;  // RTP timestamp units
    std::int64_t last_transit = 0;
    bool started = false;
    Timestamp last_time{};
};

struct PendingReport {
    Timestamp time;
    StreamKey key;
    std::string json;
};

std::optional<std::uint64_t> parse_u64(const char* s) {
    char* end = nullptr;
    errno = 0;
    const auto v = std::strtoull(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0') return std::nullopt;
    return v;
}

std::optional<double> parse_double(const char* s) {
    char* end = nullptr;
    const double v = std::strtod(s, &end);
    if (end == s || *end != '\0' || !(v >= 0)) return std::nullopt;
    return v;
}

int usage(const char* why) {
    std::fprintf(stderr,
                 "hepd_load: %s\nusage: hepd_load --to HOST:PORT [--tcp] [--rate PPS] [--duration S] [--calls N]\n"
                 "                 [--media-seconds S] [--rtcp-every N] [--batch N] [--senders N] [--pcap-out FILE]\n"
                 "                 [--capture-id N] [--auth-key KEY] [--seed S]\n",
                 why);
    return kExitUsage;
}

std::optional<Options> parse_args(int argc, char** argv) {
    Options o;
    bool have_to = false;
    for (int i = 1; i < argc; ++i) {
        const std::string k = argv[i];
        if (k == "--tcp") {
            o.tcp = true;
            continue;
        }
        if (i + 1 >= argc) {
            usage(("missing value for " + k).c_str());
            return std::nullopt;
        }
        const char* v = argv[++i];
        auto need_u64 = [&](std::uint64_t max) -> std::optional<std::uint64_t> {
            const auto n = parse_u64(v);
            if (!n || *n > max) usage(("bad value for " + k).c_str());
            return n && *n <= max ? n : std::nullopt;
        };
        auto need_double = [&]() -> std::optional<double> {
            const auto d = parse_double(v);
            if (!d) usage(("bad value for " + k).c_str());
            return d;
        };
        if (k == "--to") {
            const auto e = parse_endpoint(v);
            if (!e || e->port == 0) {
                usage("--to needs ADDRESS:PORT with a literal address");
                return std::nullopt;
            }
            o.to = *e;
            have_to = true;
        } else if (k == "--rate") {
            const auto d = need_double();
            if (!d) return std::nullopt;
            o.rate = *d;
        } else if (k == "--duration") {
            const auto d = need_double();
            if (!d) return std::nullopt;
            o.duration = *d;
        } else if (k == "--media-seconds") {
            const auto d = need_double();
            if (!d) return std::nullopt;
            o.media_seconds = *d;
        } else if (k == "--calls") {
            const auto n = need_u64(10'000'000);
            if (!n || *n == 0) return std::nullopt;
            o.calls = static_cast<std::uint32_t>(*n);
        } else if (k == "--rtcp-every") {
            const auto n = need_u64(1'000'000);
            if (!n || *n == 0) return std::nullopt;
            o.rtcp_every = static_cast<std::uint32_t>(*n);
        } else if (k == "--batch") {
            const auto n = need_u64(1024);
            if (!n || *n == 0) return std::nullopt;
            o.batch = static_cast<std::size_t>(*n);
        } else if (k == "--senders") {
            const auto n = need_u64(1024);
            if (!n || *n == 0) return std::nullopt;
            o.senders = static_cast<std::size_t>(*n);
        } else if (k == "--capture-id") {
            const auto n = need_u64(0xffffffffULL);
            if (!n) return std::nullopt;
            o.capture_id = static_cast<std::uint32_t>(*n);
        } else if (k == "--auth-key") {
            o.auth_key = v;
        } else if (k == "--pcap-out") {
            o.pcap_out = v;
        } else if (k == "--seed") {
            const auto n = need_u64(~std::uint64_t{0});
            if (!n) return std::nullopt;
            o.seed = *n;
        } else {
            usage(("unknown option " + k).c_str());
            return std::nullopt;
        }
    }
    if (!have_to) {
        usage("--to is required");
        return std::nullopt;
    }
    return o;
}

// Finds the value offsets of chunks 0x09/0x0a and every Call-ID ("gen-" and a digit).
void locate(Encoded& e) {
    const auto& b = e.bytes;
    for (std::size_t at = 6; at + 6 <= b.size();) {
        const std::uint16_t vendor = load_be16(&b[at]);
        const std::uint16_t type = load_be16(&b[at + 2]);
        const std::uint16_t len = load_be16(&b[at + 4]);
        if (len < 6 || at + len > b.size()) break;
        if (vendor == 0 && type == hep::chunk::seconds) e.seconds_at = at + 6;
        if (vendor == 0 && type == hep::chunk::micros) e.micros_at = at + 6;
        at += len;
    }
    for (std::size_t i = 0; i + 5 <= b.size(); ++i)
        if (std::memcmp(&b[i], "gen-", 4) == 0 && b[i + 4] >= '0' && b[i + 4] <= '9') e.call_id_at.push_back(i);
}

Encoded encode(Timestamp t, const Endpoint& src, const Endpoint& dst, std::uint8_t payload_type, ByteSpan payload,
               std::string_view correlation_id, const Options& o) {
    hep::Message m;
    m.version = 3;
    m.ip_family = src.address.is_v6() ? hep::family_ipv6 : hep::family_ipv4;
    m.ip_protocol = 17;
    m.src = src;
    m.dst = dst;
    m.seconds = static_cast<std::uint32_t>(t.seconds());
    m.micros = static_cast<std::uint32_t>(t.subsec_us());
    m.payload_type = payload_type;
    m.capture_id = o.capture_id;
    m.payload = payload;
    for (auto f : {hep::Field::ip_family, hep::Field::ip_protocol, hep::Field::src_address, hep::Field::dst_address,
                   hep::Field::src_port, hep::Field::dst_port, hep::Field::seconds, hep::Field::micros,
                   hep::Field::payload_type, hep::Field::capture_id, hep::Field::payload})
        m.mark(f);
    if (!o.auth_key.empty()) {
        m.auth_key = as_bytes(o.auth_key);
        m.mark(hep::Field::auth_key);
    }
    if (!correlation_id.empty()) {
        m.correlation_id = as_bytes(correlation_id);
        m.mark(hep::Field::correlation_id);
    }
    Encoded e;
    e.time = t;
    if (!hep::encode_v3(m, e.bytes)) e.bytes.clear();
    locate(e);
    return e;
}

std::string report_json(const StreamState& s) {
    const std::uint64_t expected = std::uint64_t{s.highest_ext} - s.first_ext + 1;
    const auto lost = static_cast<std::int64_t>(expected) - static_cast<std::int64_t>(s.received);
    const std::uint64_t expected_interval = expected - s.expected_prior;
    const std::uint64_t received_interval = s.received - s.received_prior;
    const std::int64_t lost_interval =
        static_cast<std::int64_t>(expected_interval) - static_cast<std::int64_t>(received_interval);
    const std::uint64_t fraction =
        expected_interval == 0 || lost_interval <= 0
            ? 0
            : std::min<std::uint64_t>(255, (static_cast<std::uint64_t>(lost_interval) << 8) / expected_interval);
    // packets_lost is the raw 24-bit field, as rtpengine prints it.
    const auto lost24 = static_cast<std::uint32_t>(lost) & 0xffffffU;
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "{ \"ssrc\":%u,\"type\":201,\"report_count\":1,\"report_blocks\":[{\"source_ssrc\":%u,"
                  "\"highest_seq_no\":%u,\"fraction_lost\":%u,\"ia_jitter\":%u,\"packets_lost\":%u,\"lsr\":0,"
                  "\"dlsr\":0}]}",
                  s.ssrc ^ 0xa5a5a5a5U, s.ssrc, s.highest_ext, static_cast<unsigned>(fraction),
                  static_cast<unsigned>(s.jitter), lost24);
    return buf;
}

struct Corpus {
    std::vector<Encoded> messages;
    std::uint64_t sip = 0;
    std::uint64_t rtcp = 0;
};

Corpus build_corpus(const Options& o) {
    gen::CorpusOptions co;
    co.calls = o.calls;
    co.media_seconds = o.media_seconds;
    co.seed = o.seed;
    co.start = SystemClock().now();
    Corpus corpus;
    std::map<StreamKey, StreamState> streams;
    std::vector<PendingReport> reports;
    const auto truth = gen::generate(co, [&](Timestamp t, const Endpoint& src, const Endpoint& dst, ByteSpan p) {
        const bool rtp = p.size() >= 12 && (p[0] & 0xc0) == 0x80;
        if (!rtp) {
            corpus.messages.push_back(encode(t, src, dst, 1, p, {}, o));
            ++corpus.sip;
            return;
        }
        StreamState& s = streams[StreamKey{src, dst}];
        const std::uint16_t seq = load_be16(&p[2]);
        const std::uint32_t rtp_ts = load_be32(&p[4]);
        // Arrival in RTP units (8 kHz): the transit difference is what jitter measures.
        const std::int64_t arrival = t.us * 8 / 1000;
        const std::int64_t transit = arrival - static_cast<std::int64_t>(rtp_ts);
        if (!s.started) {
            s.started = true;
            s.ssrc = load_be32(&p[8]);
            s.first_ext = seq;
            s.highest_ext = seq;
            s.last_seq = seq;
        } else {
            if (seq < s.last_seq && s.last_seq - seq > 0x8000) ++s.cycles;
            const std::uint32_t ext = (s.cycles << 16) | seq;
            s.highest_ext = std::max(s.highest_ext, ext);
            s.last_seq = seq;
            const double d = static_cast<double>(std::llabs(transit - s.last_transit));
            s.jitter += (d - s.jitter) / 16.0;
        }
        s.last_transit = transit;
        s.last_time = t;
        ++s.received;
        if (s.received % o.rtcp_every == 0) {
            reports.push_back(PendingReport{t, StreamKey{src, dst}, report_json(s)});
            s.expected_prior = std::uint64_t{s.highest_ext} - s.first_ext + 1;
            s.received_prior = s.received;
        }
    });
    // The last report of each stream, at its last packet (unless one was just made there).
    for (const auto& [key, s] : streams)
        if (s.received % o.rtcp_every != 0) reports.push_back(PendingReport{s.last_time, key, report_json(s)});

    std::map<StreamKey, std::string> call_of;
    for (const auto& st : truth.streams) call_of[StreamKey{st.src, st.dst}] = st.call_id;
    for (const auto& r : reports) {
        // The receiver (the stream's destination) reports from its RTCP port to the sender's.
        const Endpoint from{r.key.dst.address, static_cast<std::uint16_t>(r.key.dst.port + 1)};
        const Endpoint to{r.key.src.address, static_cast<std::uint16_t>(r.key.src.port + 1)};
        const auto it = call_of.find(r.key);
        corpus.messages.push_back(
            encode(r.time, from, to, 5, as_bytes(r.json), it == call_of.end() ? std::string_view{} : it->second, o));
        ++corpus.rtcp;
    }
    std::erase_if(corpus.messages, [](const Encoded& e) { return e.bytes.empty(); });
    std::stable_sort(corpus.messages.begin(), corpus.messages.end(),
                     [](const Encoded& a, const Encoded& b) { return a.time < b.time; });
    return corpus;
}

// The capture time (chunks 0x09 and 0x0a) of an encoded message.
void stamp(Encoded& e, Timestamp t) {
    if (e.seconds_at != 0) store_be32(&e.bytes[e.seconds_at], static_cast<std::uint32_t>(t.seconds()));
    if (e.micros_at != 0) store_be32(&e.bytes[e.micros_at], static_cast<std::uint32_t>(t.subsec_us()));
}

// Cycle 0 is the corpus as generated; cycle k tags the Call-IDs with k (three upper-case base-36
// digits, never equal to "gen").
void apply_cycle(Corpus& c, std::uint64_t cycle) {
    char tag[4] = {'g', 'e', 'n', '-'};
    if (cycle > 0) {
        static constexpr char kDigits[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
        std::uint64_t k = cycle % (36 * 36 * 36);
        for (int i = 2; i >= 0; --i) {
            tag[i] = kDigits[k % 36];
            k /= 36;
        }
    }
    for (auto& e : c.messages)
        for (const auto at : e.call_id_at) std::memcpy(&e.bytes[at], tag, 4);
}

int open_socket(const Options& o, std::map<std::string, std::uint64_t>& errors) {
    sockaddr_storage ss{};
    socklen_t len = 0;
    if (o.to.address.is_v6()) {
        sockaddr_in6 a{};
        a.sin6_family = AF_INET6;
        a.sin6_port = htons(o.to.port);
        std::memcpy(&a.sin6_addr, o.to.address.bytes().data(), 16);
        std::memcpy(&ss, &a, sizeof a);
        len = sizeof a;
    } else {
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(o.to.port);
        std::memcpy(&a.sin_addr, o.to.address.bytes().data(), 4);
        std::memcpy(&ss, &a, sizeof a);
        len = sizeof a;
    }
    const int fd = ::socket(ss.ss_family, o.tcp ? SOCK_STREAM : SOCK_DGRAM, 0);
    if (fd < 0) {
        ++errors[std::strerror(errno)];
        return -1;
    }
    if (!o.tcp) {
        const int big = 4 << 20;
        ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    }
    // UDP is connected too: no address per datagram, and refusals come back as errors.
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&ss), len) != 0) {
        ++errors[std::strerror(errno)];
        ::close(fd);
        return -1;
    }
    return fd;
}

// Sends messages [first, first + n) on `fd`; returns how many were sent (the first failure ends
// the call and is counted).
std::size_t send_udp(int fd, const std::vector<Encoded>& m, std::size_t first, std::size_t n,
                     std::map<std::string, std::uint64_t>& errors) {
#if defined(__linux__)
    static thread_local std::vector<mmsghdr> headers;
    static thread_local std::vector<iovec> iov;
    headers.assign(n, mmsghdr{});
    iov.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
        const auto& b = m[first + i].bytes;
        iov[i].iov_base = const_cast<std::uint8_t*>(b.data());
        iov[i].iov_len = b.size();
        headers[i].msg_hdr.msg_iov = &iov[i];
        headers[i].msg_hdr.msg_iovlen = 1;
    }
    int r;
    do {
        r = ::sendmmsg(fd, headers.data(), static_cast<unsigned>(n), 0);
    } while (r < 0 && errno == EINTR);
    if (r < 0) {
        ++errors[std::strerror(errno)];
        return 0;
    }
    return static_cast<std::size_t>(r);
#else
    std::size_t sent = 0;
    for (; sent < n; ++sent) {
        const auto& b = m[first + sent].bytes;
        if (::send(fd, b.data(), b.size(), 0) < 0) {
            ++errors[std::strerror(errno)];
            break;
        }
    }
    return sent;
#endif
}

bool send_tcp(int fd, const std::vector<Encoded>& m, std::size_t first, std::size_t n, std::vector<std::uint8_t>& buf,
              std::map<std::string, std::uint64_t>& errors) {
    buf.clear();
    for (std::size_t i = 0; i < n; ++i) buf.insert(buf.end(), m[first + i].bytes.begin(), m[first + i].bytes.end());
    std::size_t off = 0;
    while (off < buf.size()) {
#if defined(MSG_NOSIGNAL)
        const auto r = ::send(fd, buf.data() + off, buf.size() - off, MSG_NOSIGNAL);
#else
        const auto r = ::send(fd, buf.data() + off, buf.size() - off, 0);
#endif
        if (r < 0) {
            if (errno == EINTR) continue;
            ++errors[std::strerror(errno)];
            return false;
        }
        off += static_cast<std::size_t>(r);
    }
    return true;
}

// Classic pcap, Ethernet + IPv4 + UDP around each HEP message.
class PcapWriter {
public:
    PcapWriter(const std::string& path, const Endpoint& to) : file_(std::fopen(path.c_str(), "wb")), to_(to) {
        if (file_ == nullptr) return;
        const std::uint32_t header[6] = {0xa1b2c3d4U, 0x00040002U, 0, 0, 65535, 1};  // v2.4, Ethernet
        std::fwrite(header, sizeof header, 1, file_);
    }
    ~PcapWriter() {
        if (file_ != nullptr) std::fclose(file_);
    }
    PcapWriter(const PcapWriter&) = delete;
    PcapWriter& operator=(const PcapWriter&) = delete;
    bool ok() const noexcept { return file_ != nullptr && to_.address.is_v4(); }

    void write(Timestamp at, const std::vector<std::uint8_t>& payload) {
        std::uint8_t frame[14 + 20 + 8] = {};
        frame[12] = 0x08;  // IPv4
        std::uint8_t* ip = frame + 14;
        const std::size_t ip_len = 20 + 8 + payload.size();
        ip[0] = 0x45;
        ip[2] = static_cast<std::uint8_t>(ip_len >> 8);
        ip[3] = static_cast<std::uint8_t>(ip_len);
        ip[8] = 64;
        ip[9] = 17;
        const std::uint8_t loopback[4] = {127, 0, 0, 1};
        std::memcpy(ip + 12, loopback, 4);
        std::memcpy(ip + 16, to_.address.bytes().data(), 4);
        std::uint32_t sum = 0;
        for (int i = 0; i < 20; i += 2) sum += static_cast<std::uint32_t>(ip[i] << 8 | ip[i + 1]);
        while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
        ip[10] = static_cast<std::uint8_t>(~sum >> 8);
        ip[11] = static_cast<std::uint8_t>(~sum);
        std::uint8_t* udp = ip + 20;
        udp[0] = 0xc3;  // source port 50000
        udp[1] = 0x50;
        udp[2] = static_cast<std::uint8_t>(to_.port >> 8);
        udp[3] = static_cast<std::uint8_t>(to_.port);
        udp[4] = static_cast<std::uint8_t>((8 + payload.size()) >> 8);
        udp[5] = static_cast<std::uint8_t>(8 + payload.size());
        const auto caplen = static_cast<std::uint32_t>(sizeof frame + payload.size());
        const std::uint32_t record[4] = {static_cast<std::uint32_t>(at.us / 1'000'000),
                                         static_cast<std::uint32_t>(at.us % 1'000'000), caplen, caplen};
        std::fwrite(record, sizeof record, 1, file_);
        std::fwrite(frame, sizeof frame, 1, file_);
        std::fwrite(payload.data(), payload.size(), 1, file_);
    }

private:
    std::FILE* file_;
    Endpoint to_;
};

// --pcap-out: the packets a paced run would send, written instead (see the top of the file).
int write_pcap(const Options& o, Corpus& corpus) {
    PcapWriter out(o.pcap_out, o.to);
    if (!out.ok()) {
        std::fprintf(stderr, "hepd_load: cannot write %s (an IPv4 --to is needed)\n", o.pcap_out.c_str());
        return 1;
    }
    const double rate = o.rate > 0 ? o.rate : 100'000;
    const auto packets = static_cast<std::uint64_t>(rate * o.duration);
    const Timestamp start = corpus.messages.front().time;
    std::size_t next = 0;
    std::uint64_t cycle = 0;
    std::uint64_t bytes = 0;
    for (std::uint64_t i = 0; i < packets; ++i) {
        const Timestamp sent{start.us + static_cast<std::int64_t>(static_cast<double>(i) * 1e6 / rate)};
        stamp(corpus.messages[next], sent);
        out.write(sent, corpus.messages[next].bytes);
        bytes += corpus.messages[next].bytes.size();
        if (++next == corpus.messages.size()) {
            next = 0;
            apply_cycle(corpus, ++cycle);
        }
    }
    std::printf("{\"pcap_out\": \"%s\", \"packets\": %llu, \"bytes\": %llu, \"rate\": %.0f, \"cycles\": %llu}\n",
                o.pcap_out.c_str(), static_cast<unsigned long long>(packets), static_cast<unsigned long long>(bytes),
                rate, static_cast<unsigned long long>(cycle));
    return 0;
}

std::string json_escape(const std::string& s) {
    std::string out;
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
    }
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    const auto parsed = parse_args(argc, argv);
    if (!parsed) return kExitUsage;
    const Options o = *parsed;
#if defined(SIGPIPE)
    std::signal(SIGPIPE, SIG_IGN);
#endif

    Corpus corpus = build_corpus(o);
    if (corpus.messages.empty()) {
        std::fprintf(stderr, "hepd_load: the corpus is empty\n");
        return 1;
    }

    if (!o.pcap_out.empty()) return write_pcap(o, corpus);

    std::map<std::string, std::uint64_t> errors;
    std::vector<int> fds;
    for (std::size_t i = 0; i < o.senders; ++i) {
        const int fd = open_socket(o, errors);
        if (fd >= 0) fds.push_back(fd);
    }
    std::vector<bool> alive(fds.size(), true);

    using clock = std::chrono::steady_clock;
    const SystemClock wall;
    const auto t0 = clock::now();
    const auto end = t0 + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(o.duration));
    std::uint64_t offered = 0;
    std::uint64_t sent = 0;
    std::uint64_t bytes = 0;
    std::uint64_t cycle = 0;
    std::size_t next = 0;
    std::size_t turn = 0;
    std::vector<std::uint8_t> tcp_buf;
    const std::size_t total = corpus.messages.size();

    while (!fds.empty()) {
        const auto now = clock::now();
        if (now >= end) break;
        std::size_t want = o.batch;
        if (o.rate > 0) {
            const double elapsed = std::chrono::duration<double>(now - t0).count();
            const auto due = static_cast<std::uint64_t>(o.rate * elapsed);
            if (due <= offered) {
                // Wait for the next token, but never long: the loop re-checks the deadline.
                const double next_at = static_cast<double>(offered + 1) / o.rate;
                const auto wait =
                    std::min(std::chrono::duration<double>(next_at - elapsed), std::chrono::duration<double>(0.001));
                std::this_thread::sleep_for(wait);
                continue;
            }
            want = static_cast<std::size_t>(std::min<std::uint64_t>(due - offered, o.batch));
        }
        // A batch never spans a cycle boundary: the next cycle rewrites the bytes.
        want = std::min(want, total - next);

        const Timestamp sent_at = wall.now();
        for (std::size_t i = 0; i < want; ++i) stamp(corpus.messages[next + i], sent_at);

        std::size_t pick = turn++ % fds.size();
        for (std::size_t tries = 0; tries < fds.size() && !alive[pick]; ++tries) pick = (pick + 1) % fds.size();
        if (!alive[pick]) break;
        std::size_t done;
        if (o.tcp) {
            done = send_tcp(fds[pick], corpus.messages, next, want, tcp_buf, errors) ? want : 0;
            if (done == 0) alive[pick] = false;
            offered += want;
        } else {
            done = send_udp(fds[pick], corpus.messages, next, want, errors);
            // A refused datagram is skipped, not retried: the generator keeps its pace.
            offered += done < want ? done + 1 : done;
            want = done < want ? done + 1 : done;
        }
        for (std::size_t i = 0; i < done; ++i) bytes += corpus.messages[next + i].bytes.size();
        sent += done;
        next += want;
        if (next >= total) {
            next = 0;
            apply_cycle(corpus, ++cycle);
        }
    }
    const double elapsed = std::chrono::duration<double>(clock::now() - t0).count();
    for (int fd : fds) ::close(fd);

    std::uint64_t error_count = 0;
    std::string kinds;
    for (const auto& [what, n] : errors) {
        error_count += n;
        kinds += (kinds.empty() ? "" : ", ") + std::string("\"") + json_escape(what) + "\": " + std::to_string(n);
    }
    std::printf(
        "{\"transport\": \"%s\", \"target\": \"%s\", \"target_rate\": %.0f, \"duration_s\": %.3f, "
        "\"offered_packets\": %llu, \"sent_packets\": %llu, \"sent_bytes\": %llu, \"achieved_rate\": %.1f, "
        "\"errors\": %llu, \"error_kinds\": {%s}, \"corpus\": {\"calls\": %u, \"sip_messages\": %llu, "
        "\"rtcp_reports\": %llu}, \"cycles\": %llu}\n",
        o.tcp ? "tcp" : "udp", o.to.to_string().c_str(), o.rate, elapsed, static_cast<unsigned long long>(offered),
        static_cast<unsigned long long>(sent), static_cast<unsigned long long>(bytes),
        elapsed > 0 ? static_cast<double>(sent) / elapsed : 0.0, static_cast<unsigned long long>(error_count),
        kinds.c_str(), o.calls, static_cast<unsigned long long>(corpus.sip),
        static_cast<unsigned long long>(corpus.rtcp), static_cast<unsigned long long>(cycle));
    return fds.empty() ? 1 : 0;
}
