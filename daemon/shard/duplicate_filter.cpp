#include "shard/duplicate_filter.hpp"

#include "core/bytes.hpp"
#include "core/hash.hpp"

#include <bit>

namespace hepd::shard {

namespace {

constexpr std::uint64_t kPrime1 = 0x9e3779b185ebca87ULL;
constexpr std::uint64_t kPrime2 = 0xc2b2ae3d27d4eb4fULL;
constexpr std::uint64_t kPrime3 = 0x165667b19e3779f9ULL;
constexpr std::uint64_t kPrime4 = 0x85ebca77c2b2ae63ULL;

// xxHash64's round: injective in `word` for a given lane, and one multiply on the lane's chain.
constexpr std::uint64_t lane_round(std::uint64_t lane, std::uint64_t word) noexcept {
    return std::rotl(lane + word * kPrime2, 31) * kPrime1;
}

std::uint64_t load_tail(const std::uint8_t* p, std::size_t n) noexcept {
    std::uint64_t w = 0;
    for (std::size_t i = 0; i < n; ++i) w |= std::uint64_t{p[i]} << (8 * i);
    return w;
}

std::uint64_t address_word(const IpAddress& a, std::size_t half) noexcept {
    return load_le64(a.bytes().data() + 8 * half);
}

}  // namespace

// Four independent lanes over 32-byte stripes (the payload of an RTP packet is a handful of
// stripes), then two different merges of the same 256-bit state: the 128-bit fingerprint.
DuplicateKey duplicate_key(const Datagram& d) noexcept {
    std::uint64_t a = lane_round(kPrime1, address_word(d.src.address, 0));
    std::uint64_t b = lane_round(kPrime2, address_word(d.src.address, 1));
    std::uint64_t c = lane_round(kPrime3, address_word(d.dst.address, 0));
    std::uint64_t e = lane_round(kPrime4, address_word(d.dst.address, 1));
    const std::uint64_t meta = std::uint64_t{d.src.port} | (std::uint64_t{d.dst.port} << 16) |
                               (std::uint64_t{static_cast<std::uint8_t>(d.src.address.family())} << 32) |
                               (std::uint64_t{static_cast<std::uint8_t>(d.dst.address.family())} << 40) |
                               (std::uint64_t{static_cast<std::uint8_t>(d.transport)} << 48) |
                               (std::uint64_t{static_cast<std::uint8_t>(d.kind)} << 56);
    a = lane_round(a, meta);

    const std::uint8_t* p = d.payload.data();
    std::size_t n = d.payload.size();
    while (n >= 32) {
        a = lane_round(a, load_le64(p));
        b = lane_round(b, load_le64(p + 8));
        c = lane_round(c, load_le64(p + 16));
        e = lane_round(e, load_le64(p + 24));
        p += 32;
        n -= 32;
    }
    // The rest, a word a lane; the length (in the merge) tells zero padding from zero bytes.
    std::uint64_t* lanes[4] = {&a, &b, &c, &e};
    for (std::size_t lane = 0; n > 0; ++lane) {
        const std::size_t take = n < 8 ? n : 8;
        *lanes[lane] = lane_round(*lanes[lane], take == 8 ? load_le64(p) : load_tail(p, take));
        p += take;
        n -= take;
    }

    const auto length = static_cast<std::uint64_t>(d.payload.size());
    DuplicateKey k;
    k.hash = mix64(std::rotl(a, 1) + std::rotl(b, 7) + std::rotl(c, 12) + std::rotl(e, 18) + length);
    k.check = mix64((a * kPrime3) ^ std::rotl(b * kPrime4, 29) ^ std::rotl(c * kPrime1, 43) ^
                    std::rotl(e * kPrime2, 11) ^ (length * kPrime3));
    k.kind = d.kind;
    return k;
}

DuplicateFilter::DuplicateFilter(const DuplicateFilterConfig& config)
    : window_us_(config.window_us), same_source_(config.same_source) {
    if (!enabled()) return;
    const std::size_t capacity = std::bit_ceil(config.capacity < kWays ? kWays : config.capacity);
    lane_buckets_ = capacity / kWays;
}

// Looks up at once: no prefetch (that is for prepare(), ahead of a batch).
bool DuplicateFilter::check(const Datagram& d) noexcept {
    return is_duplicate(duplicate_key(d), capture_source(d), d.time);
}

DuplicateKey DuplicateFilter::key_of(const Datagram& d) const noexcept {
    const DuplicateKey key = duplicate_key(d);
    if (!buckets_.empty()) {
        const Bucket* lane = buckets_.data() + lane_of(key.kind);
        __builtin_prefetch(lane + (static_cast<std::size_t>(key.hash) & (lane_buckets_ - 1)));
        __builtin_prefetch(lane + (static_cast<std::size_t>(key.check) & (lane_buckets_ - 1)));
    }
    return key;
}

bool DuplicateFilter::is_duplicate(const DuplicateKey& key, std::uint64_t source, Timestamp time) noexcept {
    if (!enabled()) return false;
    if (buckets_.empty()) buckets_.resize(2 * lane_buckets_);
    // Two candidate buckets: a new entry goes to the one with fewer live entries, which keeps
    // evictions of live entries rare until the table is half full (with one bucket of 4 ways
    // they start at a tenth of it).
    const std::size_t lane = lane_of(key.kind);
    const std::size_t mask = lane_buckets_ - 1;
    const std::array<std::size_t, 2> candidates{lane + (static_cast<std::size_t>(key.hash) & mask),
                                                lane + (static_cast<std::size_t>(key.check) & mask)};
    const std::size_t tries = candidates[0] == candidates[1] ? 1 : 2;
    Bucket* victim_bucket = &buckets_[candidates[0]];
    std::size_t victim_way = 0;
    std::size_t victim_load = kWays + 1;  // live entries in the victim's bucket
    for (std::size_t c = 0; c < tries; ++c) {
        Bucket& bucket = buckets_[candidates[c]];
        std::size_t load = 0;
        std::size_t free_way = kWays;
        std::size_t oldest_way = 0;
        for (std::size_t w = 0; w < kWays; ++w) {
            if (!within_window(bucket.time[w], time.us)) {
                if (free_way == kWays) free_way = w;
                continue;
            }
            if (bucket.hash[w] == key.hash && bucket.check[w] == key.check) {
                // The first copy's entry stays: later copies are measured from it.
                if (!same_source_ && bucket.source[w] == source) return false;
                stats_.duplicates[static_cast<std::size_t>(key.kind)].add();
                return true;
            }
            ++load;
            if (bucket.time[w] < bucket.time[oldest_way]) oldest_way = w;
        }
        const std::size_t way = free_way != kWays ? free_way : oldest_way;
        const bool older = load == victim_load && bucket.time[way] < victim_bucket->time[victim_way];
        if (load < victim_load || older) {
            victim_bucket = &bucket;
            victim_way = way;
            victim_load = load;
        }
    }
    if (victim_load == kWays) stats_.evictions.add();  // every way of both buckets inside the window
    victim_bucket->hash[victim_way] = key.hash;
    victim_bucket->time[victim_way] = time.us;
    victim_bucket->check[victim_way] = key.check;
    victim_bucket->source[victim_way] = source;
    return false;
}

}  // namespace hepd::shard
