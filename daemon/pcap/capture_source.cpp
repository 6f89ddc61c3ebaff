#include "pcap/capture_source.hpp"

#include "rtp/demux.hpp"

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

void CaptureStats::add_frame_counts(const CaptureStats& o) noexcept {
    const auto add = [](auto& into, const auto& from) {
        for (std::size_t i = 0; i < into.size(); ++i) into[i] += from[i];
    };
    frames += o.frames;
    bytes += o.bytes;
    add(frames_by_link, o.frames_by_link);
    add(decode_errors, o.decode_errors);
    add(tunnelled, o.tunnelled);
    add(packets, o.packets);
    datagrams += o.datagrams;
    add(datagrams_by_kind, o.datagrams_by_kind);
}

std::uint64_t CaptureStats::packets_total() const noexcept {
    return std::accumulate(packets.begin(), packets.end(), std::uint64_t{0});
}

CaptureSource::CaptureSource(CaptureOptions options)
    : options_(std::move(options)), intake_(options_.intake), fragments_(options_.fragments), tcp_(options_.tcp) {
    set_bits(hep_ports_, options_.hep_ports);
    set_bits(sip_ports_, options_.sip_ports);
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
        ++stats_.files;
        ++stats_.file_errors[static_cast<std::size_t>(opened.error())];
        if (message != nullptr) *message = path + ": " + std::string(to_string(opened.error()));
        return opened.error();
    }
    FileReader reader = opened->clone();
    const FileError e = read(reader, sink, progress);
    if (e != FileError::none && message != nullptr) *message = path + ": " + reader.error_message();
    return e;
}

FileError CaptureSource::read(FileReader& reader, DatagramSink sink, const ProgressSink* progress) {
    Frame frame;
    if (progress == nullptr) {
        while (reader.next(frame)) process(frame, sink);
    } else {
        const std::uint64_t size = reader.bytes().size();
        while (reader.next(frame)) {
            process(frame, sink);
            if (reader.frames() % kProgressFrames == 0) (*progress)(reader.offset(), size);
        }
        (*progress)(reader.offset(), size);
    }
    end_file(reader.error());
    return reader.error();
}

void CaptureSource::end_file(FileError e) noexcept {
    ++stats_.files;
    if (e != FileError::none) ++stats_.file_errors[static_cast<std::size_t>(e)];
}

void CaptureSource::finish() noexcept {
    fragments_.finish();
    tcp_.finish();
}

void CaptureSource::process(const Frame& frame, DatagramSink sink) {
    ++stats_.frames;
    stats_.bytes += frame.data.size();
    ++stats_.frames_by_link[link_type_slot(frame.link_type)];

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
        udp(p, sink);
    } else {
        tcp(p, sink);
    }
}

FrameVerdict CaptureSource::classify(const Frame& frame, shard::Datagram& out) {
    IpPacket ip;
    L4Packet p;
    UdpRoute route;
    const DecodeError ip_error = decode_ip(frame, ip);
    DecodeError transport_error = DecodeError::none;
    if (ip_error == DecodeError::none) {
        if (ip.fragment) return FrameVerdict::stateful;
        transport_error = decode_transport(ip, p);
        if (transport_error == DecodeError::none) {
            if (p.transport != Transport::udp) return FrameVerdict::stateful;
            route = route_udp(p);
            if (route.hep) return FrameVerdict::stateful;
        }
    }
    // From here on, counted exactly as process() counts the frame.
    ++stats_.frames;
    stats_.bytes += frame.data.size();
    ++stats_.frames_by_link[link_type_slot(frame.link_type)];
    if (ip_error != DecodeError::none) {
        ++stats_.decode_errors[static_cast<std::size_t>(ip_error)];
        return FrameVerdict::nothing;
    }
    if (ip.tunnel != TunnelKind::none) ++stats_.tunnelled[static_cast<std::size_t>(ip.tunnel)];
    if (transport_error != DecodeError::none) {
        ++stats_.decode_errors[static_cast<std::size_t>(transport_error)];
        return FrameVerdict::nothing;
    }
    count(route.packet);
    if (!route.deliver) return FrameVerdict::nothing;
    fill(p, route.kind, p.payload, p.time, out);
    return FrameVerdict::datagram;
}

