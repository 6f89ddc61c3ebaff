#pragma once
// HEP v1/v2/v3 decoding: pure, no allocation, no exceptions. The version is detected from the
// first bytes ("HEP3"/"EEP3", or a version byte of 1 or 2).
#include "core/bytes.hpp"
#include "core/result.hpp"
#include "hep/error.hpp"
#include "hep/message.hpp"

#include <optional>

namespace hepd::hep {

// Decodes exactly one message that must fill the whole datagram (UDP: one message per datagram;
// TCP: one frame cut by StreamFramer). Views in the result point into `datagram`.
//
// v3 rules: chunks back to back after the 6-byte header; a vendor chunk (vendor != 0) or an
// unknown type is skipped and never touches a generic field; when a generic chunk repeats, the
// last one wins (what the common receivers do). The payload of chunk 0x10 is left compressed.
Result<Message, DecodeError> decode(ByteSpan datagram) noexcept;

// Same, filling `out` in place (it is reset first); returns the error, or nullopt on success.
// For callers that reuse one Message per batch.
std::optional<DecodeError> decode_into(ByteSpan datagram, Message& out) noexcept;

}  // namespace hepd::hep
