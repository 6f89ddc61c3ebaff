#pragma once
// Zero-copy SDP parser (RFC 8866, formerly RFC 4566) for what a VoIP monitor needs: where media
// goes (c=, m=, a=rtcp), what it carries (a=rtpmap, a=fmtp, a=ptime) and which way it flows
// (direction attributes). Views point into the parsed text; fixed capacities, overflow counted.
#include "core/address.hpp"
#include "core/result.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace hepd::sip {

enum class SdpError : std::uint8_t {
    empty,            // nothing but white space
    missing_version,  // the first line is not v=
    bad_version,      // v= other than 0
    bad_line,         // a line not of the form <letter>=<value>: not SDP, or corrupted
    bad_connection,   // c= without network type, address type and address
    bad_media,        // m= without media, a port in 0..65535 and a protocol
};
inline constexpr std::size_t kSdpErrorCount = 6;
std::string_view to_string(SdpError error) noexcept;

enum class AddressType : std::uint8_t { none = 0, ip4, ip6, other };

// c=<nettype> <addrtype> <address>[/<ttl>][/<number of addresses>]
struct Connection {
    std::string_view network_type;  // "IN"
    AddressType address_type = AddressType::none;
    std::string_view address_type_text;
    std::string_view address;  // without the /ttl and /count suffixes
    std::uint8_t ttl = 0;      // IPv4 multicast only; 0 when absent
    std::uint16_t address_count = 1;
    bool present() const noexcept { return address_type != AddressType::none; }
};

// o=<username> <sess-id> <sess-version> <nettype> <addrtype> <unicast-address>
struct Origin {
    std::string_view username;
    std::string_view session_id;
    std::string_view session_version;
    std::uint64_t session_id_value = 0;       // 0 when not a 64-bit decimal number
    std::uint64_t session_version_value = 0;  // likewise
    std::string_view network_type;
    AddressType address_type = AddressType::none;
    std::string_view address;
    bool present = false;
};

enum class MediaProto : std::uint8_t {
    other = 0,
    rtp_avp,            // RTP/AVP
    rtp_savp,           // RTP/SAVP
    rtp_avpf,           // RTP/AVPF
    rtp_savpf,          // RTP/SAVPF
    udp_tls_rtp_savp,   // UDP/TLS/RTP/SAVP
    udp_tls_rtp_savpf,  // UDP/TLS/RTP/SAVPF
    udp,                // udp (e.g. T.38 udptl is "udptl", other)
};

enum class Direction : std::uint8_t { unspecified = 0, sendrecv, sendonly, recvonly, inactive };
std::string_view to_string(Direction direction) noexcept;

// a=rtpmap:<payload type> <encoding name>/<clock rate>[/<encoding parameters>]
struct RtpMap {
    std::uint8_t payload_type = 0;
    std::string_view encoding;
    std::uint32_t clock_rate = 0;
    std::uint8_t channels = 1;  // the encoding parameter; 1 when omitted
    std::uint8_t media_index = 0;
};

// a=fmtp:<format> <format specific parameters>
struct Fmtp {
    std::string_view format;
    std::string_view parameters;
    std::uint8_t media_index = 0;
};

inline constexpr std::size_t kMaxMedia = 8;
inline constexpr std::size_t kMaxFormats = 32;
inline constexpr std::size_t kMaxRtpMaps = 32;  // over all media sections
inline constexpr std::size_t kMaxFmtps = 16;    // over all media sections

struct Media {
    std::string_view type;  // "audio", "video", "application", ...
    std::uint16_t port = 0;
    std::uint16_t port_count = 1;  // m=<media> <port>/<number of ports>
    std::string_view proto_text;
    MediaProto proto = MediaProto::other;
    std::string_view formats;  // the format list as written
    // Formats that are RTP payload type numbers (0..127), in order, at most kMaxFormats.
    std::array<std::uint8_t, kMaxFormats> payload_types{};
    std::uint8_t payload_type_count = 0;
    std::uint16_t formats_overflow = 0;  // numeric formats beyond kMaxFormats
    Connection connection;               // this section's c=, if any
    Direction direction = Direction::unspecified;
    std::uint32_t ptime = 0;  // ms; 0 when absent (a fractional ptime is cut to whole ms)
    std::uint32_t maxptime = 0;
    std::uint16_t rtcp_port = 0;  // a=rtcp (RFC 3605); 0 when absent
    Connection rtcp_connection;   // the optional address of a=rtcp
    bool rtcp_mux = false;
    std::string_view label;
    std::string_view mid;
    std::string_view text;  // the section's lines, from m= up to the next m= or the end

