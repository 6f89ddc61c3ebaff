#include "ingest/source_limiter.hpp"

namespace hepd::ingest {

SourceLimiter::SourceLimiter(std::size_t capacity) : table_(capacity) {}

void SourceLimiter::reconfigure(std::uint64_t rate, std::uint64_t burst, Timestamp now) {
    rate_ = rate;
    burst_ = burst;
    if (rate == 0) {
        table_.erase_if([](const auto&) { return true; }, [](const auto&) {});
    } else {
        for (std::uint32_t at = table_.oldest(); at != LruTable<IpAddress, TokenBucket, AddressHash>::kNone;
             at = table_.newer(at))
            table_[at].reset(rate, burst, now);
    }
    stats_.tracked_sources.set(static_cast<std::int64_t>(table_.size()));
}

bool SourceLimiter::admit(const IpAddress& sender, Timestamp now) {
    if (rate_ == 0) return true;
    const std::uint64_t h = hash_address(sender);
    std::uint32_t at = table_.find(h, [&](const IpAddress& k) { return k == sender; });
    if (at == LruTable<IpAddress, TokenBucket, AddressHash>::kNone) {
        auto [index, evicted] = table_.insert(sender, TokenBucket(rate_, burst_, now));
        at = index;
        if (evicted) stats_.evictions.add();
        stats_.tracked_sources.set(static_cast<std::int64_t>(table_.size()));
    } else {
        table_.touch(at);
    }
    return table_[at].try_take(now);
}

}  // namespace hepd::ingest
