#pragma once
// One decoded HEP message (v1, v2 or v3). Byte fields are views into the datagram that was
// decoded: the message is only valid while that buffer is.
#include "core/address.hpp"
#include "core/bytes.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace hepd::hep {

// Generic (vendor 0) chunk types of HEPv3.
namespace chunk {
inline constexpr std::uint16_t ip_family = 0x01;
inline constexpr std::uint16_t ip_protocol = 0x02;
inline constexpr std::uint16_t ipv4_src = 0x03;
inline constexpr std::uint16_t ipv4_dst = 0x04;
inline constexpr std::uint16_t ipv6_src = 0x05;
inline constexpr std::uint16_t ipv6_dst = 0x06;
inline constexpr std::uint16_t src_port = 0x07;
inline constexpr std::uint16_t dst_port = 0x08;
inline constexpr std::uint16_t seconds = 0x09;
inline constexpr std::uint16_t micros = 0x0a;
inline constexpr std::uint16_t payload_type = 0x0b;
inline constexpr std::uint16_t capture_id = 0x0c;
inline constexpr std::uint16_t keep_alive = 0x0d;
inline constexpr std::uint16_t auth_key = 0x0e;
inline constexpr std::uint16_t payload = 0x0f;
inline constexpr std::uint16_t compressed_payload = 0x10;
inline constexpr std::uint16_t correlation_id = 0x11;
inline constexpr std::uint16_t vlan = 0x12;
inline constexpr std::uint16_t node_name = 0x13;
inline constexpr std::uint16_t mac_src = 0x14;
inline constexpr std::uint16_t mac_dst = 0x15;
inline constexpr std::uint16_t ethertype = 0x16;
inline constexpr std::uint16_t tcp_flags = 0x17;
inline constexpr std::uint16_t tos = 0x18;
inline constexpr std::uint16_t mos = 0x20;
inline constexpr std::uint16_t r_factor = 0x21;
inline constexpr std::uint16_t jitter = 0x23;
inline constexpr std::uint16_t transaction_type = 0x24;
inline constexpr std::uint16_t event_type = 0x28;
inline constexpr std::uint16_t extra_correlation = 0x65;  // OpenSIPS, JSON
}  // namespace chunk

// Wire values of the IP family field (Linux AF_INET / AF_INET6, what every sender writes).
inline constexpr std::uint8_t family_ipv4 = 2;
inline constexpr std::uint8_t family_ipv6 = 10;

// Which fields a message carried. Presence is tracked apart from the value because zero is a
// legitimate value for most of them (capture id 0, an empty auth key...).
enum class Field : std::uint8_t {
    ip_family,
    ip_protocol,
    src_address,
    dst_address,
    src_port,
    dst_port,
    seconds,
    micros,
    payload_type,
    capture_id,
    keep_alive,
    auth_key,
    payload,
    correlation_id,
    vlan,
    node_name,
    mac_src,
    mac_dst,
    ethertype,
    tcp_flags,
    tos,
    mos,
    r_factor,
    jitter,
    transaction_type,
    event_type,
    extra_correlation,
};

struct Message {
    std::uint8_t version = 3;   // 1, 2 or 3
    std::uint32_t present = 0;  // bit (1 << Field) per field carried

    std::uint8_t ip_family = 0;    // wire value: 2 IPv4, 10 IPv6
    std::uint8_t ip_protocol = 0;  // 6 TCP, 17 UDP, 132 SCTP, 22 (Kamailio: TLS/WS)
    Endpoint src;
    Endpoint dst;
    std::uint32_t seconds = 0;  // raw, see normalise_timestamp()
    std::uint32_t micros = 0;   // raw, may be >= 1e6 on the wire
    std::uint8_t payload_type = 0;
    std::uint32_t capture_id = 0;
    std::uint16_t keep_alive = 0;
    ByteSpan auth_key;
    ByteSpan payload;
    bool compressed = false;  // payload came in chunk 0x10: zlib or gzip, see decompress_payload()
    ByteSpan correlation_id;
    std::uint16_t vlan = 0;
    ByteSpan node_name;
    ByteSpan mac_src;  // octets as sent (6 for Ethernet)
    ByteSpan mac_dst;
    std::uint16_t ethertype = 0;
    std::uint8_t tcp_flags = 0;
    std::uint8_t tos = 0;
    std::uint16_t mos = 0;
    std::uint16_t r_factor = 0;
    std::uint32_t jitter = 0;
    ByteSpan transaction_type;
    std::uint16_t event_type = 0;
    ByteSpan extra_correlation;  // OpenSIPS chunk 0x65 (JSON)

    static constexpr std::uint32_t bit(Field f) noexcept { return std::uint32_t{1} << static_cast<unsigned>(f); }
    bool has(Field f) const noexcept { return (present & bit(f)) != 0; }
    void mark(Field f) noexcept { present |= bit(f); }

    bool has_time() const noexcept { return has(Field::seconds); }
    bool has_capture_id() const noexcept { return has(Field::capture_id); }
    bool has_payload_type() const noexcept { return has(Field::payload_type); }
    bool has_correlation_id() const noexcept { return has(Field::correlation_id); }
};

// Field-by-field, comparing the bytes behind the views (not the pointers).
bool operator==(const Message& a, const Message& b) noexcept;

}  // namespace hepd::hep
