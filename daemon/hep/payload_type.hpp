#pragma once
// HEP chunk 0x0b payload types as senders use them (which is not always what the spec numbers),
// in one table that configuration can extend or override.
#include "core/payload_class.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace hepd::hep {

namespace payload_type {
inline constexpr std::uint8_t sip = 1;
inline constexpr std::uint8_t rtp = 4;
inline constexpr std::uint8_t rtcp_json = 5;
inline constexpr std::uint8_t iax = 0x10;  // Asterisk res_hep
inline constexpr std::uint8_t qos_report = 32;
inline constexpr std::uint8_t rtp_agent_stats = 34;
inline constexpr std::uint8_t rtcp_xr = 35;
inline constexpr std::uint8_t dns = 53;
inline constexpr std::uint8_t isup = 54;
inline constexpr std::uint8_t rtpengine_ng = 0x3d;
inline constexpr std::uint8_t qos_json = 99;
inline constexpr std::uint8_t log = 100;
}  // namespace payload_type

// A plain value (no heap): 256 entries of a short name and a class. Copy it into each shard.
class PayloadTypeTable {
public:
    static constexpr std::size_t max_name_length = 31;

    // The built-in table (HEP.md "Payload types"); every other code is unnamed and `other`.
    PayloadTypeTable() noexcept;

    // Adds or overrides a code. False (and no change) when the name is empty, longer than
    // max_name_length, or not [a-z0-9_] (names end up in logs and reports).
    bool set(std::uint8_t code, std::string_view name, PayloadClass cls) noexcept;

    // "unknown" for a code without a name.
    std::string_view name(std::uint8_t code) const noexcept;
    PayloadClass payload_class(std::uint8_t code) const noexcept { return entries_[code].cls; }
    bool known(std::uint8_t code) const noexcept { return entries_[code].length != 0; }

private:
    struct Entry {
        std::array<char, max_name_length> text{};
        std::uint8_t length = 0;
        PayloadClass cls = PayloadClass::other;
    };
    std::array<Entry, 256> entries_{};
};

}  // namespace hepd::hep
