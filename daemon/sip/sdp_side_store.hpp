#pragma once
// The SDP sides of every dialog of a table, by the dialog's entry index. A dialog seen on one hop
// (most captures: one agent, or a proxy that mirrors one leg) fills two sides, one per direction,
// and most calls have one media line: so what is kept beside every dialog is two sides with one
// media address each, the addresses packed (IPv4), their hops as indexes into the dialog's
// Dialog::hops (28 bytes). A dialog with more (a second hop, a second media line, a side on a hop
// past the kMaxHops stored, an IPv6 address) keeps all four sides with two media lines each in a
// pool instead, and one with a media line past the second (audio, video and a second audio, or
// T.38 or BFCP beside them) or an RTCP address of its own (sip::rtcp_alias()) all four sides
// whole in a second pool: every address it binds is released when it ends, and the first pool's
// entries stay as small as before. 192 bytes a
// dialog were kept for all four at first, then 100 for two sides with both media addresses, then
// 60 with the hop ids themselves, then 48 with whole addresses.
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
        if (s.more != kNone) {
            if ((s.more & kWide) != 0) return wide_.at(s.more & ~kWide);
            SdpSides out{};
            const TwoLineSides& two = two_lines_.at(s.more);
            for (std::size_t i = 0; i < out.size(); ++i) {
                out[i].hop = two[i].hop;
                out[i].forward = two[i].forward;
                std::copy(two[i].media.begin(), two[i].media.end(), out[i].media.begin());
            }
            return out;
        }
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
        if (!fits_two_lines(sides)) {
            if (s.more == kNone || (s.more & kWide) == 0) {
                release_more(s);
                s.more = kWide | take(wide_, wide_free_);
            }
            wide_[s.more & ~kWide] = sides;
            return;
        }
        if (s.more == kNone || (s.more & kWide) != 0) {
            release_more(s);
            s.more = take(two_lines_, two_lines_free_);
        }
        TwoLineSides& two = two_lines_[s.more];
        for (std::size_t i = 0; i < two.size(); ++i)
            two[i] = TwoLineSide{sides[i].hop, sides[i].forward, {sides[i].media[0], sides[i].media[1]}};
    }

    void clear(std::uint32_t at) noexcept {
        if (at >= slots_.size()) return;
        slots_[at].first = {};
        release_more(slots_[at]);
    }

    std::size_t memory_bytes() const noexcept {
        return slots_.memory_bytes() + two_lines_.capacity() * sizeof(TwoLineSides) +
               two_lines_free_.capacity() * sizeof(std::uint32_t) + wide_.capacity() * sizeof(SdpSides) +
               wide_free_.capacity() * sizeof(std::uint32_t);
    }

private:
    static constexpr std::uint32_t kNone = 0xffffffffU;
    static constexpr std::uint32_t kWide = 0x80000000U;  // Slot::more names an entry of wide_
    static constexpr std::uint8_t kNoHop = 0;            // SdpSide::hop 0: no side
    // A side with its first media address only.
    struct CompactSide {
        PackedEndpoint media{};     // in place: an IPv4 address or none
        std::uint8_t hop = kNoHop;  // 1 + the index of the side's hop in the dialog's hops
        bool forward = false;
    };
    struct Slot {
        std::array<CompactSide, 2> first{};
        // When they do not fit here: the index in two_lines_ of all four sides, or kWide and
        // their index in wide_.
        std::uint32_t more = kNone;
    };
    static_assert(sizeof(Slot) == 28);
    // A side with its first two media lines (audio and video), whole.
    struct TwoLineSide {
        std::uint32_t hop = 0;
        bool forward = false;
        std::array<Endpoint, 2> media{};
    };
    using TwoLineSides = std::array<TwoLineSide, kSdpSides>;

    // CompactSide::hop of the hop id `hop`; kMaxHops + 1 when the dialog does not keep it.
    static std::uint8_t hop_number(std::uint32_t hop, const Hops& hops) noexcept {
        if (hop == 0) return kNoHop;
        return static_cast<std::uint8_t>(std::find(hops.begin(), hops.end(), hop) - hops.begin() + 1);
    }

    // Two sides of one media line each, on hops the dialog keeps, their addresses IPv4 (or none):
    // the third and fourth sides, every further media address and every RTCP one are empty.
    static bool fits_beside(const SdpSides& sides, const Hops& hops) noexcept {
        for (std::size_t i = 2; i < sides.size(); ++i)
            if (sides[i].hop != 0) return false;  // hop 0: an empty side
        for (std::size_t i = 0; i < 2; ++i) {
            if (hop_number(sides[i].hop, hops) > kMaxHops) return false;
            if (!EndpointPool::in_place(sides[i].media[0])) return false;
            for (std::size_t m = 1; m < kSdpMedia; ++m)
                if (sides[i].media[m].port != 0) return false;  // port 0: none
            if (!no_rtcp(sides[i])) return false;
        }
        return true;
    }

    static bool no_rtcp(const SdpSide& side) noexcept {
        return std::all_of(side.rtcp.begin(), side.rtcp.end(), [](const Endpoint& e) { return e.port == 0; });
    }

    // No media line past the second, no RTCP address of its own.
    static bool fits_two_lines(const SdpSides& sides) noexcept {
        return std::all_of(sides.begin(), sides.end(), [](const SdpSide& side) {
            return no_rtcp(side) &&
                   std::all_of(side.media.begin() + 2, side.media.end(), [](const Endpoint& e) { return e.port == 0; });
        });
    }

    // A free entry of `pool`, or a new one.
    template <class Pool>
    static std::uint32_t take(Pool& pool, std::vector<std::uint32_t>& free) {
        if (!free.empty()) {
            const std::uint32_t i = free.back();
            free.pop_back();
            return i;
        }
        pool.emplace_back();
        free.reserve(pool.capacity());  // release_more() then never allocates
        return static_cast<std::uint32_t>(pool.size() - 1);
    }

    void release_more(Slot& s) noexcept {
        if (s.more == kNone) return;
        if ((s.more & kWide) != 0) {
            wide_[s.more & ~kWide] = SdpSides{};
            wide_free_.push_back(s.more & ~kWide);  // within the room reserved in take()
        } else {
            two_lines_[s.more] = TwoLineSides{};
            two_lines_free_.push_back(s.more);
        }
        s.more = kNone;
    }

    EntryColumn<Slot> slots_;
    std::vector<TwoLineSides> two_lines_;
    std::vector<std::uint32_t> two_lines_free_;
    std::vector<SdpSides> wide_;
    std::vector<std::uint32_t> wide_free_;
};

}  // namespace hepd::sip
