#pragma once
// A capped hash table whose entries are kept in least-recently-active order, for the tables an
// attacker can grow (dialogs, streams, pending media). Entries live in one vector and are
// addressed by a stable 32-bit index; an open-addressing index maps hashes to them and a doubly
// linked list threaded through the entries gives the LRU order. At the cap, inserting evicts the
// least recently touched entry and hands it to the caller to account for.
//
// An index slot is 4 bytes: the entry's index (24 bits) and an 8-bit tag from the low byte of
// its hash; the hash's high half places it (its home slot). A probe reads the entry only when the
// tag matches (a stranger's tag matches one probe in 256), so a lookup costs one index line and,
// nearly always, the one entry it finds. The index costs 5 to 10 bytes a live entry (see
// grow_index_if_needed); 8-byte slots with a 32-bit tag cost twice that, 16-byte slots with the
// whole hash at a load of at most one half 32 to 64. A slot does not name its home, so erasing
// and growing rehash the keys of the slots they move: erases and doublings are per record, not
// per packet. An erase shifts the rest of its probe run back (Knuth's algorithm R for linear
// probing) instead of leaving a tombstone, so entries that come and go at a steady count (an
// offer's binding replaced by its answer's) do not fill the index with tombstones that force
// it to double. A table holds at most kMaxCapacity entries.
//
// Recency classes (`Classes`, one by default): the links may form several lists, one a class of
// entries the value tells (Classes::of(value), 0 to Classes::kCount - 1). An entry joins the list
// of its value's class when it is inserted or touched (so a touch after the value changed class
// moves it there), and at the cap insert() evicts the least recent entry of the lowest class that
// has one: a class that must survive a flood of another costs no byte an entry. Only linking reads
// the class; unlinking finds an entry's list by its heads and tails, so an entry whose value
// changed class untouched merely stays in its old list. Walks (oldest(), newer(), for_each())
// visit the classes in eviction order, each from least to most recent.
//
// A table that nothing evicts and nobody walks in order (kTracksRecency false) keeps no links:
// its entries are 8 bytes smaller, it never evicts (insert() at the cap refuses), and touch(),
// contains(), oldest(), newer(), for_each() and erase_if() are not there.
//
// Entries do not store their hash (8 bytes of every entry of every table): insert() and erase()
// compute it from the key with `KeyHash`, and a lookup must probe with the same hash (find()
// takes it from the caller, who may hold only a view of the key).
//
// Not thread-safe: one table belongs to one shard.
#include "core/reserved_memory.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

namespace hepd {

namespace detail {
struct RecencyLinks {
    std::uint32_t prev = 0xffffffffU;  // towards the least recently touched
    std::uint32_t next = 0xffffffffU;  // towards the most recently touched
};
struct NoRecencyLinks {};
}  // namespace detail

// One recency list: plain least-recently-used order.
struct OneRecencyClass {
    static constexpr std::size_t kCount = 1;
    template <class Value>
    static constexpr std::size_t of(const Value& /*value*/) noexcept {
        return 0;
    }
};

template <class Key, class Value, class KeyHash, bool kTracksRecency = true, class Classes = OneRecencyClass>
class LruTable {
    static_assert(Classes::kCount >= 1 && (kTracksRecency || Classes::kCount == 1));

public:
    static constexpr std::uint32_t kNone = 0xffffffffU;
    // Entry indexes fit the slot's 24 bits, and all ones is the empty slot.
    static constexpr std::size_t kMaxCapacity = (std::size_t{1} << 24) - 1;

    // The links first: what touch() and a lookup read share the key's cache line.
    struct Entry : std::conditional_t<kTracksRecency, detail::RecencyLinks, detail::NoRecencyLinks> {
        Key key{};
        Value value{};
    };

    explicit LruTable(std::size_t capacity) : capacity_(std::clamp<std::size_t>(capacity, 1, kMaxCapacity)) {
        std::size_t slots = 16;
        while (slots < capacity_ * 4 && slots < (std::size_t{1} << 31)) slots <<= 1;
        max_slots_ = slots;
        index_.assign(16, kEmpty);
        // Room for the cap at once: entries never move, and untouched room costs no memory.
        reserve_room(entries_, capacity_);
    }

