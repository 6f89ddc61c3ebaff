#pragma once
// What a payload is treated as: how the shards process it, which HEP payload types map to it
// (hep.payload_types in the configuration) and the `payload_type` metric label.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace hepd {

enum class PayloadClass : std::uint8_t { sip, rtp, rtcp, rtcp_json, qos, log, other };
inline constexpr std::size_t kPayloadClassCount = 7;

std::string_view to_string(PayloadClass c) noexcept;
// The names above, exactly; nullopt for anything else.
std::optional<PayloadClass> parse_payload_class(std::string_view text) noexcept;

}  // namespace hepd
