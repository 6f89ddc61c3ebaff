#include "intake/hep_intake.hpp"

#include <algorithm>
#include <cstring>
#include <span>

namespace hepd::intake {

namespace {

std::size_t version_index(ByteSpan bytes) noexcept {
    if (bytes.size() >= 4 && (std::memcmp(bytes.data(), "HEP3", 4) == 0 || std::memcmp(bytes.data(), "EEP3", 4) == 0))
        return 2;
    if (!bytes.empty() && (bytes[0] == 1 || bytes[0] == 2)) return bytes[0] - 1U;
    return 3;  // not HEP at all
}

shard::Transport transport_of(std::uint8_t ip_protocol) noexcept {
    switch (ip_protocol) {
    case 17: return shard::Transport::udp;
    case 6: return shard::Transport::tcp;
    case 22: return shard::Transport::tls;  // Kamailio's marker for TLS and WebSocket
    case 132: return shard::Transport::sctp;
    default: return shard::Transport::other;
    }
}

// Constant-time comparison: the auth key must not leak through timing.
bool same_key(ByteSpan got, std::string_view want) noexcept {
    if (got.size() != want.size()) return false;
    unsigned char diff = 0;
    for (std::size_t i = 0; i < got.size(); ++i)
        diff |= static_cast<unsigned char>(got[i] ^ static_cast<unsigned char>(want[i]));
    return diff == 0;
}

}  // namespace

HepIntake::HepIntake(IntakeOptions options)
    : options_(std::move(options)),
      inflate_buffer_size_(std::max<std::size_t>(options_.max_decompressed_bytes, 1)),
      inflate_buffer_(std::make_unique_for_overwrite<std::uint8_t[]>(inflate_buffer_size_)) {
    if (options_.sender_clocks) clocks_.emplace(*options_.sender_clocks);
}

void HepIntake::set_auth_key(std::string_view key) { options_.auth_key.assign(key); }

void HepIntake::set_agents(const AgentMap& agents) { options_.agents = agents; }

void HepIntake::count_received(ByteSpan bytes, Carrier carrier) noexcept {
    const auto c = static_cast<std::size_t>(carrier);
    const std::size_t v = version_index(bytes);
    if (v < kHepVersionCount) {
        stats_.packets[c][v].add();
        stats_.bytes[c][v].add(bytes.size());
    } else {
        stats_.undecodable_packets[c].add();
    }
}

void HepIntake::count_drop(DropReason reason, ByteSpan bytes, Carrier carrier) noexcept {
    count_received(bytes, carrier);
    stats_.dropped[static_cast<std::size_t>(reason)].add();
}

void HepIntake::count_queue_full(std::uint64_t n) noexcept {
    if (n != 0) stats_.dropped[static_cast<std::size_t>(DropReason::queue_full)].add(n);
}

bool HepIntake::accept(ByteSpan bytes, Carrier carrier, ReceiveTime now, shard::Datagram& out,
                       const IpAddress& sender) noexcept {
    count_received(bytes, carrier);

    auto fail_with = [&](hep::DecodeError e) {
        stats_.decode_errors[static_cast<std::size_t>(e)].add();
        stats_.dropped[static_cast<std::size_t>(DropReason::decode_error)].add();
        return false;
    };
    if (auto err = hep::decode_into(bytes, message_)) return fail_with(*err);

    if (!options_.auth_key.empty() && !same_key(message_.auth_key, options_.auth_key)) {
        stats_.dropped[static_cast<std::size_t>(DropReason::auth)].add();
        return false;
    }

    ByteSpan payload = message_.payload;
    if (message_.compressed) {
        auto inflated =
            inflater_.inflate(payload, std::span<std::uint8_t>(inflate_buffer_.get(), inflate_buffer_size_));
        if (!inflated) return fail_with(inflated.error());
        payload = *inflated;
    }

    const auto when = hep::normalise_timestamp(message_, now.at);
    if (when.fixup != hep::TimestampFixup::none) stats_.timestamp_fixups[static_cast<std::size_t>(when.fixup)].add();

    const auto cls = options_.payload_types.payload_class(message_.payload_type);
    const std::uint16_t agent = options_.agents.lookup(
        message_.has_capture_id() ? std::optional<std::uint32_t>(message_.capture_id) : std::nullopt,
        message_.node_name, sender);
    stats_.by_type[static_cast<std::size_t>(cls)][agent].add();

    // Times the fix-ups replaced by `now` are on the receive clock already (a sender years off
    // never reaches the sender clocks); the others are the sender's own clock.
    Timestamp time = when.time;
    if (clocks_ && !hep::is_receive_time(when.fixup))
        time = clocks_->correct(SenderKey{sender, message_.capture_id, message_.has_capture_id()}, when.time, now,
                                agent, options_.agents.name(agent), stats_.clocks);

    out.time = time;
    out.src = message_.src;
    out.dst = message_.dst;
    out.transport = transport_of(message_.ip_protocol);
    out.kind = cls;
    out.hep_payload_type = message_.payload_type;
    out.agent = agent;
    out.from_agent = true;
    out.capture_id = message_.capture_id;
    out.correlation_id = as_text(message_.correlation_id);
    out.payload = payload;
    return true;
}

}  // namespace hepd::intake
