#include "sip/sdp.hpp"

#include "core/byte_scan.hpp"
#include "sip/text.hpp"

#include <bit>
#include <cstring>

namespace hepd::sip {

using namespace detail;

std::string_view to_string(SdpError error) noexcept {
    switch (error) {
    case SdpError::empty: return "empty";
    case SdpError::missing_version: return "missing_version";
    case SdpError::bad_version: return "bad_version";
    case SdpError::bad_line: return "bad_line";
    case SdpError::bad_connection: return "bad_connection";
    case SdpError::bad_media: return "bad_media";
    }
    return "unknown";
}

std::string_view to_string(Direction direction) noexcept {
    switch (direction) {
    case Direction::unspecified: return "unspecified";
    case Direction::sendrecv: return "sendrecv";
    case Direction::sendonly: return "sendonly";
    case Direction::recvonly: return "recvonly";
    case Direction::inactive: return "inactive";
    }
    return "unspecified";
}

namespace {

constexpr std::size_t npos = std::string_view::npos;

// Word-at-a-time scanning. SDP values are short, so a library search call per field or line
// costs more than the bytes it skips, and a byte loop pays a compare and branch per byte. The
// tests below flag their first matching byte exactly (later flags may be borrow artefacts), and
// the first byte in memory is the lowest only in little-endian order: other targets use the
// byte loops alone.
constexpr bool kWordScan = std::endian::native == std::endian::little;
constexpr std::uint64_t kOnes = 0x0101010101010101ULL;
constexpr std::uint64_t kHighBits = kOnes * 0x80;

std::size_t first_flagged_byte(std::uint64_t flags) noexcept {
    return static_cast<std::size_t>(std::countr_zero(flags)) / 8;
}

// The end of the field starting at `p`: the first space or tab, or `end`. Field bytes are
// printable, so words are searched for a byte at or below ' ', and that rare stop is then
// looked at one byte at a time.
[[gnu::always_inline]] inline const char* field_end(const char* p, const char* end) noexcept {
    if constexpr (kWordScan) {
        while (end - p >= 8) {
            const std::uint64_t word = load8(p);
            const std::uint64_t space_or_below = (word - kOnes * '!') & ~word & kHighBits;
            if (space_or_below != 0) {
                p += first_flagged_byte(space_or_below);
                break;
            }
            p += 8;
        }
    }
    while (p != end && (static_cast<unsigned char>(*p) > ' ' || !is_space(*p))) ++p;
    return p;
}

// Splits off the next field separated by spaces or tabs (SDP says one space; some stacks
// double it). Returns an empty view when nothing is left.
[[gnu::always_inline]] inline std::string_view next_field(std::string_view& rest) noexcept {
    const char* begin = rest.data();
    const char* const end = begin + rest.size();
    // Usually one separator, then a printable byte that one compare rules out.
    while (begin != end && static_cast<unsigned char>(*begin) <= ' ' && is_space(*begin)) ++begin;
    const char* const stop = field_end(begin, end);
    rest = std::string_view(stop, static_cast<std::size_t>(end - stop));
    return {begin, static_cast<std::size_t>(stop - begin)};
}

[[gnu::always_inline]] inline std::string_view trim_space(std::string_view s) noexcept {
    const char* begin = s.data();
    const char* end = begin + s.size();
    while (begin != end && is_space(*begin)) ++begin;
    while (end != begin && is_space(end[-1])) --end;
    return {begin, static_cast<std::size_t>(end - begin)};
}

AddressType address_type_of(std::string_view text) noexcept {
    if (matches_name(text, "IP4", "ip4")) return AddressType::ip4;
    if (matches_name(text, "IP6", "ip6")) return AddressType::ip6;
    return AddressType::other;
}

MediaProto proto_of(std::string_view text) noexcept {
    if (matches_name(text, "RTP/AVP", "rtp/avp")) return MediaProto::rtp_avp;
    if (matches_name(text, "RTP/SAVP", "rtp/savp")) return MediaProto::rtp_savp;
    if (matches_name(text, "RTP/AVPF", "rtp/avpf")) return MediaProto::rtp_avpf;
    if (matches_name(text, "RTP/SAVPF", "rtp/savpf")) return MediaProto::rtp_savpf;
    if (matches_name(text, "UDP/TLS/RTP/SAVP", "udp/tls/rtp/savp")) return MediaProto::udp_tls_rtp_savp;
    if (matches_name(text, "UDP/TLS/RTP/SAVPF", "udp/tls/rtp/savpf")) return MediaProto::udp_tls_rtp_savpf;
    if (matches_name(text, "udp", "udp")) return MediaProto::udp;
    return MediaProto::other;
}

// <nettype> <addrtype> <address>[/ttl][/count]; nullopt unless all three fields are present.
std::optional<Connection> parse_connection(std::string_view value) noexcept {
    std::string_view rest = value;
    Connection c;
    c.network_type = next_field(rest);
    c.address_type_text = next_field(rest);
    std::string_view address = next_field(rest);
    if (c.address_type_text.empty() || address.empty() || !trim_space(rest).empty()) return std::nullopt;
    c.address_type = address_type_of(c.address_type_text);
    const std::size_t slash = find_byte(address, 0, '/');
    c.address = address.substr(0, slash);
    if (c.address.empty()) return std::nullopt;
    if (slash != npos) {
        std::string_view suffix = address.substr(slash + 1);
        const std::size_t slash2 = find_byte(suffix, 0, '/');
        const std::string_view first = suffix.substr(0, slash2);
        // IPv6 multicast has no TTL, so its single suffix is the address count (RFC 8866 5.7).
        if (c.address_type == AddressType::ip6) {
            if (slash2 != npos) return std::nullopt;
            const auto count = parse_uint<std::uint16_t>(first);
            if (!count || *count == 0) return std::nullopt;
            c.address_count = *count;
        } else {
            const auto ttl = parse_uint<std::uint8_t>(first);
            if (!ttl) return std::nullopt;
            c.ttl = *ttl;
            if (slash2 != npos) {
                const auto count = parse_uint<std::uint16_t>(suffix.substr(slash2 + 1));
                if (!count || *count == 0) return std::nullopt;
                c.address_count = *count;
            }
        }
    }
    return c;
}

bool parse_origin(std::string_view value, Origin& o) noexcept {
    std::string_view rest = value;
    o.username = next_field(rest);
    o.session_id = next_field(rest);
    o.session_version = next_field(rest);
    o.network_type = next_field(rest);
    const std::string_view address_type = next_field(rest);
    o.address = next_field(rest);
    if (o.address.empty() || !trim_space(rest).empty()) {
        o = Origin{};
        return false;
    }
    o.address_type = address_type_of(address_type);
    o.session_id_value = parse_uint<std::uint64_t>(o.session_id).value_or(0);
    o.session_version_value = parse_uint<std::uint64_t>(o.session_version).value_or(0);
    o.present = true;
    return true;
}

// m=<media> <port>[/<number of ports>] <proto> <fmt> ...: the fields a valid line must have.
struct MediaLine {
    std::string_view type;
    std::uint16_t port = 0;
    std::uint16_t port_count = 1;
    std::string_view proto_text;
    std::string_view formats;
};

bool parse_media_line(std::string_view value, MediaLine& line) noexcept {
    std::string_view rest = value;
    line.type = next_field(rest);
    const std::string_view port_field = next_field(rest);
    line.proto_text = next_field(rest);
    if (line.type.empty() || line.proto_text.empty()) return false;
    const std::size_t slash = find_byte(port_field, 0, '/');
    const auto port = parse_uint<std::uint16_t>(port_field.substr(0, slash));
    if (!port) return false;
    line.port = *port;
    if (slash != npos) {
        const auto count = parse_uint<std::uint16_t>(port_field.substr(slash + 1));
        if (!count || *count == 0) return false;
        line.port_count = *count;
    }
    line.formats = trim_space(rest);
    return true;
}

// Fills the slot in place: building a Media aside and copying it in cost more than the parse.
void fill_media(const MediaLine& line, Media& m) noexcept {
    m = Media{};
    m.type = line.type;
    m.port = line.port;
    m.port_count = line.port_count;
    m.proto_text = line.proto_text;
    m.proto = proto_of(line.proto_text);
    m.formats = line.formats;
    std::string_view formats = m.formats;
    for (std::string_view format = next_field(formats); !format.empty(); format = next_field(formats)) {
        const auto pt = parse_uint<std::uint8_t>(format);
        if (!pt || *pt > 127) continue;
        if (m.payload_type_count < kMaxFormats) {
            m.payload_types[m.payload_type_count++] = *pt;
        } else if (m.formats_overflow < UINT16_MAX) {
            ++m.formats_overflow;
        }
    }
}

// Integer milliseconds from "20" or "20.5" (RFC 8866 allows a decimal ptime).
std::optional<std::uint32_t> parse_ptime(std::string_view value) noexcept {
    const std::string_view v = trim_space(value);
    const std::size_t dot = find_byte(v, 0, '.');
    const auto whole = parse_uint<std::uint32_t>(v.substr(0, dot));
    if (!whole) return std::nullopt;
    if (dot != npos) {
        const std::string_view fraction = v.substr(dot + 1);
        for (char c : fraction)
            if (!is_digit(c)) return std::nullopt;
    }
    return whole;
}

void count_malformed(SessionDescription& sd) noexcept {
    if (sd.malformed_lines < UINT16_MAX) ++sd.malformed_lines;
}

bool parse_rtpmap(std::string_view value, std::uint8_t media_index, RtpMap& map) noexcept {
    std::string_view rest = value;
    const auto pt = parse_uint<std::uint8_t>(next_field(rest));
    if (!pt || *pt > 127) return false;
    const std::string_view spec = trim_space(rest);
    const std::size_t slash = find_byte(spec, 0, '/');
    if (slash == npos || slash == 0) return false;
    map.payload_type = *pt;
    map.encoding = spec.substr(0, slash);
    const std::string_view after = spec.substr(slash + 1);
    const std::size_t slash2 = find_byte(after, 0, '/');
    const auto clock = parse_uint<std::uint32_t>(after.substr(0, slash2));
    if (!clock || *clock == 0) return false;
    map.clock_rate = *clock;
    map.channels = 1;
    if (slash2 != npos) {
        const auto channels = parse_uint<std::uint8_t>(after.substr(slash2 + 1));
        if (!channels || *channels == 0) return false;
        map.channels = *channels;
    }
    map.media_index = media_index;
    return true;
}

enum class Section : std::uint8_t { session, media, dropped_media };

enum class Attribute : std::uint8_t {
    other,
    sendrecv,
    sendonly,
    recvonly,
    inactive,
    ptime,
    maxptime,
    rtpmap,
    fmtp,
    rtcp,
    rtcp_mux,
    mid,
    label,
};

// A switch on the name's length picks at most a few candidates to compare, instead of trying
// every known attribute name in turn on every a= line.
Attribute attribute_of(std::string_view name) noexcept {
    switch (name.size()) {
    case 3: return matches_name(name, "mid", "mid") ? Attribute::mid : Attribute::other;
    case 4:
        if (matches_name(name, "fmtp", "fmtp")) return Attribute::fmtp;
        if (matches_name(name, "rtcp", "rtcp")) return Attribute::rtcp;
        return Attribute::other;
    case 5:
        if (matches_name(name, "ptime", "ptime")) return Attribute::ptime;
        if (matches_name(name, "label", "label")) return Attribute::label;
        return Attribute::other;
    case 6: return matches_name(name, "rtpmap", "rtpmap") ? Attribute::rtpmap : Attribute::other;
    case 8:
        switch (to_lower_ascii(name[0])) {
        case 's':
            if (matches_name(name, "sendrecv", "sendrecv")) return Attribute::sendrecv;
            if (matches_name(name, "sendonly", "sendonly")) return Attribute::sendonly;
            return Attribute::other;
        case 'r':
            if (matches_name(name, "recvonly", "recvonly")) return Attribute::recvonly;
            if (matches_name(name, "rtcp-mux", "rtcp-mux")) return Attribute::rtcp_mux;
            return Attribute::other;
        case 'i': return matches_name(name, "inactive", "inactive") ? Attribute::inactive : Attribute::other;
        case 'm': return matches_name(name, "maxptime", "maxptime") ? Attribute::maxptime : Attribute::other;
        default: return Attribute::other;
        }
    default: return Attribute::other;
    }
}

void set_direction(SessionDescription& sd, Media* media, Direction direction) noexcept {
    (media != nullptr ? media->direction : sd.direction) = direction;
}

void apply_attribute(std::string_view value, SessionDescription& sd, Section section) noexcept {
    if (section == Section::dropped_media) return;
    const std::size_t colon = find_byte(value, 0, ':');
    const Attribute attribute = attribute_of(value.substr(0, colon));
    if (attribute == Attribute::other) return;
    const std::string_view arg = colon == npos ? std::string_view{} : value.substr(colon + 1);
    Media* media = section == Section::media ? &sd.media[sd.media_count - 1] : nullptr;
    const auto media_index = static_cast<std::uint8_t>(sd.media_count - 1);

    switch (attribute) {
    case Attribute::sendrecv: return set_direction(sd, media, Direction::sendrecv);
    case Attribute::sendonly: return set_direction(sd, media, Direction::sendonly);
    case Attribute::recvonly: return set_direction(sd, media, Direction::recvonly);
    case Attribute::inactive: return set_direction(sd, media, Direction::inactive);
    case Attribute::ptime: {
        const auto ptime = parse_ptime(arg);
        if (!ptime) return count_malformed(sd);
        (media != nullptr ? media->ptime : sd.ptime) = *ptime;
        return;
    }
    case Attribute::rtpmap: {
        RtpMap map;
        if (media == nullptr || !parse_rtpmap(arg, media_index, map)) return count_malformed(sd);
        for (std::size_t i = 0; i < sd.rtpmap_count; ++i)
            if (sd.rtpmaps[i].media_index == media_index && sd.rtpmaps[i].payload_type == map.payload_type)
                return;  // the first mapping of a payload type stands
        if (sd.rtpmap_count < kMaxRtpMaps) {
            sd.rtpmaps[sd.rtpmap_count++] = map;
        } else if (sd.rtpmap_overflow < UINT16_MAX) {
            ++sd.rtpmap_overflow;
        }
        return;
    }
    case Attribute::fmtp: {
        std::string_view rest = arg;
        const std::string_view format = next_field(rest);
        if (media == nullptr || format.empty()) return count_malformed(sd);
        if (sd.fmtp_count < kMaxFmtps) {
            sd.fmtps[sd.fmtp_count++] = Fmtp{format, trim_space(rest), media_index};
        } else if (sd.fmtp_overflow < UINT16_MAX) {
            ++sd.fmtp_overflow;
        }
        return;
    }
    default: break;
    }
    if (media == nullptr) return;  // the remaining attributes are media-level only
    switch (attribute) {
    case Attribute::maxptime: {
        const auto maxptime = parse_ptime(arg);
        if (!maxptime) return count_malformed(sd);
        media->maxptime = *maxptime;
        return;
    }
    case Attribute::rtcp: {
        std::string_view rest = arg;
        const auto port = parse_uint<std::uint16_t>(next_field(rest));
        if (!port) return count_malformed(sd);
        media->rtcp_port = *port;
        if (!trim_space(rest).empty()) {
            const auto connection = parse_connection(rest);
            if (!connection) return count_malformed(sd);
            media->rtcp_connection = *connection;
        }
        return;
    }
    case Attribute::rtcp_mux: media->rtcp_mux = true; return;
    case Attribute::mid: media->mid = trim_space(arg); return;
    case Attribute::label: media->label = trim_space(arg); return;
    default: return;
    }
}

bool is_alpha(char c) noexcept { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

}  // namespace

std::optional<SdpError> parse_sdp_into(std::string_view text, SessionDescription& sd) noexcept {
    static_cast<SessionFields&>(sd) = SessionFields{};
    bool have_version = false;
    bool have_session_name = false;
    Section section = Section::session;
    std::size_t session_begin = 0;
    std::size_t section_begin = 0;  // start of the current m= section
    std::size_t pos = 0;
    while (pos < text.size()) {
        const std::size_t line_begin = pos;
        const std::size_t found = find_byte(text, pos, '\n');
        const std::size_t lf = found == npos ? text.size() : found;
        pos = found == npos ? text.size() : lf + 1;
        std::string_view line = text.substr(line_begin, lf - line_begin);
        while (!line.empty() && is_lws(line.back())) line.remove_suffix(1);
        if (line.empty()) continue;

        if (!have_version) {
            if (line.size() < 2 || line[0] != 'v' || line[1] != '=') return SdpError::missing_version;
            const auto version = parse_uint<std::uint32_t>(trim_space(line.substr(2)));
            if (!version || *version != 0) return SdpError::bad_version;
            have_version = true;
            session_begin = line_begin;
            continue;
        }
        if (line.size() < 2 || line[1] != '=' || !is_alpha(line[0])) return SdpError::bad_line;
        const std::string_view value = line.substr(2);
        switch (line[0]) {
        case 'o':
            if (section != Section::session || sd.origin.present || !parse_origin(value, sd.origin))
                count_malformed(sd);
            break;
        case 's':
            if (section == Section::session && !have_session_name) {
                sd.session_name = value;
                have_session_name = true;
            }
            break;
        case 'c': {
            const auto connection = parse_connection(value);
            if (!connection) return SdpError::bad_connection;
            if (section == Section::session) {
                sd.connection = *connection;
            } else if (section == Section::media) {
                sd.media[sd.media_count - 1].connection = *connection;
            }
            break;
        }
        case 'm': {
            if (section == Section::session) {
                sd.session_text = text.substr(session_begin, line_begin - session_begin);
            } else if (section == Section::media) {
                sd.media[sd.media_count - 1].text = text.substr(section_begin, line_begin - section_begin);
            }
            section_begin = line_begin;
            MediaLine media_line;
            if (!parse_media_line(value, media_line)) return SdpError::bad_media;
            if (sd.media_count < kMaxMedia) {
                fill_media(media_line, sd.media[sd.media_count++]);
                section = Section::media;
            } else {
                if (sd.media_overflow < UINT16_MAX) ++sd.media_overflow;
                section = Section::dropped_media;
            }
            break;
        }
        case 'a': apply_attribute(value, sd, section); break;
        case 'v':
            count_malformed(sd);  // a second v= would start another description; not supported
            break;
        default: break;  // t=, b=, i=, u=, e=, p=, k=, r=, z=: not needed for monitoring
        }
    }
    if (!have_version) return SdpError::empty;
    if (section == Section::session) {
        sd.session_text = text.substr(session_begin);
    } else if (section == Section::media) {
        sd.media[sd.media_count - 1].text = text.substr(section_begin);
    }
    return std::nullopt;
}

Result<SessionDescription, SdpError> parse_sdp(std::string_view text) noexcept {
    SessionDescription sd;
    if (const auto error = parse_sdp_into(text, sd)) return fail(*error);
    return sd;
}

const Connection* effective_connection(const SessionDescription& sdp, std::size_t media_index) noexcept {
    if (media_index >= sdp.media_count) return nullptr;
    const Connection& own = sdp.media[media_index].connection;
    if (own.present()) return &own;
    if (sdp.connection.present()) return &sdp.connection;
    return nullptr;
}

Direction effective_direction(const SessionDescription& sdp, std::size_t media_index) noexcept {
    if (media_index < sdp.media_count && sdp.media[media_index].direction != Direction::unspecified)
        return sdp.media[media_index].direction;
    if (sdp.direction != Direction::unspecified) return sdp.direction;
    return Direction::sendrecv;
}

std::optional<RtpMap> static_rtpmap(std::uint8_t payload_type) noexcept {
    struct Entry {
        std::string_view encoding;
        std::uint32_t clock_rate;
        std::uint8_t channels;
    };
    // RFC 3551 tables 4 and 5; empty names are unassigned or reserved numbers.
    static constexpr Entry kTable[35] = {
        {"PCMU", 8000, 1},  {"", 0, 0},         {"", 0, 0},         {"GSM", 8000, 1},   {"G723", 8000, 1},
        {"DVI4", 8000, 1},  {"DVI4", 16000, 1}, {"LPC", 8000, 1},   {"PCMA", 8000, 1},  {"G722", 8000, 1},
        {"L16", 44100, 2},  {"L16", 44100, 1},  {"QCELP", 8000, 1}, {"CN", 8000, 1},    {"MPA", 90000, 1},
        {"G728", 8000, 1},  {"DVI4", 11025, 1}, {"DVI4", 22050, 1}, {"G729", 8000, 1},  {"", 0, 0},
        {"", 0, 0},         {"", 0, 0},         {"", 0, 0},         {"", 0, 0},         {"", 0, 0},
        {"CelB", 90000, 1}, {"JPEG", 90000, 1}, {"", 0, 0},         {"nv", 90000, 1},   {"", 0, 0},
        {"", 0, 0},         {"H261", 90000, 1}, {"MPV", 90000, 1},  {"MP2T", 90000, 1}, {"H263", 90000, 1},
    };
    if (payload_type >= std::size(kTable) || kTable[payload_type].encoding.empty()) return std::nullopt;
    const Entry& e = kTable[payload_type];
    RtpMap map;
    map.payload_type = payload_type;
    map.encoding = e.encoding;
    map.clock_rate = e.clock_rate;
    map.channels = e.channels;
    return map;
}

std::optional<RtpMap> find_rtpmap(const SessionDescription& sdp, std::size_t media_index,
                                  std::uint8_t payload_type) noexcept {
    if (media_index >= sdp.media_count) return std::nullopt;
    for (std::size_t i = 0; i < sdp.rtpmap_count; ++i) {
        const RtpMap& map = sdp.rtpmaps[i];
        if (map.media_index == media_index && map.payload_type == payload_type) return map;
    }
    auto map = static_rtpmap(payload_type);
    if (map) map->media_index = static_cast<std::uint8_t>(media_index);
    return map;
}

std::optional<std::string_view> find_fmtp(const SessionDescription& sdp, std::size_t media_index,
                                          std::uint8_t payload_type) noexcept {
    if (media_index >= sdp.media_count) return std::nullopt;
    for (std::size_t i = 0; i < sdp.fmtp_count; ++i) {
        const Fmtp& fmtp = sdp.fmtps[i];
        if (fmtp.media_index != media_index) continue;
        const auto pt = parse_uint<std::uint8_t>(fmtp.format);
        if (pt && *pt == payload_type) return fmtp.parameters;
    }
    return std::nullopt;
}

namespace {

std::optional<Endpoint> endpoint_of(const Connection* connection, std::uint32_t port) noexcept {
    if (connection == nullptr || port == 0 || port > 65535) return std::nullopt;
    const auto address = IpAddress::parse(connection->address);
    if (!address) return std::nullopt;
    return Endpoint{*address, static_cast<std::uint16_t>(port)};
}

}  // namespace

std::optional<Endpoint> media_endpoint(const SessionDescription& sdp, std::size_t media_index) noexcept {
    if (media_index >= sdp.media_count) return std::nullopt;
    return endpoint_of(effective_connection(sdp, media_index), sdp.media[media_index].port);
}

std::optional<Endpoint> rtcp_endpoint(const SessionDescription& sdp, std::size_t media_index) noexcept {
    if (media_index >= sdp.media_count) return std::nullopt;
    const Media& media = sdp.media[media_index];
    if (media.port == 0) return std::nullopt;
    const Connection* connection = effective_connection(sdp, media_index);
    if (media.rtcp_mux) return endpoint_of(connection, media.port);
    if (media.rtcp_port != 0) {
        if (media.rtcp_connection.present()) connection = &media.rtcp_connection;
        return endpoint_of(connection, media.rtcp_port);
    }
    return endpoint_of(connection, std::uint32_t{media.port} + 1);
}

std::optional<std::string_view> find_attribute(std::string_view section_text, std::string_view name) noexcept {
    std::size_t pos = 0;
    while (pos < section_text.size()) {
        const std::size_t lf = section_text.find('\n', pos);
        std::string_view line = section_text.substr(pos, lf == npos ? npos : lf - pos);
        pos = lf == npos ? section_text.size() : lf + 1;
        while (!line.empty() && is_lws(line.back())) line.remove_suffix(1);
        if (line.size() < 2 || line[0] != 'a' || line[1] != '=') continue;
        const std::string_view attribute = line.substr(2);
        const std::size_t colon = attribute.find(':');
        if (!iequals_ascii(attribute.substr(0, colon), name)) continue;
        return colon == npos ? attribute.substr(attribute.size()) : attribute.substr(colon + 1);
    }
    return std::nullopt;
}

}  // namespace hepd::sip
