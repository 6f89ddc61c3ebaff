#include "pcap/tcp_reassembly.hpp"

#include "core/hash.hpp"

#include <algorithm>

namespace hepd::pcap {

namespace {

// Serial-number arithmetic (RFC 1982): how far `a` is ahead of `b`, across the 2^32 wrap.
std::int32_t seq_diff(std::uint32_t a, std::uint32_t b) noexcept { return static_cast<std::int32_t>(a - b); }

}  // namespace

std::uint64_t TcpReassembler::hash_of(const Key& key) noexcept {
    return mix64(hash_endpoint(key.src) + 0x9e3779b97f4a7c15ULL * hash_endpoint(key.dst));
}

bool TcpReassembler::has_stream(const L4Packet& p) const noexcept {
    const Key key{p.src, p.dst};
    return table_.find(hash_of(key), [&](const Key& k) { return k == key; }) != LruTable<Key, Stream, KeyHash>::kNone;
}

TcpReassembler::TcpReassembler(TcpOptions options)
    : options_(options),
      framer_(options.max_message_bytes),
      table_(options.max_streams == 0 ? 1 : options.max_streams) {
    options_.max_message_bytes = std::clamp<std::size_t>(options_.max_message_bytes, 16, 65535);
    // Room for one whole message, or one whole WebSocket frame with its header.
    options_.max_stream_bytes = std::max(options_.max_stream_bytes, options_.max_message_bytes + kMaxWsHeaderBytes);
}

std::size_t TcpReassembler::held_bytes(const Stream& s) const noexcept { return s.buffer.size() + s.held.size(); }

void TcpReassembler::reset(Stream& s) noexcept {
    stats_.leftover_bytes += s.buffer.size() + s.ws_message.size();
    s.buffer.clear();
    s.pending.clear();
    s.held.clear();
    s.ws_message.clear();
    s.ws_in_message = false;
    s.ws_skip = false;
    s.mode = initial_mode(s.protocol);
    s.fin = false;
}

TcpReassembler::Step TcpReassembler::frame_sip(const Key& key, ByteSpan rest, Timestamp time, MessageSink sink,
                                               bool& failed) {
    const sip::Frame f = sip::message_length(as_text(rest), options_.max_message_bytes);
    if (f.status == sip::FrameStatus::need_more)
        return {std::min(f.skip, rest.size()), true};  // keep-alive CRLFs go, the partial message stays
    if (f.status == sip::FrameStatus::error || f.length == 0 || f.skip + f.length > rest.size()) {
        ++stats_.sip_framing_errors[std::min<std::size_t>(static_cast<std::size_t>(f.error),
                                                          stats_.sip_framing_errors.size() - 1)];
        failed = true;
        return {0, true};
    }
    ++stats_.messages;
    sink(TcpMessage{time, key.src, key.dst, StreamProtocol::sip, rest.subspan(f.skip, f.length)});
    return {f.skip + f.length, false};
}

TcpReassembler::Step TcpReassembler::frame_hep(const Key& key, ByteSpan rest, Timestamp time, MessageSink sink,
                                               bool& failed) {
    const hep::FrameStatus f = framer_.next(rest);
    if (f.need_more()) return {0, true};
    if (f.is_error() || f.size == 0 || f.size > rest.size()) {
        ++stats_.hep_framing_errors[std::min<std::size_t>(static_cast<std::size_t>(f.error),
                                                          stats_.hep_framing_errors.size() - 1)];
        failed = true;
        return {0, true};
    }
    ++stats_.messages;
    sink(TcpMessage{time, key.src, key.dst, StreamProtocol::hep, rest.first(f.size)});
    return {f.size, false};
}

TcpReassembler::Step TcpReassembler::frame_handshake(Stream& s, ByteSpan rest, bool& failed) {
    const std::string_view text = as_text(rest.first(std::min(rest.size(), options_.max_message_bytes)));
    const std::size_t end = text.find("\r\n\r\n");
    if (end == std::string_view::npos) {
        if (rest.size() < options_.max_message_bytes) return {0, true};
        websocket_error(WebSocketError::handshake_too_large);
        failed = true;
        return {0, true};
    }
    // The client's request switches its direction at once: it may not send frames before the
    // 101 (RFC 6455 4.1), and the server's direction is another stream with its own handshake.
    const Handshake h = parse_handshake(text.substr(0, end + 2));
    if (h.upgrades() && (h.sip_protocol || !s.sniffed)) {
        ++stats_.websocket_upgrades;
        s.mode = Mode::websocket;
        return {end + 4, false};
    }
    websocket_error(WebSocketError::not_upgraded);
    s.mode = Mode::skipped;
    return {rest.size(), true};
}

void TcpReassembler::emit_websocket(const Key& key, ByteSpan message, Timestamp time, MessageSink sink) {
    // RFC 7118: one WebSocket message is one SIP message; Content-Length may be absent, so the
    // message boundary is the only framing. A bare CRLF is a keep-alive.
    std::size_t skip = 0;
    while (skip < message.size() && (message[skip] == '\r' || message[skip] == '\n')) ++skip;
    if (skip == message.size()) {
        ++stats_.websocket_keepalives;
        return;
    }
    ++stats_.messages;
    ++stats_.websocket_messages;
    sink(TcpMessage{time, key.src, key.dst, StreamProtocol::sip, message.subspan(skip)});
}

TcpReassembler::Step TcpReassembler::frame_websocket(Stream& s, const Key& key, ByteSpan rest, Timestamp time,
                                                     MessageSink sink, bool& failed) {
    const WsFrame f = parse_ws_frame(rest, options_.max_message_bytes);
    if (f.status == WsFrameStatus::need_more) return {0, true};
    if (f.status == WsFrameStatus::too_large) {
        websocket_error(WebSocketError::frame_too_large);
        failed = true;
        return {0, true};
    }
    ++stats_.websocket_frames;
    const Step done{f.size(), false};
    const ByteSpan payload = rest.subspan(f.header_size, static_cast<std::size_t>(f.payload_size));
    if (f.opcode >= ws_opcode::close) {
        // Control frames may come between the fragments of a message; they carry no SIP.
        if (f.opcode > ws_opcode::pong || !f.fin || f.payload_size > 125) {
            websocket_error(WebSocketError::bad_frame);
            failed = true;
            return {0, true};
        }
        ++stats_.websocket_control_frames;
        return done;
    }
    if (f.opcode != ws_opcode::continuation && f.opcode != ws_opcode::text && f.opcode != ws_opcode::binary) {
        websocket_error(WebSocketError::bad_frame);
        failed = true;
        return {0, true};
    }
    if (f.opcode == ws_opcode::continuation) {
        if (!s.ws_in_message) {
            websocket_error(WebSocketError::unexpected_continuation);
            return done;
        }
    } else {
        if (s.ws_in_message) {
            websocket_error(WebSocketError::unexpected_continuation);  // the open message is lost
            s.ws_message.clear();
        }
        s.ws_skip = f.rsv1;
        if (f.rsv1) websocket_error(WebSocketError::compressed);
    }
    s.ws_in_message = !f.fin;
    if (s.ws_skip) {
        if (f.fin) s.ws_skip = false;
        return done;
    }
    if (f.fin && s.ws_message.empty()) {
        // A whole message in one frame: straight from the capture when unmasked (server to client).
        if (!f.masked) {
            emit_websocket(key, payload, time, sink);
        } else {
            unmasked_.assign(payload.begin(), payload.end());
            unmask(unmasked_.data(), unmasked_.size(), f.mask);
            emit_websocket(key, ByteSpan(unmasked_), time, sink);
        }
        return done;
    }
    if (s.ws_message.size() + payload.size() > options_.max_message_bytes) {
        websocket_error(WebSocketError::frame_too_large);
        s.ws_message.clear();
        s.ws_skip = !f.fin;
        return done;
    }
    const std::size_t at = s.ws_message.size();
    s.ws_message.insert(s.ws_message.end(), payload.begin(), payload.end());
    if (f.masked) unmask(s.ws_message.data() + at, payload.size(), f.mask);
    if (f.fin) {
        emit_websocket(key, ByteSpan(s.ws_message), time, sink);
        s.ws_message.clear();
    }
    return done;
}

std::size_t TcpReassembler::frame(Stream& s, const Key& key, ByteSpan bytes, Timestamp time, MessageSink sink,
                                  bool& failed) {
    std::size_t pos = 0;
    while (pos < bytes.size()) {
        const ByteSpan rest = bytes.subspan(pos);
        Step step;
        switch (s.mode) {
        case Mode::start:
            switch (classify_stream_start(rest)) {
            case StreamStart::need_more: return pos;
            case StreamStart::http: s.mode = Mode::handshake; break;
            case StreamStart::other: s.mode = Mode::sip; break;
            }
            continue;
        case Mode::sip: step = frame_sip(key, rest, time, sink, failed); break;
        case Mode::hep: step = frame_hep(key, rest, time, sink, failed); break;
        case Mode::handshake: step = frame_handshake(s, rest, failed); break;
        case Mode::websocket: step = frame_websocket(s, key, rest, time, sink, failed); break;
        case Mode::skipped: return bytes.size();
        }
        pos += step.used;
        if (step.stop) break;
    }
    return pos;
}

void TcpReassembler::deliver(Stream& s, const Key& key, ByteSpan bytes, Timestamp time, MessageSink sink) {
    s.next_seq += static_cast<std::uint32_t>(bytes.size());
    if (!s.buffer.empty() && s.buffer.size() + bytes.size() > options_.max_stream_bytes) {
        ++stats_.overflows;
        stats_.resync_bytes_dropped += s.buffer.size();
        s.buffer.clear();
    }
    bool failed = false;
    if (s.buffer.empty()) {
        // Fast path: frame straight from the capture; only an unfinished tail is copied.
        const std::size_t used = frame(s, key, bytes, time, sink, failed);
        const std::size_t rest = bytes.size() - used;
        if (failed) {
            stats_.resync_bytes_dropped += rest;
        } else if (rest > options_.max_stream_bytes) {
            ++stats_.overflows;
            stats_.resync_bytes_dropped += rest;
        } else if (rest > 0) {
            s.buffer.assign(bytes.begin() + static_cast<std::ptrdiff_t>(used), bytes.end());
        }
        return;
    }
    s.buffer.insert(s.buffer.end(), bytes.begin(), bytes.end());
    const std::size_t used = frame(s, key, ByteSpan(s.buffer), time, sink, failed);
    if (failed) {
        stats_.resync_bytes_dropped += s.buffer.size() - used;
        s.buffer.clear();
        return;
    }
    s.buffer.erase(s.buffer.begin(), s.buffer.begin() + static_cast<std::ptrdiff_t>(used));
}

bool TcpReassembler::hold(Stream& s, std::uint32_t seq, ByteSpan bytes) {
    for (const Pending& p : s.pending)
        if (p.seq == seq && p.length == bytes.size()) return true;  // the same segment again
    if (s.pending.size() >= options_.max_out_of_order_segments ||
        held_bytes(s) + bytes.size() > options_.max_stream_bytes)
        return false;
    s.pending.push_back(
        Pending{seq, static_cast<std::uint32_t>(bytes.size()), static_cast<std::uint32_t>(s.held.size())});
    s.held.insert(s.held.end(), bytes.begin(), bytes.end());
    return true;
}

void TcpReassembler::drain_pending(Stream& s, const Key& key, Timestamp time, MessageSink sink) {
    bool progress = true;
    while (progress && !s.pending.empty()) {
        progress = false;
        for (std::size_t i = 0; i < s.pending.size();) {
            const Pending p = s.pending[i];
            const std::int32_t ahead = seq_diff(p.seq, s.next_seq);
            if (ahead > 0) {
                ++i;
                continue;
            }
            s.pending.erase(s.pending.begin() + static_cast<std::ptrdiff_t>(i));
            progress = true;
            const auto behind = static_cast<std::uint32_t>(-static_cast<std::int64_t>(ahead));
            if (behind < p.length)
                deliver(s, key, ByteSpan(s.held.data() + p.at + behind, p.length - behind), time, sink);
        }
    }
    if (s.pending.empty()) s.held.clear();
}

void TcpReassembler::skip_gap(Stream& s, const Key& key, std::uint32_t seq, Timestamp time, MessageSink sink) {
    ++stats_.gaps_skipped;
    stats_.resync_bytes_dropped += s.buffer.size() + s.ws_message.size();
    s.buffer.clear();
    s.ws_message.clear();
    s.ws_skip = s.ws_in_message;  // the rest of a fragmented WebSocket message is of no use
    // The message in progress lost bytes: resume at the earliest data there is.
    std::uint32_t target = seq;
    for (const Pending& p : s.pending)
        if (seq_diff(p.seq, target) < 0) target = p.seq;
    s.next_seq = target;
    drain_pending(s, key, time, sink);
}

void TcpReassembler::segment(const L4Packet& p, StreamProtocol protocol, MessageSink sink, bool sniffed) {
    ++stats_.segments;
    stats_.payload_bytes += p.payload.size();
    const bool syn = (p.tcp_flags & tcp_flag::syn) != 0;
    const bool fin = (p.tcp_flags & tcp_flag::fin) != 0;
    const bool rst = (p.tcp_flags & tcp_flag::rst) != 0;

    const Key key{p.src, p.dst};
    const std::uint64_t hash = hash_of(key);
    std::uint32_t at = table_.find(hash, [&](const Key& k) { return k == key; });
    const std::uint32_t data_seq = syn ? p.tcp_seq + 1 : p.tcp_seq;
    if (at == LruTable<Key, Stream, KeyHash>::kNone) {
        if (rst || (!syn && p.payload.empty())) {
            ++stats_.ignored_segments;
            return;
        }
        auto inserted = table_.insert(key, Stream{});
        if (inserted.second) {
            ++stats_.streams_evicted;
            stats_.leftover_bytes += inserted.second->value.buffer.size() + inserted.second->value.ws_message.size();
        }
        at = inserted.first;
        ++stats_.streams_opened;
        Stream& s = table_[at];
        s.protocol = protocol;
        s.mode = initial_mode(protocol);
        s.sniffed = sniffed;
        // A capture that starts mid-connection starts the stream at the first byte it has.
        s.next_seq = data_seq;
    } else {
        table_.touch(at);
    }
    Stream& s = table_[at];

    if (rst) {
        ++stats_.streams_closed_rst;
        stats_.leftover_bytes += s.buffer.size() + s.ws_message.size();
        table_.erase(at);
        return;
    }
    if (syn && !(s.syn && s.syn_seq == p.tcp_seq)) {
        // A SYN with a new ISN on a known 4-tuple: a new connection (a retransmitted SYN is not).
        if (s.syn || s.next_seq != data_seq) {
            ++stats_.streams_restarted;
            reset(s);
            s.next_seq = data_seq;
        }
        s.syn = true;
        s.syn_seq = p.tcp_seq;
    }

    ByteSpan data = p.payload;
    if (!data.empty()) {
        std::int32_t ahead = seq_diff(data_seq, s.next_seq);
        if (ahead > 0) {
            if (hold(s, data_seq, data)) {
                ++stats_.out_of_order_segments;
            } else {
                // The hole is not going to fill within the bounds: give up on it.
                skip_gap(s, key, data_seq, p.time, sink);
                ahead = seq_diff(data_seq, s.next_seq);
                if (ahead > 0 && hold(s, data_seq, data)) {
                    ++stats_.out_of_order_segments;
                } else if (ahead > 0) {
                    // Another hole and still no room: what is held before this segment goes too.
                    ++stats_.out_of_order_dropped;
                    stats_.resync_bytes_dropped += s.held.size();
                    s.pending.clear();
                    s.held.clear();
                    skip_gap(s, key, data_seq, p.time, sink);
                    ahead = 0;
                }
            }
        }
        if (ahead <= 0) {
            const auto behind = static_cast<std::size_t>(-static_cast<std::int64_t>(ahead));
            if (behind >= data.size()) {
                ++stats_.retransmitted_segments;
            } else {
                if (behind > 0) ++stats_.overlapping_segments;
                deliver(s, key, data.subspan(behind), p.time, sink);
                drain_pending(s, key, p.time, sink);
            }
        }
    }
    if (fin) {
        s.fin = true;
        s.fin_seq = data_seq + static_cast<std::uint32_t>(p.payload.size());
    }
    if (s.fin && s.next_seq == s.fin_seq) {
        ++stats_.streams_closed_fin;
        stats_.leftover_bytes += s.buffer.size() + s.ws_message.size();
        table_.erase(at);
    }
}

void TcpReassembler::finish() noexcept {
    table_.erase_if(
        [](const auto&) { return true; },
        [this](const auto& e) { stats_.leftover_bytes += e.value.buffer.size() + e.value.ws_message.size(); });
}

}  // namespace hepd::pcap
