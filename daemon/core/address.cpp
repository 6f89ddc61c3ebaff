#include "core/address.hpp"

#include "core/hash.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>

namespace hepd {

IpAddress IpAddress::v4(std::uint32_t host_order) noexcept {
    const std::array<std::uint8_t, 4> b{
        static_cast<std::uint8_t>(host_order >> 24), static_cast<std::uint8_t>(host_order >> 16),
        static_cast<std::uint8_t>(host_order >> 8), static_cast<std::uint8_t>(host_order)};
    return v4(std::span<const std::uint8_t, 4>(b));
}

IpAddress IpAddress::v6(std::span<const std::uint8_t, 16> bytes) noexcept {
    IpAddress a;
    a.family_ = IpFamily::v6;
    std::memcpy(a.bytes_.data(), bytes.data(), 16);
    return a;
}

namespace {

// Dotted-quad IPv4 as inet_pton(AF_INET) takes it: four decimal octets of at most 255, no
// leading zeros, nothing else. Every SDP carries one; the library call cost five times this.
std::optional<std::array<std::uint8_t, 4>> parse_dotted_quad(std::string_view text) noexcept {
    std::array<std::uint8_t, 4> out{};
    std::size_t octet = 0;
    std::size_t i = 0;
    const std::size_t n = text.size();
    while (true) {
        const std::size_t begin = i;
        unsigned value = 0;
        while (i < n && text[i] >= '0' && text[i] <= '9') {
            if (i > begin && value == 0) return std::nullopt;  // a leading zero
            value = value * 10 + static_cast<unsigned>(text[i] - '0');
            if (value > 255) return std::nullopt;
            ++i;
        }
        if (i == begin) return std::nullopt;
        out[octet++] = static_cast<std::uint8_t>(value);
        if (octet == 4) return i == n ? std::optional(out) : std::nullopt;
        if (i == n || text[i] != '.') return std::nullopt;
        ++i;
    }
}

}  // namespace

std::optional<IpAddress> IpAddress::parse(std::string_view text) noexcept {
    if (text.empty()) return std::nullopt;
    if (text.find(':') == std::string_view::npos) {
        const auto quad = parse_dotted_quad(text);
        if (!quad) return std::nullopt;
        return v4(std::span<const std::uint8_t, 4>(*quad));
    }
    // inet_pton needs a NUL-terminated string; the longest textual IPv6 form is 45 characters.
    char buf[64];
    if (text.size() >= sizeof buf) return std::nullopt;
    std::memcpy(buf, text.data(), text.size());
    buf[text.size()] = '\0';
    std::array<std::uint8_t, 16> raw{};
    if (inet_pton(AF_INET6, buf, raw.data()) != 1) return std::nullopt;
    return v6(std::span<const std::uint8_t, 16>(raw));
}

std::uint32_t IpAddress::v4_host_order() const noexcept {
    return (std::uint32_t{bytes_[0]} << 24) | (std::uint32_t{bytes_[1]} << 16) | (std::uint32_t{bytes_[2]} << 8) |
           std::uint32_t{bytes_[3]};
}

std::string IpAddress::to_string() const {
    char buf[INET6_ADDRSTRLEN] = {};
    switch (family_) {
    case IpFamily::v4: inet_ntop(AF_INET, bytes_.data(), buf, sizeof buf); break;
    case IpFamily::v6: inet_ntop(AF_INET6, bytes_.data(), buf, sizeof buf); break;
    case IpFamily::none: return "-";
    }
    return buf;
}

std::string Endpoint::to_string() const {
    if (address.is_v6()) return "[" + address.to_string() + "]:" + std::to_string(port);
    return address.to_string() + ":" + std::to_string(port);
}

std::optional<Endpoint> parse_endpoint(std::string_view text) noexcept {
    std::string_view host;
    std::string_view port_text;
    if (!text.empty() && text.front() == '[') {
        const auto close = text.find(']');
        if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') return std::nullopt;
        host = text.substr(1, close - 1);
        port_text = text.substr(close + 2);
    } else {
        const auto colon = text.rfind(':');
        if (colon == std::string_view::npos) return std::nullopt;
        host = text.substr(0, colon);
        if (host.find(':') != std::string_view::npos) return std::nullopt;  // v6 needs brackets
        port_text = text.substr(colon + 1);
    }
    if (port_text.empty() || port_text.size() > 5) return std::nullopt;
    unsigned port = 0;
    for (char c : port_text) {
        if (c < '0' || c > '9') return std::nullopt;
        port = port * 10 + static_cast<unsigned>(c - '0');
    }
    if (port > 65535) return std::nullopt;
    auto addr = IpAddress::parse(host);
    if (!addr) return std::nullopt;
    return Endpoint{*addr, static_cast<std::uint16_t>(port)};
}

IpAddress IpAddress::unmapped() const noexcept {
    static constexpr std::array<std::uint8_t, 12> kMappedPrefix{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (!is_v6() || !std::equal(kMappedPrefix.begin(), kMappedPrefix.end(), bytes_.begin())) return *this;
    return v4(std::span<const std::uint8_t, 4>(bytes_.data() + 12, 4));
}

std::uint64_t hash_address(const IpAddress& a) noexcept {
    return hash_bytes(a.bytes().data(), a.bytes().size()) ^ static_cast<std::uint64_t>(a.family());
}

}  // namespace hepd
