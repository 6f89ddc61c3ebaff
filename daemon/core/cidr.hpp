#pragma once
// An IP prefix (network address + prefix length) for allow lists and agent naming by source.
#include "core/address.hpp"
#include "core/result.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace hepd {

enum class CidrError : std::uint8_t {
    empty,
    bad_address,    // the part before '/' is not a literal IPv4/IPv6 address
    bad_prefix,     // the part after '/' is not a decimal number
    prefix_range,   // more than 32 (v4) or 128 (v6)
    host_bits_set,  // e.g. 10.0.0.1/8: almost always a typo, so it is refused, not masked
};

std::string_view to_string(CidrError e) noexcept;

class Cidr {
public:
    Cidr() = default;  // matches nothing (family none)

    // "10.0.0.0/8", "2001:db8::/32", or a bare address meaning /32 or /128.
    static Result<Cidr, CidrError> parse(std::string_view text) noexcept;
    // Fails with host_bits_set / prefix_range like parse().
    static Result<Cidr, CidrError> make(const IpAddress& network, unsigned prefix_len) noexcept;

    const IpAddress& network() const noexcept { return network_; }
    unsigned prefix_len() const noexcept { return prefix_len_; }

    // Families must match, except that an IPv4 prefix also contains the IPv4-mapped IPv6 form
    // (::ffff:a.b.c.d) of its addresses, which is how a dual-stack socket reports v4 senders.
    bool contains(const IpAddress& address) const noexcept;

    // Canonical text: "10.0.0.0/8", "2001:db8::/32" (the prefix is always printed).
    std::string to_string() const;

    friend bool operator==(const Cidr&, const Cidr&) = default;
    friend auto operator<=>(const Cidr&, const Cidr&) = default;

private:
    IpAddress network_;
    std::uint8_t prefix_len_ = 0;
};

}  // namespace hepd
