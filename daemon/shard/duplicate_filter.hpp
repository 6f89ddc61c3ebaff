#pragma once
// One packet mirrored by two capture agents (both ends of a hop, an agent beside the proxy's own
// siptrace, a capture on two interfaces) must be counted once. A shard drops a datagram whose
// payload, addresses, transport and kind equal those of one it took within `window` of packet
// time, before its dialog and stream tables see it: so a copy is neither a retransmission, nor a
// hop, nor an RTP duplicate, nor a second packet of a stream.
//
// Why in the shard: copies are equal in everything dispatch looks at (Call-ID, media address,
// correlation id), so they always meet in the same shard, live and offline alike; a filter per
// shard needs no shared state and sees copies in the order the shard does.
//
// Only datagrams sent by HEP capture agents are compared, unless `same_source` is set: the raw
// packets of a capture (`hepd pcap` on a plain pcap) come from one observer.
// A copy must come from another source than the first (capture id, or configured agent) unless
// `same_source` is set: one observer seeing the same bytes twice within a few milliseconds is
// what a duplicating network looks like, and RTP duplicates are a quality figure the stream table
// measures (RFC 3550 duplicates, which make RTCP's cumulative loss go negative). `same_source`
// is for one agent capturing one packet on two interfaces, and for raw captures merged from two
// hosts (`hepd pcap` gives every raw packet capture id 0). A genuine SIP retransmission over UDP
// comes T1 (500 ms) or more after the original, so windows well below that never swallow one,
// whatever the source; RTP and RTCP packets never repeat their bytes (sequence numbers, time
// stamps). The window is measured from the first copy (a third copy 60 ms after the first is not
// a duplicate with a 50 ms window) and in both directions of time, since copies from different
// senders reach a shard in either order. Senders' clocks must agree within the window (NTP).
//
// Bounded memory, nothing allocated per packet: a table of `capacity` entries in buckets of 4
// ways, each key with two candidate buckets (a new entry goes to the one with fewer live
// entries), emptied lazily: an entry outside the window of the packet at hand is free. When all
// 8 ways are still inside the window, the oldest of the fuller bucket is overwritten and counted
// (stats().evictions): copies of it may then pass. The table is allocated by the first datagram
// that is compared (a raw capture without same_source never pays for it).
//
// Two such tables, one for SIP and one for every other kind: "outside the window of the packet
// at hand" means "of no later packet" only when packets come in time order, and a shard that
// reads its input offline processes its own SIP at once but holds its media back until its
// peers' SIP has gone by (shard/pipeline.cpp). Each kind keeps the input's order, the two
// together do not: in one table a SIP message could free the entry of a held RTP packet whose
// copy is still to come, and the copy would pass or not depending on how far the peers had read.
//
// A key is a 128-bit fingerprint of the payload, both addresses and ports, the transport and the
// kind: different packets pass unless all 128 bits collide. Keeping the key itself (64 bytes) in a
// separate array cost a cache miss per packet (measured: bench/README.md); the fingerprint lives
// in the bucket's own two cache lines, 32 bytes an entry.
//
// Not in the snapshot: a restart starts with an empty window (a copy straddling it counts twice).
#include "core/address.hpp"
#include "core/payload_class.hpp"
#include "core/stats.hpp"
#include "core/time.hpp"
#include "shard/datagram.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace hepd::shard {

struct DuplicateFilterConfig {
    std::int64_t window_us = 50'000;  // 0: no filter
    std::size_t capacity = 16'384;    // entries, rounded up to a power of two (at least 4)
    bool same_source = false;         // a repeat from the source of the first copy is one too
};

struct DuplicateKey {
    std::uint64_t hash = 0;                   // picks the first bucket
    std::uint64_t check = 0;                  // picks the second; with `hash`, the fingerprint
    PayloadClass kind = PayloadClass::other;  // also in the fingerprint; counts the duplicate
    friend bool operator==(const DuplicateKey&, const DuplicateKey&) = default;
};

