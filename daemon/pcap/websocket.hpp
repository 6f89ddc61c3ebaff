#pragma once
// SIP over WebSocket (RFC 7118) as captured on TCP: the HTTP Upgrade handshake that starts the
// connection, and RFC 6455 frame headers. Pure and allocation-free; the TCP reassembler keeps the
// bytes, unmasks payloads and puts fragmented messages together.
#include "core/bytes.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace hepd::pcap {

// Degraded WebSocket streams, one value per reason label.
enum class WebSocketError : std::uint8_t {
    handshake_too_large,      // no end of the HTTP header within max_message_bytes
    not_upgraded,             // HTTP on the stream, but not a WebSocket upgrade (or its refusal): skipped
    frame_too_large,          // a frame, or a fragmented message, beyond max_message_bytes
    bad_frame,                // reserved opcode, or a control frame that is fragmented or over 125 bytes
    unexpected_continuation,  // a continuation with no message begun, or a new message before the last ended
    compressed,               // RSV1 set (permessage-deflate): the message is skipped, not inflated
};
inline constexpr std::size_t kWebSocketErrorCount = 6;
std::string_view to_string(WebSocketError error) noexcept;

// Whether a stream's first bytes begin an HTTP message (a request line "GET " or a status line
// "HTTP/"): the stream then needs its handshake read before anything else.
enum class StreamStart : std::uint8_t { need_more, http, other };
StreamStart classify_stream_start(ByteSpan bytes) noexcept;

struct Handshake {
    bool request = false;       // "GET ... HTTP/1.1" (else a status line)
    bool switching = false;     // status 101
    bool upgrade = false;       // Upgrade: websocket
    bool sip_protocol = false;  // Sec-WebSocket-Protocol lists "sip" (RFC 7118 section 4)
    // A client's request to upgrade, or a server's 101 agreeing to it.
    bool upgrades() const noexcept { return upgrade && (request || switching); }
};

// Reads an HTTP header section (`head` ends at its empty line, or wherever the caller cut it).
Handshake parse_handshake(std::string_view head) noexcept;

// The first segment of an unknown TCP stream may start a SIP WebSocket: an upgrade request or a
// 101 response naming the "sip" subprotocol, or, when the header goes on in the next segment
// (cookies make it long), one whose Upgrade header is already there; the stream then checks the
// subprotocol once the header is complete.
bool looks_like_sip_websocket(ByteSpan payload) noexcept;

enum class WsFrameStatus : std::uint8_t { need_more, complete, too_large };

namespace ws_opcode {
inline constexpr std::uint8_t continuation = 0x0;
inline constexpr std::uint8_t text = 0x1;
inline constexpr std::uint8_t binary = 0x2;
inline constexpr std::uint8_t close = 0x8;
inline constexpr std::uint8_t ping = 0x9;
inline constexpr std::uint8_t pong = 0xa;
}  // namespace ws_opcode

inline constexpr std::size_t kMaxWsHeaderBytes = 14;  // 2 + 8 (64-bit length) + 4 (mask)

struct WsFrame {
    WsFrameStatus status = WsFrameStatus::need_more;
    bool fin = false;
    bool rsv1 = false;
    std::uint8_t opcode = 0;
    bool masked = false;
    std::array<std::uint8_t, 4> mask{};
    std::size_t header_size = 0;  // known once the length is (need_more may have it too)
    std::uint64_t payload_size = 0;
    std::size_t size() const noexcept { return header_size + static_cast<std::size_t>(payload_size); }
};

// Reads one frame header from `bytes`; complete when the whole frame (header and payload) is
// there. A payload declared longer than `max_payload` is too_large as soon as its length is read.
WsFrame parse_ws_frame(ByteSpan bytes, std::size_t max_payload) noexcept;

// XORs `data` with the masking key, starting `offset` bytes into the frame's payload.
void unmask(std::uint8_t* data, std::size_t size, const std::array<std::uint8_t, 4>& mask,
            std::size_t offset = 0) noexcept;

}  // namespace hepd::pcap
