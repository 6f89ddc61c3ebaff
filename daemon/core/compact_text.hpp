#pragma once
// A short text that many records hold (a Call-ID: at most 255 octets) as one heap block holding
// its size and a reference count: 8 bytes in the record, where a std::string is 32. Copies share
// the block (the text never changes; assigning makes a new one), so the records of one call (its
// bindings) can hold one Call-ID. The count is atomic: snapshot images copy records on a shard's
// thread and drop them on the snapshot thread. Longer texts are clamped (the SIP side refuses
// them first); empty texts own nothing.
//
// A block may carry a tail after the text, outside the view (with_tail): a dialog key keeps its
// From-tag there, so that the key and the call's bindings, which hold the Call-ID alone, share
// one block.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>

namespace hepd {

class CompactText {
public:
    static constexpr std::size_t kMaxSize = 255;

    CompactText() = default;
    CompactText(std::string_view text) : block_(make(text, {})) {}  // NOLINT(google-explicit-constructor): a text
    // `text`, with `tail` kept after it in the block (each clamped to kMaxSize).
    static CompactText with_tail(std::string_view text, std::string_view tail) {
        CompactText t;
        t.block_ = make(text, tail);
        return t;
    }
    CompactText(const CompactText& other) noexcept : block_(other.block_) {
        if (block_ != nullptr) block_->refs.fetch_add(1, std::memory_order_relaxed);
    }
    CompactText(CompactText&& other) noexcept : block_(std::exchange(other.block_, nullptr)) {}
    CompactText& operator=(const CompactText& other) noexcept {
        CompactText(other).swap(*this);
        return *this;
    }
    CompactText& operator=(CompactText&& other) noexcept {
        CompactText(std::move(other)).swap(*this);
        return *this;
    }
    CompactText& operator=(std::string_view text) {
        CompactText(text).swap(*this);  // made before the old block goes: `text` may view it
        return *this;
    }
    ~CompactText() { release(); }

    std::string_view view() const noexcept {
        return block_ == nullptr ? std::string_view() : std::string_view(block_->text(), block_->size);
    }
    operator std::string_view() const noexcept { return view(); }  // NOLINT(google-explicit-constructor)
    bool empty() const noexcept { return size() == 0; }
    std::size_t size() const noexcept { return block_ == nullptr ? 0 : block_->size; }
    // What with_tail() kept after the text (empty otherwise).
    std::string_view tail() const noexcept {
        return block_ == nullptr ? std::string_view() : std::string_view(block_->text() + block_->size, block_->tail);
    }
    // Bytes of text in the block (what a holder accounts for, once per block it counts).
    std::size_t heap_bytes() const noexcept { return size(); }
    // Whether both hold the very same block.
    bool shares(const CompactText& other) const noexcept { return block_ != nullptr && block_ == other.block_; }

    void swap(CompactText& other) noexcept { std::swap(block_, other.block_); }

    friend bool operator==(const CompactText& a, const CompactText& b) noexcept {
        return a.block_ == b.block_ || a.view() == b.view();
    }
    friend bool operator==(const CompactText& a, std::string_view b) noexcept { return a.view() == b; }

private:
    struct Block {
        std::atomic<std::uint32_t> refs{1};
        std::uint8_t size = 0;
        std::uint8_t tail = 0;  // octets after the text
        char* text() noexcept { return reinterpret_cast<char*>(this + 1); }
        const char* text() const noexcept { return reinterpret_cast<const char*>(this + 1); }
    };

    // Out of line: a static analyzer that sees the allocation but cannot follow the count
    // reports every shared block as freed too early or leaked.
    static Block* make(std::string_view text, std::string_view tail);
    static void destroy(Block* block) noexcept;

    void release() noexcept {
        if (block_ != nullptr && block_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) destroy(block_);
        block_ = nullptr;
    }

    Block* block_ = nullptr;
};

}  // namespace hepd
