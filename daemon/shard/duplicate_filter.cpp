#include "shard/duplicate_filter.hpp"

#include "core/bytes.hpp"
#include "core/hash.hpp"

#include <bit>

namespace hepd::shard {

namespace {

// A 128-bit fingerprint, for telling inputs apart (duplicate detection) rather than for tables.
// 16 bytes a multiply: the block's words, each xored with one half of the state, are the two
// factors, and the two halves of the product, each plus the other factor, the next state. Nothing
// is folded away; the added factors keep a block apart where the product alone would not (a zero
// factor, swapped factors), and the state in both factors chains every block to all before it.
// finish() mixes each half into the other, a bijection: distinct states, distinct fingerprints.
// Parameters (lengths, ports) go in a block of their own, first: xored into the starting state
// they would cancel against equal changes of the first data block.
class Fingerprint128 {
public:
    void add(std::uint64_t w0, std::uint64_t w1) noexcept { lane_.add(w0, w1); }

    // Every byte read once or twice in a pattern fixed by `size` alone (a tail is the last 16
    // bytes, overlapping; under 16, two overlapping words), so the caller must add the size.
    // Pairs of blocks go to two chains, joined as one more block at the end: each block waits
    // for the multiply before it, and two chains halve that wait on a SIP-sized payload.
    // Inline, or the state goes through memory around the call.
    [[gnu::always_inline]] void add_bytes(const std::uint8_t* p, std::size_t size) noexcept {
        if (size >= 16) {
            const std::uint8_t* const last = p + size - 16;
            Lane odd{0x243f6a8885a308d3ULL, 0x13198a2e03707344ULL};
            for (; p + 16 < last; p += 32) {
                lane_.add(load_le64(p), load_le64(p + 8));
                odd.add(load_le64(p + 16), load_le64(p + 24));
            }
            if (p < last) lane_.add(load_le64(p), load_le64(p + 8));
            lane_.add(load_le64(last), load_le64(last + 8));
            lane_.add(odd.a, odd.b);
        } else if (size >= 8) {
            add(load_le64(p), load_le64(p + size - 8));
        } else if (size >= 4) {
            add(load_le32(p), load_le32(p + size - 4));
        } else if (size > 0) {
            add(p[0] | (std::uint64_t{p[size / 2]} << 8) | (std::uint64_t{p[size - 1]} << 16), 0);
        }
    }

    struct Halves {
        std::uint64_t first;
        std::uint64_t second;
    };
    Halves finish() const noexcept {
        const std::uint64_t second = lane_.b + mix64(lane_.a);
        return {lane_.a + mix64(second), second};
    }

private:
    struct Lane {
        std::uint64_t a;
        std::uint64_t b;
        void add(std::uint64_t w0, std::uint64_t w1) noexcept {
            const std::uint64_t x = w0 ^ a;
            const std::uint64_t y = w1 ^ b;
            const WideProduct m = multiply_wide(x, y);
            a = m.low + y;
            b = m.high + x;
        }
    };
    Lane lane_{0x9e3779b97f4a7c15ULL, 0xd6e8feb86659fd93ULL};
};

std::uint64_t address_word(const IpAddress& a, std::size_t half) noexcept {
    return load_le64(a.bytes().data() + 8 * half);
}

}  // namespace

// Ports, families, transport and kind in one word, beside the payload's length (the fingerprint
// reads a tail overlapping: the length tells the bytes apart); then both addresses, the payload.
DuplicateKey duplicate_key(const Datagram& d) noexcept {
    const std::uint64_t meta = std::uint64_t{d.src.port} | (std::uint64_t{d.dst.port} << 16) |
                               (std::uint64_t{static_cast<std::uint8_t>(d.src.address.family())} << 32) |
                               (std::uint64_t{static_cast<std::uint8_t>(d.dst.address.family())} << 40) |
                               (std::uint64_t{static_cast<std::uint8_t>(d.transport)} << 48) |
                               (std::uint64_t{static_cast<std::uint8_t>(d.kind)} << 56);
    Fingerprint128 f;
    f.add(meta, d.payload.size());
    f.add(address_word(d.src.address, 0), address_word(d.src.address, 1));
    f.add(address_word(d.dst.address, 0), address_word(d.dst.address, 1));
    f.add_bytes(d.payload.data(), d.payload.size());
    const auto halves = f.finish();
    DuplicateKey k;
    k.hash = halves.first;
    k.check = halves.second;
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
