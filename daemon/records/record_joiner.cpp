#include "records/record_joiner.hpp"

#include <algorithm>
#include <utility>

namespace hepd::records {

void RecordJoiner::start_waiting(Call& c, const std::string& call_id, std::int64_t now_us) {
    if (c.waiting_since != 0) return;
    c.waiting_since = now_us == 0 ? 1 : now_us;
    waiting_.push_back(Waiting{c.waiting_since, call_id});
}

void RecordJoiner::add_stream(StreamFigures stream, std::int64_t now_us) {
    if (stream.call_id.empty()) {
        ++counts_.unbound_streams;
        return;
    }
    const std::string id = stream.call_id;
    Call& c = calls_[id];
    // The newest held dialog of this Call-ID that the stream's binding names.
    for (auto it = c.held.rbegin(); it != c.held.rend(); ++it) {
        if (it->record.dialog.dialog_id == stream.dialog_id) {
            it->record.streams.push_back(std::move(stream));
            return;
        }
    }
    start_waiting(c, id, now_us);
    c.streams.push_back(std::move(stream));
    ++waiting_count_;
    while (waiting_count_ > options_.max_waiting_media && !waiting_.empty()) {
        const Waiting oldest = std::move(waiting_.front());
        waiting_.pop_front();
        auto found = calls_.find(oldest.call_id);
        if (found == calls_.end() || found->second.waiting_since != oldest.since) continue;  // taken meanwhile
        counts_.media_cap += found->second.streams.size() + found->second.reported.size();
        drop_media(found->second);
        release(oldest.call_id);
    }
}

void RecordJoiner::add_reported(ReportedFigures reported, std::int64_t now_us) {
    const std::string id = reported.call_id;
    Call& c = calls_[id];
    if (!c.held.empty()) {
        c.held.back().record.reported.push_back(std::move(reported));
        return;
    }
    start_waiting(c, id, now_us);
    c.reported.push_back(std::move(reported));
    ++waiting_count_;
    while (waiting_count_ > options_.max_waiting_media && !waiting_.empty()) {
        const Waiting oldest = std::move(waiting_.front());
        waiting_.pop_front();
        auto found = calls_.find(oldest.call_id);
        if (found == calls_.end() || found->second.waiting_since != oldest.since) continue;
        counts_.media_cap += found->second.streams.size() + found->second.reported.size();
        drop_media(found->second);
        release(oldest.call_id);
    }
}

void RecordJoiner::add_dialog(DialogFigures dialog, std::int64_t now_us) {
    const std::string id = dialog.call_id;
    Call& c = calls_[id];
    Held h;
    h.serial = next_serial_++;
    h.record.dialog = std::move(dialog);
    // Its streams (by dialog identity) and every report of the Call-ID that waited for it.
    auto mine = std::stable_partition(c.streams.begin(), c.streams.end(),
                                      [&](const StreamFigures& s) { return s.dialog_id != h.record.dialog.dialog_id; });
    waiting_count_ -= static_cast<std::size_t>(c.streams.end() - mine);
    std::move(mine, c.streams.end(), std::back_inserter(h.record.streams));
    c.streams.erase(mine, c.streams.end());
    waiting_count_ -= c.reported.size();
    std::move(c.reported.begin(), c.reported.end(), std::back_inserter(h.record.reported));
    c.reported.clear();
    if (c.streams.empty()) c.waiting_since = 0;
    due_.push_back(Due{now_us + options_.hold_us, h.serial, id});
    c.held.push_back(std::move(h));
    ++held_count_;
}

void RecordJoiner::drop_media(Call& c) {
    waiting_count_ -= c.streams.size() + c.reported.size();
    c.streams.clear();
    c.reported.clear();
    c.waiting_since = 0;
}

void RecordJoiner::release(const std::string& call_id) {
    auto it = calls_.find(call_id);
    if (it != calls_.end() && it->second.held.empty() && it->second.waiting_since == 0) calls_.erase(it);
}

void RecordJoiner::emit(const std::string& call_id, std::uint64_t serial, std::vector<CallRecord>& out) {
    auto it = calls_.find(call_id);
    if (it == calls_.end()) return;
    auto& held = it->second.held;
    auto h = std::find_if(held.begin(), held.end(), [&](const Held& x) { return x.serial == serial; });
    if (h == held.end()) return;
    sort_media(h->record);
    out.push_back(std::move(h->record));
    held.erase(h);
    --held_count_;
    release(call_id);
}

void RecordJoiner::take_due(std::int64_t now_us, std::vector<CallRecord>& out) {
    while (!due_.empty() && (due_.front().at <= now_us || held_count_ > options_.max_held)) {
        const Due d = std::move(due_.front());
        due_.pop_front();
        emit(d.call_id, d.serial, out);
    }
    while (!waiting_.empty() && waiting_.front().since + options_.media_wait_us <= now_us) {
        const Waiting oldest = std::move(waiting_.front());
        waiting_.pop_front();
        auto found = calls_.find(oldest.call_id);
        if (found == calls_.end() || found->second.waiting_since != oldest.since) continue;
        counts_.media_expired += found->second.streams.size() + found->second.reported.size();
        drop_media(found->second);
        release(oldest.call_id);
    }
}

void RecordJoiner::take_all(std::vector<CallRecord>& out) {
    while (!due_.empty()) {
        const Due d = std::move(due_.front());
        due_.pop_front();
        emit(d.call_id, d.serial, out);
    }
}

std::size_t RecordJoiner::drop_waiting() {
    const std::size_t n = waiting_count_;
    counts_.media_expired += n;
    for (auto it = calls_.begin(); it != calls_.end();) {
        drop_media(it->second);
        it = it->second.held.empty() ? calls_.erase(it) : std::next(it);
    }
    waiting_.clear();
    return n;
}

}  // namespace hepd::records
