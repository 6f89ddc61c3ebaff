#pragma once
// IPv4 and IPv6 fragment reassembly for offline captures (large SIP INVITEs over UDP are
// fragmented). Bounded: a fixed number of datagrams in progress, at most 65535 bytes and a fixed
// number of pieces each, and a timeout on packet time (no clock is read). Overlapping bytes keep
// the first copy seen; duplicates are ignored. Every datagram given up is counted by reason.
#include "core/time.hpp"
#include "pcap/decode.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace hepd::pcap {

struct ReassemblyOptions {
    std::size_t max_datagrams = 1024;        // in progress at once; the oldest is evicted beyond
    std::size_t max_datagram_bytes = 65535;  // clamped to 65535 (the IP length cannot say more)
    std::size_t max_pieces = 64;             // disjoint byte ranges held per datagram
    std::int64_t timeout_us = 30'000'000;    // since the datagram's first fragment, packet time
};

enum class FragmentDrop : std::uint8_t {
    timeout,            // not complete within timeout_us
    evicted,            // pushed out by a newer datagram at max_datagrams
    too_large,          // a fragment ends beyond max_datagram_bytes
    inconsistent,       // two different ends, or bytes beyond the end the last fragment gave
    too_many_pieces,    // more than max_pieces disjoint ranges
    incomplete_at_end,  // still incomplete when the input ended (finish())
};
inline constexpr std::size_t kFragmentDropCount = 6;
std::string_view to_string(FragmentDrop reason) noexcept;

struct ReassemblyStats {
    std::uint64_t fragments = 0;    // fragments offered
    std::uint64_t reassembled = 0;  // datagrams completed and handed on
    std::uint64_t duplicates = 0;   // fragments whose bytes were all held already
    std::uint64_t overlaps = 0;     // fragments partly overlapping held bytes (first copy kept)
    std::array<std::uint64_t, kFragmentDropCount> dropped{};  // datagrams given up, by reason
    std::uint64_t dropped_fragments = 0;                      // fragments lost with those datagrams

    std::uint64_t dropped_total() const noexcept;
};

class Reassembler {
public:
    explicit Reassembler(ReassemblyOptions options = {});

    // Takes one fragment (decode_ip() output with fragment == true) seen at fragment.time. When it
    // completes its datagram, fills `out` with the whole datagram (fragment == false, payload =
    // the reassembled upper-layer bytes, valid until the next call) and returns true.
    bool add(const IpPacket& fragment, IpPacket& out) noexcept;

    // Gives up on datagrams whose first fragment is older than the timeout at `now`. add() does
    // this itself as packet time advances.
    void expire(Timestamp now) noexcept;

    // End of input: whatever is still incomplete is dropped and counted.
    void finish() noexcept;

    std::size_t active() const noexcept { return active_; }
    const ReassemblyStats& stats() const noexcept { return stats_; }

private:
    struct Range {
        std::uint32_t begin = 0;
        std::uint32_t end = 0;
    };
    struct Slot {
        bool used = false;
        std::uint64_t hash = 0;
        IpAddress src;
        IpAddress dst;
        std::uint32_t id = 0;
        std::uint8_t protocol = 0;
        std::uint16_t vlan = 0;
        bool have_last = false;
        std::uint32_t total = 0;  // known once the last fragment (MF clear) arrived
        std::uint32_t fragments = 0;
        Timestamp first;
        std::vector<Range> ranges;         // sorted, disjoint, not adjacent
        std::vector<std::uint8_t> buffer;  // kept between datagrams: no allocation once warm
    };

    Slot* find_or_create(const IpPacket& f, std::uint64_t hash) noexcept;
    void drop(Slot& slot, FragmentDrop reason) noexcept;
    void release(Slot& slot) noexcept;

    ReassemblyOptions options_;
    std::vector<Slot> slots_;
    std::size_t active_ = 0;
    Timestamp next_deadline_{INT64_MAX};
    ReassemblyStats stats_;
};

}  // namespace hepd::pcap
