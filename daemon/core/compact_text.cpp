#include "core/compact_text.hpp"

#include <algorithm>
#include <new>

namespace hepd {

CompactText::Block* CompactText::make(std::string_view text, std::string_view tail) {
    text = text.substr(0, kMaxSize);
    tail = tail.substr(0, kMaxSize);
    if (text.empty() && tail.empty()) return nullptr;
    void* room = ::operator new(sizeof(Block) + text.size() + tail.size());
    auto* block = new (room) Block;
    block->size = static_cast<std::uint8_t>(text.size());
    block->tail = static_cast<std::uint8_t>(tail.size());
    std::copy(tail.begin(), tail.end(), std::copy(text.begin(), text.end(), block->text()));
    return block;
}

void CompactText::destroy(Block* block) noexcept {
    block->~Block();
    ::operator delete(block);
}

}  // namespace hepd
