#include "records/offline_records.hpp"

#include <algorithm>
#include <limits>

namespace hepd::records {

void ShardEvents::on_stream_finished(const rtp::FinishedStream& finished) {
    streams.push_back(stream_figures(finished));
    if (next_streams_ != nullptr) next_streams_->on_stream_finished(finished);
}

void ShardEvents::on_reported_stream_finished(const rtp::FinishedReported& finished) {
    reported.push_back(reported_figures(finished));
    if (next_streams_ != nullptr) next_streams_->on_reported_stream_finished(finished);
}

void ShardEvents::on_dialog_removed(std::string_view call_id, std::string_view from_tag, const sip::Dialog& dialog,
                                    const sip::CallerIdentity& caller, bool evicted) {
    if (dialog.finished() || evicted)
        dialogs.push_back(dialog_figures(call_id, from_tag, dialog, caller, evicted && !dialog.finished(), peers_));
    if (next_dialogs_ != nullptr) next_dialogs_->on_dialog_removed(call_id, from_tag, dialog, caller, evicted);
}

void ShardEvents::collect_remaining(const sip::DialogTable& table) {
    table.for_each_in_full([&](std::string_view call_id, std::string_view from_tag, const sip::Dialog& d,
                               const sip::SdpSides&, const sip::CallerIdentity& caller) {
        if (d.finished()) dialogs.push_back(dialog_figures(call_id, from_tag, d, caller, false, peers_));
    });
}

std::vector<CallRecord> join_offline(std::vector<ShardEvents*>& shards, OfflineResult& result) {
    JoinerOptions o;
    o.hold_us = 0;
    o.media_wait_us = std::numeric_limits<std::int64_t>::max() / 2;
    o.max_waiting_media = std::numeric_limits<std::size_t>::max();
    o.max_held = std::numeric_limits<std::size_t>::max();
    RecordJoiner joiner(o);
    // Media first, so that every dialog finds all of its own when it arrives; a Call-ID's
    // dialogs all live on one shard, in the order they left its table.
    for (ShardEvents* s : shards) {
        for (auto& f : s->streams) joiner.add_stream(std::move(f), 0);
        for (auto& f : s->reported) joiner.add_reported(std::move(f), 0);
        s->streams.clear();
        s->reported.clear();
    }
    for (ShardEvents* s : shards) {
        for (auto& f : s->dialogs) joiner.add_dialog(std::move(f), 0);
        s->dialogs.clear();
    }
    std::vector<CallRecord> records;
    joiner.take_all(records);
    std::sort(records.begin(), records.end(), record_before);
    // A call held twice (a capture merged with one that overlaps it): its records by their lines,
    // not in the order its dialogs left the table, which the shard count may change.
    for (auto first = records.begin(); first != records.end();) {
        const auto last =
            std::find_if(first + 1, records.end(), [&](const CallRecord& r) { return record_before(*first, r); });
        if (last - first > 1)
            std::sort(first, last,
                      [](const CallRecord& a, const CallRecord& b) { return record_line(a) < record_line(b); });
        first = last;
    }
    result.records = records.size();
    result.joins = joiner.counts();
    result.unjoined_media = joiner.waiting();
    return records;
}

}  // namespace hepd::records
