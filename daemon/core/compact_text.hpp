#pragma once
// A short text that many records hold (a Call-ID: at most 255 octets) as one heap block with
// its size beside the pointer: 16 bytes in the record, where a std::string is 32. Longer texts
// are clamped (the SIP side refuses them first). Copies are deep; empty texts own nothing.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <utility>

namespace hepd {

class CompactText {
public:
    static constexpr std::size_t kMaxSize = 255;

    CompactText() = default;
    CompactText(std::string_view text) { assign(text); }  // NOLINT(google-explicit-constructor): a text
    CompactText(const CompactText& other) { assign(other.view()); }
    CompactText(CompactText&&) noexcept = default;
    CompactText& operator=(const CompactText& other) {
        if (this != &other) assign(other.view());
        return *this;
    }
    CompactText& operator=(CompactText&&) noexcept = default;
    CompactText& operator=(std::string_view text) {
        assign(text);
        return *this;
    }
    ~CompactText() = default;

    std::string_view view() const noexcept { return {text_.get(), size_}; }
    operator std::string_view() const noexcept { return view(); }  // NOLINT(google-explicit-constructor)
    bool empty() const noexcept { return size_ == 0; }
    std::size_t size() const noexcept { return size_; }
    // Heap bytes owned (what was requested).
    std::size_t heap_bytes() const noexcept { return size_; }

    friend bool operator==(const CompactText& a, const CompactText& b) noexcept { return a.view() == b.view(); }
    friend bool operator==(const CompactText& a, std::string_view b) noexcept { return a.view() == b; }

private:
    void assign(std::string_view text) {
        text = text.substr(0, kMaxSize);
        if (text.empty()) {
            text_.reset();
        } else {
            // A new block even for the same size: `text` may be a view of the old one.
            auto block = std::make_unique_for_overwrite<char[]>(text.size());
            std::copy(text.begin(), text.end(), block.get());
            text_ = std::move(block);
        }
        size_ = static_cast<std::uint8_t>(text.size());
    }

    std::unique_ptr<char[]> text_;
    std::uint8_t size_ = 0;
};

}  // namespace hepd
