#pragma once
// Call records of an offline run (`hepd pcap --records PATH`): each shard keeps its events (on its
// own thread, no queue: a capture is read in full), and at the end of the run they are joined
// with the same joiner and written with the same line builder as the daemon's, in record order
// (INVITE time, Call-ID, From-tag), so that the file does not depend on the shard count.
#include "records/call_record.hpp"
#include "records/record_joiner.hpp"
#include "rtp/stream_table.hpp"
#include "sip/dialog_table.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace hepd::records {

// One shard's sinks; forwards every event to `next_*` (the report's collector) as well. `peers`
// names the calls' peer groups (may be null).
class ShardEvents final : public rtp::StreamSink, public sip::DialogSink {
public:
    ShardEvents(rtp::StreamSink* next_streams, sip::DialogSink* next_dialogs, const peer::PeerDirectory* peers)
        : next_streams_(next_streams), next_dialogs_(next_dialogs), peers_(peers) {}

    void on_stream_finished(const rtp::FinishedStream& finished) override;
    void on_reported_stream_finished(const rtp::FinishedReported& finished) override;
    void on_dialog_removed(std::string_view call_id, std::string_view from_tag, const sip::Dialog& dialog,
                           const sip::CallerIdentity& caller, bool evicted) override;
    // End of the run: finished dialogs still lingering in the table have their records too.
    void collect_remaining(const sip::DialogTable& table);

    std::vector<DialogFigures> dialogs;
    std::vector<StreamFigures> streams;
    std::vector<ReportedFigures> reported;

private:
    rtp::StreamSink* next_streams_;
    sip::DialogSink* next_dialogs_;
    const peer::PeerDirectory* peers_;
};

struct OfflineResult {
    std::uint64_t records = 0;
    JoinerCounts joins;
    std::uint64_t unjoined_media = 0;  // streams and reports whose dialog never finished
};

// Joins every shard's events into records, in record order. Moves the events out.
std::vector<CallRecord> join_offline(std::vector<ShardEvents*>& shards, OfflineResult& result);

}  // namespace hepd::records
