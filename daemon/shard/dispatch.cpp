#include "shard/dispatch.hpp"

#include "core/ascii.hpp"
#include "core/hash.hpp"

#include <cstring>

namespace hepd::shard {

namespace {

std::string_view trim(std::string_view s) noexcept {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
    return s;
}

}  // namespace

// One memchr a line, and a closer look only at lines that start like the name: this runs for
// every SIP datagram a producer routes, live and offline.
std::string_view find_call_id(std::string_view sip) noexcept {
    const char* const end = sip.data() + sip.size();
    const auto next_line = [end](const char* from) {
        return static_cast<const char*>(std::memchr(from, '\n', static_cast<std::size_t>(end - from)));
    };
    const auto blank = [](char c) { return c == ' ' || c == '\t'; };
    // Skip the start line, then look at each header line until the empty line.
    const char* nl = sip.empty() ? nullptr : next_line(sip.data());
    while (nl != nullptr && nl + 1 < end) {
        const char* line = nl + 1;
        nl = next_line(line);
        const char* const line_end = nl != nullptr ? nl : end;
        if (line == line_end || (line_end - line == 1 && *line == '\r')) break;
        while (line < line_end && blank(*line)) ++line;
        const std::string_view rest(line, static_cast<std::size_t>(line_end - line));
        std::size_t name = 0;
        if (rest.size() >= 7 && iequals_ascii(rest.substr(0, 7), "call-id")) {
            name = 7;
        } else if (!rest.empty() && to_lower_ascii(rest[0]) == 'i') {
            name = 1;
        } else {
            continue;
        }
        std::size_t colon = name;
        while (colon < rest.size() && (blank(rest[colon]) || rest[colon] == '\r')) ++colon;
        if (colon < rest.size() && rest[colon] == ':') return trim(rest.substr(colon + 1));
    }
    return {};
}

std::uint64_t call_key(std::string_view call_id) noexcept { return hash_text(call_id); }

std::uint64_t dispatch_hash(const Datagram& d) noexcept {
    switch (d.kind) {
    case PayloadClass::sip: {
        const auto id = find_call_id(as_text(d.payload));
        return id.empty() ? hash_endpoint(d.src) : call_key(id);
    }
    // Reports land beside the stream they describe, whatever their correlation id says.
    case PayloadClass::rtp:
    case PayloadClass::rtcp:
    case PayloadClass::rtcp_json: return media_hash(routing_media(d.kind, d.src, d.dst));
    case PayloadClass::qos:
    case PayloadClass::log:
    case PayloadClass::other:
        if (!d.correlation_id.empty()) return call_key(d.correlation_id);
        return hash_endpoint(d.src);
    }
    return 0;
}

}  // namespace hepd::shard
