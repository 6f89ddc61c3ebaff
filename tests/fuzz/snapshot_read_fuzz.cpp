// Snapshot files from hostile bytes: decode, restore into fresh shards, run their timers to the
// end, render as JSON, and check that what decoded re-encodes to a file that decodes the same.
//
// The first input octet picks the mode: even, the rest is a whole file (frame, checksums and
// all); odd, the rest is a payload that gets a correct frame, so that the fuzzer reaches the
// protobuf and record checks instead of stopping at the CRC.
#include "snapshot/file_format.hpp"
#include "snapshot/snapshot.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

using namespace hepd;
using namespace hepd::snapshot;

namespace {

// One shard: whatever a dialog's end sends goes back to it.
class Loopback final : public shard::BindingSink {
public:
    explicit Loopback(shard::ShardWorker& w) : worker_(w) {}
    void send(const MediaBinding& b) override { worker_.bind(b); }

private:
    shard::ShardWorker& worker_;
};

void restore_and_run(const SnapshotFile& file, std::size_t n) {
    shard::ShardConfig config;  // small caps: the fuzzer also reaches the evictions
    config.dialogs.max_dialogs = 16;
    config.dialogs.max_transactions = 16;
    config.streams.max_streams = 16;
    config.streams.max_pending_media = 16;
    config.streams.max_reported_streams = 16;
    std::vector<std::unique_ptr<shard::ShardWorker>> owned;
    std::vector<shard::ShardWorker*> shards;
    for (std::size_t i = 0; i < n; ++i) {
        owned.push_back(std::make_unique<shard::ShardWorker>(config));
        shards.push_back(owned.back().get());
    }
    const RestoreCounts counts = restore(file, shards);
    if (counts.restored() + counts.refused() != file.header.counts.total()) std::abort();
    // The header's time is not checked by the reader (nothing computes with it): clamp it.
    const Timestamp last = Timestamp::from_parts(253'402'300'799, 0);  // the last second records may hold
    const Timestamp written{std::clamp<std::int64_t>(file.header.written_at.us, 0, last.us)};
    for (auto* w : shards) {
        Loopback loopback(*w);
        w->advance(written, loopback);
        w->finish(last);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const ByteSpan rest(data + 1, size - 1);
    std::string framed;
    ByteSpan file_bytes = rest;
    if ((data[0] & 1) != 0) {
        framed = frame_payload(as_text(rest), kFormatVersion);
        file_bytes = as_bytes(framed);
    }
    std::string detail;
    const auto file = decode_snapshot(file_bytes, &detail);
    if (!file.ok()) {
        if (detail.empty()) std::abort();  // every refusal says why
        return 0;
    }
    restore_and_run(*file, 2);
    restore_and_run(*file, 3);
    if (to_json(*file).empty()) std::abort();

    // Encoding what was decoded is stable: decode(encode(x)) encodes to the same bytes.
    SnapshotMeta meta;
    meta.hepd_version = "fuzz";
    meta.written_at = file->header.written_at;
    meta.shard_count = 1;
    const std::string once = encode_snapshot({file->records}, meta);
    const auto again = decode_snapshot(as_bytes(once));
    if (!again.ok()) std::abort();
    if (encode_snapshot({again->records}, meta) != once) std::abort();
    return 0;
}
