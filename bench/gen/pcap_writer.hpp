#pragma once
// Writes classic pcap (microsecond, little-endian, Ethernet) with IPv4/UDP frames: what the
// corpus generator and the tests need to build captures with known contents.
#include "core/address.hpp"
#include "core/bytes.hpp"
#include "core/time.hpp"

#include <cstdint>
#include <cstdio>
#include <string>
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
    const std::vector<std::uint8_t>& bytes() const noexcept { return memory_; }
    std::uint64_t frames() const noexcept { return frames_; }

private:
    void write(const void* p, std::size_t n);
    std::FILE* file_ = nullptr;
    std::vector<std::uint8_t> memory_;
    std::vector<std::uint8_t> frame_;
    std::uint16_t ip_id_ = 0;
    std::uint64_t frames_ = 0;
};

} // namespace hepd::gen
