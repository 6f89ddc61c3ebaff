#include "hep/decoder.hpp"

#include <cstring>
#include <span>
#include <type_traits>

namespace hepd::hep {

std::string_view to_string(DecodeError e) noexcept {
    switch (e) {
    case DecodeError::truncated: return "truncated";
    case DecodeError::not_hep: return "not_hep";
    case DecodeError::length_mismatch: return "length_mismatch";
    case DecodeError::bad_chunk_length: return "bad_chunk_length";
    case DecodeError::bad_chunk_width: return "bad_chunk_width";
    case DecodeError::bad_ip_family: return "bad_ip_family";
    case DecodeError::missing_payload: return "missing_payload";
    case DecodeError::unknown_compression: return "unknown_compression";
    case DecodeError::bad_compressed_payload: return "bad_compressed_payload";
    case DecodeError::decompressed_too_large: return "decompressed_too_large";
    case DecodeError::decompress_failed: return "decompress_failed";
    }
    return "unknown";
}

namespace {

static_assert(std::is_trivially_copyable_v<Message>, "decode_into resets a Message with memcpy");

constexpr std::size_t v3_header = 6;
constexpr std::size_t chunk_header = 6;
constexpr std::size_t legacy_header = 8;  // version, length, family, protocol, 2 ports
constexpr std::size_t v2_time_header = 12;
constexpr std::uint8_t sip_payload_type = 1;

// One load and two comparisons ("HEP3", "EEP3").
bool is_v3_magic(const std::uint8_t* p) noexcept {
    const std::uint32_t magic = load_be32(p);
    return magic == 0x48455033U || magic == 0x45455033U;
}

// True while the bytes there are a prefix of "HEP3" or "EEP3".
bool is_v3_prefix(ByteSpan d) noexcept {
    static constexpr char tail[] = "EP3";
    if (d.empty() || (d[0] != 'H' && d[0] != 'E')) return false;
    for (std::size_t i = 1; i < d.size() && i < 4; ++i)
        if (d[i] != static_cast<std::uint8_t>(tail[i - 1])) return false;
    return true;
}

IpAddress v4_at(const std::uint8_t* p) noexcept { return IpAddress::v4(std::span<const std::uint8_t, 4>(p, 4)); }
IpAddress v6_at(const std::uint8_t* p) noexcept { return IpAddress::v6(std::span<const std::uint8_t, 16>(p, 16)); }

std::optional<DecodeError> decode_v3(ByteSpan d, Message& m) noexcept {
    if (d.size() < v3_header) return DecodeError::truncated;
    const std::size_t total = load_be16(d.data() + 4);
    if (total != d.size()) return DecodeError::length_mismatch;
    m.version = 3;

    // Address chunks of both families may appear; the family chunk decides at the end, so that
    // the result does not depend on chunk order.
    const std::uint8_t* src4 = nullptr;
    const std::uint8_t* dst4 = nullptr;
    const std::uint8_t* src6 = nullptr;
    const std::uint8_t* dst6 = nullptr;

    const std::uint8_t* p = d.data() + v3_header;
    std::size_t left = total - v3_header;
    for (;;) {
        // One comparison a chunk for both the end and a partial header.
        if (left < chunk_header) {
            if (left == 0) break;
            return DecodeError::bad_chunk_length;
        }
        // Vendor and type as one word: a vendor chunk is no generic type, so the switch skips it.
        const std::uint32_t id = load_be32(p);
        const std::size_t length = load_be16(p + 4);
        // One comparison: a length below the header wraps around to a huge value.
        if (length - chunk_header > left - chunk_header) return DecodeError::bad_chunk_length;
        const std::uint8_t* v = p + chunk_header;
        const std::size_t n = length - chunk_header;
        p += length;
        left -= length;

        auto u8 = [&](std::uint8_t& field, Field f) {
            if (n != 1) return false;
            field = v[0];
            m.mark(f);
            return true;
        };
        auto u16 = [&](std::uint16_t& field, Field f) {
            if (n != 2) return false;
            field = load_be16(v);
            m.mark(f);
            return true;
        };
        auto u32 = [&](std::uint32_t& field, Field f) {
            if (n != 4) return false;
            field = load_be32(v);
            m.mark(f);
            return true;
        };
        auto octets = [&](ByteSpan& field, Field f) {
            field = ByteSpan(v, n);
            m.mark(f);
            return true;
        };

        bool ok = true;
        switch (id) {
        case chunk::ip_family: ok = u8(m.ip_family, Field::ip_family); break;
        case chunk::ip_protocol: ok = u8(m.ip_protocol, Field::ip_protocol); break;
        case chunk::ipv4_src:
            ok = n == 4;
            src4 = v;
            break;
        case chunk::ipv4_dst:
            ok = n == 4;
            dst4 = v;
            break;
        case chunk::ipv6_src:
            ok = n == 16;
            src6 = v;
            break;
        case chunk::ipv6_dst:
            ok = n == 16;
            dst6 = v;
            break;
        case chunk::src_port: ok = u16(m.src.port, Field::src_port); break;
        case chunk::dst_port: ok = u16(m.dst.port, Field::dst_port); break;
        case chunk::seconds: ok = u32(m.seconds, Field::seconds); break;
        case chunk::micros: ok = u32(m.micros, Field::micros); break;
        case chunk::payload_type: ok = u8(m.payload_type, Field::payload_type); break;
        case chunk::capture_id: ok = u32(m.capture_id, Field::capture_id); break;
        case chunk::keep_alive: ok = u16(m.keep_alive, Field::keep_alive); break;
        case chunk::auth_key: octets(m.auth_key, Field::auth_key); break;
        case chunk::payload:
            octets(m.payload, Field::payload);
            m.compressed = false;
            break;
        case chunk::compressed_payload:
            octets(m.payload, Field::payload);
            m.compressed = true;
            break;
        case chunk::correlation_id: octets(m.correlation_id, Field::correlation_id); break;
        case chunk::vlan: ok = u16(m.vlan, Field::vlan); break;
        case chunk::node_name: octets(m.node_name, Field::node_name); break;
        case chunk::mac_src: octets(m.mac_src, Field::mac_src); break;
        case chunk::mac_dst: octets(m.mac_dst, Field::mac_dst); break;
        case chunk::ethertype: ok = u16(m.ethertype, Field::ethertype); break;
        case chunk::tcp_flags: ok = u8(m.tcp_flags, Field::tcp_flags); break;
        case chunk::tos: ok = u8(m.tos, Field::tos); break;
        case chunk::mos: ok = u16(m.mos, Field::mos); break;
        case chunk::r_factor: ok = u16(m.r_factor, Field::r_factor); break;
        case chunk::jitter: ok = u32(m.jitter, Field::jitter); break;
        case chunk::transaction_type: octets(m.transaction_type, Field::transaction_type); break;
        case chunk::event_type: ok = u16(m.event_type, Field::event_type); break;
        case chunk::extra_correlation: octets(m.extra_correlation, Field::extra_correlation); break;
        default: break;
        }
        if (!ok) return DecodeError::bad_chunk_width;
    }

    const bool prefer_v6 = m.has(Field::ip_family) && m.ip_family == family_ipv6;
    const std::uint8_t* s = prefer_v6 ? src6 : src4;
    const std::uint8_t* t = prefer_v6 ? dst6 : dst4;
    if (s != nullptr) {
        m.src.address = prefer_v6 ? v6_at(s) : v4_at(s);
    } else if ((s = prefer_v6 ? src4 : src6) != nullptr) {
        m.src.address = prefer_v6 ? v4_at(s) : v6_at(s);
    }
    if (t != nullptr) {
        m.dst.address = prefer_v6 ? v6_at(t) : v4_at(t);
    } else if ((t = prefer_v6 ? dst4 : dst6) != nullptr) {
        m.dst.address = prefer_v6 ? v4_at(t) : v6_at(t);
    }
    if (s != nullptr) m.mark(Field::src_address);
    if (t != nullptr) m.mark(Field::dst_address);

    if (m.has(Field::payload_type) && m.payload_type == sip_payload_type && m.payload.empty())
        return DecodeError::missing_payload;
    return std::nullopt;
}

// v1/v2: the length byte is not trusted (some senders write a truncated 16-bit value into it);
// the header size follows from the version and the family alone.
std::optional<DecodeError> decode_legacy(ByteSpan d, Message& m) noexcept {
    if (d.size() < legacy_header) return DecodeError::truncated;
    const std::uint8_t version = d[0];
    const std::uint8_t family = d[2];
    std::size_t address_size = 0;
    if (family == family_ipv4) {
        address_size = 4;
    } else if (family == family_ipv6) {
        address_size = 16;
    } else {
        return DecodeError::bad_ip_family;
    }
    const std::size_t header = legacy_header + 2 * address_size + (version == 2 ? v2_time_header : 0);
    if (d.size() < header) return DecodeError::truncated;

    const std::uint8_t* p = d.data();
    m.version = version;
    m.ip_family = family;
    m.ip_protocol = p[3];
    m.src.port = load_be16(p + 4);
    m.dst.port = load_be16(p + 6);
    if (address_size == 4) {
        m.src.address = v4_at(p + 8);
        m.dst.address = v4_at(p + 12);
    } else {
        m.src.address = v6_at(p + 8);
        m.dst.address = v6_at(p + 24);
    }
    m.present = Message::bit(Field::ip_family) | Message::bit(Field::ip_protocol) | Message::bit(Field::src_address) |
                Message::bit(Field::dst_address) | Message::bit(Field::src_port) | Message::bit(Field::dst_port) |
                Message::bit(Field::payload_type) | Message::bit(Field::payload);
    if (version == 2) {
        // Little-endian on the wire: Kamailio writes it so, captagent and sngrep copy host order.
        const std::uint8_t* t = p + legacy_header + 2 * address_size;
        m.seconds = load_le32(t);
        m.micros = load_le32(t + 4);
        m.capture_id = load_le16(t + 8);
        m.present |= Message::bit(Field::seconds) | Message::bit(Field::micros) | Message::bit(Field::capture_id);
    }
    // v1/v2 carry SIP only.
    m.payload_type = sip_payload_type;
    m.payload = d.subspan(header);
    if (m.payload.empty()) return DecodeError::missing_payload;
    return std::nullopt;
}

}  // namespace

std::optional<DecodeError> decode_into(ByteSpan datagram, Message& out) noexcept {
    // A copy of a constant: GCC turns it into 16-byte stores, `out = Message{}` into rep stos.
    static constexpr Message empty{};
    std::memcpy(static_cast<void*>(&out), &empty, sizeof out);
    if (datagram.empty()) return DecodeError::truncated;
    const std::uint8_t first = datagram[0];
    if (first == 1 || first == 2) return decode_legacy(datagram, out);
    if (datagram.size() < 4) return is_v3_prefix(datagram) ? DecodeError::truncated : DecodeError::not_hep;
    if (!is_v3_magic(datagram.data())) return DecodeError::not_hep;
    return decode_v3(datagram, out);
}

Result<Message, DecodeError> decode(ByteSpan datagram) noexcept {
    Message m;
    if (const auto error = decode_into(datagram, m)) return fail(*error);
    return m;
}

}  // namespace hepd::hep