    std::size_t size() const noexcept { return size_; }
    std::size_t capacity() const noexcept { return capacity_; }
    bool full() const noexcept { return size_ >= capacity_; }

    // Index of the entry with this key, or kNone. `eq(stored_key)` compares against the probe.
    template <class Eq>
    std::uint32_t find(std::uint64_t hash, Eq&& eq) const noexcept {
        return find_entry(hash, [&](const Entry& e) { return eq(e.key); });
    }
    // The same for a table whose identity is partly in the value: `eq(entry)`. Always inlined:
    // find() is on the packet path and must stay the loop it was.
    template <class Eq>
    [[gnu::always_inline]] std::uint32_t find_entry(std::uint64_t hash, Eq&& eq) const noexcept {
        const std::size_t mask = index_.size() - 1;
        const std::uint32_t t = tag(hash);
        for (std::size_t i = home(hash) & mask;; i = (i + 1) & mask) {
            const Slot s = index_[i];
            if (s == kEmpty) return kNone;
            if ((s & kTagMask) == t && eq(entries_[s & kEntryMask])) return s & kEntryMask;
        }
    }

    // Inserts a new entry (the caller has checked that the key is absent) and makes it the most
    // recent of its class. When the table is full, the least recent entry of the lowest class is
    // removed first and returned; a table that does not track recency refuses (kNone).
    std::pair<std::uint32_t, std::optional<Entry>> insert(Key key, Value value) {
        const std::uint64_t hash = KeyHash{}(key);
        return insert(std::move(key), std::move(value), hash);
    }
    // The same with the key's hash given: the caller probed with it (and a key that keeps its
    // home may have no hash of its own to compute).
    std::pair<std::uint32_t, std::optional<Entry>> insert(Key key, Value value, std::uint64_t hash) {
        std::optional<Entry> evicted;
        if constexpr (!kTracksRecency) {
            if (size_ >= capacity_) return {kNone, std::nullopt};
        } else if (size_ >= capacity_) {
            const std::uint32_t victim = oldest();
            unindex(victim);  // by its key, before the key is moved out
            evicted = std::move(entries_[victim]);
            release(victim);
        }
        std::uint32_t at;
        if (!free_.empty()) {
            at = free_.back();
            free_.pop_back();
        } else {
            // Grow by doubling, but never past the cap: a full table holds exactly `capacity`.
            if (entries_.size() == entries_.capacity())
                entries_.reserve(std::min(capacity_, std::max<std::size_t>(16, entries_.capacity() * 2)));
            at = static_cast<std::uint32_t>(entries_.size());
            entries_.emplace_back();
            populated_.cover(entries_.data(), entries_.size() * sizeof(Entry), entries_.capacity() * sizeof(Entry));
        }
        Entry& e = entries_[at];
        e.key = std::move(key);
        e.value = std::move(value);
        link_back(at);
        ++size_;
        grow_index_if_needed();
        place(hash, at);
        return {at, std::move(evicted)};
    }

    // Makes the entry the most recent of its value's class (moving it there if that changed).
    void touch(std::uint32_t at) noexcept requires kTracksRecency {
        if (tail_[Classes::of(entries_[at].value)] == at) return;
        unlink(at);
        link_back(at);
    }

    void erase(std::uint32_t at) {
        unindex(at);
        release(at);
    }

    // Whether `at` holds a live entry (an index kept elsewhere may name an erased one): a live
    // entry has an older neighbour or is the oldest of its class.
    bool contains(std::uint32_t at) const noexcept requires kTracksRecency {
        return at < entries_.size() &&
               (entries_[at].prev != kNone || std::find(head_.begin(), head_.end(), at) != head_.end());
    }

    Entry& entry(std::uint32_t at) noexcept { return entries_[at]; }
    const Entry& entry(std::uint32_t at) const noexcept { return entries_[at]; }
    Value& operator[](std::uint32_t at) noexcept { return entries_[at].value; }

