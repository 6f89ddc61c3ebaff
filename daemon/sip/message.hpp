#pragma once
// Zero-copy SIP message parser (RFC 3261). Every string_view in a Message points into the buffer
// that was parsed, which must outlive the Message. Nothing here allocates or throws.
//
// The parser is built for a monitoring collector, not a proxy: it rejects only what makes a
// message useless for tracking (no usable start line, no Call-ID, no CSeq, a header section that
// cannot be delimited) and records every other irregularity as a flag, so that traffic from
// sloppy stacks is still counted.
#include "core/result.hpp"
#include "sip/method.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace hepd::sip {

enum class ParseError : std::uint8_t {
    empty,                 // nothing but line breaks
    bad_start_line,        // neither a request line nor a status line
    unsupported_version,   // a start line of some protocol other than SIP/2.0
    bad_status_code,       // status code not three digits in 100..699
    truncated_headers,     // input ends inside the start line or a header line
    header_without_colon,  // a header line with no ':' (often a body without the empty line)
    bad_header_name,       // empty name, non-token characters, or a continuation line first
    too_many_headers,      // more than kMaxHeaderLines header fields
    missing_call_id,       // no Call-ID header, or an empty one
    missing_cseq,
    bad_cseq,        // CSeq not "<32-bit number> <method token>"
    nul_in_headers,  // a NUL byte in the start line or a header value (see parse_message_into)
};
inline constexpr std::size_t kParseErrorCount = 12;

std::string_view to_string(ParseError error) noexcept;

// Headers the parser knows by name (and by compact form, RFC 3261 section 7.3.3 and the IANA
// registry). Anything else is HeaderId::other and is still reachable through find_header().
enum class HeaderId : std::uint8_t {
    other = 0,
    via,      // v
    from,     // f
    to,       // t
    call_id,  // i
    cseq,
    contact,         // m
    content_length,  // l
    content_type,    // c
    max_forwards,
    user_agent,
    server,
    reason,
    supported,            // k
    subject,              // s
    content_encoding,     // e
    event,                // o
    allow_events,         // u
    refer_to,             // r
    referred_by,          // b
    session_expires,      // x
    identity,             // y
    reject_contact,       // j
    accept_contact,       // a
    request_disposition,  // d
    route,
    record_route,
    allow,
    require,
    expires,
};

// Maps a header name (full or compact, any letter case) to its id.
HeaderId header_id(std::string_view name) noexcept;
// Canonical full name ("Call-ID"); "" for HeaderId::other.
std::string_view to_string(HeaderId id) noexcept;

struct HeaderField {
    std::string_view name;   // as written, e.g. "i" or "CALL-ID"
    std::string_view value;  // trimmed; a folded value keeps its inner CRLF + SP/HT
    HeaderId id = HeaderId::other;
    bool folded = false;
};

enum class Transport : std::uint8_t { unknown = 0, udp, tcp, tls, sctp, ws, wss };
std::string_view to_string(Transport transport) noexcept;

// One via-parm: "SIP/2.0/UDP host:port;branch=...;received=...;rport=...".
struct Via {
    std::string_view raw;               // the whole via-parm, trimmed
    std::string_view protocol_name;     // "SIP"
    std::string_view protocol_version;  // "2.0"
    std::string_view transport_text;    // "UDP", as written
    Transport transport = Transport::unknown;
    std::string_view host;    // sent-by host; an IPv6 reference without its brackets
    std::uint16_t port = 0;   // 0 when sent-by has no port
    std::string_view params;  // ";branch=...;rport" as written, empty when none
    std::string_view branch;
    std::string_view received;
    bool has_rport = false;   // ";rport" with or without a value
    std::uint16_t rport = 0;  // the value, 0 when the parameter had none
    bool valid = false;       // false: absent, or sent-protocol/sent-by did not parse
};

// From, To or one Contact: name-addr ("Display" <uri>;params) or addr-spec (uri;params).
struct NameAddr {
    std::string_view raw;
    std::string_view display_name;  // without the quotes of a quoted-string (escapes kept as is)
    std::string_view uri;           // "*" for the wildcard Contact
    std::string_view params;        // ";tag=...;..." after the URI, as written
    std::string_view tag;
    bool has_tag = false;
    bool angle_brackets = false;
    bool valid = false;  // false: absent, or the value did not parse
};

struct CSeq {
    std::uint32_t number = 0;
    Method method = Method::other;
    std::string_view method_text;
};

enum class ReasonProtocol : std::uint8_t { none = 0, sip, q850, other };

// RFC 3326 Reason: protocol ;cause=N ;text="...".
struct Reason {
    ReasonProtocol protocol = ReasonProtocol::none;
    std::string_view protocol_text;
    bool has_cause = false;
    std::uint16_t cause = 0;
    std::string_view text;  // without the quotes
};

enum class MessageKind : std::uint8_t { request, response };

