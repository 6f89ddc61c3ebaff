#pragma once
// Fast, portable, seedless hashing for shard dispatch and table keys. Dispatch must give the same
// shard on every host and every run (snapshots are re-routed with it), so no std::hash here.
#include "core/bytes.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace hepd {

// Final mixer of SplitMix64/Murmur3: full avalanche, so the low bits are usable for modulo.
constexpr std::uint64_t mix64(std::uint64_t x) noexcept {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

// FNV-1a over 8-byte words (little-endian loads, portable), then mixed.
inline std::uint64_t hash_bytes(const void* data, std::size_t size) noexcept {
    const auto* p = static_cast<const std::uint8_t*>(data);
    std::uint64_t h = 0xcbf29ce484222325ULL ^ size;
    while (size >= 8) {
        h = (h ^ load_le64(p)) * 0x100000001b3ULL;
        h ^= h >> 29;
        p += 8;
        size -= 8;
    }
    // The last 0-7 bytes as one little-endian word, from at most two loads that may overlap
    // (the overlapping bytes are equal, so or-ing them changes nothing): a byte loop cost more
    // than the words before it for the short texts hashed here (Call-IDs, tags).
    std::uint64_t tail = 0;
    if (size >= 4) {
        tail = std::uint64_t{load_le32(p)} | (std::uint64_t{load_le32(p + size - 4)} << (8 * (size - 4)));
    } else if (size > 0) {
        const std::size_t mid = size / 2;
        tail = std::uint64_t{p[0]} | (std::uint64_t{p[mid]} << (8 * mid)) |
               (std::uint64_t{p[size - 1]} << (8 * (size - 1)));
    }
    h = (h ^ tail) * 0x100000001b3ULL;
    return mix64(h);
}

inline std::uint64_t hash_text(std::string_view s) noexcept { return hash_bytes(s.data(), s.size()); }

// 64x64 -> 128-bit product as two words: one instruction on x86-64, two on aarch64; in 32-bit
// pieces where the compiler has no 128-bit integer (the same result everywhere).
struct WideProduct {
    std::uint64_t low;
    std::uint64_t high;
};
inline WideProduct multiply_wide(std::uint64_t a, std::uint64_t b) noexcept {
#if defined(__SIZEOF_INT128__)
    __extension__ using Uint128 = unsigned __int128;
    const Uint128 p = static_cast<Uint128>(a) * b;
    return {static_cast<std::uint64_t>(p), static_cast<std::uint64_t>(p >> 64)};
#else
    constexpr std::uint64_t half = 0xffffffffULL;
    const std::uint64_t ll = (a & half) * (b & half);
    const std::uint64_t lh = (a & half) * (b >> 32);
    const std::uint64_t hl = (a >> 32) * (b & half);
    const std::uint64_t hh = (a >> 32) * (b >> 32);
    const std::uint64_t mid = (ll >> 32) + (lh & half) + (hl & half);
    return {(mid << 32) | (ll & half), hh + (lh >> 32) + (hl >> 32) + (mid >> 32)};
#endif
}

}  // namespace hepd
