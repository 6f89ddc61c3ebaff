#pragma once
// Which senders may feed HEP: a list of IP prefixes checked before decoding. Ingest takes the
// prefixes as values (the configuration module parses and validates the text), so it does not
// depend on the config module.
#include "core/address.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hepd::ingest {

class Prefix {
public:
    Prefix() = default;  // matches nothing

    // nullopt for an empty address or a length over 32 (v4) / 128 (v6). Host bits are cleared,
    // so make(10.1.2.3, 8) is 10.0.0.0/8 (the configuration refuses that spelling earlier).
    static std::optional<Prefix> make(const IpAddress& network, unsigned length) noexcept;
    // "10.0.0.0/8", "2001:db8::/32", or a bare address (one host).
    static std::optional<Prefix> parse(std::string_view text) noexcept;

    // Families must match, except that an IPv4 prefix also holds the IPv4-mapped IPv6 form
    // (::ffff:a.b.c.d) of its addresses, which is how a dual-stack socket shows v4 senders.
    bool contains(const IpAddress& address) const noexcept;

    const IpAddress& network() const noexcept { return network_; }
    unsigned length() const noexcept { return length_; }
    std::string to_string() const;

    friend bool operator==(const Prefix&, const Prefix&) = default;

private:
    IpAddress network_;
    std::uint8_t length_ = 0;
};

class AllowList {
public:
    AllowList() = default;  // empty: everyone is allowed
    explicit AllowList(std::vector<Prefix> prefixes) : prefixes_(std::move(prefixes)) {}

    bool allows(const IpAddress& sender) const noexcept {
        if (prefixes_.empty()) return true;
        for (const auto& p : prefixes_)
            if (p.contains(sender)) return true;
        return false;
    }

    bool empty() const noexcept { return prefixes_.empty(); }
    const std::vector<Prefix>& prefixes() const noexcept { return prefixes_; }

private:
    std::vector<Prefix> prefixes_;
};

} // namespace hepd::ingest
