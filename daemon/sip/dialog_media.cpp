#include "sip/dialog_media.hpp"

#include "core/ascii.hpp"
#include "sip/text.hpp"

#include <cstdint>

namespace hepd::sip {

namespace {

bool is_unspecified(const IpAddress& a) noexcept {
    for (const std::uint8_t b : a.bytes())
        if (b != 0) return false;
    return true;
}

}  // namespace

bool is_sdp_content_type(std::string_view content_type) noexcept {
    const std::string_view s = detail::trim_lws(content_type);
    constexpr std::string_view kSdp = "application/sdp";
    if (!detail::istarts_with(s, kSdp)) return false;
    if (s.size() == kSdp.size()) return true;
    const char next = s[kSdp.size()];
    return next == ';' || next == ' ' || next == '\t';
}

bool is_multipart_content_type(std::string_view content_type) noexcept {
    return detail::istarts_with(detail::trim_lws(content_type), "multipart/");
}

namespace {

// The boundary parameter (RFC 2046 5.1.1: 1 to 70 characters, none of them ';'), quoted or not.
std::optional<std::string_view> multipart_boundary(std::string_view content_type) noexcept {
    for (std::size_t at = content_type.find(';'); at != std::string_view::npos;) {
        const std::size_t next = content_type.find(';', at + 1);
        std::string_view param = detail::trim_lws(content_type.substr(at + 1, next - (at + 1)));
        at = next;
        if (!detail::istarts_with(param, "boundary")) continue;
        param = detail::ltrim_lws(param.substr(8));
        if (param.empty() || param.front() != '=') continue;
        param = detail::trim_lws(param.substr(1));
        if (param.size() >= 2 && param.front() == '"' && param.back() == '"') param = param.substr(1, param.size() - 2);
        if (param.empty() || param.size() > 70) return std::nullopt;
        return param;
    }
    return std::nullopt;
}

// Where the next delimiter line ("--boundary", then "--", white space or the line's end) begins,
// from `from`.
std::size_t find_delimiter(std::string_view body, std::string_view boundary, std::size_t from) noexcept {
    for (std::size_t at = body.find("--", from); at != std::string_view::npos; at = body.find("--", at + 1)) {
        if ((at != 0 && body[at - 1] != '\n') || body.substr(at + 2, boundary.size()) != boundary) continue;
        const std::size_t after = at + 2 + boundary.size();
        if (after == body.size() || body[after] == '\r' || body[after] == '\n' || body[after] == '-' ||
            body[after] == ' ' || body[after] == '\t')
            return at;
    }
    return std::string_view::npos;
}

// Whether a body part's header lines (up to the empty line) say application/sdp.
bool part_is_sdp(std::string_view headers) noexcept {
    while (!headers.empty()) {
        const std::size_t end = headers.find('\n');
        const std::string_view line = headers.substr(0, end);
        headers = end == std::string_view::npos ? std::string_view{} : headers.substr(end + 1);
        if (!detail::istarts_with(line, "content-type")) continue;
        const std::string_view rest = detail::ltrim_lws(line.substr(12));
        if (!rest.empty() && rest.front() == ':') return is_sdp_content_type(rest.substr(1));
    }
    return false;
}

}  // namespace

std::optional<std::string_view> sdp_part_of_multipart(std::string_view content_type, std::string_view body) noexcept {
    const auto boundary = multipart_boundary(content_type);
    if (!boundary) return std::nullopt;
    for (std::size_t at = find_delimiter(body, *boundary, 0); at != std::string_view::npos;) {
        const std::size_t after = at + 2 + boundary->size();
        if (body.substr(after, 2) == "--") return std::nullopt;  // the close delimiter
        const std::size_t line_end = body.find('\n', after);
        if (line_end == std::string_view::npos) return std::nullopt;
        const std::size_t start = line_end + 1;
        const std::size_t next = find_delimiter(body, *boundary, start);
        if (next == std::string_view::npos) return std::nullopt;  // a part never closed: cut short
        // The line break before a delimiter belongs to the delimiter.
        std::size_t end = next;
        if (end > start && body[end - 1] == '\n') --end;
        if (end > start && body[end - 1] == '\r') --end;
        const std::string_view part = body.substr(start, end - start);
        // Headers, an empty line, the content; a part with no headers is text/plain.
        std::size_t blank = std::string_view::npos;
        if (part.starts_with("\r\n") || part.starts_with("\n")) {
            blank = 0;
        } else if (const std::size_t crlf = part.find("\n\r\n"); crlf != std::string_view::npos) {
            blank = crlf + 1;
        } else if (const std::size_t lf = part.find("\n\n"); lf != std::string_view::npos) {
            blank = lf + 1;
        }
        if (blank != std::string_view::npos && part_is_sdp(part.substr(0, blank))) {
            const std::size_t content = part.find('\n', blank) + 1;
            return part.substr(content);
        }
        at = next;
    }
    return std::nullopt;
}

std::optional<Endpoint> usable_media(const SessionDescription& sdp, std::size_t i) noexcept {
    if (i >= sdp.media_count || sdp.media[i].port == 0) return std::nullopt;
    const auto endpoint = media_endpoint(sdp, i);
    if (!endpoint || is_unspecified(endpoint->address)) return std::nullopt;
    return endpoint;
}

void put_codecs(const SessionDescription& sdp, std::size_t i, MediaBinding& binding) noexcept {
    binding.codec_count = 0;
    for (const std::uint8_t pt : sdp.media[i].payload_type_list()) {
        if (binding.codec_count == kMaxBindingCodecs) break;
        CodecInfo& codec = binding.codecs[binding.codec_count++];
        codec = CodecInfo{};
        codec.payload_type = pt;
        if (const auto map = find_rtpmap(sdp, i, pt)) {
            codec.clock_rate = map->clock_rate;
            codec.channels = map->channels;
            codec.set_name(map->encoding);
        }
    }
}

std::optional<Endpoint> rtcp_alias(const SessionDescription& sdp, std::size_t i, const Endpoint& media) noexcept {
    // Most lines: RTCP on the RTP port (rtcp-mux) or the one after an even port, the RTP
    // address's own key; nothing to parse.
    const Media& line = sdp.media[i];
    if (line.rtcp_mux || (line.rtcp_port == 0 && media.port % 2 == 0)) return std::nullopt;
    const auto rtcp = rtcp_endpoint(sdp, i);
    if (!rtcp || is_unspecified(rtcp->address) || media_key(*rtcp) == media_key(media)) return std::nullopt;
    return rtcp;
}

MediaEmitResult emit_media_bindings(const SessionDescription& sdp, const CompactText& call_id, std::uint32_t dialog,
                                    Timestamp time, std::span<const Endpoint> peers, MediaSink& sink,
                                    std::span<const Endpoint> rtcp_peers) noexcept {
    MediaEmitResult result;
    for (std::size_t i = 0; i < sdp.media_count; ++i) {
        const Media& media = sdp.media[i];
        if (media.port == 0) continue;  // a declined or removed stream
        const auto endpoint = usable_media(sdp, i);
        if (!endpoint) {
            // c=0.0.0.0 (or ::) is a hold (RFC 3264 8.4, RFC 2543's way), nothing to bind and
            // nothing wrong; an address that is missing or not literal is unusable.
            const auto given = media_endpoint(sdp, i);
            if (!given || !is_unspecified(given->address)) ++result.unusable;
            continue;
        }
        MediaBinding binding;
        binding.media = *endpoint;
        if (i < peers.size()) binding.peer = peers[i];
        binding.time = time;
        binding.call_id = call_id.view();
        binding.call_id_text = &call_id;
        binding.dialog = dialog;
        put_codecs(sdp, i, binding);
        sink.on_media_binding(binding);
        ++result.emitted;
        if (const auto rtcp = rtcp_alias(sdp, i, *endpoint)) {
            binding.rtcp = true;
            binding.media = *rtcp;
            binding.peer = i < rtcp_peers.size() ? rtcp_peers[i] : Endpoint{};
            sink.on_media_binding(binding);
            ++result.emitted;
        }
    }
    return result;
}

}  // namespace hepd::sip
