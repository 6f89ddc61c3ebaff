#pragma once
// Per-sender token buckets, keyed by the source address of the HEP packet (the only identity a
// sender has before decoding). Anyone can send from many addresses, so the table is capped: at
// the cap the least recently active sender's bucket is evicted (and counted) — that sender then
// starts again with a full burst. One table per receive thread (no sharing on the packet path);
// with SO_REUSEPORT a sender's packets reach one thread as long as its source port is fixed.
#include "core/address.hpp"
#include "core/lru_table.hpp"
#include "core/stats.hpp"
#include "core/time.hpp"
#include "ingest/token_bucket.hpp"

#include <cstddef>
#include <cstdint>

namespace hepd::ingest {

struct SourceLimiterStats {
    Gauge tracked_sources;  // buckets in the table
    StatCounter evictions;  // buckets evicted at the cap
};

class SourceLimiter {
public:
    static constexpr std::size_t kDefaultCapacity = 65536;

    explicit SourceLimiter(std::size_t capacity = kDefaultCapacity);

    // rate 0 turns the per-sender limit off (and frees the table). Existing buckets keep their
    // earned tokens up to the new burst.
    void reconfigure(std::uint64_t rate, std::uint64_t burst, Timestamp now);

    bool enabled() const noexcept { return rate_ != 0; }

    // Takes one token from `sender`'s bucket (creating it full when the sender is new).
    bool admit(const IpAddress& sender, Timestamp now);

    std::size_t capacity() const noexcept { return table_.capacity(); }
    const SourceLimiterStats& stats() const noexcept { return stats_; }

private:
    LruTable<IpAddress, TokenBucket, AddressHash> table_;
    std::uint64_t rate_ = 0;
    std::uint64_t burst_ = 0;
    SourceLimiterStats stats_;
};

}  // namespace hepd::ingest
