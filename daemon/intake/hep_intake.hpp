#pragma once
// Turns one received HEP message into a Datagram: decode, inflate, normalise the timestamp,
// classify, check the auth key, name the capture agent. One instance per receive thread (its
// counters have one writer; the exporter reads them at scrape time and sums the instances).
// Exceptions never leave this path.
#include "core/packet_meta.hpp"
#include "core/time.hpp"
#include "hep/compression.hpp"
#include "hep/decoder.hpp"
#include "hep/error.hpp"
#include "hep/payload_type.hpp"
#include "hep/timestamp.hpp"
#include "intake/agent_map.hpp"
#include "intake/intake_stats.hpp"
#include "intake/sender_clocks.hpp"
#include "shard/datagram.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace hepd::intake {

struct IntakeOptions {
    hep::PayloadTypeTable payload_types;
    std::string auth_key;  // empty: not required
    std::size_t max_decompressed_bytes = 65536;
    AgentMap agents;
    // Senders' capture times are brought onto the receive clock (see sender_clocks.hpp): live the
    // wall clock, offline (`hepd pcap`) the frame times of the capture, one clock for all agents
    // (an agent an hour behind would otherwise look an hour idle to the shards). Unset: each
    // datagram's own capture time is the clock.
    std::optional<SenderClockOptions> sender_clocks;
};

class HepIntake {
public:
    explicit HepIntake(IntakeOptions options);

    // Decodes `bytes` (one HEP message) from `sender`, received at `now` (live: the injected wall
    // clock, exact or a batch's read time; offline: the capture's frame time). On success fills
    // `out` (views into `bytes` or this intake's inflate buffer, valid until the next call),
    // counts it as handed over and returns true; on failure counts the reason and returns false.
    bool accept(ByteSpan bytes, Carrier carrier, ReceiveTime now, shard::Datagram& out,
                const IpAddress& sender = {}) noexcept;

    // A packet refused before decoding (rate limit, allow list): still counted as received, so
    // that received = accepted + the sum of drops holds.
    void count_drop(DropReason reason, ByteSpan bytes, Carrier carrier) noexcept;

    // `n` datagrams that accept() handed over were dropped by a full shard queue (the hook for
    // Pipeline::Producer drops; IngestPath calls it after every batch).
    void count_queue_full(std::uint64_t n) noexcept;

    // Live reconfiguration, from the owning thread between packets (may allocate).
    void set_auth_key(std::string_view key);
    void set_agents(const AgentMap& agents);

    const IntakeStats& stats() const noexcept { return stats_; }
    const AgentMap& agents() const noexcept { return options_.agents; }
    // Live only; nullptr offline.
    const SenderClocks* sender_clocks() const noexcept { return clocks_ ? &*clocks_ : nullptr; }
    // Whether receive times should be exact arrivals from now on (see sender_clocks.hpp).
    bool wants_arrival_times() const noexcept { return clocks_ && clocks_->provisional() > 0; }

private:
    void count_received(ByteSpan bytes, Carrier carrier) noexcept;

    IntakeOptions options_;
    IntakeStats stats_;
    hep::Message message_;
    hep::Inflater inflater_;
    std::size_t inflate_buffer_size_;  // max_decompressed_bytes, at least 1
    // Left uninitialised: a page of it costs memory only once an inflated payload reaches it
    // (most senders never compress).
    std::unique_ptr<std::uint8_t[]> inflate_buffer_;
    std::optional<SenderClocks> clocks_;
};

}  // namespace hepd::intake
