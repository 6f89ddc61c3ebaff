#include "ingest/ingest_control.hpp"

namespace hepd::ingest {

IngestControl::IngestControl(IngestPolicy initial, const Clock& steady)
    : steady_(steady),
      policy_(std::make_shared<const IngestPolicy>(std::move(initial))),
      global_(policy_->limits.rate, policy_->limits.burst, steady.now()) {}

void IngestControl::update(IngestPolicy next) {
    auto fresh = std::make_shared<const IngestPolicy>(std::move(next));
    std::lock_guard lock(mutex_);
    global_.reset(fresh->limits.rate, fresh->limits.burst, steady_.now());
    policy_ = std::move(fresh);
    // Release: a thread that sees the new epoch finds the new policy under the lock.
    epoch_.fetch_add(1, std::memory_order_acq_rel);
}

std::shared_ptr<const IngestPolicy> IngestControl::policy() const {
    std::lock_guard lock(mutex_);
    return policy_;
}

}  // namespace hepd::ingest