    std::span<const std::uint8_t> payload_type_list() const noexcept {
        return {payload_types.data(), payload_type_count};
    }
};

// The session-level part and the counts; split from the arrays below so that parse_sdp_into can
// reset a reused SessionDescription without rewriting every stale slot.
struct SessionFields {
    std::uint32_t version = 0;
    Origin origin;
    std::string_view session_name;
    Connection connection;                         // session-level c=
    Direction direction = Direction::unspecified;  // session-level default
    std::uint32_t ptime = 0;                       // session-level a=ptime (non-standard, seen)
    std::string_view session_text;                 // the session-level lines

    std::uint8_t media_count = 0;
    std::uint16_t media_overflow = 0;  // m= sections beyond kMaxMedia (their lines are ignored)
    std::uint8_t rtpmap_count = 0;
    std::uint16_t rtpmap_overflow = 0;
    std::uint8_t fmtp_count = 0;
    std::uint16_t fmtp_overflow = 0;

    // Lines that were skipped: a malformed o=, rtpmap, fmtp, ptime, rtcp..., or a
    // media-level attribute with no media section to belong to.
    std::uint16_t malformed_lines = 0;
};

struct SessionDescription : SessionFields {
    // Only the first media_count / rtpmap_count / fmtp_count entries are meaningful; later slots
    // may hold a previous description's values.
    std::array<Media, kMaxMedia> media{};
    std::array<RtpMap, kMaxRtpMaps> rtpmaps{};
    std::array<Fmtp, kMaxFmtps> fmtps{};

    std::span<const Media> media_sections() const noexcept { return {media.data(), media_count}; }
};

Result<SessionDescription, SdpError> parse_sdp(std::string_view text) noexcept;
// In-place variant for a reused SessionDescription; nullopt on success.
std::optional<SdpError> parse_sdp_into(std::string_view text, SessionDescription& out) noexcept;

// The media section's c= if it has one, else the session's; nullptr when neither is present or
// media_index is out of range.
const Connection* effective_connection(const SessionDescription& sdp, std::size_t media_index) noexcept;
// Media-level direction, else session-level, else sendrecv (RFC 8866 section 6.7).
Direction effective_direction(const SessionDescription& sdp, std::size_t media_index) noexcept;
// The a=rtpmap of that media section for payload type `pt`, else the RFC 3551 static
// assignment for pt 0..34; nullopt for an unmapped dynamic type.
std::optional<RtpMap> find_rtpmap(const SessionDescription& sdp, std::size_t media_index,
                                  std::uint8_t payload_type) noexcept;
// The RFC 3551 tables 4 and 5 static payload types. G722 is listed at 8000 Hz although it samples
// at 16 kHz: RFC 3551 section 4.5.2 keeps the historical RTP clock rate.
std::optional<RtpMap> static_rtpmap(std::uint8_t payload_type) noexcept;
// The a=fmtp parameters of that media section for payload type `pt`.
std::optional<std::string_view> find_fmtp(const SessionDescription& sdp, std::size_t media_index,
                                          std::uint8_t payload_type) noexcept;
// Effective connection address + m= port, when the address is a literal IPv4/IPv6 address.
std::optional<Endpoint> media_endpoint(const SessionDescription& sdp, std::size_t media_index) noexcept;
// Where RTCP goes: the media endpoint itself with a=rtcp-mux (RFC 5761), else the a=rtcp port
// (and address, if given), else port + 1 on the media address (RFC 3550).
std::optional<Endpoint> rtcp_endpoint(const SessionDescription& sdp, std::size_t media_index) noexcept;
// Value of the first "a=<name>[:value]" line in a section's text (session_text or Media::text);
// an empty view for a flag attribute, nullopt when absent.
std::optional<std::string_view> find_attribute(std::string_view section_text, std::string_view name) noexcept;

}  // namespace hepd::sip
