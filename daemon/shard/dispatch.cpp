#include "shard/dispatch.hpp"

#include "core/hash.hpp"
#include "core/media_binding.hpp"

namespace hepd::shard {

namespace {

constexpr char lower(char c) noexcept { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }

bool iequals(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (lower(a[i]) != lower(b[i])) return false;
    return true;
}

std::string_view trim(std::string_view s) noexcept {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
    return s;
}

}  // namespace

std::string_view find_call_id(std::string_view sip) noexcept {
    // Skip the start line, then look at each header line until the empty line.
    std::size_t pos = sip.find('\n');
    while (pos != std::string_view::npos && pos + 1 < sip.size()) {
        const std::size_t begin = pos + 1;
        const std::size_t end = sip.find('\n', begin);
        const std::string_view line =
            sip.substr(begin, end == std::string_view::npos ? sip.size() - begin : end - begin);
        if (line.empty() || line == "\r") break;
        const std::size_t colon = line.find(':');
        if (colon != std::string_view::npos) {
            const std::string_view name = trim(line.substr(0, colon));
            if (iequals(name, "call-id") || iequals(name, "i")) return trim(line.substr(colon + 1));
        }
        pos = end;
    }
    return {};
}

std::uint64_t call_key(std::string_view call_id) noexcept { return hash_text(call_id); }

std::uint64_t media_hash(const Endpoint& media) noexcept { return hash_endpoint(media_key(media)); }

std::uint64_t dispatch_hash(const Datagram& d) noexcept {
    switch (d.kind) {
    case PayloadClass::sip: {
        const auto id = find_call_id(as_text(d.payload));
        return id.empty() ? hash_endpoint(d.src) : call_key(id);
    }
    case PayloadClass::rtp: return media_hash(d.dst);
    // Reports land beside the stream they describe, whatever their correlation id says.
    case PayloadClass::rtcp:
    case PayloadClass::rtcp_json: return media_hash(d.src);
    case PayloadClass::qos:
    case PayloadClass::log:
    case PayloadClass::other:
        if (!d.correlation_id.empty()) return call_key(d.correlation_id);
        return hash_endpoint(d.src);
    }
    return 0;
}

}  // namespace hepd::shard
