#pragma once
// Which senders may feed HEP: a list of IP prefixes checked before decoding.
#include "core/address.hpp"
#include "core/cidr.hpp"

#include <utility>
#include <vector>

namespace hepd::ingest {

class AllowList {
public:
    AllowList() = default;  // empty: everyone is allowed
    explicit AllowList(std::vector<Cidr> prefixes) : prefixes_(std::move(prefixes)) {}

    bool allows(const IpAddress& sender) const noexcept {
        if (prefixes_.empty()) return true;
        for (const auto& p : prefixes_)
            if (p.contains(sender)) return true;
        return false;
    }

    bool empty() const noexcept { return prefixes_.empty(); }
    const std::vector<Cidr>& prefixes() const noexcept { return prefixes_; }

private:
    std::vector<Cidr> prefixes_;
};

}  // namespace hepd::ingest
