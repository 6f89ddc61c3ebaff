#include "snapshot/file_format.hpp"

#include <zlib.h>

#include <algorithm>
#include <limits>

namespace hepd::snapshot {

std::uint32_t crc32_update(std::uint32_t crc, ByteSpan bytes) noexcept {
    // zlib takes uInt lengths: feed large spans in pieces.
    uLong c = crc;
    const std::uint8_t* p = bytes.data();
    std::size_t left = bytes.size();
    while (left > 0) {
        const std::size_t n = std::min<std::size_t>(left, std::numeric_limits<uInt>::max());
        c = ::crc32(c, p, static_cast<uInt>(n));
        p += n;
        left -= n;
    }
    return static_cast<std::uint32_t>(c);
}

std::array<std::uint8_t, kFrameHeaderSize> encode_frame_header(const FrameHeader& header) noexcept {
    std::array<std::uint8_t, kFrameHeaderSize> out{};
    std::copy(kMagic.begin(), kMagic.end(), out.begin());
    store_be32(out.data() + kVersionOffset, header.version);
    store_be32(out.data() + kFlagsOffset, header.flags);
    store_be32(out.data() + kLengthOffset, static_cast<std::uint32_t>(header.payload_length >> 32));
    store_be32(out.data() + kLengthOffset + 4, static_cast<std::uint32_t>(header.payload_length));
    store_be32(out.data() + kPayloadCrcOffset, header.payload_crc);
    store_be32(out.data() + kHeaderCrcOffset, crc32_update(0, ByteSpan(out.data(), kHeaderCrcOffset)));
    return out;
}

std::string frame_payload(std::string_view payload, std::uint32_t version, std::uint32_t flags) {
    const auto header = encode_frame_header({version, flags, payload.size(), crc32_update(0, as_bytes(payload))});
    std::string out(reinterpret_cast<const char*>(header.data()), header.size());
    out.append(payload);
    return out;
}

}  // namespace hepd::snapshot
