#pragma once
// Scripted SIP calls with G.711 media and exactly known answers: the corpus behind the capacity
// benchmark and the ground-truth tests. Every call is INVITE -> 100 -> 180 -> 200 -> ACK ->
// bidirectional PCMA at 20 ms -> BYE -> 200 (or fails with 486, or is cancelled), with chosen
// impairments applied to the media, and the generator reports what a correct collector must
// find.
#include "core/address.hpp"
#include "core/bytes.hpp"
#include "core/time.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace hepd::gen {

struct CorpusOptions {
    std::uint32_t calls = 5000;
    std::uint32_t call_ids = 0;      // distinct Call-IDs, re-used round robin (0 = one per call)
    std::uint32_t stream_pairs = 0;  // distinct media address pairs (0 = one per call)
    double media_seconds = 1.0;      // per direction, one packet every 20 ms
    double loss_percent = 0;         // media packets dropped
    double duplicate_percent = 0;    // media packets sent twice
    double reorder_percent = 0;      // media packets swapped with the next one
    double jitter_ms = 0;            // uniform extra delay in [0, jitter_ms) per media packet
    double failed_percent = 0;       // calls rejected with 486 (Reason Q.850 cause 17)
    double cancelled_percent = 0;    // calls cancelled while ringing
    std::int64_t call_interval_us = 2000;  // between call starts
    std::uint64_t seed = 1;
    Timestamp start = Timestamp::from_parts(1'700'000'000, 0);
};

enum class CallOutcome : std::uint8_t { completed, failed, cancelled };

struct CallTruth {
    std::string call_id;
    std::string from_tag;
    CallOutcome outcome = CallOutcome::completed;
    std::uint16_t final_code = 200;
    std::int64_t pdd_us = 0;       // INVITE -> 180
    std::int64_t setup_us = 0;     // INVITE -> 200 (completed calls)
    std::int64_t duration_us = 0;  // 200 -> BYE (completed calls)
};

struct StreamTruth {
    std::string call_id;
    Endpoint src;
    Endpoint dst;
    std::uint32_t ssrc = 0;
    std::uint64_t sent = 0;        // packets the sender produced
    std::uint64_t received = 0;    // packets on the wire (after loss, with duplicates)
    std::uint64_t lost = 0;        // observable loss: missing packets between first and last
    std::uint64_t duplicates = 0;
    double jitter_ms = 0;          // RFC 3550 A.8 over the arrival order
};

struct Truth {
    std::vector<CallTruth> calls;
    std::vector<StreamTruth> streams;
    std::uint64_t sip_packets = 0;
    std::uint64_t rtp_packets = 0;
    Timestamp first{};
    Timestamp last{};
};

using PacketSink = std::function<void(Timestamp, const Endpoint& src, const Endpoint& dst, ByteSpan payload)>;

// Emits every packet in capture-time order and returns the ground truth.
Truth generate(const CorpusOptions& options, const PacketSink& sink);

} // namespace hepd::gen
