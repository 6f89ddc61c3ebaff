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
    const std::size_t b = static_cast<std::size_t>(key.hash) & bucket_mask_;
    Bucket& bucket = buckets_[b];
    Entry* ways = &entries_[b * kWays];
    std::size_t victim = 0;
    for (std::size_t w = 0; w < kWays; ++w) {
        const bool live = within_window(bucket.time[w], time.us);
        if (live && bucket.hash[w] == key.hash && ways[w].key == key) {
            // The first copy's entry stays: later copies are measured from it.
            if (!same_source_ && ways[w].source == source) return false;
            stats_.duplicates[static_cast<std::size_t>(key.kind)].add();
            return true;
        }
        // Prefer a way outside the window (free), else the oldest.
        const bool victim_live = within_window(bucket.time[victim], time.us);
        if ((victim_live && !live) || (victim_live == live && bucket.time[w] < bucket.time[victim])) victim = w;
    }
    if (within_window(bucket.time[victim], time.us)) stats_.evictions.add();
    bucket.hash[victim] = key.hash;
    bucket.time[victim] = time.us;
    ways[victim] = Entry{key, source};
    return false;
}

}  // namespace hepd::shard
