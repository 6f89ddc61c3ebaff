#pragma once
// SDP -> MediaBinding: "RTP sent to this address belongs to this Call-ID, with these codecs".
// The dialog table calls it for every SDP-carrying message it applies; the shard forwards each
// binding to the shard that owns media_key(binding.media).
#include "core/media_binding.hpp"
#include "core/time.hpp"
#include "sip/sdp.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace hepd::sip {

// Receives bindings synchronously, from inside DialogTable::process(): it must not call back into
// the table. `binding.call_id` is a view valid only during the call: a sink that queues the
// binding copies the text.
class MediaSink {
public:
    virtual ~MediaSink() = default;
    virtual void on_media_binding(const MediaBinding& binding) noexcept = 0;
};

// The media addresses of the last SDP sent in one direction of one hop of a dialog. An SDP that
// goes the other way on the same hop answers it (or offers anew against it): together they name
// both ends of each media line, which is what ties a stream to this call rather than to another
// one that shares one of its addresses. When the dialog leaves its table, every address here is
// told that the dialog's bindings end. The dialog table keeps them beside its records, so that
// dialog records stay as they are; snapshots carry them with the dialog.
// Every m= line the parser keeps: each one's binding is paired and released with the dialog (a
// line left out would stay bound until pending_media_timeout).
inline constexpr std::size_t kSdpMedia = kMaxMedia;
inline constexpr std::size_t kSdpSides = 4;  // two hops, both directions
struct SdpSide {
    std::uint32_t hop = 0;  // Hop::id; 0: empty
    bool forward = false;
    std::array<Endpoint, kSdpMedia> media{};  // by m= line; port 0: no usable address
    std::array<Endpoint, kSdpMedia> rtcp{};   // by m= line, its rtcp_alias(); port 0: none

    friend bool operator==(const SdpSide&, const SdpSide&) = default;
};
using SdpSides = std::array<SdpSide, kSdpSides>;  // most recent first, empty ones last

// Where RTCP of a side's line `i` goes, as far as media_key() tells: its rtcp_alias(), else its
// RTP address (whose key its RTCP shares).
inline Endpoint rtcp_of(const SdpSide& side, std::size_t i) noexcept {
    return side.rtcp[i].port != 0 ? side.rtcp[i] : side.media[i];
}

struct MediaEmitResult {
    std::size_t emitted = 0;   // bindings handed to the sink (RTCP ones too)
    std::size_t unusable = 0;  // active media (port != 0) without a literal, specified address
};

// Where RTP of media section `i` goes: effective c= address + m= port; nothing for a declined
// stream (port 0), an unspecified address (0.0.0.0, ::, the RFC 2543 way of holding a call) or
// a host name: RTP never goes there.
std::optional<Endpoint> usable_media(const SessionDescription& sdp, std::size_t i) noexcept;

// Where RTCP of usable media section `i` (its RTP address `media`, usable_media()) goes when
// that is not where its RTP goes (another media_key()): an a=rtcp port or address (RFC 3605), or
// the port after an odd RTP port (RFC 3550 allows it, RFC 8866 5.14 too); nothing with
// rtcp-mux, for the RTP port's pair, or an unusable address.
std::optional<Endpoint> rtcp_alias(const SessionDescription& sdp, std::size_t i, const Endpoint& media) noexcept;

// One binding per usable media section, with the first kMaxBindingCodecs formats of the m= line
// resolved through a=rtpmap or the RFC 3551 static table (an unmapped dynamic type is kept with
// its number only), and one more with the same codecs for its rtcp_alias() if it has one
// (MediaBinding::rtcp). `peers[i]` and `rtcp_peers[i]`, when given and non-zero, are the other
// end of section i and where that end's RTCP goes (from the matching offer or answer). The
// bindings name `call_id` by view and by block (MediaBinding::call_id_text). No allocation.
MediaEmitResult emit_media_bindings(const SessionDescription& sdp, const CompactText& call_id, std::uint32_t dialog,
                                    Timestamp time, std::span<const Endpoint> peers, MediaSink& sink,
                                    std::span<const Endpoint> rtcp_peers = {}) noexcept;

// The first kMaxBindingCodecs formats of media section `i` into `binding.codecs`, resolved as
// emit_media_bindings does.
void put_codecs(const SessionDescription& sdp, std::size_t i, MediaBinding& binding) noexcept;

// Content-Type is application/sdp (any case, parameters allowed).
bool is_sdp_content_type(std::string_view content_type) noexcept;
// Content-Type is multipart/* (SDP may be one of its parts: sdp_part_of_multipart()).
bool is_multipart_content_type(std::string_view content_type) noexcept;
// The content of the first application/sdp part of a multipart body (RFC 2046 5.1; SIP-I/SIP-T
// SDP beside ISUP, RFC 3204; SDP beside a PIDF-LO location, RFC 6442), a view into `body`;
// nullopt without a boundary parameter, an SDP part, or the delimiter closing that part.
std::optional<std::string_view> sdp_part_of_multipart(std::string_view content_type, std::string_view body) noexcept;

}  // namespace hepd::sip
