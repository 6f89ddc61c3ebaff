// Fuzzes the SDP parser and its lookup helpers directly, checking that every view lies inside
// the input and that the fixed capacities hold.
#include "sip/sdp.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

namespace {

using namespace hepd::sip;

void require(bool condition) {
    if (!condition) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const auto inside = [&](std::string_view view) {
        if (view.empty()) return;
        require(view.data() >= text.data() && view.data() + view.size() <= text.data() + text.size());
    };

    SessionDescription sd;
    const auto error = parse_sdp_into(text, sd);
    if (error) {
        require(!to_string(*error).empty());
        return 0;
    }
    require(sd.media_count <= kMaxMedia && sd.rtpmap_count <= kMaxRtpMaps && sd.fmtp_count <= kMaxFmtps);
    inside(sd.session_text);
    inside(sd.session_name);
    inside(sd.origin.username);
    inside(sd.origin.address);
    inside(sd.connection.address);
    (void)find_attribute(sd.session_text, "group");
    for (std::size_t i = 0; i < sd.media_count; ++i) {
        const Media& media = sd.media[i];
        inside(media.type);
        inside(media.proto_text);
        inside(media.formats);
        inside(media.text);
        inside(media.mid);
        inside(media.label);
        inside(media.connection.address);
        inside(media.rtcp_connection.address);
        require(media.payload_type_count <= kMaxFormats);
        require(media.port_count >= 1);
        for (std::uint8_t pt : media.payload_type_list()) {
            require(pt <= 127);
            if (const auto map = find_rtpmap(sd, i, pt)) {
                require(map->clock_rate > 0 && map->channels > 0 && map->payload_type == pt);
            }
            if (const auto fmtp = find_fmtp(sd, i, pt)) inside(*fmtp);
        }
        if (const Connection* c = effective_connection(sd, i)) inside(c->address);
        const Direction direction = effective_direction(sd, i);
        require(direction != Direction::unspecified);
        (void)media_endpoint(sd, i);
        (void)rtcp_endpoint(sd, i);
        if (const auto value = find_attribute(media.text, "rtpmap")) inside(*value);
    }
    for (std::size_t i = 0; i < sd.rtpmap_count; ++i) {
        inside(sd.rtpmaps[i].encoding);
        require(sd.rtpmaps[i].media_index < sd.media_count);
    }
    return 0;
}
