#include "peer/peer_groups.hpp"

#include <algorithm>

namespace hepd::peer {

PeerMap::PeerMap(const std::vector<PeerRule>& rules, std::span<const PeerId> ids) {
    for (std::size_t i = 0; i < rules.size() && i < ids.size(); ++i) {
        if (ids[i] == kOtherPeer) continue;
        for (const Cidr& network : rules[i].networks) by_network_.push_back({network, ids[i]});
        for (const std::uint16_t agent : rules[i].agents)
            if (agent > 0 && agent < kMaxAgents && by_agent_[agent] == kOtherPeer) by_agent_[agent] = ids[i];
    }
    std::stable_sort(by_network_.begin(), by_network_.end(), [](const ByNetwork& a, const ByNetwork& b) {
        return a.network.prefix_len() > b.network.prefix_len();
    });
}

PeerId PeerMap::classify(const IpAddress& far_end, std::uint16_t agent) const noexcept {
    for (const auto& r : by_network_)
        if (r.network.contains(far_end)) return r.id;
    return agent < kMaxAgents ? by_agent_[agent] : kOtherPeer;
}

PeerDirectory::PeerDirectory() : map_(std::make_shared<const PeerMap>()) { names_[0] = "other"; }

std::vector<std::string> PeerDirectory::publish(const std::vector<PeerRule>& rules) {
    std::vector<PeerId> ids;
    std::vector<std::string> refused;
    ids.reserve(rules.size());
    std::size_t named = named_.load(std::memory_order_relaxed);
    for (const auto& rule : rules) {
        const auto known =
            std::find(names_.begin() + 1, names_.begin() + static_cast<std::ptrdiff_t>(named), rule.name);
        if (known != names_.begin() + static_cast<std::ptrdiff_t>(named)) {
            ids.push_back(static_cast<PeerId>(known - names_.begin()));
        } else if (named < kPeerIdCount && rule.name != "other") {
            names_[named] = rule.name;
            ids.push_back(static_cast<PeerId>(named));
            named_.store(++named, std::memory_order_release);
        } else {
            ids.push_back(kOtherPeer);
            refused.push_back(rule.name);
        }
    }
    auto next = std::make_shared<const PeerMap>(rules, ids);
    {
        const std::lock_guard lock(mutex_);
        map_ = std::move(next);
    }
    epoch_.fetch_add(1, std::memory_order_acq_rel);
    return refused;
}

std::shared_ptr<const PeerMap> PeerDirectory::map() const {
    const std::lock_guard lock(mutex_);
    return map_;
}

std::string_view PeerDirectory::name(PeerId id) const noexcept {
    return id < name_count() ? std::string_view(names_[id]) : std::string_view("other");
}

PeerId PeerClassifier::classify(const IpAddress& far_end, std::uint16_t agent) {
    if (directory_ == nullptr) return kOtherPeer;
    const std::uint64_t now = directory_->epoch();
    if (now != epoch_ || !map_) {
        map_ = directory_->map();
        epoch_ = now;
    }
    return map_->classify(far_end, agent);
}

}  // namespace hepd::peer
