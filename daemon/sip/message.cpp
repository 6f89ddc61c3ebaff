#include "sip/message.hpp"

#include "sip/header_cursor.hpp"
#include "sip/text.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <initializer_list>

namespace hepd::sip {

using namespace detail;

std::string_view to_string(ParseError error) noexcept {
    switch (error) {
    case ParseError::empty: return "empty";
    case ParseError::bad_start_line: return "bad_start_line";
    case ParseError::unsupported_version: return "unsupported_version";
    case ParseError::bad_status_code: return "bad_status_code";
    case ParseError::truncated_headers: return "truncated_headers";
    case ParseError::header_without_colon: return "header_without_colon";
    case ParseError::bad_header_name: return "bad_header_name";
    case ParseError::too_many_headers: return "too_many_headers";
    case ParseError::missing_call_id: return "missing_call_id";
    case ParseError::missing_cseq: return "missing_cseq";
    case ParseError::bad_cseq: return "bad_cseq";
    case ParseError::nul_in_headers: return "nul_in_headers";
    }
    return "unknown";
}

std::string_view to_string(Transport transport) noexcept {
    switch (transport) {
    case Transport::unknown: return "unknown";
    case Transport::udp: return "udp";
    case Transport::tcp: return "tcp";
    case Transport::tls: return "tls";
    case Transport::sctp: return "sctp";
    case Transport::ws: return "ws";
    case Transport::wss: return "wss";
    }
    return "unknown";
}

namespace {

HeaderId compact_header_id(char c) noexcept {
    switch (to_lower_ascii(c)) {
    case 'i': return HeaderId::call_id;
    case 'f': return HeaderId::from;
    case 't': return HeaderId::to;
    case 'v': return HeaderId::via;
    case 'm': return HeaderId::contact;
    case 'l': return HeaderId::content_length;
    case 'c': return HeaderId::content_type;
    case 'k': return HeaderId::supported;
    case 's': return HeaderId::subject;
    case 'e': return HeaderId::content_encoding;
    case 'o': return HeaderId::event;
    case 'u': return HeaderId::allow_events;
    case 'r': return HeaderId::refer_to;
    case 'b': return HeaderId::referred_by;
    case 'x': return HeaderId::session_expires;
    case 'y': return HeaderId::identity;
    case 'j': return HeaderId::reject_contact;
    case 'a': return HeaderId::accept_contact;
    case 'd': return HeaderId::request_disposition;
    default: return HeaderId::other;
    }
}

// The one list of the names: to_string() gives them, header_id() recognises them.
constexpr std::string_view canonical_name(HeaderId id) noexcept {
    switch (id) {
    case HeaderId::other: return "";
    case HeaderId::via: return "Via";
    case HeaderId::from: return "From";
    case HeaderId::to: return "To";
    case HeaderId::call_id: return "Call-ID";
    case HeaderId::cseq: return "CSeq";
    case HeaderId::contact: return "Contact";
    case HeaderId::content_length: return "Content-Length";
    case HeaderId::content_type: return "Content-Type";
    case HeaderId::max_forwards: return "Max-Forwards";
    case HeaderId::user_agent: return "User-Agent";
    case HeaderId::server: return "Server";
    case HeaderId::reason: return "Reason";
    case HeaderId::supported: return "Supported";
    case HeaderId::subject: return "Subject";
    case HeaderId::content_encoding: return "Content-Encoding";
    case HeaderId::event: return "Event";
    case HeaderId::allow_events: return "Allow-Events";
    case HeaderId::refer_to: return "Refer-To";
    case HeaderId::referred_by: return "Referred-By";
    case HeaderId::session_expires: return "Session-Expires";
    case HeaderId::identity: return "Identity";
    case HeaderId::reject_contact: return "Reject-Contact";
    case HeaderId::accept_contact: return "Accept-Contact";
    case HeaderId::request_disposition: return "Request-Disposition";
    case HeaderId::route: return "Route";
    case HeaderId::record_route: return "Record-Route";
    case HeaderId::allow: return "Allow";
    case HeaderId::require: return "Require";
    case HeaderId::expires: return "Expires";
    }
    return "";
}

// A name in lower case, made from its canonical spelling at compile time.
template <HeaderId id>
constexpr auto kLowerName = [] {
    std::array<char, canonical_name(id).size()> out{};
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = to_lower_ascii(canonical_name(id)[i]);
    return out;
}();

// The header `name` is, if it is `id` in any case.
template <HeaderId id>
HeaderId confirm(std::string_view name) noexcept {
    constexpr std::string_view canonical = canonical_name(id);
    constexpr std::string_view lower(kLowerName<id>.data(), kLowerName<id>.size());
    return matches_name(name, canonical, lower) ? id : HeaderId::other;
}

}  // namespace

HeaderId header_id(std::string_view name) noexcept {
    const std::size_t n = name.size();
    if (n < 2) return n == 1 ? compact_header_id(name[0]) : HeaderId::other;
    // A jump table on the length, then the first letter (the last too where two names share
    // both), pick the one candidate that a whole-name comparison confirms.
    const char first = to_lower_ascii(name[0]);
#define HEPD_SIP_HEADER(id) \
    if (first == kLowerName<HeaderId::id>[0]) return confirm<HeaderId::id>(name);
    switch (n) {
    case 2: HEPD_SIP_HEADER(to) break;
    case 3: HEPD_SIP_HEADER(via) break;
    case 4:
        HEPD_SIP_HEADER(from)
        HEPD_SIP_HEADER(cseq)
        break;
    case 5:
        HEPD_SIP_HEADER(event)
        HEPD_SIP_HEADER(route)
        HEPD_SIP_HEADER(allow)
        break;
    case 6:
        HEPD_SIP_HEADER(server)
        HEPD_SIP_HEADER(reason)
        break;
    case 7:
        if (first == 'c') {
            return to_lower_ascii(name[6]) == 'd' ? confirm<HeaderId::call_id>(name) : confirm<HeaderId::contact>(name);
        }
        HEPD_SIP_HEADER(subject)
        HEPD_SIP_HEADER(require)
        HEPD_SIP_HEADER(expires)
        break;
    case 8:
        HEPD_SIP_HEADER(refer_to)
        HEPD_SIP_HEADER(identity)
        break;
    case 9: HEPD_SIP_HEADER(supported) break;
    case 10: HEPD_SIP_HEADER(user_agent) break;
    case 11: HEPD_SIP_HEADER(referred_by) break;
    case 12:
        HEPD_SIP_HEADER(content_type)
        HEPD_SIP_HEADER(max_forwards)
        HEPD_SIP_HEADER(allow_events)
        HEPD_SIP_HEADER(record_route)
        break;
    case 14:
        HEPD_SIP_HEADER(content_length)
        HEPD_SIP_HEADER(reject_contact)
        HEPD_SIP_HEADER(accept_contact)
        break;
    case 15: HEPD_SIP_HEADER(session_expires) break;
    case 16: HEPD_SIP_HEADER(content_encoding) break;
    case 19: HEPD_SIP_HEADER(request_disposition) break;
    default: break;
    }
#undef HEPD_SIP_HEADER
    return HeaderId::other;
}

std::string_view to_string(HeaderId id) noexcept { return canonical_name(id); }

std::optional<std::string_view> find_param(std::string_view params, std::string_view name) noexcept {
    std::optional<std::string_view> found;
    for_each_param(params, [&](std::string_view param, std::string_view value, bool) {
        if (!iequals_ascii(param, name)) return false;
        found = value;
        return true;
    });
    return found;
}

namespace {

Transport transport_of(std::string_view text) noexcept {
    if (matches_name(text, "UDP", "udp")) return Transport::udp;
    if (matches_name(text, "TCP", "tcp")) return Transport::tcp;
    if (matches_name(text, "TLS", "tls")) return Transport::tls;
    if (matches_name(text, "SCTP", "sctp")) return Transport::sctp;
    if (matches_name(text, "WS", "ws")) return Transport::ws;
    if (matches_name(text, "WSS", "wss")) return Transport::wss;
    return Transport::unknown;
}

// A host name or IPv4 address in a Via ends at the port's colon, the parameters or white space.
constexpr std::array<bool, 256> make_via_host_end_table() noexcept {
    std::array<bool, 256> t{};
    for (char c : std::string_view(":; \t\r\n")) t[static_cast<unsigned char>(c)] = true;
    return t;
}
constexpr std::array<bool, 256> via_host_end_table = make_via_host_end_table();
bool ends_via_host(char c) noexcept { return via_host_end_table[static_cast<unsigned char>(c)]; }

std::size_t skip_lws(std::string_view s, std::size_t i) noexcept {
    while (i < s.size() && is_lws(s[i])) ++i;
    return i;
}

std::size_t skip_token(std::string_view s, std::size_t i) noexcept {
    while (i < s.size() && is_token_char(s[i])) ++i;
    return i;
}

}  // namespace

namespace {

// `through_branch`: stop at the branch parameter (ParseDepth::dialog): all the fields before it
// are what a full parse gives, and so is the branch, since the first occurrence counts.
Via parse_via_parm(std::string_view via_parm, bool through_branch) noexcept {
    Via via;
    const std::string_view s = trim_lws(via_parm);
    via.raw = s;
    // sent-protocol: name LWS? "/" LWS? version LWS? "/" LWS? transport (RFC 3261 SLASH = SWS "/" SWS)
    std::size_t i = 0;
    if (s.size() > 12 && equals_exact(s.substr(0, 12), "SIP/2.0/UDP ")) {
        // What nearly every sender writes, taken whole.
        via.protocol_name = s.substr(0, 3);
        via.protocol_version = s.substr(4, 3);
        via.transport_text = s.substr(8, 3);
        via.transport = Transport::udp;
        i = skip_lws(s, 12);
        if (i >= s.size()) return via;
    } else {
        if (s.size() > 8 && equals_exact(s.substr(0, 8), "SIP/2.0/")) {
            via.protocol_name = s.substr(0, 3);
            via.protocol_version = s.substr(4, 3);
            i = skip_lws(s, 8);
        } else {
            for (std::string_view* part : {&via.protocol_name, &via.protocol_version}) {
                const std::size_t start = i;
                i = skip_token(s, i);
                *part = s.substr(start, i - start);
                i = skip_lws(s, i);
                if (part->empty() || i >= s.size() || s[i] != '/') return via;
                i = skip_lws(s, i + 1);
            }
        }
        const std::size_t begin = i;
        i = skip_token(s, i);
        via.transport_text = s.substr(begin, i - begin);
        via.transport = transport_of(via.transport_text);
        const std::size_t after_protocol = i;
        i = skip_lws(s, i);
        if (via.transport_text.empty() || i == after_protocol || i >= s.size()) return via;
    }

    // sent-by: host [ COLON port ]
    if (s[i] == '[') {
        const std::size_t close = s.find(']', i);
        if (close == std::string_view::npos) return via;
        via.host = s.substr(i + 1, close - i - 1);
        i = close + 1;
    } else {
        const std::size_t begin = i;
        // The word scan stops at every candidate; a control byte that ends nothing goes on bytewise.
        i = find_first_of2<true>(s, i, ':', ';');
        while (i < s.size() && !ends_via_host(s[i])) ++i;
        via.host = s.substr(begin, i - begin);
    }
    if (via.host.empty()) return via;
    i = skip_lws(s, i);
    if (i < s.size() && s[i] == ':') {
        i = skip_lws(s, i + 1);
        const std::size_t begin = i;
        std::uint32_t port = 0;
        while (i < s.size() && is_digit(s[i])) port = port * 10 + static_cast<std::uint32_t>(s[i++] - '0');
        // One to five digits were summed exactly; longer runs (leading zeros) take the full check.
        if (i - begin > 5 || i == begin) {
            const auto checked = parse_uint<std::uint16_t>(s.substr(begin, i - begin));
            if (!checked) return via;
            port = *checked;
        } else if (port > UINT16_MAX) {
            return via;
        }
        via.port = static_cast<std::uint16_t>(port);
        i = skip_lws(s, i);
    }
    if (i < s.size()) {
        if (s[i] != ';') return via;
        via.params = s.substr(i);
        // One walk over the parameters; the first occurrence of each one counts.
        bool have_branch = false;
        bool have_received = false;
        bool bad_rport = false;
        std::string_view rest = via.params;
        // What senders write first, taken without the walk; for_each_param goes on after it.
        if (const std::size_t end = plain_first_param_end(rest, ";branch="); end != std::string_view::npos) {
            via.branch = rest.substr(8, end - 8);
            have_branch = true;
            if (through_branch) return via;
            rest = rest.substr(end);
        }
        for_each_param(rest, [&](std::string_view name, std::string_view value, bool) {
            if (!have_branch && matches_name(name, "branch", "branch")) {
                via.branch = value;
                have_branch = true;
                if (through_branch) return true;
            } else if (!have_received && matches_name(name, "received", "received")) {
                via.received = value;
                have_received = true;
            } else if (!via.has_rport && matches_name(name, "rport", "rport")) {
                via.has_rport = true;
                if (!value.empty()) {
                    const auto port = parse_uint<std::uint16_t>(value);
                    bad_rport = !port;
                    via.rport = port.value_or(0);
                }
            }
            return false;
        });
        if (bad_rport) return via;
    }
    via.valid = !through_branch;
    return via;
}

}  // namespace

Via parse_via(std::string_view via_parm) noexcept { return parse_via_parm(via_parm, false); }

NameAddr parse_name_addr(std::string_view value) noexcept {
    NameAddr na;
    const std::string_view s = trim_lws(value);
    na.raw = s;
    if (s.empty()) return na;
    if (s == "*") {
        na.uri = s;
        na.valid = true;
        return na;
    }
    std::size_t lt = std::string_view::npos;
    if (s[0] == '"') {
        // Word scan to the first quote or backslash; only an escape needs the careful walk.
        std::size_t close = find_first_of2<false>(s, 1, '"', '\\');
        if (close == s.size()) return na;
        if (s[close] == '\\') close = find_closing_quote(s, close - 1);
        if (close == std::string_view::npos) return na;
        na.display_name = s.substr(1, close - 1);
        lt = skip_lws(s, close + 1);
        if (lt >= s.size() || s[lt] != '<') return na;
    } else {
        lt = find_unquoted(s, '<', false);
        if (lt != std::string_view::npos) na.display_name = trim_lws(s.substr(0, lt));
    }

    std::string_view params;
    if (lt != std::string_view::npos) {
        const std::size_t gt = find_byte(s, lt + 1, '>');
        if (gt == std::string_view::npos) return na;
        na.uri = trim_lws(s.substr(lt + 1, gt - lt - 1));
        na.angle_brackets = true;
        params = ltrim_lws(s.substr(gt + 1));
    } else {
        // addr-spec: a URI with ';' must be bracketed (RFC 3261 section 20.10), so the first
        // ';' starts the header parameters.
        const std::size_t semi = s.find(';');
        na.uri = rtrim_lws(s.substr(0, semi));
        if (semi != std::string_view::npos) params = s.substr(semi);
        for (char c : na.uri)
            if (is_lws(c)) return na;
    }
    if (na.uri.empty()) return na;
    if (!params.empty() && params[0] != ';') return na;
    na.params = params;
    // The usual ";tag=value" first, taken without the walk.
    if (const std::size_t end = plain_first_param_end(params, ";tag="); end != std::string_view::npos) {
        na.tag = params.substr(5, end - 5);
        na.has_tag = true;
        na.valid = true;
        return na;
    }
    for_each_param(params, [&](std::string_view name, std::string_view param_value, bool) {
        if (!matches_name(name, "tag", "tag")) return false;
        na.tag = param_value;
        na.has_tag = true;
        return true;
    });
    na.valid = true;
    return na;
}

std::optional<CSeq> parse_cseq(std::string_view value) noexcept {
    const std::string_view s = trim_lws(value);
    std::size_t i = 0;
    while (i < s.size() && is_digit(s[i])) ++i;
    const auto number = parse_uint<std::uint32_t>(s.substr(0, i));
    if (!number) return std::nullopt;
    const std::size_t method_begin = skip_lws(s, i);
    if (method_begin == i) return std::nullopt;
    const std::string_view method = s.substr(method_begin);
    if (!is_token(method)) return std::nullopt;
    return CSeq{*number, parse_method(method), method};
}

Reason parse_reason(std::string_view reason_value) noexcept {
    Reason reason;
    const std::string_view s = trim_lws(reason_value);
    const std::size_t semi = find_unquoted(s, ';', false);
    const std::string_view protocol = rtrim_lws(s.substr(0, semi));
    if (!is_token(protocol)) return reason;
    reason.protocol_text = protocol;
    if (iequals_lower(protocol, "q.850")) {
        reason.protocol = ReasonProtocol::q850;
    } else if (iequals_lower(protocol, "sip")) {
        reason.protocol = ReasonProtocol::sip;
    } else {
        reason.protocol = ReasonProtocol::other;
    }
    if (semi == std::string_view::npos) return reason;
    const std::string_view params = s.substr(semi);
    bool have_cause = false;
    bool have_text = false;
    for_each_param(params, [&](std::string_view name, std::string_view value, bool) {
        if (!have_cause && matches_name(name, "cause", "cause")) {
            have_cause = true;
            // Q.850 causes are 0..127; a larger number is kept as one (clamped below kNoCause,
            // 0xffff, which means none) so that it still counts, as "other".
            if (const auto cause = parse_uint<std::uint32_t>(value)) {
                reason.cause = static_cast<std::uint16_t>(std::min<std::uint32_t>(*cause, 0xfffe));
                reason.has_cause = true;
            }
        } else if (!have_text && matches_name(name, "text", "text")) {
            have_text = true;
            reason.text = value;
        }
        return have_cause && have_text;
    });
    return reason;
}

namespace {

std::optional<ParseError> parse_status_line(std::string_view line, Message& m) noexcept {
    m.kind = MessageKind::response;
    std::size_t i = 0;
    while (i < line.size() && !is_space(line[i])) ++i;
    if (!iequals_lower(line.substr(0, i), "sip/2.0")) return ParseError::unsupported_version;
    if (i == line.size()) return ParseError::bad_start_line;
    while (i < line.size() && is_space(line[i])) ++i;
    const std::size_t code_begin = i;
    while (i < line.size() && !is_space(line[i])) ++i;
    const std::string_view code = line.substr(code_begin, i - code_begin);
    if (code.size() != 3) return ParseError::bad_status_code;
    const auto value = parse_uint<std::uint16_t>(code);
    if (!value || *value < 100 || *value > 699) return ParseError::bad_status_code;
    m.status_code = *value;
    std::string_view phrase = line.substr(i);
    while (!phrase.empty() && is_space(phrase.front())) phrase.remove_prefix(1);
    while (!phrase.empty() && is_space(phrase.back())) phrase.remove_suffix(1);
    m.reason_phrase = phrase;
    return std::nullopt;
}

// The well-formed case, "METHOD SP URI SP SIP/2.0" with single spaces, found with a few
// vectorised searches; false sends the caller to the tolerant element-by-element split.
bool split_request_line_fast(std::string_view line, std::string_view (&parts)[3]) noexcept {
    if (line.empty() || find_byte(line, 0, '\t') != std::string_view::npos) return false;
    const std::size_t sp1 = find_byte(line, 0, ' ');
    if (sp1 == std::string_view::npos || sp1 == 0) return false;
    const std::size_t sp2 = find_byte(line, sp1 + 1, ' ');
    if (sp2 == std::string_view::npos || sp2 == sp1 + 1 || sp2 + 1 == line.size()) return false;
    if (find_byte(line, sp2 + 1, ' ') != std::string_view::npos) return false;
    parts[0] = line.substr(0, sp1);
    parts[1] = line.substr(sp1 + 1, sp2 - sp1 - 1);
    parts[2] = line.substr(sp2 + 1);
    return true;
}

std::optional<ParseError> parse_request_line(std::string_view line, Message& m) noexcept {
    m.kind = MessageKind::request;
    std::string_view parts[3];
    std::size_t count = 0;
    if (split_request_line_fast(line, parts)) {
        count = 3;
    } else {
        std::size_t i = 0;
        while (i < line.size()) {
            while (i < line.size() && is_space(line[i])) ++i;
            if (i == line.size()) break;
            const std::size_t begin = i;
            while (i < line.size() && !is_space(line[i])) ++i;
            if (count == 3) return ParseError::bad_start_line;
            parts[count++] = line.substr(begin, i - begin);
        }
    }
    if (count == 0 || !is_token(parts[0])) return ParseError::bad_start_line;
    if (count < 3) return ParseError::bad_start_line;
    if (!iequals_lower(parts[2], "sip/2.0")) {
        // Something shaped like a version ("HTTP/1.1", "SIP/3.0") is another protocol, not noise.
        return parts[2].find('/') != std::string_view::npos ? ParseError::unsupported_version
                                                            : ParseError::bad_start_line;
    }
    m.method_text = parts[0];
    m.method = parse_method(parts[0]);
    m.request_uri = parts[1];
    return std::nullopt;
}

std::optional<ParseError> parse_start_line(std::string_view line, Message& m) noexcept {
    if (istarts_with(line, "sip/")) return parse_status_line(line, m);
    return parse_request_line(line, m);
}

// Per-parse state that does not belong in the Message.
struct Seen {
    bool cseq = false;
    bool cseq_ok = false;
    bool from = false;
    bool to = false;
    bool contact = false;
    bool content_length = false;
    bool content_type = false;
    bool user_agent = false;
    bool server = false;
    bool max_forwards = false;
    bool top_via = false;  // the first via-parm is found
};

void apply_via(std::string_view value, Message& m, ParseDepth depth, Seen& seen) {
    const bool top_only = depth == ParseDepth::dialog;
    if (top_only && seen.top_via) return;
    ItemSplitter items(value, ',', true);
    while (!items.done()) {
        const std::string_view item = items.next();
        if (item.empty()) continue;
        if (!seen.top_via) {
            seen.top_via = true;
            m.top_via = parse_via_parm(item, top_only);
            if (top_only) return;
            m.via_malformed = !m.top_via.valid;
        }
        if (m.via_count < UINT16_MAX) ++m.via_count;
    }
}

void apply_reason(std::string_view value, Message& m) {
    ItemSplitter items(value, ',', true);
    while (!items.done()) {
        const std::string_view item = items.next();
        if (item.empty()) continue;
        const Reason reason = parse_reason(item);
        if (reason.protocol == ReasonProtocol::none) continue;
        if (m.reason_count < UINT8_MAX) ++m.reason_count;
        if (m.reason.protocol == ReasonProtocol::none ||
            (m.reason.protocol != ReasonProtocol::q850 && reason.protocol == ReasonProtocol::q850)) {
            m.reason = reason;
        }
    }
}

void apply_header(HeaderId id, std::string_view value, Message& m, Seen& seen, ParseDepth depth) noexcept {
    switch (id) {
    case HeaderId::call_id:
        if (m.call_id.empty()) m.call_id = value;
        break;
    case HeaderId::cseq:
        if (!seen.cseq) {
            seen.cseq = true;
            if (const auto cseq = parse_cseq(value)) {
                m.cseq = *cseq;
                seen.cseq_ok = true;
            }
        }
        break;
    case HeaderId::via: apply_via(value, m, depth, seen); break;
    case HeaderId::from:
        if (!seen.from) {
            seen.from = true;
            m.from = parse_name_addr(value);
            m.from_malformed = !m.from.valid;
        }
        break;
    case HeaderId::to:
        if (!seen.to) {
            seen.to = true;
            m.to = parse_name_addr(value);
            m.to_malformed = !m.to.valid;
        }
        break;
    case HeaderId::contact:
        if (!seen.contact && depth == ParseDepth::full) {
            seen.contact = true;
            std::string_view rest = value;
            m.contact = parse_name_addr(next_list_item(rest));
            m.contact_malformed = !m.contact.valid;
        }
        break;
    case HeaderId::content_length:
        if (!seen.content_length) {
            seen.content_length = true;
            m.content_length = parse_uint<std::uint32_t>(value);
            m.content_length_invalid = !m.content_length;
        }
        break;
    case HeaderId::content_type:
        if (!seen.content_type) {
            seen.content_type = true;
            m.content_type = value;
        }
        break;
    case HeaderId::user_agent:
        if (!seen.user_agent) {
            seen.user_agent = true;
            m.user_agent = value;
        }
        break;
    case HeaderId::server:
        if (!seen.server) {
            seen.server = true;
            m.server = value;
        }
        break;
    case HeaderId::max_forwards:
        if (!seen.max_forwards) {
            seen.max_forwards = true;
            m.max_forwards = parse_uint<std::uint32_t>(value);
        }
        break;
    case HeaderId::reason: apply_reason(value, m); break;
    default: break;
    }
}

ParseError line_error(LineStatus status) noexcept {
    switch (status) {
    case LineStatus::no_colon: return ParseError::header_without_colon;
    case LineStatus::bad_name: return ParseError::bad_header_name;
    default: return ParseError::truncated_headers;
    }
}

}  // namespace

std::optional<ParseError> parse_message_into(std::string_view text, Message& m, ParseDepth depth) noexcept {
    static_cast<MessageFields&>(m) = MessageFields{};
    std::size_t pos = 0;
    // Leading CRLFs are keep-alives (RFC 5626) or stream leftovers, never part of a message.
    while (pos < text.size() && (text[pos] == '\r' || text[pos] == '\n')) ++pos;
    if (pos == text.size()) return ParseError::empty;

    const std::size_t found = find_byte(text, pos, '\n');
    const std::size_t lf = found == std::string_view::npos ? text.size() : found;
    std::size_t line_end = lf;
    if (line_end > pos && text[line_end - 1] == '\r') --line_end;
    m.start_line = text.substr(pos, line_end - pos);
    if (const auto error = parse_start_line(m.start_line, m)) return error;
    if (found == std::string_view::npos) return ParseError::truncated_headers;

    Seen seen;
    const std::size_t stored_headers = depth == ParseDepth::full ? kMaxStoredHeaders : 0;
    HeaderCursor cursor(text, lf + 1);
    HeaderLine line;
    std::size_t fields = 0;
    std::size_t overflow_begin = 0;
    std::size_t headers_end = 0;  // first byte after the last field (the empty line, if any)
    std::size_t body_begin = 0;
    for (;;) {
        const std::size_t before = cursor.position();
        const LineStatus status = cursor.next(line);
        if (status == LineStatus::end_of_headers) {
            headers_end = before;
            body_begin = cursor.position();
            break;
        }
        if (status == LineStatus::end_of_input) {
            m.headers_unterminated = true;
            headers_end = body_begin = text.size();
            break;
        }
        if (status != LineStatus::field) return line_error(status);
        if (++fields > kMaxHeaderLines) return ParseError::too_many_headers;
        const HeaderId id = line.id;
        if (m.header_count < stored_headers) {
            m.header_fields[m.header_count++] = HeaderField{line.name, line.value, id, line.folded};
        } else {
            if (m.header_overflow == 0) overflow_begin = line.start;
            ++m.header_overflow;
        }
        apply_header(id, line.value, m, seen, depth);
    }
    if (std::memchr(text.data() + pos, '\0', headers_end - pos) != nullptr) return ParseError::nul_in_headers;
    if (m.header_overflow > 0) m.overflow_text = text.substr(overflow_begin, headers_end - overflow_begin);

    if (m.call_id.empty()) return ParseError::missing_call_id;
    if (!seen.cseq) return ParseError::missing_cseq;
    if (!seen.cseq_ok) return ParseError::bad_cseq;
    if (m.is_response()) {
        m.method = m.cseq.method;
        m.method_text = m.cseq.method_text;
    } else {
        m.cseq_method_mismatch = m.cseq.method_text != m.method_text;
    }

    const std::size_t present = text.size() - body_begin;
    m.body_bytes_present = present;
    std::size_t body_size = present;
    if (m.content_length) {
        const std::size_t declared = *m.content_length;
        body_size = std::min(declared, present);
        m.body_truncated = present < declared;
        m.body_excess = present > declared;
    }
    m.body = text.substr(body_begin, body_size);
    m.raw = text.substr(pos, body_begin + body_size - pos);
    return std::nullopt;
}

Result<Message, ParseError> parse_message(std::string_view text) noexcept {
    Message message;
    if (const auto error = parse_message_into(text, message)) return fail(*error);
    return message;
}

std::optional<std::string_view> Message::find_header(std::string_view name) const noexcept {
    const HeaderId id = header_id(name);
    const auto matches = [&](HeaderId field_id, std::string_view field_name) {
        return id != HeaderId::other ? field_id == id : iequals_ascii(field_name, name);
    };
    for (const HeaderField& field : headers())
        if (matches(field.id, field.name)) return field.value;
    if (header_overflow > 0) {
        HeaderCursor cursor(overflow_text, 0);
        HeaderLine line;
        while (cursor.next(line) == LineStatus::field)
            if (matches(line.id, line.name)) return line.value;
    }
    return std::nullopt;
}

std::size_t Message::count_headers(std::string_view name) const noexcept {
    const HeaderId id = header_id(name);
    const auto matches = [&](HeaderId field_id, std::string_view field_name) {
        return id != HeaderId::other ? field_id == id : iequals_ascii(field_name, name);
    };
    std::size_t count = 0;
    for (const HeaderField& field : headers())
        if (matches(field.id, field.name)) ++count;
    if (header_overflow > 0) {
        HeaderCursor cursor(overflow_text, 0);
        HeaderLine line;
        while (cursor.next(line) == LineStatus::field)
            if (matches(line.id, line.name)) ++count;
    }
    return count;
}

}  // namespace hepd::sip
