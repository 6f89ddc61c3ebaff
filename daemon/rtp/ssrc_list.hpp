#pragma once
// A view of consecutive 32-bit big-endian identifiers (RTP CSRC list, RTCP BYE sources): the
// bytes stay in the packet and each entry is decoded on access, so parsing copies nothing.
#include "core/bytes.hpp"

#include <cstddef>
#include <cstdint>
#include <iterator>

namespace hepd::rtp {

class SsrcList {
public:
    class Iterator {
    public:
        using iterator_category = std::forward_iterator_tag;
        using value_type = std::uint32_t;
        using difference_type = std::ptrdiff_t;
        using pointer = void;
        using reference = std::uint32_t;

        Iterator() = default;
        explicit Iterator(const std::uint8_t* at) noexcept : at_(at) {}
        std::uint32_t operator*() const noexcept { return load_be32(at_); }
        Iterator& operator++() noexcept {
            at_ += 4;
            return *this;
        }
        Iterator operator++(int) noexcept {
            Iterator before = *this;
            at_ += 4;
            return before;
        }
        friend bool operator==(Iterator a, Iterator b) noexcept { return a.at_ == b.at_; }

    private:
        const std::uint8_t* at_ = nullptr;
    };

    SsrcList() = default;
    // `bytes` must hold a whole number of entries; the parsers guarantee it.
    explicit SsrcList(ByteSpan bytes) noexcept : bytes_(bytes) {}

    std::size_t size() const noexcept { return bytes_.size() / 4; }
    bool empty() const noexcept { return bytes_.size() < 4; }
    // Precondition: index < size().
    std::uint32_t operator[](std::size_t index) const noexcept { return load_be32(bytes_.data() + 4 * index); }
    Iterator begin() const noexcept { return Iterator(bytes_.data()); }
    Iterator end() const noexcept { return Iterator(bytes_.data() + 4 * size()); }
    ByteSpan bytes() const noexcept { return bytes_; }

private:
    ByteSpan bytes_;
};

}  // namespace hepd::rtp
