#pragma once
// Helpers for hand-built packets in the rtp tests.
#include "core/bytes.hpp"

#include <cstdint>
#include <string_view>
#include <vector>

namespace hepd::rtp::test {

using Bytes = std::vector<std::uint8_t>;

inline void append(Bytes& out, std::string_view text) { out.insert(out.end(), text.begin(), text.end()); }
inline void append(Bytes& out, const Bytes& more) { out.insert(out.end(), more.begin(), more.end()); }

inline Bytes concat(const Bytes& a, const Bytes& b) {
    Bytes out = a;
    append(out, b);
    return out;
}

inline ByteSpan span_of(const Bytes& bytes) { return {bytes.data(), bytes.size()}; }

// The first `length` octets in an exact-size heap copy, so AddressSanitizer sees any over-read.
inline Bytes prefix(const Bytes& bytes, std::size_t length) {
    return Bytes(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(length));
}

inline Bytes bytes_of(ByteSpan span) { return Bytes(span.begin(), span.end()); }

}  // namespace hepd::rtp::test
