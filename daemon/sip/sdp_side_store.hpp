#pragma once
// The SDP sides of every dialog of a table, by the dialog's entry index. A dialog seen on one hop
// (most captures: one agent, or a proxy that mirrors one leg) fills two sides, one per direction;
// only a dialog seen on a second hop fills the other two. So two sides are kept beside every
// dialog (100 bytes) and the other two, for the dialogs that have them, in a pool: 192 bytes a
// dialog were kept for all four before.
#include "core/reserved_memory.hpp"
#include "sip/dialog_media.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace hepd::sip {

class SdpSideStore {
public:
    // Room for `max_dialogs` entries at once (they never move); untouched room costs nothing.
    explicit SdpSideStore(std::size_t max_dialogs) { reserve_room(slots_, max_dialogs); }

    SdpSides get(std::uint32_t at) const noexcept {
        SdpSides out{};
        if (at >= slots_.size()) return out;
        const Slot& s = slots_[at];
        out[0] = s.first[0];
        out[1] = s.first[1];
        if (s.more != kNone) {
            out[2] = more_[s.more][0];
            out[3] = more_[s.more][1];
        }
        return out;
    }

    void set(std::uint32_t at, const SdpSides& sides) {
        Slot& s = slot_at(at);
        s.first = {sides[0], sides[1]};
        const Pair rest{sides[2], sides[3]};
        if (rest == Pair{}) {
            release_more(s);
            return;
        }
        if (s.more == kNone) {
            if (free_.empty()) {
                s.more = static_cast<std::uint32_t>(more_.size());
                more_.emplace_back();
                free_.reserve(more_.capacity());  // release_more() then never allocates
            } else {
                s.more = free_.back();
                free_.pop_back();
            }
        }
        more_[s.more] = rest;
    }

    void clear(std::uint32_t at) noexcept {
        if (at >= slots_.size()) return;
        slots_[at].first = Pair{};
        release_more(slots_[at]);
    }

    std::size_t memory_bytes() const noexcept {
        return slots_.size() * sizeof(Slot) + more_.capacity() * sizeof(Pair) +
               free_.capacity() * sizeof(std::uint32_t);
    }

private:
    static_assert(kSdpSides == 4, "two sides beside the dialog, two in the pool");
    static constexpr std::uint32_t kNone = 0xffffffffU;
    using Pair = std::array<SdpSide, 2>;
    struct Slot {
        Pair first{};
        std::uint32_t more = kNone;  // index in more_ of the third and fourth sides
    };

    Slot& slot_at(std::uint32_t at) {
        // Within the reserved room one entry at a time: a resize by doubling would touch (zero)
        // up to twice the memory the live dialogs need.
        if (slots_.size() <= at)
            slots_.resize(at < slots_.capacity() ? at + 1 : std::max<std::size_t>(at + 1, slots_.size() * 2));
        return slots_[at];
    }

    void release_more(Slot& s) noexcept {
        if (s.more == kNone) return;
        more_[s.more] = Pair{};
        free_.push_back(s.more);  // within the room reserved in set()
        s.more = kNone;
    }

    std::vector<Slot, ReservingAllocator<Slot>> slots_;
    std::vector<Pair> more_;
    std::vector<std::uint32_t> free_;
};

}  // namespace hepd::sip
