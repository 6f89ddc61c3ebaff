#pragma once
// What the operator can change without a restart (SIGHUP): rate limits, auth key, allow list and
// agent names. One IngestControl is shared by every receive thread of the daemon; update()
// publishes a new immutable policy and bumps an epoch that each thread compares (one atomic
// load) at the start of its next batch, copying the policy only when it changed.
#include "core/time.hpp"
#include "ingest/allow_list.hpp"
#include "ingest/token_bucket.hpp"
#include "intake/agent_map.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

namespace hepd::ingest {

// Packets per second; rate 0 = unlimited; burst 0 = one second's worth of rate.
struct RateLimits {
    std::uint64_t rate = 0;  // all senders together
    std::uint64_t burst = 0;
    std::uint64_t per_agent_rate = 0;  // each source address on its own
    std::uint64_t per_agent_burst = 0;
};

struct IngestPolicy {
    RateLimits limits;
    std::string auth_key;  // empty: not required
    AllowList allow;       // empty: everyone
    intake::AgentMap agents;
};

class IngestControl {
public:
    // `steady` times the global token bucket; it must outlive this object.
    IngestControl(IngestPolicy initial, const Clock& steady);
    IngestControl(const IngestControl&) = delete;
    IngestControl& operator=(const IngestControl&) = delete;

    // Publishes `next`; safe from any thread (a signal handler's thread, the main loop).
    void update(IngestPolicy next);

    // Changes each time update() runs.
    std::uint64_t epoch() const noexcept { return epoch_.load(std::memory_order_acquire); }
    // The current policy (takes a lock: once per epoch change, never per packet).
    std::shared_ptr<const IngestPolicy> policy() const;

    // The global limit, taken by every receive thread once per batch.
    SharedTokenBucket& global_limit() noexcept { return global_; }
    const Clock& steady_clock() const noexcept { return steady_; }

private:
    const Clock& steady_;
    mutable std::mutex mutex_;
    std::shared_ptr<const IngestPolicy> policy_;
    std::atomic<std::uint64_t> epoch_{1};
    SharedTokenBucket global_;
};

}  // namespace hepd::ingest
