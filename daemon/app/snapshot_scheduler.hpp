#pragma once
// Periodic snapshots on a thread of their own. Capturing the tables waits for every shard and
// writing the file waits for the disk; neither may hold up the io thread, which serves every TCP
// connection.
#include "core/time.hpp"
#include "snapshot/snapshot.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace hepd::app {

// Snapshot figures the exporter reads from the scrape threads.
struct SnapshotState {
    std::atomic<double> last_duration_seconds{0};
    std::atomic<std::uint64_t> failures{0};
    std::atomic<double> last_success_unix_seconds{0};
    std::atomic<double> last_shard_pause_seconds{0};  // set by the capture callback
};

class SnapshotScheduler {
public:
    // Copies every shard's tables, one image per shard (may wait for the shards).
    using Capture = std::function<std::vector<snapshot::ShardImage>()>;

    // interval <= 0: no periodic snapshots (write_now() still writes).
    SnapshotScheduler(std::string path, std::chrono::microseconds interval, Capture capture, SnapshotState& state,
                      const Clock& wall);
    ~SnapshotScheduler();
    SnapshotScheduler(const SnapshotScheduler&) = delete;
    SnapshotScheduler& operator=(const SnapshotScheduler&) = delete;

    // Starts the thread: the first snapshot one interval from now. A snapshot that is still being
    // taken when the next one is due makes that one skipped, with a warning.
    void start();
    // Wakes the thread and joins it without waiting out the interval; a snapshot under way is
    // completed first. Idempotent; the destructor does it too.
    void stop();
    // Captures and writes on the calling thread (the final snapshot, once stopped); false when
    // the snapshot was not written (logged, counted in failures).
    bool write_now();
    // A clean stop without a final snapshot (state.snapshot_on_shutdown false, or write_now()
    // failed): the last periodic one is removed, once stopped. Restored at the next start it
    // would bring back calls that ended since, and write their records a second time.
    void discard();

private:
    void run();

    const std::string path_;
    const std::chrono::microseconds interval_;
    const Capture capture_;
    SnapshotState& state_;
    const Clock& wall_;

    std::mutex mutex_;
    std::condition_variable wake_;
    bool stop_requested_ = false;  // guarded by mutex_
    std::thread thread_;
};

}  // namespace hepd::app
