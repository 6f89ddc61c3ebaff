#include "core/payload_class.hpp"

#include <array>

namespace hepd {

namespace {
constexpr std::array<std::string_view, kPayloadClassCount> kNames{"sip", "rtp", "rtcp", "rtcp_json",
                                                                  "qos", "log", "other"};
}  // namespace

std::string_view to_string(PayloadClass c) noexcept {
    const auto i = static_cast<std::size_t>(c);
    return i < kNames.size() ? kNames[i] : "other";
}

std::optional<PayloadClass> parse_payload_class(std::string_view text) noexcept {
    for (std::size_t i = 0; i < kNames.size(); ++i)
        if (kNames[i] == text) return static_cast<PayloadClass>(i);
    return std::nullopt;
}

}  // namespace hepd
