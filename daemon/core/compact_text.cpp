#include "core/compact_text.hpp"

#include <algorithm>
#include <new>

namespace hepd {

CompactText::Block* CompactText::make(std::string_view text) {
    text = text.substr(0, kMaxSize);
    if (text.empty()) return nullptr;
    void* room = ::operator new(sizeof(Block) + text.size());
    auto* block = new (room) Block;
    block->size = static_cast<std::uint8_t>(text.size());
    std::copy(text.begin(), text.end(), block->text());
    return block;
}

void CompactText::destroy(Block* block) noexcept {
    block->~Block();
    ::operator delete(block);
}

}  // namespace hepd