DuplicateKey duplicate_key(const Datagram& d) noexcept;

// Who captured a copy: its HEP capture id and configured agent (0 and 0 for raw pcap packets).
constexpr std::uint64_t capture_source(const Datagram& d) noexcept {
    return (std::uint64_t{d.capture_id} << 16) | d.agent;
}

struct DuplicateStats {
    std::array<Counter, kPayloadClassCount> duplicates{};  // by PayloadClass
    Counter evictions;  // entries still inside the window overwritten for want of room

    void merge(const DuplicateStats& other) noexcept {
        for (std::size_t k = 0; k < duplicates.size(); ++k) duplicates[k].add(other.duplicates[k].value());
        evictions.add(other.evictions.value());
    }
};

class DuplicateFilter {
public:
    explicit DuplicateFilter(const DuplicateFilterConfig& config = {});

    bool enabled() const noexcept { return window_us_ > 0; }
    // Entries of each of the two tables.
    std::size_t capacity() const noexcept { return lane_buckets_ * kWays; }
    // Bytes of its table: none until the first packet, then all of it (fixed).
    std::size_t memory_bytes() const noexcept { return buckets_.size() * sizeof(Bucket); }

    // Whether the filter looks at `d` at all: not when disabled, nor at a raw capture's packet
    // without same_source (one observer sends no copies). Inline: offline, that is every packet.
    bool applies_to(const Datagram& d) const noexcept { return enabled() && (same_source_ || d.from_agent); }
    // True (and counted) when `d` copies a datagram taken within the window; otherwise
    // remembers it and returns false. Always false when the filter does not apply to `d`.
    bool is_duplicate(const Datagram& d) noexcept { return applies_to(d) && check(d); }
    // `d`'s key, its buckets prefetched for a later is_duplicate(key, ...); none when the filter
    // does not apply to `d`.
    std::optional<DuplicateKey> prepare(const Datagram& d) const noexcept {
        if (!applies_to(d)) return std::nullopt;
        return key_of(d);
    }
    // The same for a key already computed (tests give keys with colliding hashes).
    bool is_duplicate(const DuplicateKey& key, std::uint64_t source, Timestamp time) noexcept;

    const DuplicateStats& stats() const noexcept { return stats_; }

private:
    bool check(const Datagram& d) noexcept;
    DuplicateKey key_of(const Datagram& d) const noexcept;  // with its buckets prefetched

    static constexpr std::size_t kWays = 4;
    static constexpr std::int64_t kEmpty = INT64_MIN;
    // First line: what every lookup reads; second line: read on a fingerprint match, written on
    // insert. 32 bytes an entry.
    struct alignas(64) Bucket {
        std::array<std::uint64_t, kWays> hash{};
        std::array<std::int64_t, kWays> time{kEmpty, kEmpty, kEmpty, kEmpty};
        std::array<std::uint64_t, kWays> check{};
        std::array<std::uint64_t, kWays> source{};  // of the first copy
    };

    bool within_window(std::int64_t a, std::int64_t b) const noexcept {
        // Unsigned: the distance between any two int64 values fits, whatever a sender claims.
        const auto distance = a > b ? static_cast<std::uint64_t>(a) - static_cast<std::uint64_t>(b)
                                    : static_cast<std::uint64_t>(b) - static_cast<std::uint64_t>(a);
        return a != kEmpty && distance <= static_cast<std::uint64_t>(window_us_);
    }

    // The first bucket of the table for `kind`'s entries.
    std::size_t lane_of(PayloadClass kind) const noexcept { return kind == PayloadClass::sip ? 0 : lane_buckets_; }

    std::int64_t window_us_;
    bool same_source_;
    std::size_t lane_buckets_ = 0;  // buckets of one table, a power of two
    std::vector<Bucket> buckets_;   // SIP's table, then the other kinds'; empty until first used
    DuplicateStats stats_;
};

}  // namespace hepd::shard
