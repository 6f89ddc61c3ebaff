// Fuzzes the SIP message parser, the stream framer and the SDP parser on whatever body the
// message carries, and checks the invariants a caller relies on: every view lies inside the
// input, the body never exceeds what is present, a complete frame fits the buffer, and a parse at
// dialog depth agrees with the full one.
#include "../sip/parse_depth_check.hpp"
#include "sip/framing.hpp"
#include "sip/message.hpp"
#include "sip/sdp.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

namespace {

using namespace hepd::sip;

std::string_view g_input;

void require(bool condition) {
    if (!condition) std::abort();
}

void inside(std::string_view view) {
    if (view.empty()) return;
    require(view.data() >= g_input.data() && view.data() + view.size() <= g_input.data() + g_input.size());
}

void check_name_addr(const NameAddr& na) {
    inside(na.raw);
    inside(na.display_name);
    inside(na.uri);
    inside(na.params);
    inside(na.tag);
}

void check_sdp(std::string_view body) {
    const auto sdp = parse_sdp(body);
    if (!sdp.ok()) {
        require(!to_string(sdp.error()).empty());
        return;
    }
    require(sdp->media_count <= kMaxMedia);
    inside(sdp->session_text);
    inside(sdp->origin.address);
    inside(sdp->connection.address);
    for (std::size_t i = 0; i < sdp->media_count; ++i) {
        const Media& media = sdp->media[i];
        inside(media.text);
        inside(media.formats);
        inside(media.connection.address);
        require(media.payload_type_count <= kMaxFormats);
        for (std::uint8_t pt : media.payload_type_list()) {
            require(pt <= 127);
            if (const auto map = find_rtpmap(*sdp, i, pt)) require(map->clock_rate > 0);
            (void)find_fmtp(*sdp, i, pt);
        }
        (void)effective_connection(*sdp, i);
        (void)effective_direction(*sdp, i);
        (void)media_endpoint(*sdp, i);
        (void)rtcp_endpoint(*sdp, i);
        (void)find_attribute(media.text, "rtpmap");
    }
    for (std::size_t i = 0; i < sdp->rtpmap_count; ++i) {
        inside(sdp->rtpmaps[i].encoding);
        require(sdp->rtpmaps[i].media_index < sdp->media_count);
    }
    for (std::size_t i = 0; i < sdp->fmtp_count; ++i) {
        inside(sdp->fmtps[i].format);
        inside(sdp->fmtps[i].parameters);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    g_input = text;

    const auto message = parse_message(text);
    if (message.ok()) {
        const Message& m = *message;
        require(!m.call_id.empty());
        inside(m.call_id);
        inside(m.start_line);
        inside(m.raw);
        inside(m.request_uri);
        inside(m.reason_phrase);
        inside(m.cseq.method_text);
        check_name_addr(m.from);
        check_name_addr(m.to);
        check_name_addr(m.contact);
        inside(m.top_via.raw);
        inside(m.top_via.host);
        inside(m.top_via.branch);
        inside(m.reason.text);
        inside(m.body);
        require(m.body.size() <= m.body_bytes_present);
        if (m.content_length && !m.body_truncated) require(m.body.size() == *m.content_length);
        if (m.is_response()) require(m.status_code >= 100 && m.status_code <= 699);
        require(m.header_count <= kMaxStoredHeaders);
        for (const HeaderField& field : m.headers()) {
            inside(field.name);
            inside(field.value);
        }
        inside(m.overflow_text);
        if (const auto v = m.find_header("X-Unknown")) inside(*v);
        if (const auto v = m.find_header("k")) inside(*v);
        (void)m.count_headers("Via");
        if (!m.body.empty()) check_sdp(m.body);
    } else {
        require(!to_string(message.error()).empty());
    }

    // The shards parse at dialog depth: it must agree with the full parse on what they read.
    require(hepd::sip::test::dialog_depth_agrees(text));

    const Frame frame = message_length(text, 4096);
    require(frame.skip <= size);
    if (frame.status == FrameStatus::complete) {
        require(frame.length > 0 && frame.skip + frame.length <= size);
        (void)parse_message(text.substr(frame.skip, frame.length));
    }
    return 0;
}