void CaptureSource::fill(const L4Packet& p, PayloadClass kind, ByteSpan payload, Timestamp time,
                         shard::Datagram& d) noexcept {
    d.time = time;
    d.src = p.src;
    d.dst = p.dst;
    d.transport = p.transport == Transport::tcp ? shard::Transport::tcp : shard::Transport::udp;
    d.kind = kind;
    d.hep_payload_type = 0;
    d.agent = 0;
    d.capture_id = 0;
    d.correlation_id = {};
    d.payload = payload;
    ++stats_.datagrams;
    ++stats_.datagrams_by_kind[static_cast<std::size_t>(kind)];
}

void CaptureSource::raw(const L4Packet& p, PayloadClass kind, ByteSpan payload, Timestamp time, DatagramSink sink) {
    fill(p, kind, payload, time, datagram_);
    sink(datagram_);
}

void CaptureSource::hep(ByteSpan bytes, intake::Carrier carrier, Timestamp time, DatagramSink sink) {
    if (!intake_.accept(bytes, carrier, time, datagram_)) return;
    ++stats_.datagrams;
    ++stats_.datagrams_by_kind[static_cast<std::size_t>(datagram_.kind)];
    sink(datagram_);
}

CaptureSource::UdpRoute CaptureSource::route_udp(const L4Packet& p) const noexcept {
    const ByteSpan payload = p.payload;
    const auto deliver = [](PacketClass c, PayloadClass kind) { return UdpRoute{c, kind, true, false}; };
    const auto skip = [](PacketClass c) { return UdpRoute{c, PayloadClass::other, false, false}; };
    constexpr UdpRoute hep{PacketClass::hep_udp, PayloadClass::other, false, true};
    if (is_hep_port(p.dst.port) || is_hep_port(p.src.port)) return hep;
    if (is_sip_port(p.dst.port) || is_sip_port(p.src.port)) {
        // Senders mirror HEP from their SIP socket: the magic and length settle it.
        if (options_.sniff_hep && is_hep3(payload)) return hep;
        if (only_keepalive_bytes(payload)) return skip(PacketClass::unknown_udp);
        return deliver(PacketClass::sip_udp, PayloadClass::sip);
    }
    const rtp::PacketKind kind = rtp::classify(payload);
    if (kind == rtp::PacketKind::rtp) return deliver(PacketClass::rtp, PayloadClass::rtp);
    if (kind == rtp::PacketKind::rtcp) return deliver(PacketClass::rtcp, PayloadClass::rtcp);
    // Only now the text checks: media (the bulk) never gets here.
    if (options_.sniff_sip && looks_like_sip(payload)) return deliver(PacketClass::sip_udp, PayloadClass::sip);
    if (options_.sniff_hep && is_hep3(payload)) return hep;
    switch (kind) {
    case rtp::PacketKind::stun: return skip(PacketClass::stun);
    case rtp::PacketKind::zrtp: return skip(PacketClass::zrtp);
    case rtp::PacketKind::dtls: return skip(PacketClass::dtls);
    case rtp::PacketKind::turn_channel: return skip(PacketClass::turn_channel);
    default: return skip(PacketClass::unknown_udp);
    }
}

void CaptureSource::udp(const L4Packet& p, DatagramSink sink) {
    const UdpRoute route = route_udp(p);
    count(route.packet);
    if (route.hep) {
        hep(p.payload, intake::Carrier::udp, p.time, sink);
    } else if (route.deliver) {
        raw(p, route.kind, p.payload, p.time, sink);
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
