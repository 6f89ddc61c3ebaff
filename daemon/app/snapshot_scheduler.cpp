#include "app/snapshot_scheduler.hpp"

#include "core/log.hpp"
#include "core/thread_name.hpp"

#include <spdlog/spdlog.h>

#include <unistd.h>

#include <cerrno>
#include <utility>

namespace hepd::app {

SnapshotScheduler::SnapshotScheduler(std::string path, std::chrono::microseconds interval, Capture capture,
                                     SnapshotState& state, const Clock& wall)
    : path_(std::move(path)), interval_(interval), capture_(std::move(capture)), state_(state), wall_(wall) {}

SnapshotScheduler::~SnapshotScheduler() { stop(); }

void SnapshotScheduler::start() {
    if (interval_.count() <= 0 || thread_.joinable()) return;
    {
        const std::lock_guard lock(mutex_);
        stop_requested_ = false;
    }
    thread_ = std::thread([this] {
        name_this_thread("hepd-snapshot");
        run();
    });
}

void SnapshotScheduler::stop() {
    {
        const std::lock_guard lock(mutex_);
        stop_requested_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
}

void SnapshotScheduler::run() {
    using Steady = std::chrono::steady_clock;
    auto due = Steady::now() + interval_;
    std::unique_lock lock(mutex_);
    while (!wake_.wait_until(lock, due, [this] { return stop_requested_; })) {
        lock.unlock();
        write_now();
        lock.lock();
        // Writes never overlap: the intervals a slow one ran into are skipped.
        due += interval_;
        const auto now = Steady::now();
        if (due <= now) {
            const auto missed = (now - due) / interval_ + 1;
            due += missed * interval_;
            spdlog::warn("snapshot still being written when the next was due; skipping {} interval{}", missed,
                         missed == 1 ? "" : "s");
        }
    }
}

bool SnapshotScheduler::write_now() {
    const auto copy_start = std::chrono::steady_clock::now();
    snapshot::SnapshotMeta meta;
    meta.captured_at = wall_.now();  // the records of its calls are written after this (restore)
    const std::vector<snapshot::ShardImage> images = capture_();
    const auto t0 = std::chrono::steady_clock::now();
    const double copy_seconds = std::chrono::duration<double>(t0 - copy_start).count();
    meta.written_at = wall_.now();
    const auto result = snapshot::write_snapshot(images, path_, meta);
    state_.last_duration_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!result) {
        state_.failures.fetch_add(1);
        spdlog::error("snapshot not written: {}", result.error().message);
        return false;
    }
    state_.last_success_unix_seconds = wall_.now().as_seconds();
    spdlog::info("snapshot written to {}: {} bytes, {} dialogs, {} streams in {:.3f} s (tables copied in {:.3f} s)",
                 path_, result->bytes, result->counts.dialogs, result->counts.streams,
                 state_.last_duration_seconds.load(), copy_seconds);
    return true;
}

void SnapshotScheduler::discard() {
    if (::unlink(path_.c_str()) == 0) {
        spdlog::info(
            "snapshot {} removed: no final snapshot was written, and an older one would bring back calls that "
            "ended since",
            path_);
    } else if (errno != ENOENT) {
        spdlog::warn("cannot remove the snapshot {}: {}; the next start restores it", path_, error_text(errno));
    }
}

}  // namespace hepd::app