    // The entry insert() would evict next (kNone when empty), and the one after `at` in that order.
    std::uint32_t oldest() const noexcept requires kTracksRecency { return first_head(0); }
    std::uint32_t newer(std::uint32_t at) const noexcept requires kTracksRecency {
        const std::uint32_t next = entries_[at].next;
        if constexpr (kClasses == 1) {
            return next;
        } else {
            return next != kNone ? next : first_head(list_ended_by(at) + 1);
        }
    }

    // Visits live entries in eviction order (least to most recent); `f(index, entry)` may not
    // modify the table.
    template <class F>
    void for_each(F&& f) const requires kTracksRecency {
        for (std::uint32_t at = oldest(); at != kNone; at = newer(at)) f(at, entries_[at]);
    }

    // Removes every entry for which `pred(entry)` is true, calling `on_remove(entry)` first.
    template <class Pred, class OnRemove>
    std::size_t erase_if(Pred&& pred, OnRemove&& on_remove) requires kTracksRecency {
        std::size_t n = 0;
        for (std::uint32_t at = oldest(); at != kNone;) {
            const std::uint32_t next = newer(at);
            if (pred(entries_[at])) {
                on_remove(entries_[at]);
                erase(at);
                ++n;
            }
            at = next;
        }
        return n;
    }

    // Times the index grew (doubled).
    std::uint64_t index_rebuilds() const noexcept { return rebuilds_; }
    std::size_t index_slots() const noexcept { return index_.size(); }

    // Bytes held by the table's own structures (not by heap memory that keys or values own):
    // of the entries' room, what the entries ever created have touched (touched_bytes).
    std::size_t memory_bytes() const noexcept {
        return touched_bytes(entries_.size() * sizeof(Entry), entries_.capacity() * sizeof(Entry)) +
               index_.capacity() * sizeof(Slot) + free_.capacity() * sizeof(std::uint32_t);
    }

private:
    static constexpr std::size_t kClasses = Classes::kCount;
    using Slot = std::uint32_t;  // tag << 24 | entry index
    static constexpr Slot kEmpty = 0xffffffffU;
    static constexpr Slot kEntryMask = 0x00ffffffU;
    static constexpr Slot kTagMask = 0xff000000U;
    static constexpr std::uint32_t tag(std::uint64_t hash) noexcept {
        return static_cast<std::uint32_t>(hash << 24) & kTagMask;
    }
    static constexpr std::size_t home(std::uint64_t hash) noexcept { return static_cast<std::size_t>(hash >> 32); }
    // The home of a stored key: KeyHash::home(key) where the key keeps it (one whose hash reads
    // heap text), else from its hash.
    static std::size_t home_of(const Key& key) noexcept {
        if constexpr (requires { KeyHash::home(key); }) {
            return KeyHash::home(key);
        } else {
            return home(KeyHash{}(key));
        }
    }
    std::size_t home_at(Slot s) const noexcept { return home_of(entries_[s & kEntryMask].key); }

    void place(std::uint64_t hash, std::uint32_t at) noexcept { place_slot(home(hash), tag(hash) | at); }
    void place_slot(std::size_t home_slot, Slot slot) noexcept {
        const std::size_t mask = index_.size() - 1;
        for (std::size_t i = home_slot & mask;; i = (i + 1) & mask) {
            if (index_[i] == kEmpty) {
                index_[i] = slot;
                return;
            }
        }
    }

    // Keeps the load under 4/5 by doubling the index (up to four times the capacity). The tags
    // keep probes cheap at that load: linear probing then reads about 3 slots to find an entry
    // and about 13 (one or two cache lines) to miss. A growing table so holds its entries at a load of
    // 2/5 to 4/5.
    void grow_index_if_needed() {
        if (size_ * 5 < index_.size() * 4 || index_.size() >= max_slots_) return;
        ++rebuilds_;
        // A fresh block of the heap: from 64 KiB on, its page tables are filled in one call rather
        // than a fault a page.
        constexpr std::size_t kWorthFilling = std::size_t{64} << 10;
        const std::size_t slots = index_.size() * 2;
        std::vector<Slot> old;
        old.reserve(slots);
        if (slots * sizeof(Slot) >= kWorthFilling) populate(old.data(), slots * sizeof(Slot));
        old.assign(slots, kEmpty);
        index_.swap(old);
        for (const Slot s : old)
            if (s != kEmpty) place_slot(home_at(s), s);
    }

