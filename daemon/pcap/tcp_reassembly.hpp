#pragma once
// TCP stream reassembly for SIP over TCP, SIP over WebSocket and HEP over TCP in captures. Each
// direction of a connection is its own stream: bytes are delivered in sequence order (a bounded
// amount of out-of-order data is held; retransmitted and overlapping bytes are trimmed; sequence
// numbers wrap), then cut into messages with sip::message_length or hep::StreamFramer. A SIP
// stream that starts with HTTP is read as a WebSocket handshake; after an upgrade its frames are
// taken apart (RFC 6455) and each text or binary message is one SIP message (RFC 7118). A framing
// error drops that stream's buffer and starts again at the next segment: it never spins. Streams
// are capped (least recently active evicted) and so are the bytes each may hold.
#include "core/address.hpp"
#include "core/bytes.hpp"
#include "core/lru_table.hpp"
#include "core/time.hpp"
#include "hep/framer.hpp"
#include "pcap/decode.hpp"
#include "pcap/function_ref.hpp"
#include "pcap/websocket.hpp"
#include "sip/framing.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace hepd::pcap {

enum class StreamProtocol : std::uint8_t { sip, hep };

struct TcpOptions {
    std::size_t max_streams = 10'000;                        // config pcap.max_tcp_streams
    std::size_t max_stream_bytes = std::size_t{256} * 1024;  // held per stream: unframed tail + out-of-order data
    std::size_t max_out_of_order_segments = 64;
    // A larger SIP or HEP message, WebSocket frame or message, or HTTP handshake is a framing error.
    std::size_t max_message_bytes = 65535;
};

struct TcpStats {
    std::uint64_t segments = 0;  // segments offered (with or without payload)
    std::uint64_t payload_bytes = 0;
    std::uint64_t messages = 0;  // messages cut and handed on
    std::uint64_t streams_opened = 0;
    std::uint64_t streams_closed_fin = 0;
    std::uint64_t streams_closed_rst = 0;
    std::uint64_t streams_evicted = 0;                  // least recently active, at max_streams
    std::uint64_t streams_restarted = 0;                // a new SYN on a known 4-tuple
    std::uint64_t retransmitted_segments = 0;           // every byte already delivered
    std::uint64_t overlapping_segments = 0;             // some bytes already delivered (trimmed)
    std::uint64_t out_of_order_segments = 0;            // held until the gap before them filled
    std::uint64_t out_of_order_dropped = 0;             // held data abandoned: a second hole and no room
    std::uint64_t gaps_skipped = 0;                     // a hole given up on: delivery resumed after it
    std::uint64_t ignored_segments = 0;                 // no stream and nothing to start one (bare ACK/FIN/RST)
    std::array<std::uint64_t, 4> sip_framing_errors{};  // by sip::FramingError
    std::array<std::uint64_t, hep::framer_error_count> hep_framing_errors{};  // by hep::FramerError
    std::uint64_t overflows = 0;             // a stream's unframed bytes exceeded max_stream_bytes
    std::uint64_t resync_bytes_dropped = 0;  // discarded by framing errors, overflows and gaps
    std::uint64_t leftover_bytes = 0;        // an unfinished message when its stream closed or ended
    std::uint64_t websocket_upgrades = 0;    // handshakes that turned a stream (one direction) into WebSocket
    std::uint64_t websocket_frames = 0;
    std::uint64_t websocket_control_frames = 0;  // close, ping, pong: skipped
    std::uint64_t websocket_messages = 0;        // SIP messages taken out of WebSocket (also in messages)
    std::uint64_t websocket_keepalives = 0;      // messages of CR/LF only (RFC 7118 section 6)
    std::array<std::uint64_t, kWebSocketErrorCount> websocket_errors{};
};

struct TcpMessage {
    Timestamp time;  // of the segment that completed the message
    Endpoint src;
    Endpoint dst;
    StreamProtocol protocol = StreamProtocol::sip;
    ByteSpan bytes;  // one message; valid during the callback only
};

class TcpReassembler {
public:
    using MessageSink = FunctionRef<void(const TcpMessage&)>;

    explicit TcpReassembler(TcpOptions options = {});

