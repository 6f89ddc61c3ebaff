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

std::optional<Endpoint> usable_media(const SessionDescription& sdp, std::size_t i) noexcept {
    if (i >= sdp.media_count || sdp.media[i].port == 0) return std::nullopt;
    const auto endpoint = media_endpoint(sdp, i);
    if (!endpoint || is_unspecified(endpoint->address)) return std::nullopt;
    return endpoint;
}

MediaEmitResult emit_media_bindings(const SessionDescription& sdp, const CompactText& call_id, std::uint32_t dialog,
                                    Timestamp time, std::span<const Endpoint> peers, MediaSink& sink) noexcept {
    MediaEmitResult result;
    for (std::size_t i = 0; i < sdp.media_count; ++i) {
        const Media& media = sdp.media[i];
        if (media.port == 0) continue;  // a declined or removed stream
        const auto endpoint = usable_media(sdp, i);
        if (!endpoint) {
            ++result.unusable;
            continue;
        }
        MediaBinding binding;
        binding.media = *endpoint;
        if (i < peers.size()) binding.peer = peers[i];
        binding.time = time;
        binding.call_id = call_id.view();
        binding.call_id_text = &call_id;
        binding.dialog = dialog;
        for (const std::uint8_t pt : media.payload_type_list()) {
            if (binding.codec_count == kMaxBindingCodecs) break;
            CodecInfo& codec = binding.codecs[binding.codec_count++];
            codec.payload_type = pt;
            if (const auto map = find_rtpmap(sdp, i, pt)) {
                codec.clock_rate = map->clock_rate;
                codec.channels = map->channels;
                codec.set_name(map->encoding);
            }
        }
        sink.on_media_binding(binding);
        ++result.emitted;
    }
    return result;
}

}  // namespace hepd::sip
