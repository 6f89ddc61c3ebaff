#pragma once
// The deadlines of a table's entries, earliest first, so that running the timers costs the
// entries that are due and not a walk over the whole table (a table of 60,000 dialogs walked
// once a second took a tenth of a shard's CPU at 20,000 packets/s, every entry a cache miss).
//
// A binary min-heap of (deadline, entry index) in which each entry has at most one item that
// counts, its armed deadline: a lower bound of the entry's deadline. A deadline that moves later
// keeps the item (it is re-armed when it comes up: the table finds the entry not due yet and
// schedules it again); one that moves earlier pushes a new item, and the old one is dropped when
// it comes up. An entry erased from the table keeps its item until it comes up, and an entry
// inserted at the same index keeps it too if it is no later than its own deadline. Items that
// no longer count are bounded: past twice the armed ones (and a quarter of the indexes), the heap
// is rebuilt from the armed deadlines.
//
// A queued item is 12 bytes (the deadline as two 32-bit halves beside the index): a dialog
// table holds one or two a live dialog.
//
// Not thread-safe: one queue belongs to one table.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

namespace hepd {

class DeadlineQueue {
public:
    struct Item {
        std::int64_t deadline_us = 0;
        std::uint32_t at = 0;  // the table's entry index
    };

    // The entry at `at` is new or its deadline moved: it is queued unless an item no later than
    // `deadline_us` already counts for that index.
    void schedule(std::uint32_t at, std::int64_t deadline_us) {
        if (at >= armed_.size()) armed_.resize(std::max<std::size_t>(at + 1, armed_.size() * 2), kUnarmed);
        if (armed_[at] <= deadline_us) return;
        if (armed_[at] == kUnarmed) ++armed_count_;
        armed_[at] = deadline_us;
        heap_.push_back(Queued{deadline_us, at});
        std::push_heap(heap_.begin(), heap_.end(), later);
        // A rebuild walks every index: it waits for at least a quarter of them in pushes.
        if (heap_.size() > 2 * std::max(armed_count_, armed_.size() / 4) + 64) rebuild();
    }

    // The earliest item that counts if it is due (deadline <= now_us), taken out: its index is
    // unarmed until scheduled again. Ties go by entry index.
    std::optional<Item> pop_due(std::int64_t now_us) {
        while (!heap_.empty() && heap_.front().deadline_us() <= now_us) {
            std::pop_heap(heap_.begin(), heap_.end(), later);
            const Item item{heap_.back().deadline_us(), heap_.back().at};
            heap_.pop_back();
            if (armed_[item.at] != item.deadline_us) continue;  // superseded by an earlier one
            armed_[item.at] = kUnarmed;
            --armed_count_;
            return item;
        }
        return std::nullopt;
    }

    // A lower bound of every armed deadline; the largest value when nothing is queued.
    std::int64_t earliest() const noexcept {
        return heap_.empty() ? std::numeric_limits<std::int64_t>::max() : heap_.front().deadline_us();
    }

    std::size_t size() const noexcept { return heap_.size(); }
    std::size_t memory_bytes() const noexcept {
        return heap_.capacity() * sizeof(Queued) + armed_.capacity() * sizeof(std::int64_t);
    }

private:
    static constexpr std::int64_t kUnarmed = std::numeric_limits<std::int64_t>::max();

    // std::*_heap keep the largest first: "larger" here is the later item.
    // An Item in 4-byte words.
    struct Queued {
        Queued(std::int64_t deadline, std::uint32_t index) noexcept
            : low(static_cast<std::uint32_t>(deadline)), high(static_cast<std::uint32_t>(deadline >> 32)), at(index) {}
        std::int64_t deadline_us() const noexcept {
            return static_cast<std::int64_t>((std::uint64_t{high} << 32) | low);
        }
        std::uint32_t low;
        std::uint32_t high;
        std::uint32_t at;
    };
    static_assert(sizeof(Queued) == 12);

    static bool later(const Queued& a, const Queued& b) noexcept {
        const std::int64_t x = a.deadline_us();
        const std::int64_t y = b.deadline_us();
        return x != y ? x > y : a.at > b.at;
    }

    void rebuild() {
        heap_.clear();
        for (std::size_t at = 0; at < armed_.size(); ++at)
            if (armed_[at] != kUnarmed) heap_.push_back(Queued{armed_[at], static_cast<std::uint32_t>(at)});
        std::make_heap(heap_.begin(), heap_.end(), later);
    }

    std::vector<Queued> heap_;
    std::vector<std::int64_t> armed_;  // by entry index: the deadline of the item that counts
    std::size_t armed_count_ = 0;
};

}  // namespace hepd