    // One TCP segment (decode output) whose stream carries `protocol`. A stream found by sniffing
    // (`sniffed`: not on a SIP port) upgrades to WebSocket only for the "sip" subprotocol.
    void segment(const L4Packet& packet, StreamProtocol protocol, MessageSink sink, bool sniffed = false);

    // End of input: unfinished messages are counted as leftovers and every stream is dropped.
    void finish() noexcept;

    // Whether the segment's stream (this direction) is being reassembled: how a stream found by
    // sniffing its first payload keeps its later segments.
    bool has_stream(const L4Packet& packet) const noexcept;

    std::size_t streams() const noexcept { return table_.size(); }
    const TcpStats& stats() const noexcept { return stats_; }

private:
    struct Key {
        Endpoint src;
        Endpoint dst;
        friend bool operator==(const Key&, const Key&) = default;
    };
    struct KeyHash {
        std::uint64_t operator()(const Key& key) const noexcept { return hash_of(key); }
    };
    struct Pending {
        std::uint32_t seq = 0;
        std::uint32_t length = 0;
        std::uint32_t at = 0;  // in Stream::held
    };
    // How the next bytes of a stream are read.
    enum class Mode : std::uint8_t {
        start,  // SIP stream, nothing delivered yet: SIP, or HTTP starting a WebSocket?
        sip,
        hep,
        handshake,  // an HTTP header section, before WebSocket frames
        websocket,
        skipped,  // HTTP that did not upgrade: nothing of SIP follows
    };
    struct Stream {
        StreamProtocol protocol = StreamProtocol::sip;
        Mode mode = Mode::start;
        bool ws_in_message = false;  // a fragmented WebSocket message is open
        bool ws_skip = false;        // ... and is being skipped (compressed or too large)
        bool sniffed = false;        // not on a SIP port: a WebSocket must be for SIP
        std::uint32_t next_seq = 0;
        bool syn = false;  // syn_seq is known
        std::uint32_t syn_seq = 0;
        bool fin = false;
        std::uint32_t fin_seq = 0;
        std::vector<std::uint8_t> buffer;      // in order, not yet framed
        std::vector<Pending> pending;          // out of order, in arrival order
        std::vector<std::uint8_t> held;        // their bytes
        std::vector<std::uint8_t> ws_message;  // fragments of a WebSocket message, unmasked
    };
    struct Step {
        std::size_t used = 0;
        bool stop = false;  // need more bytes, or failed
    };

    void deliver(Stream& s, const Key& key, ByteSpan bytes, Timestamp time, MessageSink sink);
    std::size_t frame(Stream& s, const Key& key, ByteSpan bytes, Timestamp time, MessageSink sink, bool& failed);
    Step frame_sip(const Key& key, ByteSpan rest, Timestamp time, MessageSink sink, bool& failed);
    Step frame_hep(const Key& key, ByteSpan rest, Timestamp time, MessageSink sink, bool& failed);
    Step frame_handshake(Stream& s, ByteSpan rest, bool& failed);
    Step frame_websocket(Stream& s, const Key& key, ByteSpan rest, Timestamp time, MessageSink sink, bool& failed);
    void emit_websocket(const Key& key, ByteSpan message, Timestamp time, MessageSink sink);
    void websocket_error(WebSocketError e) noexcept { ++stats_.websocket_errors[static_cast<std::size_t>(e)]; }
    static Mode initial_mode(StreamProtocol p) noexcept { return p == StreamProtocol::hep ? Mode::hep : Mode::start; }
    static std::uint64_t hash_of(const Key& key) noexcept;
    void drain_pending(Stream& s, const Key& key, Timestamp time, MessageSink sink);
    bool hold(Stream& s, std::uint32_t seq, ByteSpan bytes);
    void skip_gap(Stream& s, const Key& key, std::uint32_t seq, Timestamp time, MessageSink sink);
    void reset(Stream& s) noexcept;
    std::size_t held_bytes(const Stream& s) const noexcept;

    TcpOptions options_;
    hep::StreamFramer framer_;
    LruTable<Key, Stream, KeyHash> table_;
    TcpStats stats_;
    std::vector<std::uint8_t> unmasked_;  // one masked frame's payload; reused (no allocation once warm)
};

}  // namespace hepd::pcap
