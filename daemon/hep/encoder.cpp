#include "hep/encoder.hpp"

namespace hepd::hep {

namespace {

constexpr std::size_t max_message = 65535;

class ChunkWriter {
public:
    explicit ChunkWriter(std::vector<std::uint8_t>& out) : out_(out) {}

    void bytes(std::uint16_t type, const std::uint8_t* data, std::size_t size) {
        // The u16 chunk length covers its own 6 bytes.
        if (size > max_message - 6) {
            overflow_ = true;
            return;
        }
        std::uint8_t h[6];
        store_be16(h, 0);
        store_be16(h + 2, type);
        store_be16(h + 4, static_cast<std::uint16_t>(size + 6));
        out_.insert(out_.end(), h, h + 6);
        out_.insert(out_.end(), data, data + size);
    }
    void bytes(std::uint16_t type, ByteSpan v) { bytes(type, v.data(), v.size()); }
    void u8(std::uint16_t type, std::uint8_t v) { bytes(type, &v, 1); }
    void u16(std::uint16_t type, std::uint16_t v) {
        std::uint8_t b[2];
        store_be16(b, v);
        bytes(type, b, 2);
    }
    void u32(std::uint16_t type, std::uint32_t v) {
        std::uint8_t b[4];
        store_be32(b, v);
        bytes(type, b, 4);
    }
    bool overflow() const noexcept { return overflow_; }

private:
    std::vector<std::uint8_t>& out_;
    bool overflow_ = false;
};

bool write_address(ChunkWriter& w, const IpAddress& a, std::uint16_t v4_type, std::uint16_t v6_type) {
    if (a.is_v4()) {
        w.bytes(v4_type, a.bytes().data(), 4);
    } else if (a.is_v6()) {
        w.bytes(v6_type, a.bytes().data(), 16);
    } else {
        return false;
    }
    return true;
}

}  // namespace

bool encode_v3(const Message& m, std::vector<std::uint8_t>& out) {
    const std::size_t start = out.size();
    const std::uint8_t magic[6] = {'H', 'E', 'P', '3', 0, 0};
    out.insert(out.end(), magic, magic + 6);
    ChunkWriter w(out);
    bool ok = true;

    // Kamailio's order (1,2,3,4,7,8,9,10,11,12,17,15), the other chunks before the payload.
    if (m.has(Field::ip_family)) w.u8(chunk::ip_family, m.ip_family);
    if (m.has(Field::ip_protocol)) w.u8(chunk::ip_protocol, m.ip_protocol);
    if (m.has(Field::src_address)) ok &= write_address(w, m.src.address, chunk::ipv4_src, chunk::ipv6_src);
    if (m.has(Field::dst_address)) ok &= write_address(w, m.dst.address, chunk::ipv4_dst, chunk::ipv6_dst);
    if (m.has(Field::src_port)) w.u16(chunk::src_port, m.src.port);
    if (m.has(Field::dst_port)) w.u16(chunk::dst_port, m.dst.port);
    if (m.has(Field::seconds)) w.u32(chunk::seconds, m.seconds);
    if (m.has(Field::micros)) w.u32(chunk::micros, m.micros);
    if (m.has(Field::payload_type)) w.u8(chunk::payload_type, m.payload_type);
    if (m.has(Field::capture_id)) w.u32(chunk::capture_id, m.capture_id);
    if (m.has(Field::keep_alive)) w.u16(chunk::keep_alive, m.keep_alive);
    if (m.has(Field::auth_key)) w.bytes(chunk::auth_key, m.auth_key);
    if (m.has(Field::correlation_id)) w.bytes(chunk::correlation_id, m.correlation_id);
    if (m.has(Field::vlan)) w.u16(chunk::vlan, m.vlan);
    if (m.has(Field::node_name)) w.bytes(chunk::node_name, m.node_name);
    if (m.has(Field::mac_src)) w.bytes(chunk::mac_src, m.mac_src);
    if (m.has(Field::mac_dst)) w.bytes(chunk::mac_dst, m.mac_dst);
    if (m.has(Field::ethertype)) w.u16(chunk::ethertype, m.ethertype);
    if (m.has(Field::tcp_flags)) w.u8(chunk::tcp_flags, m.tcp_flags);
    if (m.has(Field::tos)) w.u8(chunk::tos, m.tos);
    if (m.has(Field::mos)) w.u16(chunk::mos, m.mos);
    if (m.has(Field::r_factor)) w.u16(chunk::r_factor, m.r_factor);
    if (m.has(Field::jitter)) w.u32(chunk::jitter, m.jitter);
    if (m.has(Field::transaction_type)) w.bytes(chunk::transaction_type, m.transaction_type);
    if (m.has(Field::event_type)) w.u16(chunk::event_type, m.event_type);
    if (m.has(Field::extra_correlation)) w.bytes(chunk::extra_correlation, m.extra_correlation);
    if (m.has(Field::payload)) w.bytes(m.compressed ? chunk::compressed_payload : chunk::payload, m.payload);

    const std::size_t total = out.size() - start;
    if (!ok || w.overflow() || total > max_message) {
        out.resize(start);
        return false;
    }
    store_be16(out.data() + start + 4, static_cast<std::uint16_t>(total));
    return true;
}

bool encode_legacy(const Message& m, std::uint8_t version, std::vector<std::uint8_t>& out) {
    if (version != 1 && version != 2) return false;
    const IpAddress& s = m.src.address;
    const IpAddress& d = m.dst.address;
    if (s.empty() || s.family() != d.family()) return false;
    if (version == 2 && m.capture_id > 0xffff) return false;  // v2 has 16 bits for it
    const std::size_t address_size = s.is_v4() ? 4 : 16;
    const std::size_t header = 8 + 2 * address_size;

    out.push_back(version);
    out.push_back(static_cast<std::uint8_t>(header));
    out.push_back(s.is_v4() ? family_ipv4 : family_ipv6);
    out.push_back(m.ip_protocol);
    std::uint8_t ports[4];
    store_be16(ports, m.src.port);
    store_be16(ports + 2, m.dst.port);
    out.insert(out.end(), ports, ports + 4);
    out.insert(out.end(), s.bytes().begin(), s.bytes().begin() + static_cast<std::ptrdiff_t>(address_size));
    out.insert(out.end(), d.bytes().begin(), d.bytes().begin() + static_cast<std::ptrdiff_t>(address_size));
    if (version == 2) {
        std::uint8_t t[12] = {};
        store_le32(t, m.seconds);
        store_le32(t + 4, m.micros);
        store_le16(t + 8, static_cast<std::uint16_t>(m.capture_id));
        out.insert(out.end(), t, t + 12);
    }
    out.insert(out.end(), m.payload.begin(), m.payload.end());
    return true;
}

}  // namespace hepd::hep
