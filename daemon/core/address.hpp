#pragma once
// IP addresses and endpoints as plain values: 16 bytes of storage for both families, so they can
// be hashed, compared and copied without allocation.
#include "core/hash.hpp"

#include <array>
#include <compare>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace hepd {

enum class IpFamily : std::uint8_t { none = 0, v4 = 4, v6 = 6 };

class IpAddress {
public:
    IpAddress() = default;
    static IpAddress v4(std::span<const std::uint8_t, 4> bytes) noexcept;
    static IpAddress v4(std::uint32_t host_order) noexcept;
    static IpAddress v6(std::span<const std::uint8_t, 16> bytes) noexcept;
    // Parses dotted-quad IPv4 or RFC 4291 text IPv6 (brackets not accepted here).
    static std::optional<IpAddress> parse(std::string_view text) noexcept;

    IpFamily family() const noexcept { return family_; }
    bool is_v4() const noexcept { return family_ == IpFamily::v4; }
    bool is_v6() const noexcept { return family_ == IpFamily::v6; }
    bool empty() const noexcept { return family_ == IpFamily::none; }
    // v4 addresses occupy the first 4 bytes; the rest is zero.
    const std::array<std::uint8_t, 16>& bytes() const noexcept { return bytes_; }
    std::uint32_t v4_host_order() const noexcept;
    // The IPv4 address an IPv4-mapped IPv6 address (::ffff:a.b.c.d) stands for, which is how a
    // dual-stack socket shows v4 peers; any other address unchanged.
    IpAddress unmapped() const noexcept;
    std::string to_string() const;

    // Two words, inline: GCC calls the C library's memcmp for std::array's ==, and the tables
    // compare addresses on every lookup by endpoint (4-7 % of a shard's time in memcmp).
    friend bool operator==(const IpAddress& a, const IpAddress& b) noexcept {
        const std::uint8_t* x = a.bytes_.data();
        const std::uint8_t* y = b.bytes_.data();
        return a.family_ == b.family_ && ((load_le64(x) ^ load_le64(y)) | (load_le64(x + 8) ^ load_le64(y + 8))) == 0;
    }
    // The defaulted order (family, then the bytes as written), in two big-endian words: the
    // default compared the bytes with memcmp, a library call for every SIP message's hop.
    friend std::strong_ordering operator<=>(const IpAddress& a, const IpAddress& b) noexcept {
        if (a.family_ != b.family_) return a.family_ <=> b.family_;
        const std::uint8_t* x = a.bytes_.data();
        const std::uint8_t* y = b.bytes_.data();
        if (const std::uint64_t hx = load_be64(x), hy = load_be64(y); hx != hy) return hx <=> hy;
        return load_be64(x + 8) <=> load_be64(y + 8);
    }

private:
    // The bytes first: a copy of an Endpoint is a 16-byte move of them and a 4-byte move of the
    // family and port, and the word reads of ==, <=> and the table hashes then fall within one
    // of those stores (with the family first, the second word straddled both: a store-forwarding
    // stall on every hash of a just-built key).
    std::array<std::uint8_t, 16> bytes_{};
    IpFamily family_ = IpFamily::none;
};

// Inline: the capture decoder makes two for every packet.
inline IpAddress IpAddress::v4(std::span<const std::uint8_t, 4> bytes) noexcept {
    // The 16 bytes as one vector, written with one store: built as 4 address bytes over zeroed
    // words, the copy that follows reads them back across three stores (a forwarding stall).
    using Words = std::uint32_t __attribute__((vector_size(16)));
    std::uint32_t address = 0;
    std::memcpy(&address, bytes.data(), 4);
    const Words words{address, 0, 0, 0};
    IpAddress a;
    std::memcpy(a.bytes_.data(), &words, 16);
    a.family_ = IpFamily::v4;
    return a;
}

struct Endpoint {
    IpAddress address;
    std::uint16_t port = 0;

    std::string to_string() const;  // "1.2.3.4:5060" or "[::1]:5060"
    friend bool operator==(const Endpoint&, const Endpoint&) = default;
    friend auto operator<=>(const Endpoint&, const Endpoint&) = default;
};

// Parses "host:port" / "[v6]:port"; the host must be a literal address.
std::optional<Endpoint> parse_endpoint(std::string_view text) noexcept;

// Portable (the same on every host and run): shard dispatch and table keys use them.
std::uint64_t hash_address(const IpAddress& a) noexcept;
// Two words and two mixes, inline: every reading shard hashes every media packet's address to
// find its owner (shard::shard_of_media), and the stream table hashes it again.
inline std::uint64_t hash_endpoint(const Endpoint& e) noexcept {
    const std::uint8_t* const b = e.address.bytes().data();
    const std::uint64_t low =
        load_le64(b + 8) ^ (std::uint64_t{e.port} << 8) ^ static_cast<std::uint64_t>(e.address.family());
    return mix64(load_le64(b) ^ mix64(low));
}

// The same hashes as table hash functors (LruTable's KeyHash).
struct AddressHash {
    std::uint64_t operator()(const IpAddress& a) const noexcept { return hash_address(a); }
};
struct EndpointHash {
    std::uint64_t operator()(const Endpoint& e) const noexcept { return hash_endpoint(e); }
};

}  // namespace hepd
