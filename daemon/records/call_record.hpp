#pragma once
// A call record: one finished dialog with the streams that joined it, as one JSON line (schema in
// RECORDS.md, versioned by kRecordVersion). The figures are plain copies taken on the shard
// thread when a dialog or stream leaves its table, so the join and the text can be made on
// another thread (record_writer.hpp) or at the end of an offline run (offline_records.hpp).
#include "core/address.hpp"
#include "core/time.hpp"
#include "peer/peer_groups.hpp"
#include "rtp/stream_table.hpp"
#include "sip/dialog.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hepd::records {

// Bumped when a field changes meaning or goes away; added fields keep the version.
inline constexpr int kRecordVersion = 1;

struct DialogFigures {
    std::string call_id;
    std::string from_tag;
    std::uint32_t dialog_id = 0;  // sip::tag_id(from_tag): what MediaBinding::dialog names
    sip::Dialog dialog;
    sip::CallerIdentity caller{};
    bool evicted = false;  // removed unfinished by the table cap: outcome "evicted"
    // Peer groups (`peers:`) of the caller and callee side, "other" for a far end in none; both
    // empty (and not written) when no group is configured.
    std::string caller_group;
    std::string callee_group;
};

// A measured RTP stream, as it finished.
struct StreamFigures {
    std::string call_id;          // of its binding; empty when it never joined a dialog
    std::uint32_t dialog_id = 0;  // Binding::dialog
    rtp::StreamKey key;
    Timestamp first;
    Timestamp last;
    std::uint32_t packets = 0;
    rtp::StreamSummary summary;
    rtp::ReceiverView receiver;  // what the receiver's RTCP said about it
    rtp::FinishReason reason = rtp::FinishReason::idle;
};

// A receiver's view of a stream known only from RTCP-JSON reports (rtpengine, Asterisk).
struct ReportedFigures {
    std::string call_id;
    std::uint32_t ssrc = 0;
    Endpoint reporter;
    std::uint32_t reporter_ssrc = 0;
    Timestamp first;
    Timestamp last;
    rtp::ReceiverView view;
    rtp::ReportedSummary summary;  // the figures the stream statistics took (source="rtcp")
    rtp::FinishReason reason = rtp::FinishReason::idle;
};

// `peers` names the dialog's groups; null (or no group configured): no groups in the record.
DialogFigures dialog_figures(std::string_view call_id, std::string_view from_tag, const sip::Dialog& dialog,
                             const sip::CallerIdentity& caller, bool evicted, const peer::PeerDirectory* peers);
StreamFigures stream_figures(const rtp::FinishedStream& finished);
ReportedFigures reported_figures(const rtp::FinishedReported& finished);

struct CallRecord {
    DialogFigures dialog;
    std::vector<StreamFigures> streams;     // ordered by first packet, then key
    std::vector<ReportedFigures> reported;  // ordered by first report, then SSRC and reporter
};

// Puts the streams and reports in their record order (independent of arrival order).
void sort_media(CallRecord& record);
// Record order of an offline run: INVITE time, then Call-ID and From-tag.
bool record_before(const CallRecord& a, const CallRecord& b) noexcept;

// The record as one line of JSON, with its '\n'.
std::string record_line(const CallRecord& record);
// How every line of this call's record begins, up to its key: `{"v":1,"call_id":"...","from_tag":"...",`
// (the same escaping as the line). Finds a call's record among written lines (restore).
std::string record_key(std::string_view call_id, std::string_view from_tag);

// Appends `text` as a JSON string (quotes included): control bytes escaped, bytes that are not
// valid UTF-8 replaced by U+FFFD, so that every line parses whatever the packets carried.
void append_json_string(std::string& out, std::string_view text);

}  // namespace hepd::records
