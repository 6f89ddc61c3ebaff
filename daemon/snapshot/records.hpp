#pragma once
// What a snapshot holds, as plain C++ values: the tables' records under their keys. A
// ShardImage is one shard's tables copied out (cheap to take on the shard's own thread); a
// SnapshotFile is what a file read back holds. Neither refers to protobuf types, so callers
// (daemon/app) do not see the generated code.
#include "core/address.hpp"
#include "core/reserved_memory.hpp"
#include "core/time.hpp"
#include "rtp/stream_record.hpp"
#include "rtp/stream_table.hpp"
#include "sip/dialog.hpp"
#include "sip/dialog_media.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace hepd::snapshot {

// Version of the file layout and schema this build writes and the only one it reads.
inline constexpr std::uint32_t kFormatVersion = 1;

struct DialogRecord {
    std::string call_id;
    std::string from_tag;
    sip::Dialog dialog;
    sip::SdpSides sdp_sides{};     // the media addresses of its SDP, kept beside the record by the table
    sip::CallerIdentity caller{};  // who placed it: empty unless the table keeps it (call records on)

    friend bool operator==(const DialogRecord&, const DialogRecord&) = default;
};

struct TransactionRecord {
    sip::TransactionKey key;
    sip::Transaction transaction;

    friend bool operator==(const TransactionRecord& a, const TransactionRecord& b) noexcept {
        return a.key.call_id == b.key.call_id && a.key.cseq == b.key.cseq && a.key.method == b.key.method &&
               a.transaction == b.transaction;
    }
};

struct StreamRecord {
    rtp::StreamKey key;
    rtp::Stream stream;

    friend bool operator==(const StreamRecord&, const StreamRecord&) = default;
};

// A media binding as the stream table holds it, under media_key() of the announced address.
struct BindingRecord {
    hepd::Endpoint media;  // qualified: the generated hepd::snapshot::Endpoint is another type
    hepd::Endpoint peer;   // the other end of the media line; port 0 when unknown
    rtp::Binding binding;
    bool waiting = false;   // parked with no live stream (yet, or any more)
    bool released = false;  // its dialog ended: dropped when its last stream leaves

    friend bool operator==(const BindingRecord&, const BindingRecord&) = default;
};

struct ReportedRecord {
    rtp::ReportedKey key;
    rtp::ReportedStream stream;

    friend bool operator==(const ReportedRecord&, const ReportedRecord&) = default;
};

struct RecordCounts {
    std::uint64_t dialogs = 0;
    std::uint64_t transactions = 0;
    std::uint64_t streams = 0;
    std::uint64_t bindings = 0;
    std::uint64_t reported_streams = 0;

    std::uint64_t total() const noexcept { return dialogs + transactions + streams + bindings + reported_streams; }
    RecordCounts& operator+=(const RecordCounts& o) noexcept {
        dialogs += o.dialogs;
        transactions += o.transactions;
        streams += o.streams;
        bindings += o.bindings;
        reported_streams += o.reported_streams;
        return *this;
    }
    friend bool operator==(const RecordCounts&, const RecordCounts&) = default;
};

// An image's records. Large ones are mappings of their own advised for transparent huge pages:
// an image is made anew for every snapshot, and tens of megabytes of base pages cost the
// snapshot thread a fault every 4 KiB (0.17 s for 60,000 dialogs in a VM guest).
template <class Record>
using ImageRecords = std::vector<Record, ReservingAllocator<Record>>;

// Records in each table's least-recently-active-first order.
struct ShardImage {
    ImageRecords<DialogRecord> dialogs;
    ImageRecords<TransactionRecord> transactions;
    ImageRecords<StreamRecord> streams;
    ImageRecords<BindingRecord> bindings;
    ImageRecords<ReportedRecord> reported_streams;

    RecordCounts counts() const noexcept {
        return {dialogs.size(), transactions.size(), streams.size(), bindings.size(), reported_streams.size()};
    }
    friend bool operator==(const ShardImage&, const ShardImage&) = default;
};

struct SnapshotHeader {
    std::uint32_t format_version = kFormatVersion;
    std::string hepd_version;
    Timestamp written_at;           // wall clock at writing
    Timestamp captured_at;          // wall clock when the tables were copied (0: not known, older file)
    std::uint32_t shard_count = 0;  // at writing; restore re-routes to the current shards
    RecordCounts counts;

    friend bool operator==(const SnapshotHeader&, const SnapshotHeader&) = default;
};

// A whole file read back: the header and every record, the shards' images concatenated.
struct SnapshotFile {
    SnapshotHeader header;
    ShardImage records;
};

}  // namespace hepd::snapshot
