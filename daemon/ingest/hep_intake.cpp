#include "ingest/hep_intake.hpp"

#include <algorithm>
#include <cstring>
#include <type_traits>

namespace hepd::ingest {

namespace {

std::size_t version_index(ByteSpan bytes) noexcept {
    if (bytes.size() >= 4 && (std::memcmp(bytes.data(), "HEP3", 4) == 0 ||
                              std::memcmp(bytes.data(), "EEP3", 4) == 0))
        return 2;
    if (!bytes.empty() && (bytes[0] == 1 || bytes[0] == 2)) return bytes[0] - 1U;
    return 3;  // not HEP at all
}

shard::PayloadKind kind_of(hep::PayloadClass c, std::uint8_t code) noexcept {
    switch (c) {
    case hep::PayloadClass::sip: return shard::PayloadKind::sip;
    case hep::PayloadClass::rtcp: return shard::PayloadKind::rtcp;
    case hep::PayloadClass::rtcp_json: return shard::PayloadKind::rtcp_json;
    case hep::PayloadClass::qos: return shard::PayloadKind::qos;
    case hep::PayloadClass::log: return shard::PayloadKind::log;
    case hep::PayloadClass::other: break;
    }
    return code == hep::payload_type::rtp ? shard::PayloadKind::rtp : shard::PayloadKind::other;
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
    for (std::size_t i = 0; i < got.size(); ++i) diff |= static_cast<unsigned char>(got[i] ^ static_cast<unsigned char>(want[i]));
    return diff == 0;
}

} // namespace

std::string_view to_string(Carrier c) noexcept { return c == Carrier::udp ? "udp" : "tcp"; }

std::string_view to_string(DropReason r) noexcept {
    switch (r) {
    case DropReason::rate_limit: return "rate_limit";
    case DropReason::auth: return "auth";
    case DropReason::not_allowed: return "not_allowed";
    case DropReason::queue_full: return "queue_full";
    case DropReason::decode_error: return "decode_error";
    }
    return "unknown";
}

namespace {

template <class A>
void add_all(A& into, const A& from) noexcept {
    for (std::size_t i = 0; i < into.size(); ++i) {
        if constexpr (std::is_base_of_v<Counter, std::decay_t<decltype(into[i])>>) {
            into[i].add(from[i].value());
        } else {
            add_all(into[i], from[i]);
        }
    }
}

template <class A>
std::uint64_t sum_all(const A& a) noexcept {
    std::uint64_t n = 0;
    for (const auto& x : a) {
        if constexpr (std::is_base_of_v<Counter, std::decay_t<decltype(x)>>) {
            n += x.value();
        } else {
            n += sum_all(x);
        }
    }
    return n;
}

} // namespace

void IntakeStats::merge(const IntakeStats& o) noexcept {
    add_all(packets, o.packets);
    add_all(bytes, o.bytes);
    add_all(undecodable_packets, o.undecodable_packets);
    add_all(decode_errors, o.decode_errors);
    add_all(timestamp_fixups, o.timestamp_fixups);
    add_all(by_type, o.by_type);
    add_all(dropped, o.dropped);
    clocks.merge(o.clocks);
}

std::uint64_t IntakeStats::received() const noexcept { return sum_all(packets) + sum_all(undecodable_packets); }

std::uint64_t IntakeStats::accepted() const noexcept {
    // Both are monotonic; a reader racing the writer could see the drop before the hand-over.
    const std::uint64_t handed = sum_all(by_type);
    const std::uint64_t lost = drops(DropReason::queue_full);
    return handed > lost ? handed - lost : 0;
}

std::uint64_t IntakeStats::dropped_total() const noexcept { return sum_all(dropped); }

std::uint64_t IntakeStats::by_class(hep::PayloadClass c) const noexcept {
    return sum_all(by_type[static_cast<std::size_t>(c)]);
}

HepIntake::HepIntake(IntakeOptions options)
    : options_(std::move(options)), inflate_buffer_(std::max<std::size_t>(options_.max_decompressed_bytes, 1)) {
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

bool HepIntake::accept(ByteSpan bytes, Carrier carrier, Timestamp now, shard::Datagram& out,
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
        auto inflated = inflater_.inflate(payload, inflate_buffer_);
        if (!inflated) return fail_with(inflated.error());
        payload = *inflated;
    }

    const auto when = hep::normalise_timestamp(message_, now);
    if (when.fixup != hep::TimestampFixup::none)
        stats_.timestamp_fixups[static_cast<std::size_t>(when.fixup)].add();

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
    out.kind = kind_of(cls, message_.payload_type);
    out.hep_payload_type = message_.payload_type;
    out.agent = agent;
    out.capture_id = message_.capture_id;
    out.correlation_id = as_text(message_.correlation_id);
    out.payload = payload;
    return true;
}

} // namespace hepd::ingest
