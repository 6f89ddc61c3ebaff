#pragma once
// What a table needs to know about a packet beside its bytes: when, between whom, from which
// configured capture agent.
#include "core/address.hpp"
#include "core/time.hpp"

#include <cstdint>

namespace hepd {

// Agent indices label metrics: 0 is `other`, 1..kMaxAgents-1 are configured names.
inline constexpr std::size_t kMaxAgents = 32;

struct PacketMeta {
    Timestamp time;
    Endpoint src;
    Endpoint dst;
    std::uint16_t agent = 0;
};

}  // namespace hepd
