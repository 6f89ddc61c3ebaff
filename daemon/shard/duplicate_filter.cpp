#include "shard/duplicate_filter.hpp"

#include "core/bytes.hpp"
#include "core/hash.hpp"

#include <bit>

namespace hepd::shard {

namespace {

struct PayloadHashes {
    std::uint64_t hash;
    std::uint64_t check;
};

// Two independent lanes over the same 8-byte words: the second multiply chain runs beside the
// first (the loop is bound by the multiply latency), so the check costs little over one hash.
PayloadHashes payload_hashes(ByteSpan payload) noexcept {
    const std::uint8_t* p = payload.data();
    std::size_t size = payload.size();
    std::uint64_t a = 0xcbf29ce484222325ULL ^ size;
    std::uint64_t b = 0x9e3779b97f4a7c15ULL + size;
    while (size >= 8) {
        const std::uint64_t w = load_le64(p);
        a = (a ^ w) * 0x100000001b3ULL;
        a ^= a >> 29;
        b = (b + w) * 0xff51afd7ed558ccdULL;
        b ^= b >> 32;
        p += 8;
        size -= 8;
    }
    std::uint64_t tail = 0;
    for (std::size_t i = 0; i < size; ++i) tail |= std::uint64_t{p[i]} << (8 * i);
    a = (a ^ tail) * 0x100000001b3ULL;
    b = (b + tail) * 0xff51afd7ed558ccdULL;
    return {mix64(a), mix64(b ^ 0xc4ceb9fe1a85ec53ULL)};
}

}  // namespace

DuplicateKey duplicate_key(const Datagram& d) noexcept {
    const auto h = payload_hashes(d.payload);
    DuplicateKey k;
    k.hash = h.hash;
    k.check = h.check;
    k.src = d.src;
    k.dst = d.dst;
    k.length = static_cast<std::uint32_t>(d.payload.size());
    k.transport = d.transport;
    k.kind = d.kind;
    return k;
}

DuplicateFilter::DuplicateFilter(const DuplicateFilterConfig& config)
    : window_us_(config.window_us), same_source_(config.same_source) {
    if (!enabled()) return;
    const std::size_t capacity = std::bit_ceil(config.capacity < kWays ? kWays : config.capacity);
    buckets_.resize(capacity / kWays);
    entries_.resize(capacity);
    bucket_mask_ = buckets_.size() - 1;
}

bool DuplicateFilter::is_duplicate(const Datagram& d) noexcept {
    if (!enabled()) return false;
    return is_duplicate(duplicate_key(d), capture_source(d), d.time);
}

bool DuplicateFilter::is_duplicate(const DuplicateKey& key, std::uint64_t source, Timestamp time) noexcept {
    if (!enabled()) return false;
    // Two candidate buckets (one per payload hash): a new entry goes to the one with fewer live
    // entries, which keeps evictions of live entries rare until the table is nearly full (with
    // one bucket of 4 ways they start at a tenth of it).
    const std::array<std::size_t, 2> candidates{static_cast<std::size_t>(key.hash) & bucket_mask_,
                                                static_cast<std::size_t>(key.check) & bucket_mask_};
    const std::size_t tries = candidates[0] == candidates[1] ? 1 : 2;
    std::size_t victim_bucket = candidates[0];
    std::size_t victim_way = 0;
    std::size_t victim_load = kWays + 1;  // live entries in the victim's bucket
    for (std::size_t c = 0; c < tries; ++c) {
        const std::size_t b = candidates[c];
        const Bucket& bucket = buckets_[b];
        const Entry* ways = &entries_[b * kWays];
        std::size_t load = 0;
        std::size_t free_way = kWays;
        std::size_t oldest_way = 0;
        for (std::size_t w = 0; w < kWays; ++w) {
            if (!within_window(bucket.time[w], time.us)) {
                if (free_way == kWays) free_way = w;
                continue;
            }
            if (bucket.hash[w] == key.hash && ways[w].key == key) {
                // The first copy's entry stays: later copies are measured from it.
                if (!same_source_ && ways[w].source == source) return false;
                stats_.duplicates[static_cast<std::size_t>(key.kind)].add();
                return true;
            }
            ++load;
            if (bucket.time[w] < bucket.time[oldest_way]) oldest_way = w;
        }
        const std::size_t way = free_way != kWays ? free_way : oldest_way;
        const bool older = load == victim_load && bucket.time[way] < buckets_[victim_bucket].time[victim_way];
        if (load < victim_load || older) {
            victim_bucket = b;
            victim_way = way;
            victim_load = load;
        }
    }
    Bucket& bucket = buckets_[victim_bucket];
    if (victim_load == kWays) stats_.evictions.add();  // every way of both buckets inside the window
    bucket.hash[victim_way] = key.hash;
    bucket.time[victim_way] = time.us;
    entries_[victim_bucket * kWays + victim_way] = Entry{key, source};
    return false;
}

}  // namespace hepd::shard
