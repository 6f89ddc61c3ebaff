#pragma once
// The one type every input produces (live HEP over UDP/TCP, or a pcap file): nothing downstream
// knows which one fed it.
#include "core/address.hpp"
#include "core/bytes.hpp"
#include "core/packet_meta.hpp"
#include "core/payload_class.hpp"
#include "core/time.hpp"

#include <cstdint>
#include <string_view>

namespace hepd::shard {

enum class Transport : std::uint8_t { udp, tcp, tls, sctp, other };

// What the tables read of it (time: the capture time, normalised HEP time or pcap record time;
// src, dst; agent: the index of the configured capture agent, 0 = other) is its PacketMeta, handed
// to them as it is.
struct Datagram : PacketMeta {
    Transport transport = Transport::udp;  // of the captured packet, not of the HEP carrier
    PayloadClass kind = PayloadClass::other;
    std::uint8_t hep_payload_type = 0;  // chunk 0x0b, 0 when not from HEP
    bool from_agent = false;            // sent by a HEP capture agent (not a raw captured packet)
    std::uint32_t capture_id = 0;
    std::string_view correlation_id;  // HEP chunk 0x11, empty when absent
    ByteSpan payload;
    std::uint64_t order = 0;  // position in the input, set by the pipeline
};

}  // namespace hepd::shard
