#pragma once
// Turns one received HEP message into a Datagram: decode, inflate, normalise the timestamp,
// classify, check the auth key. One instance per receive thread (plain counters, no atomics);
// the exporter sums the instances. Exceptions never leave this path.
#include "core/time.hpp"
#include "hep/compression.hpp"
#include "hep/decoder.hpp"
#include "hep/error.hpp"
#include "hep/payload_type.hpp"
#include "hep/timestamp.hpp"
#include "shard/datagram.hpp"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace hepd::ingest {

enum class Carrier : std::uint8_t { udp, tcp };
inline constexpr std::size_t kCarrierCount = 2;
std::string_view to_string(Carrier c) noexcept;

enum class DropReason : std::uint8_t { rate_limit, auth, not_allowed, queue_full, decode_error };
inline constexpr std::size_t kDropReasonCount = 5;
std::string_view to_string(DropReason r) noexcept;

struct IntakeStats {
    // [carrier][version 1..3 -> 0..2]
    std::array<std::array<std::uint64_t, 3>, kCarrierCount> packets{};
    std::array<std::array<std::uint64_t, 3>, kCarrierCount> bytes{};
    std::array<std::uint64_t, kCarrierCount> undecodable_packets{};  // version unknown
    std::array<std::uint64_t, hep::decode_error_count> decode_errors{};
    std::array<std::uint64_t, hep::timestamp_fixup_count> timestamp_fixups{};
    std::array<std::uint64_t, hep::payload_class_count> accepted_by_class{};
    std::array<std::uint64_t, kDropReasonCount> dropped{};

    void merge(const IntakeStats& other) noexcept;
    std::uint64_t received() const noexcept;
    std::uint64_t accepted() const noexcept;
};

struct IntakeOptions {
    hep::PayloadTypeTable payload_types;
    std::string auth_key;                    // empty: not required
    std::size_t max_decompressed_bytes = 65536;
};

class HepIntake {
public:
    explicit HepIntake(IntakeOptions options);

    // Decodes `bytes` (one HEP message) received at `now`. On success fills `out` (views into
    // `bytes` or this intake's inflate buffer, valid until the next call) and returns true; on
    // failure counts the reason and returns false.
    bool accept(ByteSpan bytes, Carrier carrier, Timestamp now, shard::Datagram& out) noexcept;

    // A packet refused before decoding (rate limit, allow list): still counted as received, so
    // that received = accepted + the sum of drops holds.
    void count_drop(DropReason reason, ByteSpan bytes, Carrier carrier) noexcept;

    const IntakeStats& stats() const noexcept { return stats_; }

private:
    void count_received(ByteSpan bytes, Carrier carrier) noexcept;

    IntakeOptions options_;
    IntakeStats stats_;
    hep::Message message_;
    hep::Inflater inflater_;
    std::vector<std::uint8_t> inflate_buffer_;
};

} // namespace hepd::ingest
