#pragma once
// HEP encoding, for tests, the load generator and forwarding (allocation is fine here).
#include "hep/message.hpp"

#include <cstdint>
#include <vector>

namespace hepd::hep {

// Appends a HEPv3 message with one chunk per field present in `message` (payload last, as
// senders do; chunk 0x10 when message.compressed). Returns false, leaving `out` as it was, when
// the message would exceed 65535 bytes or a present address is empty.
bool encode_v3(const Message& message, std::vector<std::uint8_t>& out);

// Appends a HEPv1 (version 1) or HEPv2 (version 2) message: family from the source address,
// ports big-endian, v2 time header little-endian. The length byte is the header size without
// the v2 time header. False for another version, addresses of different or no family, or a
// capture id over 16 bits in v2.
bool encode_legacy(const Message& message, std::uint8_t version, std::vector<std::uint8_t>& out);

}  // namespace hepd::hep
