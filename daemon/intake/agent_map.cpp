#include "intake/agent_map.hpp"

#include <algorithm>

namespace hepd::intake {

AgentRule AgentRule::by_capture_id(std::string name, std::uint32_t id) {
    AgentRule r;
    r.name = std::move(name);
    r.selector = Selector::capture_id;
    r.capture_id = id;
    return r;
}

AgentRule AgentRule::by_node_name(std::string name, std::string node) {
    AgentRule r;
    r.name = std::move(name);
    r.selector = Selector::node_name;
    r.node_name = std::move(node);
    return r;
}

AgentRule AgentRule::by_source(std::string name, Cidr network) {
    AgentRule r;
    r.name = std::move(name);
    r.selector = Selector::source;
    r.source = network;
    return r;
}

AgentMap::AgentMap(std::vector<AgentRule> rules, const std::vector<std::string>& earlier) : names_(earlier) {
    if (names_.size() > kMaxNames) names_.resize(kMaxNames);
    for (auto& rule : rules) {
        auto found = std::find(names_.begin(), names_.end(), rule.name);
        if (found == names_.end()) {
            if (names_.size() >= kMaxNames || rule.name == "other") {
                ++ignored_rules_;
                continue;
            }
            names_.push_back(rule.name);
            found = names_.end() - 1;
        }
        const auto index = static_cast<std::uint16_t>(found - names_.begin() + 1);
        switch (rule.selector) {
        case AgentRule::Selector::capture_id: by_id_.push_back({rule.capture_id, index}); break;
        case AgentRule::Selector::node_name: by_node_.push_back({std::move(rule.node_name), index}); break;
        case AgentRule::Selector::source: by_source_.push_back({rule.source, index}); break;
        }
    }
    std::stable_sort(by_source_.begin(), by_source_.end(), [](const BySource& a, const BySource& b) {
        return a.network.prefix_len() > b.network.prefix_len();
    });
}

std::uint16_t AgentMap::lookup_rules(std::optional<std::uint32_t> capture_id, ByteSpan node_name,
                                     const IpAddress& sender) const noexcept {
    if (capture_id) {
        for (const auto& r : by_id_)
            if (r.id == *capture_id) return r.index;
    }
    if (!node_name.empty()) {
        const auto text = as_text(node_name);
        for (const auto& r : by_node_)
            if (r.node == text) return r.index;
    }
    for (const auto& r : by_source_)
        if (r.network.contains(sender)) return r.index;
    return 0;
}

std::string_view AgentMap::name(std::size_t index) const noexcept {
    if (index == 0 || index > names_.size()) return "other";
    return names_[index - 1];
}

}  // namespace hepd::intake
