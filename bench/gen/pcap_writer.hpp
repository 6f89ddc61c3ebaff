#pragma once
// Writes classic pcap (microsecond, little-endian, Ethernet) with IPv4/UDP frames: what the
// corpus generator and the tests need to build captures with known contents. Packets that only
// exist inside HEP (RTCP-JSON) are wrapped in HEPv3 and sent from a capture agent to the
// collector's port 9060, the way rtpengine and Asterisk mirror them.
#include "core/address.hpp"
#include "core/bytes.hpp"
#include "core/time.hpp"

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace hepd::gen {

class PcapWriter {
public:
    // Writes to a file (throws std::runtime_error when it cannot be opened) or, with an empty
    // path, into memory (bytes()).
    explicit PcapWriter(const std::string& path = {});
    ~PcapWriter();
    PcapWriter(const PcapWriter&) = delete;
    PcapWriter& operator=(const PcapWriter&) = delete;

    void udp(Timestamp t, const Endpoint& src, const Endpoint& dst, ByteSpan payload);
    // A HEPv3 message (src/dst/time/payload type/correlation id as given) in a UDP datagram from
    // hep_agent() to hep_collector(). Throws std::runtime_error when it cannot be encoded.
    void hep3(Timestamp t, const Endpoint& src, const Endpoint& dst, ByteSpan payload, std::uint8_t payload_type,
              std::string_view correlation_id, std::uint32_t capture_id = 2001);
    static Endpoint hep_agent();      // 10.8.0.1:40000 (a media relay mirroring its RTCP)
    static Endpoint hep_collector();  // 10.0.0.100:9060
    const std::vector<std::uint8_t>& bytes() const noexcept { return memory_; }
    std::uint64_t frames() const noexcept { return frames_; }

private:
    void write(const void* p, std::size_t n);
    std::FILE* file_ = nullptr;
    std::vector<std::uint8_t> memory_;
    std::vector<std::uint8_t> frame_;
    std::vector<std::uint8_t> hep_;
    std::uint16_t ip_id_ = 0;
    std::uint64_t frames_ = 0;
};

}  // namespace hepd::gen
