#pragma once
// Sixteen bytes compared against one value at a time: SSE2 on x86-64, NEON on little-endian
// aarch64 (both baseline there, so no run-time dispatch), two 64-bit words elsewhere. The text
// parsers use it where a line is short enough that a call to memchr costs more than the search.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#if defined(__SSE2__)
#include <emmintrin.h>
#elif defined(__ARM_NEON) && defined(__aarch64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#include <arm_neon.h>
#endif

namespace hepd {

// Where the bytes equal to a value lie among sixteen, as 1 << kBitsPerByteLog2 bits a byte: the
// lowest set bit marks the first match. Bits above it may be wrong (the word arithmetic), so
// first() is all there is.
template <int kBitsPerByteLog2>
class ByteMatchesOf {
public:
    // low: bytes 0-7, or all sixteen where they fit in one word; high: bytes 8-15 otherwise.
    constexpr ByteMatchesOf(std::uint64_t low, std::uint64_t high) noexcept : low_(low), high_(high) {}

    constexpr bool any() const noexcept { return (low_ | high_) != 0; }
    // Offset of the first match (0-15); only when any().
    constexpr std::size_t first() const noexcept {
        if (low_ != 0) return static_cast<std::size_t>(std::countr_zero(low_) >> kBitsPerByteLog2);
        return 8 + static_cast<std::size_t>(std::countr_zero(high_) >> kBitsPerByteLog2);
    }

private:
    std::uint64_t low_;
    std::uint64_t high_;
};

// Two words, the high bit of each matching byte: any target. Exact for the lowest match, since
// a borrow runs only towards higher bytes. The 16 bytes at p must be readable.
inline ByteMatchesOf<3> match_bytes_by_words(const char* p, char value) noexcept {
    const auto word_matches = [value](const char* at) {
        std::uint64_t w;
        std::memcpy(&w, at, sizeof w);
        if constexpr (std::endian::native == std::endian::big) w = __builtin_bswap64(w);
        constexpr std::uint64_t ones = 0x0101010101010101ULL;
        const std::uint64_t x = w ^ (ones * static_cast<unsigned char>(value));
        return (x - ones) & ~x & (ones << 7);
    };
    return {word_matches(p), word_matches(p + 8)};
}

#if defined(__SSE2__)
using ByteMatches = ByteMatchesOf<0>;  // one bit a byte (movemask)
#elif defined(__ARM_NEON) && defined(__aarch64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
using ByteMatches = ByteMatchesOf<2>;  // four bits a byte (shift right and narrow)
#else
using ByteMatches = ByteMatchesOf<3>;
#endif

// The bytes among the 16 at p (which must be readable) that equal `value`.
inline ByteMatches match_bytes(const char* p, char value) noexcept {
#if defined(__SSE2__)
    const __m128i block = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const int mask = _mm_movemask_epi8(_mm_cmpeq_epi8(block, _mm_set1_epi8(value)));
    return {static_cast<std::uint32_t>(mask), 0};
#elif defined(__ARM_NEON) && defined(__aarch64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    const uint8x16_t equal =
        vceqq_u8(vld1q_u8(reinterpret_cast<const std::uint8_t*>(p)), vdupq_n_u8(static_cast<std::uint8_t>(value)));
    const uint8x8_t nibbles = vshrn_n_u16(vreinterpretq_u16_u8(equal), 4);
    return {vget_lane_u64(vreinterpret_u64_u8(nibbles), 0), 0};
#else
    return match_bytes_by_words(p, value);
#endif
}

// Index of the first `value` at or after `from` in `text`, or npos. For text of a few dozen
// bytes (SIP header lines and values, SDP lines): sixteen bytes a step, then a byte loop over
// the last few; a call to memchr costs more than such a search.
inline std::size_t find_byte(std::string_view text, std::size_t from, char value) noexcept {
    std::size_t i = from;
    for (; i + 16 <= text.size(); i += 16)
        if (const ByteMatches m = match_bytes(text.data() + i, value); m.any()) return i + m.first();
    for (; i < text.size(); ++i)
        if (text[i] == value) return i;
    return std::string_view::npos;
}

}  // namespace hepd
