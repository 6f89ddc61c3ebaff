#include "pcap/capture_source.hpp"

#include "shard/dispatch.hpp"

#include <cstring>
#include <numeric>

namespace hepd::pcap {

namespace {

void set_bits(std::array<std::uint64_t, 1024>& bits, const std::vector<std::uint16_t>& ports) noexcept {
    for (const std::uint16_t p : ports) bits[p >> 6] |= std::uint64_t{1} << (p & 63U);
}

bool is_upper(std::uint8_t c) noexcept { return c >= 'A' && c <= 'Z'; }
bool is_digit(std::uint8_t c) noexcept { return c >= '0' && c <= '9'; }

// CRLF keep-alives (RFC 5626) on a SIP port are not messages, nor are the runs of spaces some
// phones send instead (X-Lite in sngrep's aaa.pcap: five spaces).
bool only_keepalive_bytes(ByteSpan b) noexcept {
    for (const std::uint8_t c : b)
        if (c != '\r' && c != '\n' && c != ' ' && c != '\t') return false;
    return true;
}

bool is_hep3(ByteSpan b) noexcept {
    return b.size() >= 6 && (std::memcmp(b.data(), "HEP3", 4) == 0 || std::memcmp(b.data(), "EEP3", 4) == 0) &&
           load_be16(b.data() + 4) == b.size();
}

}  // namespace

std::string_view to_string(PacketClass c) noexcept {
    switch (c) {
    case PacketClass::hep_udp: return "hep_udp";
    case PacketClass::hep_tcp: return "hep_tcp";
    case PacketClass::sip_udp: return "sip_udp";
    case PacketClass::sip_tcp: return "sip_tcp";
    case PacketClass::rtp: return "rtp";
    case PacketClass::rtcp: return "rtcp";
    case PacketClass::stun: return "stun";
    case PacketClass::zrtp: return "zrtp";
    case PacketClass::dtls: return "dtls";
    case PacketClass::turn_channel: return "turn_channel";
    case PacketClass::unknown_udp: return "unknown_udp";
    case PacketClass::other_tcp: return "other_tcp";
    }
    return "unknown";
}

bool looks_like_sip(ByteSpan b) noexcept {
    static constexpr std::string_view version = "SIP/2.0";
    // Status line: "SIP/2.0 200 OK" (the reason phrase may be empty).
    if (b.size() >= 12 && std::memcmp(b.data(), "SIP/2.0 ", 8) == 0)
        return is_digit(b[8]) && is_digit(b[9]) && is_digit(b[10]) && (b[11] == ' ' || b[11] == '\r');
    // Request line: METHOD SP Request-URI SP SIP/2.0 CRLF, looked for within the first 1 KiB.
    std::size_t i = 0;
    while (i < b.size() && i < 32 && is_upper(b[i])) ++i;
    if (i < 3 || i >= b.size() || b[i] != ' ') return false;
    const std::size_t limit = std::min<std::size_t>(b.size(), 1024);
    const void* nl = std::memchr(b.data(), '\n', limit);
    if (nl == nullptr) return false;
    std::size_t end = static_cast<std::size_t>(static_cast<const std::uint8_t*>(nl) - b.data());
    if (end > 0 && b[end - 1] == '\r') --end;
    return end > i + 1 + version.size() && b[end - version.size() - 1] == ' ' &&
           std::memcmp(b.data() + end - version.size(), version.data(), version.size()) == 0;
}

std::uint64_t CaptureStats::decode_errors_total() const noexcept {
    return std::accumulate(decode_errors.begin(), decode_errors.end(), std::uint64_t{0});
}

std::uint64_t CaptureStats::packets_total() const noexcept {
    return std::accumulate(packets.begin(), packets.end(), std::uint64_t{0});
}

void CaptureStats::add_frames(const CaptureStats& other) noexcept {
    const auto add = [](auto& into, const auto& from) {
        for (std::size_t i = 0; i < into.size(); ++i) into[i] += from[i];
    };
    files += other.files;
    add(file_errors, other.file_errors);
    frames += other.frames;
    bytes += other.bytes;
    add(frames_by_link, other.frames_by_link);
    add(decode_errors, other.decode_errors);
    add(tunnelled, other.tunnelled);
    add(packets, other.packets);
    datagrams += other.datagrams;
    add(datagrams_by_kind, other.datagrams_by_kind);
    hep.merge(other.hep);
}

CaptureSource::CaptureSource(CaptureOptions options)
    : options_(std::move(options)), intake_(options_.intake), fragments_(options_.fragments), tcp_(options_.tcp) {
    set_bits(hep_ports_, options_.hep_ports);
    set_bits(sip_ports_, options_.sip_ports);
    set_bits(signalling_ports_, options_.hep_ports);
    set_bits(signalling_ports_, options_.sip_ports);
}

CaptureStats CaptureSource::stats() const noexcept {
    CaptureStats s = stats_;
    s.fragments = fragments_.stats();
    s.tcp = tcp_.stats();
    s.hep = intake_.stats();
    return s;
}

FileError CaptureSource::read_file(const std::string& path, DatagramSink sink, std::string* message,
                                   const ProgressSink* progress) {
    return read_opened(path, FileReader::open(path, options_.max_inflated_bytes), sink, message, progress);
}

FileError CaptureSource::read_opened(const std::string& path, const Result<FileReader, FileError>& opened,
                                     DatagramSink sink, std::string* message, const ProgressSink* progress) {
    if (!opened) {
        count_file(opened.error());
        if (message != nullptr) *message = path + ": " + std::string(to_string(opened.error()));
        return opened.error();
    }
    FileReader reader = opened->clone();
    const FileError e = read(reader, sink, progress);
    if (e != FileError::none && message != nullptr) *message = path + ": " + reader.error_message();
    return e;
}

FileError CaptureSource::read(FileReader& reader, DatagramSink sink, const ProgressSink* progress) {
    // Every kProgressFrames frames: progress, and the pages of the mapping well behind this reader
    // handed back (FileReader::release_before; kReleaseLag leaves what other readers of the same
    // mapping, and media held back in the shards, still read).
    Frame frame;
    const std::uint64_t size = reader.bytes().size();
    while (reader.next(frame)) {
        if (!process_plain(frame, sink)) process_other(frame, sink);
        if (reader.frames() % kProgressFrames != 0) continue;
        if (reader.offset() > kReleaseLag) reader.release_before(reader.offset() - kReleaseLag);
        if (progress != nullptr) (*progress)(reader.offset(), size);
    }
    if (progress != nullptr) (*progress)(reader.offset(), size);
    count_file(reader.error());
    return reader.error();
}

void CaptureSource::count_file(FileError result) noexcept {
    ++stats_.files;
    if (result != FileError::none) ++stats_.file_errors[static_cast<std::size_t>(result)];
}

void CaptureSource::finish() noexcept {
    fragments_.finish();
    tcp_.finish();
}

bool CaptureSource::process_plain(const Frame& frame, DatagramSink sink) {
    L4Packet p;
    if (!decode_plain_udp(frame, p)) return false;
    count_frame(stats_, frame);
    udp(p, media_kind(p), sink);
    return true;
}

void CaptureSource::process(const Frame& frame, DatagramSink sink) {
    if (!process_plain(frame, sink)) process_other(frame, sink);  // plain UDP: the bulk of most captures
}

void CaptureSource::process_other(const Frame& frame, DatagramSink sink) {
    count_frame(stats_, frame);
    IpPacket ip;
    DecodeError e = decode_ip(frame, ip);
    if (e != DecodeError::none) {
        ++stats_.decode_errors[static_cast<std::size_t>(e)];
        return;
    }
    if (ip.tunnel != TunnelKind::none) ++stats_.tunnelled[static_cast<std::size_t>(ip.tunnel)];
    if (ip.fragment) {
        IpPacket whole;
        if (!fragments_.add(ip, whole)) return;
        ip = whole;
        // An outer datagram reassembled: what it tunnels is only now readable.
        e = decapsulate(ip);
        if (e != DecodeError::none) {
            ++stats_.decode_errors[static_cast<std::size_t>(e)];
            return;
        }
        if (ip.tunnel != TunnelKind::none) ++stats_.tunnelled[static_cast<std::size_t>(ip.tunnel)];
        if (ip.fragment) {
            // Fragmented inside the tunnel as well. The reassembler's output buffer may be
            // reused by the next add(): copy the piece out first (no allocation once warm).
            inner_fragment_.assign(ip.payload.begin(), ip.payload.end());
            ip.payload = ByteSpan(inner_fragment_);
            if (!fragments_.add(ip, whole)) return;
            ip = whole;
        }
    }
    L4Packet p;
    e = decode_transport(ip, p);
    if (e != DecodeError::none) {
        ++stats_.decode_errors[static_cast<std::size_t>(e)];
        return;
    }
    if (p.transport == Transport::udp) {
        udp(p, media_kind(p), sink);
    } else {
        tcp(p, sink);
    }
}

void CaptureSource::raw(const L4Packet& p, PayloadClass kind, ByteSpan payload, Timestamp time, DatagramSink sink) {
    shard::Datagram& d = datagram_;
    d.time = time;
    d.src = p.src;
    d.dst = p.dst;
    d.transport = p.transport == Transport::tcp ? shard::Transport::tcp : shard::Transport::udp;
    d.kind = kind;
    d.hep_payload_type = 0;
    d.from_agent = false;  // the member may last have carried a HEP agent's datagram
    d.agent = 0;
    d.capture_id = 0;
    d.correlation_id = {};
    d.payload = payload;
    ++stats_.datagrams;
    ++stats_.datagrams_by_kind[static_cast<std::size_t>(kind)];
    sink(d);
}

void CaptureSource::hep(ByteSpan bytes, intake::Carrier carrier, Timestamp time, DatagramSink sink) {
    if (!intake_.accept(bytes, carrier, time, datagram_)) return;
    ++stats_.datagrams;
    ++stats_.datagrams_by_kind[static_cast<std::size_t>(datagram_.kind)];
    sink(datagram_);
}

rtp::PacketKind CaptureSource::media_kind(const L4Packet& p) const noexcept {
    if (is_signalling_port(p.dst.port) || is_signalling_port(p.src.port)) return rtp::PacketKind::unknown;
    return rtp::classify(p.payload);
}

void CaptureSource::udp(const L4Packet& p, rtp::PacketKind kind, DatagramSink sink) {
    const ByteSpan payload = p.payload;
    // Media first, the bulk: media_kind() found it on no HEP or SIP port.
    switch (kind) {
    case rtp::PacketKind::rtp:
        count(PacketClass::rtp);
        raw(p, PayloadClass::rtp, payload, p.time, sink);
        return;
    case rtp::PacketKind::rtcp:
        count(PacketClass::rtcp);
        raw(p, PayloadClass::rtcp, payload, p.time, sink);
        return;
    default: break;
    }
    if (is_hep_port(p.dst.port) || is_hep_port(p.src.port)) {
        count(PacketClass::hep_udp);
        hep(payload, intake::Carrier::udp, p.time, sink);
        return;
    }
    if (is_sip_port(p.dst.port) || is_sip_port(p.src.port)) {
        // Senders mirror HEP from their SIP socket: the magic and length settle it.
        if (options_.sniff_hep && is_hep3(payload)) {
            count(PacketClass::hep_udp);
            hep(payload, intake::Carrier::udp, p.time, sink);
            return;
        }
        if (only_keepalive_bytes(payload)) {
            count(PacketClass::unknown_udp);
            return;
        }
        count(PacketClass::sip_udp);
        raw(p, PayloadClass::sip, payload, p.time, sink);
        return;
    }
    // Only now the text checks: media (the bulk) never gets here.
    if (options_.sniff_sip && looks_like_sip(payload)) {
        count(PacketClass::sip_udp);
        raw(p, PayloadClass::sip, payload, p.time, sink);
        return;
    }
    if (options_.sniff_hep && is_hep3(payload)) {
        count(PacketClass::hep_udp);
        hep(payload, intake::Carrier::udp, p.time, sink);
        return;
    }
    switch (kind) {
    case rtp::PacketKind::stun: count(PacketClass::stun); return;
    case rtp::PacketKind::zrtp: count(PacketClass::zrtp); return;
    case rtp::PacketKind::dtls: count(PacketClass::dtls); return;
    case rtp::PacketKind::turn_channel: count(PacketClass::turn_channel); return;
    default: count(PacketClass::unknown_udp); return;
    }
}

void CaptureSource::tcp(const L4Packet& p, DatagramSink sink) {
    StreamProtocol protocol;
    bool sniffed = false;
    if (is_hep_port(p.dst.port) || is_hep_port(p.src.port)) {
        count(PacketClass::hep_tcp);
        protocol = StreamProtocol::hep;
    } else if (is_sip_port(p.dst.port) || is_sip_port(p.src.port) || tcp_.has_stream(p)) {
        count(PacketClass::sip_tcp);
        protocol = StreamProtocol::sip;
    } else if (options_.sniff_sip && (looks_like_sip(p.payload) || looks_like_sip_websocket(p.payload))) {
        // SIP on a port not in the list (5080, WebSocket on 8080...): a stream is opened by a
        // segment that starts a SIP message or a SIP WebSocket handshake, and keeps its others.
        count(PacketClass::sip_tcp);
        protocol = StreamProtocol::sip;
        sniffed = true;
    } else {
        count(PacketClass::other_tcp);
        return;
    }
    auto on_message = [&](const TcpMessage& m) {
        if (m.protocol == StreamProtocol::hep) {
            hep(m.bytes, intake::Carrier::tcp, m.time, sink);
            return;
        }
        L4Packet whole = p;
        whole.src = m.src;
        whole.dst = m.dst;
        raw(whole, PayloadClass::sip, m.bytes, m.time, sink);
    };
    tcp_.segment(p, protocol, on_message, sniffed);
}

}  // namespace hepd::pcap
