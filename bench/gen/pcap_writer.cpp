#include "gen/pcap_writer.hpp"

#include "core/bytes.hpp"
#include "hep/encoder.hpp"
#include "hep/message.hpp"

#include <cstring>
#include <stdexcept>

namespace hepd::gen {

PcapWriter::PcapWriter(const std::string& path) {
    if (!path.empty()) {
        file_ = std::fopen(path.c_str(), "wb");
        if (file_ == nullptr) throw std::runtime_error("cannot write " + path);
        static char buffer[1 << 20];
        std::setvbuf(file_, buffer, _IOFBF, sizeof buffer);
    }
    std::uint8_t h[24] = {};
    store_le32(h, 0xa1b2c3d4U);
    store_le16(h + 4, 2);
    store_le16(h + 6, 4);
    store_le32(h + 16, 262144);
    store_le32(h + 20, 1);  // Ethernet
    write(h, sizeof h);
}

PcapWriter::~PcapWriter() {
    if (file_ != nullptr) std::fclose(file_);
}

void PcapWriter::write(const void* p, std::size_t n) {
    if (file_ != nullptr) {
        std::fwrite(p, 1, n, file_);
    } else {
        const auto* b = static_cast<const std::uint8_t*>(p);
        memory_.insert(memory_.end(), b, b + n);
    }
}

void PcapWriter::udp(Timestamp t, const Endpoint& src, const Endpoint& dst, ByteSpan payload) {
    const std::size_t ip_len = 20 + 8 + payload.size();
    frame_.assign(14 + ip_len, 0);
    std::uint8_t* f = frame_.data();
    const std::uint8_t macs[12] = {0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1};
    std::memcpy(f, macs, 12);
    store_be16(f + 12, 0x0800);
    std::uint8_t* ip = f + 14;
    ip[0] = 0x45;
    store_be16(ip + 2, static_cast<std::uint16_t>(ip_len));
    store_be16(ip + 4, ++ip_id_);
    ip[8] = 64;
    ip[9] = 17;
    std::memcpy(ip + 12, src.address.bytes().data(), 4);
    std::memcpy(ip + 16, dst.address.bytes().data(), 4);
    std::uint32_t sum = 0;
    for (int i = 0; i < 20; i += 2) sum += load_be16(ip + i);
    while (sum > 0xffff) sum = (sum & 0xffff) + (sum >> 16);
    store_be16(ip + 10, static_cast<std::uint16_t>(~sum));
    std::uint8_t* udp = ip + 20;
    store_be16(udp, src.port);
    store_be16(udp + 2, dst.port);
    store_be16(udp + 4, static_cast<std::uint16_t>(8 + payload.size()));
    if (!payload.empty()) std::memcpy(udp + 8, payload.data(), payload.size());

    std::uint8_t rec[16];
    store_le32(rec, static_cast<std::uint32_t>(t.us / 1'000'000));
    store_le32(rec + 4, static_cast<std::uint32_t>(t.us % 1'000'000));
    store_le32(rec + 8, static_cast<std::uint32_t>(frame_.size()));
    store_le32(rec + 12, static_cast<std::uint32_t>(frame_.size()));
    write(rec, sizeof rec);
    write(frame_.data(), frame_.size());
    ++frames_;
}

Endpoint PcapWriter::hep_agent() { return Endpoint{IpAddress::v4(0x0a080001U), 40000}; }
Endpoint PcapWriter::hep_collector() { return Endpoint{IpAddress::v4(0x0a000064U), 9060}; }

void PcapWriter::hep3(Timestamp t, const Endpoint& src, const Endpoint& dst, ByteSpan payload,
                      std::uint8_t payload_type, std::string_view correlation_id, std::uint32_t capture_id) {
    using hep::Field;
    hep::Message m;
    m.version = 3;
    m.ip_family = src.address.is_v6() ? hep::family_ipv6 : hep::family_ipv4;
    m.ip_protocol = 17;
    m.src = src;
    m.dst = dst;
    m.seconds = static_cast<std::uint32_t>(t.us / 1'000'000);
    m.micros = static_cast<std::uint32_t>(t.us % 1'000'000);
    m.payload_type = payload_type;
    m.capture_id = capture_id;
    m.payload = payload;
    m.correlation_id = as_bytes(correlation_id);
    for (const Field f :
         {Field::ip_family, Field::ip_protocol, Field::src_address, Field::dst_address, Field::src_port,
          Field::dst_port, Field::seconds, Field::micros, Field::payload_type, Field::capture_id, Field::payload})
        m.mark(f);
    if (!correlation_id.empty()) m.mark(Field::correlation_id);
    hep_.clear();
    if (!hep::encode_v3(m, hep_)) throw std::runtime_error("HEP message cannot be encoded");
    udp(t, hep_agent(), hep_collector(), ByteSpan(hep_.data(), hep_.size()));
}

}  // namespace hepd::gen
