#pragma once
// Capture agent naming for the `agent` metric label: capture id, node name or sender network →
// a small index (0 = "other"), set on every Datagram. The label set stays closed: at most
// kMaxAgents - 1 names; rules naming more are ignored and counted in ignored_rules().
#include "core/address.hpp"
#include "core/bytes.hpp"
#include "core/cidr.hpp"
#include "core/packet_meta.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hepd::intake {

struct AgentRule {
    enum class Selector : std::uint8_t { capture_id, node_name, source };

    std::string name;
    Selector selector = Selector::capture_id;
    std::uint32_t capture_id = 0;  // selector == capture_id: HEP chunk 0x0c (v2: the time header's)
    std::string node_name;         // selector == node_name: HEP chunk 0x13, compared byte for byte
    Cidr source;                   // selector == source: the address the HEP packet came from

    static AgentRule by_capture_id(std::string name, std::uint32_t id);
    static AgentRule by_node_name(std::string name, std::string node);
    static AgentRule by_source(std::string name, Cidr network);
};

class AgentMap {
public:
    static constexpr std::size_t kMaxNames = kMaxAgents - 1;

    AgentMap() = default;  // names nobody: every packet is "other"
    // Indices follow the order in which names first appear (1, 2, ...); several rules may give
    // the same name. `earlier` (a reload: the names of the map in use) keeps every name it has
    // at its index, rules or not, and new names come after them: an index names one agent for
    // the life of the process, so that the counters kept by index stay with their label.
    explicit AgentMap(std::vector<AgentRule> rules, const std::vector<std::string>& earlier = {});

    // What the sender says about itself wins over where it sends from: a capture id rule, then a
    // node name rule, then the longest source prefix holding `sender`. 0 when nothing matches.
    // Inline for the common case of no rules (every rule kept has a name).
    std::uint16_t lookup(std::optional<std::uint32_t> capture_id, ByteSpan node_name,
                         const IpAddress& sender) const noexcept {
        return names_.empty() ? 0 : lookup_rules(capture_id, node_name, sender);
    }

    // Names including "other" at index 0.
    std::size_t size() const noexcept { return names_.size() + 1; }
    std::string_view name(std::size_t index) const noexcept;
    // The names of indices 1, 2, ... (what a reload passes as `earlier`).
    const std::vector<std::string>& names() const noexcept { return names_; }
    std::size_t ignored_rules() const noexcept { return ignored_rules_; }

private:
    std::uint16_t lookup_rules(std::optional<std::uint32_t> capture_id, ByteSpan node_name,
                               const IpAddress& sender) const noexcept;

    struct ById {
        std::uint32_t id = 0;
        std::uint16_t index = 0;
    };
    struct ByNode {
        std::string node;
        std::uint16_t index = 0;
    };
    struct BySource {
        Cidr network;
        std::uint16_t index = 0;
    };

    std::vector<std::string> names_;
    std::vector<ById> by_id_;
    std::vector<ByNode> by_node_;
    std::vector<BySource> by_source_;  // longest prefix first
    std::size_t ignored_rules_ = 0;
};

}  // namespace hepd::intake
