#include "ingest/ingest_path.hpp"

#include <algorithm>

namespace hepd::ingest {

IngestPath::IngestPath(IngestControl& control, DatagramSink& sink, const Clock& wall, IngestPathOptions options)
    : control_(control),
      sink_(sink),
      wall_(wall),
      intake_(std::move(options.intake)),
      sources_(options.max_sources),
      max_batch_age_(options.max_batch_age) {
    verdicts_.reserve(1024);
    sink_dropped_seen_ = sink_.dropped();
    refresh(control_.steady_clock().now());
}

void IngestPath::refresh(Timestamp steady_now) {
    const std::uint64_t epoch = control_.epoch();
    if (epoch == epoch_) return;
    policy_ = control_.policy();
    epoch_ = epoch;
    intake_.set_auth_key(policy_->auth_key);
    intake_.set_agents(policy_->agents);
    sources_.reconfigure(policy_->limits.per_agent_rate, policy_->limits.per_agent_burst, steady_now);
}

bool IngestPath::allows(const IpAddress& peer) {
    refresh(control_.steady_clock().now());
    return policy_->allow.allows(peer);
}

std::chrono::microseconds IngestPath::read_window() const noexcept {
    const auto refill = [](std::uint64_t rate, std::uint64_t burst) {
        if (rate == 0) return std::chrono::microseconds::max();
        return std::chrono::microseconds(burst == 0 ? 1'000'000 : static_cast<std::int64_t>(burst * 1'000'000 / rate));
    };
    const RateLimits& l = policy_->limits;
    return std::min({max_batch_age_, refill(l.rate, l.burst), refill(l.per_agent_rate, l.per_agent_burst)});
}

void IngestPath::process(std::span<const Packet> batch, intake::Carrier carrier) {
    if (batch.empty()) return;
    const Timestamp steady_now = control_.steady_clock().now();
    const Timestamp wall_now = wall_.now();
    refresh(steady_now);

    // Cheapest refusals first, each sender's own bucket before the shared one: a noisy sender
    // spends its own tokens, not everyone's.
    verdicts_.resize(batch.size());
    std::uint64_t candidates = 0;
    const AllowList& allow = policy_->allow;
    for (std::size_t i = 0; i < batch.size(); ++i) {
        const IpAddress& sender = batch[i].from.address;
        Verdict v = Verdict::pass;
        if (!allow.allows(sender)) {
            v = Verdict::not_allowed;
        } else if (!sources_.admit(sender, steady_now)) {
            v = Verdict::rate_limit;
        } else {
            ++candidates;
        }
        verdicts_[i] = v;
    }
    std::uint64_t granted = candidates == 0 ? 0 : control_.global_limit().take(candidates, steady_now);
    // A TCP read follows the data's arrival; a UDP batch may have waited a read window, unless
    // the socket stamped each datagram's arrival.
    const bool read_on_arrival = carrier == intake::Carrier::tcp;

    for (std::size_t i = 0; i < batch.size(); ++i) {
        const Packet& p = batch[i];
        switch (verdicts_[i]) {
        case Verdict::not_allowed: intake_.count_drop(intake::DropReason::not_allowed, p.bytes, carrier); continue;
        case Verdict::rate_limit: intake_.count_drop(intake::DropReason::rate_limit, p.bytes, carrier); continue;
        case Verdict::pass: break;
        }
        if (granted == 0) {
            intake_.count_drop(intake::DropReason::rate_limit, p.bytes, carrier);
            continue;
        }
        --granted;
        const intake::ReceiveTime received = p.waited_us == Packet::kNotStamped
                                                 ? intake::ReceiveTime(wall_now, read_on_arrival)
                                                 : intake::ReceiveTime(Timestamp{wall_now.us - p.waited_us}, true);
        if (intake_.accept(p.bytes, carrier, received, datagram_, p.from.address)) {
            sink_.accepted_message(p.bytes);
            sink_.push(datagram_);
            holds_partial_ = true;
        }
    }

    if (max_batch_age_.count() <= 0 && holds_partial_) {
        flush();
        return;
    }
    count_sink_drops();
}

void IngestPath::flush() {
    sink_.flush();
    holds_partial_ = false;
    count_sink_drops();
}

void IngestPath::count_sink_drops() noexcept {
    const std::uint64_t dropped = sink_.dropped();
    intake_.count_queue_full(dropped - sink_dropped_seen_);
    sink_dropped_seen_ = dropped;
}

}  // namespace hepd::ingest
