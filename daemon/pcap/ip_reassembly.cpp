#include "pcap/ip_reassembly.hpp"

#include "core/hash.hpp"

#include <algorithm>
#include <cstring>

namespace hepd::pcap {

namespace {

std::uint64_t fragment_hash(const IpPacket& f) noexcept {
    std::uint8_t key[16 + 16 + 4 + 1];
    std::memcpy(key, f.src.bytes().data(), 16);
    std::memcpy(key + 16, f.dst.bytes().data(), 16);
    std::memcpy(key + 32, &f.fragment_id, 4);
    key[36] = f.protocol;
    return hash_bytes(key, sizeof key);
}

}  // namespace

std::string_view to_string(FragmentDrop reason) noexcept {
    switch (reason) {
    case FragmentDrop::timeout: return "timeout";
    case FragmentDrop::evicted: return "evicted";
    case FragmentDrop::too_large: return "too_large";
    case FragmentDrop::inconsistent: return "inconsistent";
    case FragmentDrop::too_many_pieces: return "too_many_pieces";
    case FragmentDrop::incomplete_at_end: return "incomplete_at_end";
    }
    return "unknown";
}

std::uint64_t ReassemblyStats::dropped_total() const noexcept {
    std::uint64_t n = 0;
    for (auto v : dropped) n += v;
    return n;
}

Reassembler::Reassembler(ReassemblyOptions options) : options_(options) {
    options_.max_datagrams = std::max<std::size_t>(options_.max_datagrams, 1);
    options_.max_datagram_bytes = std::clamp<std::size_t>(options_.max_datagram_bytes, 1, 65535);
    options_.max_pieces = std::max<std::size_t>(options_.max_pieces, 1);
    // Room for every slot, made as datagrams need them: a capture without fragments (most)
    // touches none of it.
    slots_.reserve(options_.max_datagrams);
}

void Reassembler::release(Slot& slot) noexcept {
    slot.used = false;
    slot.ranges.clear();
    slot.buffer.clear();
    --active_;
}

void Reassembler::drop(Slot& slot, FragmentDrop reason) noexcept {
    ++stats_.dropped[static_cast<std::size_t>(reason)];
    stats_.dropped_fragments += slot.fragments;
    release(slot);
}

void Reassembler::expire(Timestamp now) noexcept {
    if (now < next_deadline_) return;
    Timestamp next{INT64_MAX};
    for (Slot& s : slots_) {
        if (!s.used) continue;
        const Timestamp deadline{s.first.us + options_.timeout_us};
        if (deadline <= now) {
            drop(s, FragmentDrop::timeout);
        } else if (deadline < next) {
            next = deadline;
        }
    }
    next_deadline_ = next;
}

void Reassembler::finish() noexcept {
    for (Slot& s : slots_)
        if (s.used) drop(s, FragmentDrop::incomplete_at_end);
    next_deadline_ = Timestamp{INT64_MAX};
}

Reassembler::Slot* Reassembler::find_or_create(const IpPacket& f, std::uint64_t hash) noexcept {
    Slot* free_slot = nullptr;
    Slot* oldest = nullptr;
    for (Slot& s : slots_) {
        if (!s.used) {
            if (free_slot == nullptr) free_slot = &s;
            continue;
        }
        if (s.hash == hash && s.id == f.fragment_id && s.protocol == f.protocol && s.src == f.src && s.dst == f.dst)
            return &s;
        if (oldest == nullptr || s.first < oldest->first) oldest = &s;
    }
    // A new slot while there is room (within the capacity reserved: nothing is allocated); at
    // max_datagrams every slot is in use and `oldest` names the oldest datagram (the first of
    // equals), as if all the slots had been there from the start. (No slot in use and none free:
    // there is none yet, and max_datagrams is at least 1.)
    if (free_slot == nullptr && (slots_.size() < options_.max_datagrams || oldest == nullptr))
        free_slot = &slots_.emplace_back();
    if (free_slot == nullptr) {
        drop(*oldest, FragmentDrop::evicted);
        free_slot = oldest;
    }
    Slot& s = *free_slot;
    s.used = true;
    s.hash = hash;
    s.src = f.src;
    s.dst = f.dst;
    s.id = f.fragment_id;
    s.protocol = f.protocol;
    s.vlan = f.vlan;
    s.have_last = false;
    s.total = 0;
    s.fragments = 0;
    s.first = f.time;
    if (s.ranges.capacity() == 0) s.ranges.reserve(options_.max_pieces + 1);
    if (s.buffer.capacity() == 0) s.buffer.reserve(options_.max_datagram_bytes);
    ++active_;
    const Timestamp deadline{f.time.us + options_.timeout_us};
    if (deadline < next_deadline_) next_deadline_ = deadline;
    return &s;
}

bool Reassembler::add(const IpPacket& f, IpPacket& out) noexcept {
    ++stats_.fragments;
    expire(f.time);
    Slot& s = *find_or_create(f, fragment_hash(f));
    ++s.fragments;

    const std::size_t begin = f.fragment_offset;
    const std::size_t end = begin + f.payload.size();
    if (end > options_.max_datagram_bytes) {
        drop(s, FragmentDrop::too_large);
        return false;
    }
    const auto b = static_cast<std::uint32_t>(begin);
    const auto e = static_cast<std::uint32_t>(end);
    if (!f.more_fragments) {
        const bool beyond = !s.ranges.empty() && s.ranges.back().end > e;
        if ((s.have_last && s.total != e) || beyond) {
            drop(s, FragmentDrop::inconsistent);
            return false;
        }
        s.have_last = true;
        s.total = e;
    } else if (s.have_last && e > s.total) {
        drop(s, FragmentDrop::inconsistent);
        return false;
    }

    // Copy only into the gaps: bytes already held win, so a later overlapping fragment cannot
    // rewrite what an earlier one delivered.
    if (s.buffer.size() < end) s.buffer.resize(end);
    std::size_t copied = 0;
    std::uint32_t cursor = b;
    auto copy = [&](std::uint32_t from, std::uint32_t to) {
        if (to <= from) return;
        std::memcpy(s.buffer.data() + from, f.payload.data() + (from - b), to - from);
        copied += to - from;
    };
    for (const Range& r : s.ranges) {
        if (r.end <= cursor) continue;
        if (r.begin >= e) break;
        copy(cursor, std::min(r.begin, e));
        cursor = std::max(cursor, r.end);
        if (cursor >= e) break;
    }
    if (cursor < e) copy(cursor, e);
    if (copied == 0 && e > b)
        ++stats_.duplicates;
    else if (copied < end - begin)
        ++stats_.overlaps;

    // Merge [b, e) into the sorted range list.
    if (e > b) {
        auto it = std::lower_bound(s.ranges.begin(), s.ranges.end(), b,
                                   [](const Range& r, std::uint32_t v) { return r.end < v; });
        Range merged{b, e};
        auto last = it;
        while (last != s.ranges.end() && last->begin <= e) {
            merged.begin = std::min(merged.begin, last->begin);
            merged.end = std::max(merged.end, last->end);
            ++last;
        }
        if (it == last && s.ranges.size() >= options_.max_pieces) {
            drop(s, FragmentDrop::too_many_pieces);
            return false;
        }
        it = s.ranges.erase(it, last);
        s.ranges.insert(it, merged);  // capacity reserved: no allocation
    }

    if (!s.have_last || s.total == 0 || s.ranges.size() != 1 || s.ranges.front().begin != 0 ||
        s.ranges.front().end != s.total)
        return false;

    out = IpPacket{};
    out.time = f.time;
    out.src = s.src;
    out.dst = s.dst;
    out.protocol = s.protocol;
    out.vlan = s.vlan;
    out.fragment_id = s.id;
    out.payload = ByteSpan(s.buffer.data(), s.total);
    ++stats_.reassembled;
    // The bytes stay in the slot's buffer until the slot is reused, i.e. past this call.
    s.used = false;
    s.ranges.clear();
    --active_;
    return true;
}

}  // namespace hepd::pcap
