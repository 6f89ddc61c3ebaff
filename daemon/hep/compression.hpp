#pragma once
// Inflating HEP chunk 0x10 payloads (OpenSIPS "compressed payload": zlib; some agents: gzip).
// The output size is capped by the caller's buffer: a stream that would inflate beyond it is an
// error, never a silently truncated result.
#include "core/bytes.hpp"
#include "core/result.hpp"
#include "hep/error.hpp"

#include <cstdint>
#include <memory>
#include <span>

namespace hepd::hep {

enum class Compression : std::uint8_t { none, zlib, gzip };

// Sniffs the stream header: gzip magic 1f 8b 08, or a zlib header (deflate, FCHECK valid).
Compression detect_compression(ByteSpan in) noexcept;

// One-shot: inflates `in` into `out` and returns the view of `out` that was written. Sets up and
// tears down a zlib stream per call; the ingest path should keep an Inflater instead.
Result<ByteSpan, DecodeError> decompress_payload(ByteSpan in, std::span<std::uint8_t> out) noexcept;

// Keeps one zlib inflate state alive between calls so that the common path does not allocate.
class Inflater {
public:
    Inflater() noexcept;
    ~Inflater();
    Inflater(const Inflater&) = delete;
    Inflater& operator=(const Inflater&) = delete;
    Inflater(Inflater&&) noexcept;
    Inflater& operator=(Inflater&&) noexcept;

    Result<ByteSpan, DecodeError> inflate(ByteSpan in, std::span<std::uint8_t> out) noexcept;

private:
    struct State;
    std::unique_ptr<State> state_;
};

}  // namespace hepd::hep
