#include "core/cidr.hpp"

#include <array>

namespace hepd {
namespace {

// True when the first prefix_len bits of a and b agree.
bool same_prefix(const std::uint8_t* a, const std::uint8_t* b, unsigned prefix_len) noexcept {
    const unsigned whole = prefix_len / 8;
    for (unsigned i = 0; i < whole; ++i)
        if (a[i] != b[i]) return false;
    const unsigned rest = prefix_len % 8;
    if (rest == 0) return true;
    const auto mask = static_cast<std::uint8_t>(0xffu << (8 - rest));
    return (a[whole] & mask) == (b[whole] & mask);
}

bool host_bits_clear(const IpAddress& address, unsigned prefix_len) noexcept {
    const unsigned total = address.is_v4() ? 4 : 16;
    const auto& bytes = address.bytes();
    for (unsigned i = 0; i < total; ++i) {
        const unsigned first_bit = i * 8;
        if (first_bit + 8 <= prefix_len) continue;
        const unsigned kept = prefix_len > first_bit ? prefix_len - first_bit : 0;
        const auto host_mask = static_cast<std::uint8_t>(0xffu >> kept);
        if ((bytes[i] & host_mask) != 0) return false;
    }
    return true;
}

}  // namespace

std::string_view to_string(CidrError e) noexcept {
    switch (e) {
    case CidrError::empty: return "empty";
    case CidrError::bad_address: return "bad_address";
    case CidrError::bad_prefix: return "bad_prefix";
    case CidrError::prefix_range: return "prefix_range";
    case CidrError::host_bits_set: return "host_bits_set";
    }
    return "unknown";
}

Result<Cidr, CidrError> Cidr::make(const IpAddress& network, unsigned prefix_len) noexcept {
    if (network.empty()) return fail(CidrError::bad_address);
    const unsigned max_len = network.is_v4() ? 32 : 128;
    if (prefix_len > max_len) return fail(CidrError::prefix_range);
    if (!host_bits_clear(network, prefix_len)) return fail(CidrError::host_bits_set);
    Cidr c;
    c.network_ = network;
    c.prefix_len_ = static_cast<std::uint8_t>(prefix_len);
    return c;
}

Result<Cidr, CidrError> Cidr::parse(std::string_view text) noexcept {
    if (text.empty()) return fail(CidrError::empty);
    const auto slash = text.find('/');
    const auto address = IpAddress::parse(text.substr(0, slash));
    if (!address) return fail(CidrError::bad_address);
    if (slash == std::string_view::npos) return make(*address, address->is_v4() ? 32u : 128u);
    const std::string_view digits = text.substr(slash + 1);
    if (digits.empty() || digits.size() > 3) return fail(CidrError::bad_prefix);
    unsigned prefix_len = 0;
    for (char c : digits) {
        if (c < '0' || c > '9') return fail(CidrError::bad_prefix);
        prefix_len = prefix_len * 10 + static_cast<unsigned>(c - '0');
    }
    return make(*address, prefix_len);
}

bool Cidr::contains(const IpAddress& address) const noexcept {
    if (network_.empty() || address.empty()) return false;
    if (network_.family() == address.family())
        return same_prefix(network_.bytes().data(), address.bytes().data(), prefix_len_);
    const IpAddress v4 = address.unmapped();
    return network_.is_v4() && v4.is_v4() && same_prefix(network_.bytes().data(), v4.bytes().data(), prefix_len_);
}

std::string Cidr::to_string() const { return network_.to_string() + "/" + std::to_string(prefix_len_); }

}  // namespace hepd
