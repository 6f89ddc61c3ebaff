#include "pcap/websocket.hpp"

#include "core/ascii.hpp"

#include <algorithm>

namespace hepd::pcap {

namespace {

constexpr std::string_view kGet = "GET ";
constexpr std::string_view kHttp = "HTTP/";

// Headers of a handshake are looked for this far into a first segment.
constexpr std::size_t kMaxSniffedHead = 8192;

std::string_view trim(std::string_view s) noexcept {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
    return s;
}

// Whether a comma-separated header value lists `token` (compared without case).
bool lists_token(std::string_view value, std::string_view lower_token) noexcept {
    while (!value.empty()) {
        const std::size_t comma = value.find(',');
        if (iequals_ascii(trim(value.substr(0, comma)), lower_token)) return true;
        if (comma == std::string_view::npos) break;
        value.remove_prefix(comma + 1);
    }
    return false;
}

bool starts_with(ByteSpan b, std::string_view prefix) noexcept {
    return b.size() >= prefix.size() && as_text(b.first(prefix.size())) == prefix;
}

bool is_prefix_of(ByteSpan b, std::string_view text) noexcept {
    return b.size() < text.size() && text.substr(0, b.size()) == as_text(b);
}

}  // namespace

std::string_view to_string(WebSocketError error) noexcept {
    switch (error) {
    case WebSocketError::handshake_too_large: return "handshake_too_large";
    case WebSocketError::not_upgraded: return "not_upgraded";
    case WebSocketError::frame_too_large: return "frame_too_large";
    case WebSocketError::bad_frame: return "bad_frame";
    case WebSocketError::unexpected_continuation: return "unexpected_continuation";
    case WebSocketError::compressed: return "compressed";
    }
    return "unknown";
}

StreamStart classify_stream_start(ByteSpan bytes) noexcept {
    if (starts_with(bytes, kGet) || starts_with(bytes, kHttp)) return StreamStart::http;
    if (is_prefix_of(bytes, kGet) || is_prefix_of(bytes, kHttp)) return StreamStart::need_more;
    return StreamStart::other;
}

Handshake parse_handshake(std::string_view head) noexcept {
    Handshake h;
    std::size_t eol = head.find('\n');
    const std::string_view first = trim(head.substr(0, eol));
    if (first.substr(0, kGet.size()) == kGet) {
        h.request = first.size() > kGet.size() + 8 && first.substr(first.size() - 8, 7) == "HTTP/1.";
    } else if (first.substr(0, kHttp.size()) == kHttp) {
        const std::size_t sp = first.find(' ');
        h.switching = sp != std::string_view::npos && first.substr(sp + 1, 3) == "101" &&
                      (first.size() == sp + 4 || first[sp + 4] == ' ');
    } else {
        return h;
    }
    while (eol != std::string_view::npos) {
        head.remove_prefix(eol + 1);
        eol = head.find('\n');
        const std::string_view line = head.substr(0, eol);
        const std::size_t colon = line.find(':');
        if (colon == std::string_view::npos) continue;
        const std::string_view name = trim(line.substr(0, colon));
        const std::string_view value = line.substr(colon + 1);
        if (iequals_ascii(name, "upgrade"))
            h.upgrade = h.upgrade || lists_token(value, "websocket");
        else if (iequals_ascii(name, "sec-websocket-protocol"))
            h.sip_protocol = h.sip_protocol || lists_token(value, "sip");
    }
    return h;
}

bool looks_like_sip_websocket(ByteSpan payload) noexcept {
    if (classify_stream_start(payload) != StreamStart::http) return false;
    const std::string_view text = as_text(payload.first(std::min(payload.size(), kMaxSniffedHead)));
    const std::size_t end = text.find("\r\n\r\n");
    if (end == std::string_view::npos) return payload.size() == text.size() && parse_handshake(text).upgrades();
    const Handshake h = parse_handshake(text.substr(0, end + 2));
    return h.upgrades() && h.sip_protocol;
}

WsFrame parse_ws_frame(ByteSpan b, std::size_t max_payload) noexcept {
    WsFrame f;
    if (b.size() < 2) return f;
    f.fin = (b[0] & 0x80U) != 0;
    f.rsv1 = (b[0] & 0x40U) != 0;
    f.opcode = b[0] & 0x0fU;
    f.masked = (b[1] & 0x80U) != 0;
    const std::uint8_t len7 = b[1] & 0x7fU;
    std::size_t off = 2;
    if (len7 == 126) {
        if (b.size() < 4) return f;
        f.payload_size = load_be16(b.data() + 2);
        off = 4;
    } else if (len7 == 127) {
        if (b.size() < 10) return f;
        f.payload_size = load_be64(b.data() + 2);  // the top bit must be 0: then it is too large anyway
        off = 10;
    } else {
        f.payload_size = len7;
    }
    if (f.masked) off += 4;
    f.header_size = off;
    if (f.payload_size > max_payload) {
        f.status = WsFrameStatus::too_large;
        return f;
    }
    if (b.size() < off) return f;
    if (f.masked) std::copy_n(b.data() + off - 4, 4, f.mask.begin());
    if (b.size() - off < f.payload_size) return f;
    f.status = WsFrameStatus::complete;
    return f;
}

void unmask(std::uint8_t* data, std::size_t size, const std::array<std::uint8_t, 4>& mask,
            std::size_t offset) noexcept {
    for (std::size_t i = 0; i < size; ++i) data[i] ^= mask[(offset + i) & 3U];
}

}  // namespace hepd::pcap
