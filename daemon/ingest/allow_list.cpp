#include "ingest/allow_list.hpp"

#include <charconv>

namespace hepd::ingest {

namespace {

// The IPv4 address inside ::ffff:a.b.c.d, when `a` is one.
std::optional<IpAddress> unmap_v4(const IpAddress& a) noexcept {
    if (!a.is_v6()) return std::nullopt;
    const auto& b = a.bytes();
    for (std::size_t i = 0; i < 10; ++i)
        if (b[i] != 0) return std::nullopt;
    if (b[10] != 0xff || b[11] != 0xff) return std::nullopt;
    return IpAddress::v4(std::span<const std::uint8_t, 4>(b.data() + 12, 4));
}

bool same_prefix(const std::array<std::uint8_t, 16>& a, const std::array<std::uint8_t, 16>& b,
                 unsigned length) noexcept {
    const unsigned whole = length / 8;
    for (unsigned i = 0; i < whole; ++i)
        if (a[i] != b[i]) return false;
    const unsigned rest = length % 8;
    if (rest == 0) return true;
    const auto mask = static_cast<std::uint8_t>(0xff << (8 - rest));
    return (a[whole] & mask) == (b[whole] & mask);
}

} // namespace

std::optional<Prefix> Prefix::make(const IpAddress& network, unsigned length) noexcept {
    if (network.empty()) return std::nullopt;
    const unsigned max = network.is_v4() ? 32 : 128;
    if (length > max) return std::nullopt;
    std::array<std::uint8_t, 16> b = network.bytes();
    for (unsigned bit = length; bit < max; ++bit)
        b[bit / 8] = static_cast<std::uint8_t>(b[bit / 8] & ~(0x80U >> (bit % 8)));
    Prefix p;
    p.network_ = network.is_v4() ? IpAddress::v4(std::span<const std::uint8_t, 4>(b.data(), 4))
                                 : IpAddress::v6(std::span<const std::uint8_t, 16>(b));
    p.length_ = static_cast<std::uint8_t>(length);
    return p;
}

std::optional<Prefix> Prefix::parse(std::string_view text) noexcept {
    const auto slash = text.find('/');
    const auto address = IpAddress::parse(text.substr(0, slash));
    if (!address) return std::nullopt;
    if (slash == std::string_view::npos) return make(*address, address->is_v4() ? 32 : 128);
    const auto digits = text.substr(slash + 1);
    unsigned length = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), length);
    if (ec != std::errc{} || end != digits.data() + digits.size() || digits.empty()) return std::nullopt;
    return make(*address, length);
}

bool Prefix::contains(const IpAddress& address) const noexcept {
    if (network_.empty() || address.empty()) return false;
    if (network_.family() == address.family()) return same_prefix(network_.bytes(), address.bytes(), length_);
    if (network_.is_v4()) {
        if (const auto v4 = unmap_v4(address)) return same_prefix(network_.bytes(), v4->bytes(), length_);
    }
    return false;
}

std::string Prefix::to_string() const {
    if (network_.empty()) return "-";
    return network_.to_string() + "/" + std::to_string(length_);
}

} // namespace hepd::ingest
