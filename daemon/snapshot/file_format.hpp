#pragma once
// The fixed frame around a snapshot's protobuf payload (layout in snapshot.hpp). The magic and
// the version come first and keep their place in every future version, so any reader can say
// "not a snapshot" or "a newer format" before it interprets anything else.
#include "core/bytes.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace hepd::snapshot {

inline constexpr std::string_view kMagic = "HEPDSNAP";
inline constexpr std::size_t kFrameHeaderSize = 32;
inline constexpr std::size_t kVersionOffset = 8;
inline constexpr std::size_t kFlagsOffset = 12;
inline constexpr std::size_t kLengthOffset = 16;
inline constexpr std::size_t kPayloadCrcOffset = 24;
inline constexpr std::size_t kHeaderCrcOffset = 28;

struct FrameHeader {
    std::uint32_t version = 0;
    std::uint32_t flags = 0;
    std::uint64_t payload_length = 0;
    std::uint32_t payload_crc = 0;
};

// zlib's CRC-32 (the one of gzip and PNG), continued from `crc` over `bytes`.
std::uint32_t crc32_update(std::uint32_t crc, ByteSpan bytes) noexcept;

// The 32 octets of a frame header, with its own CRC filled in.
std::array<std::uint8_t, kFrameHeaderSize> encode_frame_header(const FrameHeader& header) noexcept;

// A complete file around `payload`: correct length and checksums for any version and flags
// (tests use it to make files that are well framed but otherwise wrong).
std::string frame_payload(std::string_view payload, std::uint32_t version, std::uint32_t flags = 0);

}  // namespace hepd::snapshot
