#pragma once
// Every way a HEP datagram can be rejected. Each value becomes one `reason` label of
// hepd_hep_decode_errors_total, so the set is closed and names are stable snake_case.
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace hepd::hep {

enum class DecodeError : std::uint8_t {
    truncated,               // shorter than the fixed header of its version
    not_hep,                 // neither HEP3/EEP3 nor a version 1/2 byte
    length_mismatch,         // v3 total length differs from the datagram length
    bad_chunk_length,        // chunk length < 6, or the chunk runs past the end of the message
    bad_chunk_width,         // fixed-width generic chunk with the wrong width
    bad_ip_family,           // v1/v2 family is neither 2 (IPv4) nor 10 (IPv6)
    missing_payload,         // SIP (payload type 1) without a payload, or an empty one
    unknown_compression,     // chunk 0x10 holds neither a zlib nor a gzip stream
    bad_compressed_payload,  // corrupt or truncated stream, or bytes after its end
    decompressed_too_large,  // inflating would exceed the caller's buffer (bomb guard)
    decompress_failed,       // zlib could not start (out of memory)
};

inline constexpr std::size_t decode_error_count = 11;

std::string_view to_string(DecodeError e) noexcept;

}  // namespace hepd::hep
