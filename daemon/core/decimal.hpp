#pragma once
// A whole decimal number from text (environment variables, /proc fields): every character a
// digit (a '-' first for a signed type), nothing before or after, in range; otherwise nothing.
#include <charconv>
#include <optional>
#include <string_view>

namespace hepd {

template <class T>
std::optional<T> parse_decimal(std::string_view text) noexcept {
    T value{};
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
    return value;
}

}  // namespace hepd
