#include "hep/compression.hpp"

#include <zlib.h>

#include <limits>

namespace hepd::hep {

Compression detect_compression(ByteSpan in) noexcept {
    if (in.size() >= 3 && in[0] == 0x1f && in[1] == 0x8b && in[2] == 0x08) return Compression::gzip;
    // RFC 1950: CM = 8 (deflate), CINFO <= 7, and the 16-bit header is a multiple of 31.
    if (in.size() >= 2 && (in[0] & 0x0f) == 8 && (in[0] >> 4) <= 7 && ((in[0] << 8) | in[1]) % 31 == 0)
        return Compression::zlib;
    return Compression::none;
}

struct Inflater::State {
    z_stream stream{};
    int window_bits = 0;  // the mode the stream was initialised with, 0 = not yet
    ~State() {
        if (window_bits != 0) inflateEnd(&stream);
    }
};

Inflater::Inflater() noexcept = default;
Inflater::~Inflater() = default;
Inflater::Inflater(Inflater&&) noexcept = default;
Inflater& Inflater::operator=(Inflater&&) noexcept = default;

Result<ByteSpan, DecodeError> Inflater::inflate(ByteSpan in, std::span<std::uint8_t> out) noexcept {
    const Compression kind = detect_compression(in);
    if (kind == Compression::none) return fail(DecodeError::unknown_compression);
    // HEP payloads are at most 64 KiB; a larger input cannot come from a decoded message.
    if (in.size() > std::numeric_limits<uInt>::max()) return fail(DecodeError::bad_compressed_payload);
    if (out.size() > std::numeric_limits<uInt>::max()) out = out.first(std::numeric_limits<uInt>::max());
    const int window_bits = kind == Compression::gzip ? 16 + MAX_WBITS : MAX_WBITS;

    if (!state_) {
        state_.reset(new (std::nothrow) State);
        if (!state_) return fail(DecodeError::decompress_failed);
    }
    z_stream& z = state_->stream;
    if (state_->window_bits == 0) {
        z = z_stream{};
        if (inflateInit2(&z, window_bits) != Z_OK) return fail(DecodeError::decompress_failed);
        state_->window_bits = window_bits;
    } else if (inflateReset2(&z, window_bits) != Z_OK) {
        return fail(DecodeError::decompress_failed);
    } else {
        state_->window_bits = window_bits;
    }

    // zlib's API takes non-const input; it never writes through next_in.
    z.next_in = const_cast<Bytef*>(in.data());
    z.avail_in = static_cast<uInt>(in.size());
    z.next_out = out.data();
    z.avail_out = static_cast<uInt>(out.size());
    int rc = ::inflate(&z, Z_FINISH);
    std::size_t produced = out.size() - z.avail_out;

    if (rc != Z_STREAM_END && z.avail_out == 0) {
        // The buffer is full but the stream has not ended: one more byte of room tells a stream
        // that merely lacks its end marker from one that has more to say.
        std::uint8_t probe = 0;
        z.next_out = &probe;
        z.avail_out = 1;
        rc = ::inflate(&z, Z_FINISH);
        if (z.avail_out == 0) return fail(DecodeError::decompressed_too_large);
    }
    if (rc != Z_STREAM_END) return fail(DecodeError::bad_compressed_payload);
    // Bytes after the end of the stream (a second gzip member, garbage) would be silently lost.
    if (z.avail_in != 0) return fail(DecodeError::bad_compressed_payload);
    return ByteSpan(out.data(), produced);
}

Result<ByteSpan, DecodeError> decompress_payload(ByteSpan in, std::span<std::uint8_t> out) noexcept {
    Inflater inflater;
    return inflater.inflate(in, out);
}

}  // namespace hepd::hep
