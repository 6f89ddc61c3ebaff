#pragma once
// The SDP sides of every dialog of a table, by the dialog's entry index. A dialog seen on one hop
// (most captures: one agent, or a proxy that mirrors one leg) fills two sides, one per direction,
// and most calls have one media line: so what is kept beside every dialog is two sides with one
// media address each, the addresses packed (IPv4), their hops as indexes into the dialog's
// Dialog::hops (28 bytes). A dialog with more (a second hop, a second media line, a side on a hop
// past the kMaxHops stored, an IPv6 address) keeps all four sides whole in a pool instead. 192
// bytes a dialog were kept for all four at first, then 100 for two sides with both media
// addresses, then 60 with the hop ids themselves, then 48 with whole addresses.
#include "core/packed_endpoint.hpp"
#include "core/reserved_memory.hpp"
#include "sip/dialog.hpp"
#include "sip/dialog_media.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace hepd::sip {

// `hops` is the Dialog::hops of the dialog at the index; it only grows while the dialog lives,
// so an index kept into it stays right.
class SdpSideStore {
public:
    using Hops = std::array<std::uint32_t, kMaxHops>;

    // Room for `max_dialogs` entries at once (they never move); untouched room costs nothing.
    explicit SdpSideStore(std::size_t max_dialogs) : slots_(max_dialogs) {}

    SdpSides get(std::uint32_t at, const Hops& hops) const noexcept {
        if (at >= slots_.size()) return SdpSides{};
        const Slot& s = slots_[at];
        if (s.more != kNone) return more_[s.more];
        SdpSides out{};
        for (std::size_t i = 0; i < s.first.size(); ++i) {
            out[i].hop = s.first[i].hop == kNoHop ? 0 : hops[s.first[i].hop - 1];
            out[i].forward = s.first[i].forward;
            out[i].media[0] = EndpointPool::unpack_in_place(s.first[i].media);
        }
        return out;
    }

    void set(std::uint32_t at, const SdpSides& sides, const Hops& hops) {
        Slot& s = slots_.grown_to(at);
        if (fits_beside(sides, hops)) {
            release_more(s);
            for (std::size_t i = 0; i < s.first.size(); ++i)
                s.first[i] = CompactSide{*EndpointPool::in_place(sides[i].media[0]), hop_number(sides[i].hop, hops),
                                         sides[i].forward};
            return;
        }
        s.first = {};
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
        more_[s.more] = sides;
    }

    void clear(std::uint32_t at) noexcept {
        if (at >= slots_.size()) return;
        slots_[at].first = {};
        release_more(slots_[at]);
    }

    std::size_t memory_bytes() const noexcept {
        return slots_.memory_bytes() + more_.capacity() * sizeof(SdpSides) + free_.capacity() * sizeof(std::uint32_t);
    }

private:
    static constexpr std::uint32_t kNone = 0xffffffffU;
    static constexpr std::uint8_t kNoHop = 0;  // SdpSide::hop 0: no side
    // A side with its first media address only.
    struct CompactSide {
        PackedEndpoint media{};     // in place: an IPv4 address or none
        std::uint8_t hop = kNoHop;  // 1 + the index of the side's hop in the dialog's hops
        bool forward = false;
    };
    struct Slot {
        std::array<CompactSide, 2> first{};
        std::uint32_t more = kNone;  // index in more_ of all four sides, when they do not fit here
    };
    static_assert(sizeof(Slot) == 28);

    // CompactSide::hop of the hop id `hop`; kMaxHops + 1 when the dialog does not keep it.
    static std::uint8_t hop_number(std::uint32_t hop, const Hops& hops) noexcept {
        if (hop == 0) return kNoHop;
        return static_cast<std::uint8_t>(std::find(hops.begin(), hops.end(), hop) - hops.begin() + 1);
    }

    // Two sides of one media line each, on hops the dialog keeps, their addresses IPv4 (or none):
    // the third and fourth sides and every second media address are empty.
    static bool fits_beside(const SdpSides& sides, const Hops& hops) noexcept {
        for (std::size_t i = 0; i < sides.size(); ++i) {
            if (i >= 2 && sides[i] != SdpSide{}) return false;
            if (hop_number(sides[i].hop, hops) > kMaxHops) return false;
            if (!EndpointPool::in_place(sides[i].media[0])) return false;
            for (std::size_t m = 1; m < kSdpMedia; ++m)
                if (sides[i].media[m] != Endpoint{}) return false;
        }
        return true;
    }

    void release_more(Slot& s) noexcept {
        if (s.more == kNone) return;
        more_[s.more] = SdpSides{};
        free_.push_back(s.more);  // within the room reserved in set()
        s.more = kNone;
    }

    EntryColumn<Slot> slots_;
    std::vector<SdpSides> more_;
    std::vector<std::uint32_t> free_;
};

}  // namespace hepd::sip
