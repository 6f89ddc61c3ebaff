#include "records/record_writer.hpp"

#include "core/thread_name.hpp"

#include <chrono>
#include <utility>

namespace hepd::records {

void ShardRecorder::push(RecordEvent event) {
    if (bypass_ != nullptr) {
        bypass_->add(event);
        return;
    }
    auto boxed = std::make_unique<RecordEvent>(std::move(event));
    if (!queue_.try_push(boxed)) dropped_.add();
}

void ShardRecorder::on_stream_finished(const rtp::FinishedStream& finished) { push(stream_figures(finished)); }

void ShardRecorder::on_reported_stream_finished(const rtp::FinishedReported& finished) {
    push(reported_figures(finished));
}

void ShardRecorder::on_dialog_removed(std::string_view call_id, std::string_view from_tag, const sip::Dialog& dialog,
                                      const sip::CallerIdentity& caller, bool evicted) {
    // Only a finished dialog has a record, or one the table's cap pushed out unfinished.
    if (!dialog.finished() && !evicted) return;
    push(dialog_figures(call_id, from_tag, dialog, caller, evicted && !dialog.finished(), peers_));
}

RecordWriter::RecordWriter(RecordWriterOptions options, std::size_t shards, const Clock& steady, const Clock& wall)
    : options_(std::move(options)), steady_(steady), wall_(wall), joiner_(options_.join), file_(options_.file) {
    for (std::size_t i = 0; i < shards; ++i)
        shards_.push_back(std::make_unique<ShardRecorder>(options_.queue_size, options_.peers));
}

// Without stop(), what is held is lost: only the owner knows that the shards have stopped.
RecordWriter::~RecordWriter() { stop_thread(); }

void RecordWriter::start() {
    last_flush_us_ = steady_.now().us;
    thread_ = std::thread([this] {
        name_this_thread("hepd-records");
        run();
    });
}

void RecordWriter::stop_thread() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
}

std::size_t RecordWriter::record_remaining(std::size_t shard, sip::DialogTable& dialogs, rtp::StreamTable& streams) {
    stop_thread();
    drain(steady_.now().us);
    ShardRecorder& recorder = *shards_[shard];
    recorder.bypass_to(this);  // thousands of calls may end here: more than a queue holds
    streams.finish_all(Timestamp{});
    std::size_t ended = 0;
    std::uint64_t in_progress = 0;
    dialogs.for_each_in_full([&](std::string_view call_id, std::string_view from_tag, const sip::Dialog& d,
                                 const sip::SdpSides&, const sip::CallerIdentity& caller) {
        if (d.finished()) {
            recorder.on_dialog_removed(call_id, from_tag, d, caller, false);
            ++ended;
        } else {
            ++in_progress;
        }
    });
    recorder.bypass_to(nullptr);
    stats_.dropped[static_cast<std::size_t>(DropReason::in_progress)].add(in_progress);
    return ended;
}

void RecordWriter::stop() {
    stop_thread();
    if (stopped_) return;
    stopped_ = true;
    const std::int64_t now = steady_.now().us;
    drain(now);
    due_.clear();
    joiner_.take_all(due_);
    write(due_);
    stats_.dropped[static_cast<std::size_t>(DropReason::shutdown)].add(joiner_.drop_waiting());
    // drop_waiting counts them as expired in the joiner: keep that out of media_expired.
    published_joins_.media_expired = joiner_.counts().media_expired;
    file_.flush();
    publish();
}

std::uint64_t RecordWriter::queue_drops() const noexcept {
    std::uint64_t n = 0;
    for (const auto& s : shards_) n += s->dropped();
    return n;
}

void RecordWriter::join(RecordEvent& event, std::int64_t now_us) {
    std::visit(
        [&](auto& e) {
            using T = std::decay_t<decltype(e)>;
            if constexpr (std::is_same_v<T, DialogFigures>) {
                joiner_.add_dialog(std::move(e), now_us);
            } else if constexpr (std::is_same_v<T, StreamFigures>) {
                joiner_.add_stream(std::move(e), now_us);
            } else {
                joiner_.add_reported(std::move(e), now_us);
            }
        },
        event);
}

bool RecordWriter::drain(std::int64_t now_us) {
    bool any = false;
    std::unique_ptr<RecordEvent> event;
    for (auto& s : shards_) {
        while (s->pop(event)) {
            any = true;
            join(*event, now_us);
            event.reset();
        }
    }
    return any;
}

void RecordWriter::write(std::vector<CallRecord>& records) {
    const Timestamp wall = wall_.now();
    for (const CallRecord& r : records) {
        // Empty once every restored call with a record already written has come by again.
        if (!written_.empty() && written_.erase(record_key(r.dialog.call_id, r.dialog.from_tag)) != 0) continue;
        file_.append(record_line(r), wall);
    }
    records.clear();
}

bool RecordWriter::poll() {
    // Rotation by age here too: append() alone would leave an idle file open past its age. And a
    // removed or replaced file is opened again before this pass's lines are written.
    file_.tick(wall_.now());
    const std::int64_t now = steady_.now().us;
    const bool any = drain(now);
    joiner_.take_due(now, due_);
    write(due_);
    if (options_.flush_interval_us == 0 || now - last_flush_us_ >= options_.flush_interval_us) {
        file_.flush();
        last_flush_us_ = now;
    }
    publish();
    return any;
}

// Counters move by differences so that they stay monotonic whatever the sources do.
void RecordWriter::publish() {
    // A counter that mirrors a source's total catches up with it.
    const auto catch_up = [](Counter& c, std::uint64_t total) {
        if (total > c.value()) c.add(total - c.value());
    };
    // One that adds a source's growth to what it counts already, from where it was last read.
    const auto add_growth = [](Counter& c, std::uint64_t total, std::uint64_t& before) {
        if (total > before) c.add(total - before);
        before = total;
    };
    const auto& f = file_.stats();
    catch_up(stats_.written, f.lines);
    catch_up(stats_.bytes, f.bytes);
    catch_up(stats_.rotations, f.rotations);
    catch_up(stats_.write_errors, f.write_errors);
    catch_up(stats_.reopens, f.reopens);
    catch_up(stats_.truncated_lines, f.truncated_lines);
    add_growth(stats_.dropped[static_cast<std::size_t>(DropReason::write_error)], f.lost_lines, published_lost_);
    const auto& j = joiner_.counts();
    add_growth(stats_.dropped[static_cast<std::size_t>(DropReason::media_cap)], j.media_cap,
               published_joins_.media_cap);
    add_growth(stats_.dropped[static_cast<std::size_t>(DropReason::media_expired)], j.media_expired,
               published_joins_.media_expired);
    add_growth(stats_.unbound_streams, j.unbound_streams, published_joins_.unbound_streams);
    catch_up(stats_.dropped[static_cast<std::size_t>(DropReason::queue_full)], queue_drops());
    stats_.held.add(static_cast<std::int64_t>(joiner_.held()) - stats_.held.value());
    stats_.waiting.add(static_cast<std::int64_t>(joiner_.waiting()) - stats_.waiting.value());
}

void RecordWriter::run() {
    // Wakes once a second when idle (holds are seconds long), ten times a second while busy.
    bool busy = false;
    while (true) {
        {
            std::unique_lock lock(mutex_);
            wake_.wait_for(lock, busy ? std::chrono::milliseconds(100) : std::chrono::milliseconds(1000),
                           [this] { return stopping_; });
            if (stopping_) return;
        }
        busy = poll();
    }
}

}  // namespace hepd::records