inline constexpr std::size_t kMaxStoredHeaders = 64;  // kept in Message::header_fields
inline constexpr std::size_t kMaxHeaderLines = 256;   // beyond this: too_many_headers

// Everything in a Message but its header array, split out so that parse_message_into can reset a
// reused Message without rewriting the stale header slots (kilobytes, on every packet).
struct MessageFields {
    MessageKind kind = MessageKind::request;
    // Request method; for a response, the method of its CSeq (what the response answers).
    Method method = Method::other;
    std::string_view method_text;
    std::string_view request_uri;    // requests only
    std::uint16_t status_code = 0;   // responses only
    std::string_view reason_phrase;  // responses only; may be empty

    std::string_view call_id;
    CSeq cseq;
    NameAddr from;
    NameAddr to;
    NameAddr contact;             // the first contact of the first Contact header
    Via top_via;                  // the first via-parm of the first Via header
    std::uint16_t via_count = 0;  // via-parms over all Via headers (comma-joined ones too)
    std::optional<std::uint32_t> max_forwards;
    std::string_view content_type;
    std::string_view user_agent;
    std::string_view server;
    Reason reason;                  // the Q.850 one when several are given, else the first
    std::uint8_t reason_count = 0;  // reason values seen (saturating)

    // Content-Length as declared; nullopt when absent or not a number (see flags).
    std::optional<std::uint32_t> content_length;
    std::size_t body_bytes_present = 0;  // bytes after the empty line, whatever was declared
    std::string_view body;               // Content-Length bytes when declared (clamped), else all the rest

    bool content_length_invalid = false;  // present but not a 32-bit decimal number
    bool body_truncated = false;          // fewer bytes present than Content-Length declares
    bool body_excess = false;             // more bytes present than Content-Length declares
    bool headers_unterminated = false;    // input ended after a header line, with no empty line
    bool cseq_method_mismatch = false;    // request whose CSeq method differs from its method
    bool from_malformed = false;          // From/To/Contact/Via present but unparsable
    bool to_malformed = false;
    bool contact_malformed = false;
    bool via_malformed = false;

    std::string_view start_line;
    std::string_view raw;  // start line through the end of the body (Content-Length clamped)

    std::uint16_t header_count = 0;     // fields stored in Message::header_fields
    std::uint16_t header_overflow = 0;  // fields parsed but not stored
    std::string_view overflow_text;     // header lines from the first unstored field on
};

struct Message : MessageFields {
    // Only [0, header_count) is meaningful; slots past it may hold a previous packet's fields.
    std::array<HeaderField, kMaxStoredHeaders> header_fields{};

    bool is_request() const noexcept { return kind == MessageKind::request; }
    bool is_response() const noexcept { return kind == MessageKind::response; }
    std::span<const HeaderField> headers() const noexcept { return {header_fields.data(), header_count}; }
    // Value of the first header with this name (full or compact form, any case), including
    // fields beyond the stored ones; nullopt when absent.
    std::optional<std::string_view> find_header(std::string_view name) const noexcept;
    // Number of header fields (lines, not comma-separated values) with this name.
    std::size_t count_headers(std::string_view name) const noexcept;
};

// How much of a message parse_message_into fills in.
enum class ParseDepth : std::uint8_t {
    full,
    // What the dialog and transaction tables read, and no more: about 7 % less work a message
    // (bench/README.md). Left at their defaults: `contact` and `contact_malformed`, `via_count`,
    // and what follows the branch parameter in the top Via (`received`, `rport`, `valid`,
    // `via_malformed`); only the first Via header is looked at. No field is stored in
    // `header_fields`: they all count as overflow, and find_header()/count_headers() walk the
    // header text. Everything else, and the result, is what `full` gives.
    dialog,
};

// A NUL byte before the end of the header section refuses the message (nul_in_headers): it is
// not legal SIP text, no known stack sends it, and a consumer that stops at the NUL (any C string
// API) would read a different, shorter Call-ID or tag than the one tracked here. NULs in the body
// are legal (binary bodies) and kept.
Result<Message, ParseError> parse_message(std::string_view text) noexcept;

// Same as parse_message, writing into a caller-owned Message (reused across packets on a hot
// path, which saves returning a few kilobytes by value). Returns nullopt on success.
std::optional<ParseError> parse_message_into(std::string_view text, Message& out,
                                             ParseDepth depth = ParseDepth::full) noexcept;

// Value of parameter `name` (case-insensitive) in ";a=b;c;d=\"x\"", with the quotes of a
// quoted-string value removed; an empty view for a parameter without value; nullopt if absent.
std::optional<std::string_view> find_param(std::string_view params, std::string_view name) noexcept;

// The sub-parsers, exposed for callers that hold a raw header value (e.g. from find_header).
Via parse_via(std::string_view via_parm) noexcept;
NameAddr parse_name_addr(std::string_view value) noexcept;
std::optional<CSeq> parse_cseq(std::string_view value) noexcept;
Reason parse_reason(std::string_view reason_value) noexcept;

}  // namespace hepd::sip