    // Frees the index slot of the entry at `at`, and moves back every later slot of the same
    // probe run that may fill it (whose home is not between the freed slot and itself).
    void unindex(std::uint32_t at) noexcept {
        const std::size_t mask = index_.size() - 1;
        std::size_t hole = home_of(entries_[at].key) & mask;
        while ((index_[hole] & kEntryMask) != at) hole = (hole + 1) & mask;
        for (std::size_t i = (hole + 1) & mask; index_[i] != kEmpty; i = (i + 1) & mask) {
            const std::size_t home_of_i = home_at(index_[i]) & mask;
            if (((i - home_of_i) & mask) >= ((i - hole) & mask)) {
                index_[hole] = index_[i];
                hole = i;
            }
        }
        index_[hole] = kEmpty;
    }

    // Unlinks the unindexed entry at `at` and frees its room.
    void release(std::uint32_t at) {
        unlink(at);
        // Moved out first: assigning a fresh entry over a string keeps its heap buffer, and a
        // free slot must not hold on to the Call-ID of a record that has gone.
        Entry& e = entries_[at];
        [[maybe_unused]] const Entry gone = std::move(e);
        e = Entry{};
        free_.push_back(at);
        --size_;
    }

    // The head of the first list from class `from` on that has one.
    std::uint32_t first_head(std::size_t from) const noexcept {
        for (std::size_t c = from; c < kClasses; ++c)
            if (head_[c] != kNone) return head_[c];
        return kNone;
    }
    // The list whose oldest (newest) entry is `at`: an entry with no older (newer) neighbour.
    std::size_t list_headed_by(std::uint32_t at) const noexcept {
        std::size_t c = 0;
        if constexpr (kClasses > 1)
            while (c + 1 < kClasses && head_[c] != at) ++c;
        return c;
    }
    std::size_t list_ended_by(std::uint32_t at) const noexcept {
        std::size_t c = 0;
        if constexpr (kClasses > 1)
            while (c + 1 < kClasses && tail_[c] != at) ++c;
        return c;
    }

    void link_back(std::uint32_t at) noexcept {
        if constexpr (kTracksRecency) {
            Entry& e = entries_[at];
            const std::size_t c = Classes::of(e.value);
            e.prev = tail_[c];
            e.next = kNone;
            if (tail_[c] != kNone) entries_[tail_[c]].next = at;
            tail_[c] = at;
            if (head_[c] == kNone) head_[c] = at;
        }
    }

    void unlink(std::uint32_t at) noexcept {
        if constexpr (kTracksRecency) {
            Entry& e = entries_[at];
            if (e.prev != kNone)
                entries_[e.prev].next = e.next;
            else
                head_[list_headed_by(at)] = e.next;
            if (e.next != kNone)
                entries_[e.next].prev = e.prev;
            else
                tail_[list_ended_by(at)] = e.prev;
            e.prev = e.next = kNone;
        }
    }

    std::size_t capacity_;
    std::size_t max_slots_ = 16;
    std::uint64_t rebuilds_ = 0;
    std::vector<Entry, TableRoom<Entry>> entries_;
    PopulateAhead populated_;
    std::vector<Slot> index_;
    std::vector<std::uint32_t> free_;
    std::size_t size_ = 0;
    // Each class's least and most recent entries.
    std::array<std::uint32_t, kClasses> head_ = filled(kNone);
    std::array<std::uint32_t, kClasses> tail_ = filled(kNone);
    static constexpr std::array<std::uint32_t, kClasses> filled(std::uint32_t v) noexcept {
        std::array<std::uint32_t, kClasses> a{};
        a.fill(v);
        return a;
    }
};

}  // namespace hepd
