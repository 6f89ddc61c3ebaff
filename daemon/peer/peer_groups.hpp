#pragma once
// Peer groups: the far ends of calls as the operator names them (`peers:` in the configuration),
// by network and by capture agent, so that dialog and stream figures carry a caller_peer and a
// callee_peer label (answer ratio, PDD and MOS per carrier or trunk) from a closed set: at most
// kMaxPeerNames names plus "other".
//
// Names get ids that never change while the process runs (PeerDirectory), so a label keeps its
// series across a SIGHUP reload and a dialog set up before the reload keeps the groups it had.
#include "core/address.hpp"
#include "core/cidr.hpp"
#include "core/packet_meta.hpp"

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace hepd::peer {

inline constexpr std::size_t kMaxPeerNames = 64;
inline constexpr std::size_t kPeerIdCount = kMaxPeerNames + 1;  // id 0 is "other"
using PeerId = std::uint8_t;
inline constexpr PeerId kOtherPeer = 0;

// One `peers:` entry: a far end belongs to `name` when its address is in one of `networks`, or
// (no network of any group holding it) when the INVITE on its side was captured by one of
// `agents` (indices of intake::AgentMap).
struct PeerRule {
    std::string name;
    std::vector<Cidr> networks;
    std::vector<std::uint16_t> agents;
};

// Immutable lookup built from the rules of one configuration.
class PeerMap {
public:
    PeerMap() = default;  // every far end is "other"
    // ids[i] is the id of rules[i].name; rules whose id is kOtherPeer are skipped.
    PeerMap(const std::vector<PeerRule>& rules, std::span<const PeerId> ids);

    // The longest network prefix holding `far_end` wins; else the rule naming `agent`; else other.
    PeerId classify(const IpAddress& far_end, std::uint16_t agent) const noexcept;

private:
    struct ByNetwork {
        Cidr network;
        PeerId id = kOtherPeer;
    };
    std::vector<ByNetwork> by_network_;          // longest prefix first
    std::array<PeerId, kMaxAgents> by_agent_{};  // agent index -> id
};

// The ids of every name seen since start-up and the map in force. publish() runs at start-up and
// on SIGHUP (one thread at a time); shards read the map through a PeerClassifier and the exporter
// reads names, both from their own threads.
class PeerDirectory {
public:
    PeerDirectory();
    PeerDirectory(const PeerDirectory&) = delete;
    PeerDirectory& operator=(const PeerDirectory&) = delete;

    // Gives new names the next free ids and publishes their map. Returns the names left without
    // an id because kMaxPeerNames names were already handed out (they are "other" until a restart).
    std::vector<std::string> publish(const std::vector<PeerRule>& rules);

    // Changes with each publish().
    std::uint64_t epoch() const noexcept { return epoch_.load(std::memory_order_acquire); }
    // The map in force (takes a lock: once per epoch change and shard, never per packet).
    std::shared_ptr<const PeerMap> map() const;

    // Ids 0 .. name_count() - 1 have names; "other" is id 0.
    std::size_t name_count() const noexcept { return named_.load(std::memory_order_acquire); }
    std::string_view name(PeerId id) const noexcept;

private:
    mutable std::mutex mutex_;
    std::array<std::string, kPeerIdCount> names_;  // written before named_ is raised, never after
    std::atomic<std::size_t> named_{1};
    std::shared_ptr<const PeerMap> map_;
    std::atomic<std::uint64_t> epoch_{1};
};

// One shard's view of a directory: one atomic load per classification, a copy of the map only
// when the directory published a new one. Without a directory everything is "other".
class PeerClassifier {
public:
    explicit PeerClassifier(const PeerDirectory* directory = nullptr) noexcept : directory_(directory) {}
    PeerId classify(const IpAddress& far_end, std::uint16_t agent);

private:
    const PeerDirectory* directory_;
    std::uint64_t epoch_ = 0;
    std::shared_ptr<const PeerMap> map_;
};

// Figures per (caller group, callee group), allocated the first time a pair is used: most of the
// 65 x 65 pairs never occur, and a full set of histograms each would be megabytes per shard.
// One writer (a shard thread); readers on other threads see a pair once it is complete
// (release/acquire on its pointer). T needs a default constructor, a copy constructor and merge().
template <class T>
class PairTable {
public:
    static constexpr std::size_t kPairs = kPeerIdCount * kPeerIdCount;

    PairTable() : slots_(std::make_unique<std::atomic<T*>[]>(kPairs)) {}
    PairTable(const PairTable& o) : PairTable() { merge(o); }
    PairTable& operator=(const PairTable&) = delete;
    ~PairTable() {
        for (std::size_t i = 0; i < kPairs; ++i) delete slots_[i].load(std::memory_order_relaxed);
    }

    // The writer's access; allocates the pair's figures on first use.
    T& at(PeerId caller, PeerId callee) {
        std::atomic<T*>& slot = slots_[index(caller, callee)];
        T* p = slot.load(std::memory_order_relaxed);
        if (p == nullptr) {
            p = new T();
            slot.store(p, std::memory_order_release);
        }
        return *p;
    }
    // Null while the pair was never used.
    const T* find(PeerId caller, PeerId callee) const noexcept {
        return slots_[index(caller, callee)].load(std::memory_order_acquire);
    }
    // f(PeerId caller, PeerId callee, const T&) for every pair used, in id order.
    template <class F>
    void for_each(F&& f) const {
        for (std::size_t i = 0; i < kPairs; ++i)
            if (const T* p = slots_[i].load(std::memory_order_acquire))
                f(static_cast<PeerId>(i / kPeerIdCount), static_cast<PeerId>(i % kPeerIdCount), *p);
    }
    // Adds another table's figures pair by pair (merging shards).
    void merge(const PairTable& o) {
        o.for_each([&](PeerId caller, PeerId callee, const T& figures) { at(caller, callee).merge(figures); });
    }

private:
    static std::size_t index(PeerId caller, PeerId callee) noexcept {
        const std::size_t a = caller < kPeerIdCount ? caller : kOtherPeer;
        const std::size_t b = callee < kPeerIdCount ? callee : kOtherPeer;
        return a * kPeerIdCount + b;
    }
    std::unique_ptr<std::atomic<T*>[]> slots_;
};

}  // namespace hepd::peer
