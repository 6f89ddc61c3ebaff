#pragma once
// Snapshots of the shards' tables: capture, atomic write, checked read, re-routing restore, and
// a JSON rendering for `hepd snapshot show`.
//
// Threading, as the daemon uses it:
//   1. capture(worker) on each shard's own thread (or while the shards are paused): a plain
//      copy of the tables, consistent because nothing else touches them meanwhile;
//   2. write_snapshot(images, path, meta) on any thread (a background writer): no shard state;
//   3. at start-up, read_snapshot(path) then restore(file, shards) before the shard threads
//      start.
//
// File layout (version 1; see file_format.hpp and proto/snapshot.proto):
//   0   8  magic "HEPDSNAP"
//   8   4  format version, big-endian (1)
//   12  4  flags, big-endian (0; a reader refuses flags it does not know)
//   16  8  payload length in octets, big-endian
//   24  4  CRC-32 (zlib) of the payload, big-endian
//   28  4  CRC-32 (zlib) of octets 0..27, big-endian
//   32  .. payload: varint-length-prefixed hepd.snapshot.Header, then varint-length-prefixed
//          hepd.snapshot.RecordChunk messages up to the end
// A file cut short, grown, or with any flipped bit is refused as a whole; nothing of it is
// restored.
#include "core/bytes.hpp"
#include "core/result.hpp"
#include "core/time.hpp"
#include "shard/shard_worker.hpp"
#include "snapshot/records.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hepd::snapshot {

// ---- capture -------------------------------------------------------------------------------

// Copies every record of one shard's tables. Call on the shard's thread (or while it is paused).
ShardImage capture(const shard::ShardWorker& worker);

// The same into `image`, assigning over the records already there (their strings keep their
// room) and appending past them; `image` then holds exactly the shard's records. The shard
// pauses while it copies: with an image made ready beforehand on another thread
// (prepare_image) that pause costs no page faults and, for most records, no allocation.
void capture(const shard::ShardWorker& worker, ShardImage& image);

// An image of `expected` blank records of each kind, its memory touched and its Call-ID strings
// given room, for capture() to fill (the daemon takes the counts of its previous snapshot).
ShardImage prepare_image(const RecordCounts& expected);

// What to make an image ready for: of each kind, the larger of what the previous capture found
// and what the shard last published (all there is before the first capture), and a tenth more
// for the growth since. Zero stays zero.
RecordCounts image_room(const RecordCounts& captured, const RecordCounts& published) noexcept;

// ---- write ---------------------------------------------------------------------------------

struct SnapshotMeta {
    std::string hepd_version;       // empty: this build's version
    Timestamp written_at;           // the caller's wall clock (injected)
    Timestamp captured_at;          // its wall clock before it copied the tables (0: not known)
    std::uint32_t shard_count = 0;  // 0: the number of images
};

enum class WriteError : std::uint8_t {
    create_failed,  // the temporary file could not be created
    write_failed,   // writing or seeking in it failed (disk full, file size limit, I/O error)
    sync_failed,    // fsync of the file failed: its contents may not be on disk
    close_failed,
    rename_failed,    // it could not replace the old file (which is left as it was)
    dir_sync_failed,  // the new file is in place but the directory entry may not be on disk
    encode_failed,    // serialisation failed (out of memory)
};
inline constexpr std::size_t kWriteErrorCount = 7;
std::string_view to_string(WriteError error) noexcept;

struct WriteFailure {
    WriteError error = WriteError::write_failed;
    int system_error = 0;  // errno, 0 when not a system call
    std::string message;   // one line naming the file and the cause, for the log
};

struct WriteSummary {
    std::uint64_t bytes = 0;  // size of the file written
    RecordCounts counts;
};

// Writes `images` (one per shard, any number) to `path` atomically: into `path`.tmp, fsync,
// rename over `path`, fsync of the directory. On any failure `path` is left as it was (except
// after dir_sync_failed, when the new file is complete but its rename may not survive a power
// cut) and the temporary file is removed. Never throws. One writer per path at a time.
Result<WriteSummary, WriteFailure> write_snapshot(const std::vector<ShardImage>& images, const std::string& path,
                                                  const SnapshotMeta& meta);
// Captures and writes in one go: for shards that are stopped or paused (shutdown, tests).
Result<WriteSummary, WriteFailure> write_snapshot(const std::vector<const shard::ShardWorker*>& shards,
                                                  const std::string& path, const SnapshotMeta& meta);

// The complete file contents write_snapshot would produce (tests, tools).
std::string encode_snapshot(const std::vector<ShardImage>& images, const SnapshotMeta& meta);

// ---- read ----------------------------------------------------------------------------------

enum class SnapshotError : std::uint8_t {
    not_found,            // no such file
    unreadable,           // cannot be opened or read, or not a regular file
    bad_magic,            // not a hepd snapshot
    unsupported_version,  // a format version (or flags) this build does not read
    truncated,            // shorter than its header says: cut off while written or copied
    trailing_data,        // longer than its header says
    checksum_mismatch,    // header or payload CRC-32 wrong: corrupted
    parse_error,          // checksums fine but the payload is not valid protobuf / counts disagree
    invalid_record,       // a record this build cannot represent (value out of range)
};
inline constexpr std::size_t kSnapshotErrorCount = 9;
std::string_view to_string(SnapshotError error) noexcept;
// One sentence for an operator: what the error means.
std::string_view describe(SnapshotError error) noexcept;

// Reads and checks a whole file. On failure nothing is returned but the reason; `detail`, when
// given, receives a line with the specifics (errno text, offsets, the offending record).
Result<SnapshotFile, SnapshotError> read_snapshot(const std::string& path, std::string* detail = nullptr);
// The same from bytes already in memory.
Result<SnapshotFile, SnapshotError> decode_snapshot(ByteSpan file, std::string* detail = nullptr);

// ---- restore -------------------------------------------------------------------------------

struct RestoreKindCounts {
    std::uint64_t restored = 0;
    std::uint64_t refused = 0;  // the table refused it: key already present, or key too long
    friend bool operator==(const RestoreKindCounts&, const RestoreKindCounts&) = default;
};

struct RestoreCounts {
    RestoreKindCounts dialogs;
    RestoreKindCounts transactions;
    RestoreKindCounts streams;
    RestoreKindCounts bindings;
    RestoreKindCounts reported_streams;

    std::uint64_t restored() const noexcept {
        return dialogs.restored + transactions.restored + streams.restored + bindings.restored +
               reported_streams.restored;
    }
    std::uint64_t refused() const noexcept {
        return dialogs.refused + transactions.refused + streams.refused + bindings.refused + reported_streams.refused;
    }
    friend bool operator==(const RestoreCounts&, const RestoreCounts&) = default;
};

// Inserts every record into the shard that owns it for shards.size() shards (the dispatch
// functions of daemon/shard: dialogs, transactions and reported streams by Call-ID, streams and
// bindings by media address), bindings before streams, each kind oldest activity first so that
// the tables' expiry order holds across the merge. Call before the shards start. With no shards
// every record is refused.
RestoreCounts restore(const SnapshotFile& file, const std::vector<shard::ShardWorker*>& shards);

// ---- show ----------------------------------------------------------------------------------

// Human-readable JSON (2-space indent): the header, then every record; endpoints as text,
// times as ISO-8601 UTC (null when not set), enums by name.
std::string to_json(const SnapshotFile& file);

}  // namespace hepd::snapshot
