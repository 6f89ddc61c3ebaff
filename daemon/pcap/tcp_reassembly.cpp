#include "pcap/tcp_reassembly.hpp"

#include "core/hash.hpp"

#include <algorithm>

namespace hepd::pcap {

namespace {

// Serial-number arithmetic (RFC 1982): how far `a` is ahead of `b`, across the 2^32 wrap.
std::int32_t seq_diff(std::uint32_t a, std::uint32_t b) noexcept {
    return static_cast<std::int32_t>(a - b);
}

}  // namespace

TcpReassembler::TcpReassembler(TcpOptions options)
    : options_(options),
      framer_(options.max_message_bytes),
      table_(options.max_streams == 0 ? 1 : options.max_streams) {
    options_.max_message_bytes = std::clamp<std::size_t>(options_.max_message_bytes, 16, 65535);
    options_.max_stream_bytes = std::max(options_.max_stream_bytes, options_.max_message_bytes);
}

std::size_t TcpReassembler::held_bytes(const Stream& s) const noexcept {
    return s.buffer.size() + s.held.size();
}

void TcpReassembler::reset(Stream& s) noexcept {
    stats_.leftover_bytes += s.buffer.size();
    s.buffer.clear();
    s.pending.clear();
    s.held.clear();
    s.fin = false;
}

std::size_t TcpReassembler::frame(Stream& s, const Key& key, ByteSpan bytes, Timestamp time, MessageSink sink,
                                  bool& failed) {
    std::size_t pos = 0;
    while (pos < bytes.size()) {
        const ByteSpan rest = bytes.subspan(pos);
        ByteSpan message;
        if (s.protocol == StreamProtocol::sip) {
            const sip::Frame f = sip::message_length(as_text(rest), options_.max_message_bytes);
            if (f.status == sip::FrameStatus::need_more) {
                pos += std::min(f.skip, rest.size());  // keep-alive CRLFs go, the partial message stays
                break;
            }
            if (f.status == sip::FrameStatus::error || f.length == 0 || f.skip + f.length > rest.size()) {
                ++stats_.sip_framing_errors[std::min<std::size_t>(static_cast<std::size_t>(f.error),
                                                                  stats_.sip_framing_errors.size() - 1)];
                failed = true;
                break;
            }
            message = rest.subspan(f.skip, f.length);
            pos += f.skip + f.length;
        } else {
            const hep::FrameStatus f = framer_.next(rest);
            if (f.need_more()) break;
            if (f.is_error() || f.size == 0 || f.size > rest.size()) {
                ++stats_.hep_framing_errors[std::min<std::size_t>(static_cast<std::size_t>(f.error),
                                                                  stats_.hep_framing_errors.size() - 1)];
                failed = true;
                break;
            }
            message = rest.first(f.size);
            pos += f.size;
        }
        ++stats_.messages;
        sink(TcpMessage{time, key.src, key.dst, s.protocol, message});
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

void TcpReassembler::skip_gap(Stream& s, const Key& key, std::uint32_t seq, Timestamp time,
                              MessageSink sink) {
    ++stats_.gaps_skipped;
    stats_.resync_bytes_dropped += s.buffer.size();
    s.buffer.clear();
    // The message in progress lost bytes: resume at the earliest data there is.
    std::uint32_t target = seq;
    for (const Pending& p : s.pending)
        if (seq_diff(p.seq, target) < 0) target = p.seq;
    s.next_seq = target;
    drain_pending(s, key, time, sink);
}

void TcpReassembler::segment(const L4Packet& p, StreamProtocol protocol, MessageSink sink) {
    ++stats_.segments;
    stats_.payload_bytes += p.payload.size();
    const bool syn = (p.tcp_flags & tcp_flag::syn) != 0;
    const bool fin = (p.tcp_flags & tcp_flag::fin) != 0;
    const bool rst = (p.tcp_flags & tcp_flag::rst) != 0;

    const Key key{p.src, p.dst};
    const std::uint64_t hash = mix64(hash_endpoint(p.src) + 0x9e3779b97f4a7c15ULL * hash_endpoint(p.dst));
    std::uint32_t at = table_.find(hash, [&](const Key& k) { return k == key; });
    const std::uint32_t data_seq = syn ? p.tcp_seq + 1 : p.tcp_seq;
    if (at == LruTable<Key, Stream>::kNone) {
        if (rst || (!syn && p.payload.empty())) {
            ++stats_.ignored_segments;
            return;
        }
        auto inserted = table_.insert(hash, key, Stream{});
        if (inserted.second) {
            ++stats_.streams_evicted;
            stats_.leftover_bytes += inserted.second->value.buffer.size();
        }
        at = inserted.first;
        ++stats_.streams_opened;
        Stream& s = table_[at];
        s.protocol = protocol;
        // A capture that starts mid-connection starts the stream at the first byte it has.
        s.next_seq = data_seq;
    } else {
        table_.touch(at);
    }
    Stream& s = table_[at];

    if (rst) {
        ++stats_.streams_closed_rst;
        stats_.leftover_bytes += s.buffer.size();
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
        stats_.leftover_bytes += s.buffer.size();
        table_.erase(at);
    }
}

void TcpReassembler::finish() noexcept {
    table_.erase_if([](const auto&) { return true; },
                    [this](const auto& e) { stats_.leftover_bytes += e.value.buffer.size(); });
}

}  // namespace hepd::pcap
