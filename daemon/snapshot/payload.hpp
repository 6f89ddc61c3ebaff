#pragma once
// The payload between the frame header and the end of the file: a length-delimited Header, then
// length-delimited RecordChunk messages. Shared by encode_snapshot (into memory) and the writer
// (streamed to a file), so both produce the same bytes.
#include "core/bytes.hpp"
#include "snapshot/records.hpp"
#include "snapshot/snapshot.hpp"

#include <cstddef>
#include <vector>

namespace hepd::snapshot {

// Records per RecordChunk: keeps each protobuf message a few hundred kilobytes at most.
inline constexpr std::size_t kChunkRecords = 1024;

class PayloadSink {
public:
    virtual ~PayloadSink() = default;
    // Consecutive pieces of the payload; false stops the encoding.
    virtual bool append(ByteSpan bytes) = 0;
};

// Encodes the payload into `sink` in pieces of about `flush_bytes`. False when the sink
// stopped it. May throw std::bad_alloc.
bool encode_payload(const std::vector<ShardImage>& images, const SnapshotHeader& header, PayloadSink& sink,
                    std::size_t flush_bytes);

SnapshotHeader make_header(const std::vector<ShardImage>& images, const SnapshotMeta& meta);

}  // namespace hepd::snapshot
