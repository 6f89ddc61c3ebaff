#pragma once
// Live call records: each shard hands compact events (a dialog that left its table, a stream or
// RTCP-reported stream that finished) to its own bounded queue (shard/spsc_queue.hpp); one
// writer thread joins them (record_joiner.hpp), builds the lines (call_record.hpp) and appends
// them to the rotated file (record_file.hpp). A full queue drops the event and counts it: a shard
// never waits for the writer, whatever the disk does.
//
// When a record is written: `hold` after its dialog reached the writer, which is when the dialog
// left the shard's table (its linger over, or evicted), give or take one poll of the writer.
#include "core/stats.hpp"
#include "core/time.hpp"
#include "records/call_record.hpp"
#include "records/drop_reason.hpp"
#include "records/record_file.hpp"
#include "records/record_joiner.hpp"
#include "rtp/stream_table.hpp"
#include "shard/spsc_queue.hpp"
#include "sip/dialog_table.hpp"

#include <array>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>
#include <variant>
#include <vector>

namespace hepd::records {

struct RecordStats {
    Counter written;  // lines written to the file
    Counter bytes;
    Counter rotations;
    Counter write_errors;
    Counter reopens;          // the file was removed or replaced under the writer and opened again
    Counter truncated_lines;  // partial last lines (a crash in a write) cut off the file at its opening
    std::array<Counter, kDropReasonCount> dropped{};
    Counter unbound_streams;  // finished streams that no SDP bound to a call (not records)
    Gauge held;               // dialogs waiting out their hold
    Gauge waiting;            // finished streams and reports waiting for their dialog
};

struct RecordWriterOptions {
    RecordFileOptions file;
    JoinerOptions join;
    std::size_t queue_size = 16384;
    std::int64_t flush_interval_us = 1'000'000;  // 0: after every batch
    const peer::PeerDirectory* peers = nullptr;  // names the calls' peer groups; not owned
};

using RecordEvent = std::variant<DialogFigures, StreamFigures, ReportedFigures>;

// One shard's end of the queue: the tables' sinks. Called on the shard's thread only.
class RecordWriter;

class ShardRecorder final : public rtp::StreamSink, public sip::DialogSink {
public:
    ShardRecorder(std::size_t queue_size, const peer::PeerDirectory* peers) : queue_(queue_size), peers_(peers) {}

    void on_stream_finished(const rtp::FinishedStream& finished) override;
    void on_reported_stream_finished(const rtp::FinishedReported& finished) override;
    void on_dialog_removed(std::string_view call_id, std::string_view from_tag, const sip::Dialog& dialog,
                           const sip::CallerIdentity& caller, bool evicted) override;

    std::uint64_t dropped() const noexcept { return dropped_.value(); }
    // Writer side.
    bool pop(std::unique_ptr<RecordEvent>& out) noexcept { return queue_.try_pop(out); }
    // Once the writer's thread has stopped: events go to it directly, no queue to fill.
    void bypass_to(RecordWriter* writer) noexcept { bypass_ = writer; }

private:
    void push(RecordEvent event);

    shard::SpscQueue<std::unique_ptr<RecordEvent>> queue_;
    RecordWriter* bypass_ = nullptr;
    const peer::PeerDirectory* peers_;
    Counter dropped_;
};

class RecordWriter {
public:
    // `steady` times the holds; `wall` dates rotations and measures file age.
    RecordWriter(RecordWriterOptions options, std::size_t shards, const Clock& steady, const Clock& wall);
    ~RecordWriter();
    RecordWriter(const RecordWriter&) = delete;
    RecordWriter& operator=(const RecordWriter&) = delete;

    ShardRecorder& shard(std::size_t i) noexcept { return *shards_[i]; }
    const std::string& path() const noexcept { return file_.path(); }
    std::size_t shard_count() const noexcept { return shards_.size(); }

    // Before start(): calls restored from a snapshot whose records were written after it was
    // taken (record_key()s, found by find_written()): their records are not written again.
    void skip_written(std::unordered_set<std::string> keys) { written_ = std::move(keys); }

    void start();
    // A clean stop without a final snapshot, after the shards have stopped and before stop():
    // the tables' content has no restart to go on in. The shard's streams are finished
    // (`flushed`, as at the end of a capture) and every call that ended is recorded; the calls
    // still in progress have no record, counted (in_progress). Returns how many were ended.
    std::size_t record_remaining(std::size_t shard, sip::DialogTable& dialogs, rtp::StreamTable& streams);
    // After the shards have stopped: drains the queues, writes every held record, flushes.
    void stop();
    // One pass of the writer's loop (the thread runs it; tests may, without the thread); true
    // when it found events.
    bool poll();

    // Readable from any thread (the metrics scrape); dropped[queue_full] is summed from the shards.
    const RecordStats& stats() const noexcept { return stats_; }
    std::uint64_t queue_drops() const noexcept;

    // An event from a shard once the thread has stopped (ShardRecorder::bypass_to).
    void add(RecordEvent& event) { join(event, steady_.now().us); }

private:
    void join(RecordEvent& event, std::int64_t now_us);
    void run();
    void stop_thread();
    bool drain(std::int64_t now_us);
    void write(std::vector<CallRecord>& records);
    void publish();

    RecordWriterOptions options_;
    const Clock& steady_;
    const Clock& wall_;
    std::vector<std::unique_ptr<ShardRecorder>> shards_;
    RecordJoiner joiner_;
    RecordFile file_;
    RecordStats stats_;
    std::uint64_t published_lost_ = 0;
    JoinerCounts published_joins_;
    std::int64_t last_flush_us_ = 0;
    std::vector<CallRecord> due_;
    std::unordered_set<std::string> written_;  // skip_written()
    bool stopped_ = false;                     // stop() has run

    std::mutex mutex_;
    std::condition_variable wake_;
    bool stopping_ = false;
    std::thread thread_;
};

}  // namespace hepd::records
