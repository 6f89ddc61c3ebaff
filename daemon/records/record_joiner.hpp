#pragma once
// Joins finished streams and RTCP-reported streams to their finished dialog, by Call-ID and
// dialog identity (MediaBinding::dialog = sip::tag_id of the INVITE's From-tag; a reported
// stream names only the Call-ID). Media and dialogs finish on different shards, in any order:
//  - a stream that finishes first waits for its dialog (at most media_wait, at most
//    max_waiting_media of them in all: the oldest Call-ID's media go first, counted);
//  - a dialog is held for `hold` after it arrived so that media finishing just after it (a
//    stream idles out about when the dialog's linger ends) still join; then its record is due.
//    At most max_held dialogs are held: beyond, the oldest is due at once.
// Time is whatever clock the caller passes (the writer's steady clock, in microseconds); an
// offline run passes no time at all and takes every record at the end (take_all).
#include "records/call_record.hpp"

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

namespace hepd::records {

struct JoinerOptions {
    std::int64_t hold_us = 5'000'000;
    std::int64_t media_wait_us = 4LL * 3600 * 1'000'000;  // timers.max_call_duration
    std::size_t max_waiting_media = 200'000;
    std::size_t max_held = 200'000;
};

// Media that never reached a record.
struct JoinerCounts {
    std::uint64_t unbound_streams = 0;  // no SDP bound the stream to a call (not an error)
    std::uint64_t media_expired = 0;    // waited media_wait for a dialog that never finished
    std::uint64_t media_cap = 0;        // pushed out by max_waiting_media
};

class RecordJoiner {
public:
    explicit RecordJoiner(const JoinerOptions& options = {}) : options_(options) {}

    void add_dialog(DialogFigures dialog, std::int64_t now_us);
    void add_stream(StreamFigures stream, std::int64_t now_us);
    void add_reported(ReportedFigures reported, std::int64_t now_us);

    // Appends the records whose hold has ended by now (in the order their dialogs arrived) and
    // drops media that waited too long.
    void take_due(std::int64_t now_us, std::vector<CallRecord>& out);
    // Appends every held record (end of an offline run, shutdown); waiting media stay.
    void take_all(std::vector<CallRecord>& out);
    // Drops every waiting stream and report, counted as expired; returns how many.
    std::size_t drop_waiting();

    std::size_t held() const noexcept { return held_count_; }
    std::size_t waiting() const noexcept { return waiting_count_; }
    const JoinerCounts& counts() const noexcept { return counts_; }

private:
    struct Held {
        CallRecord record;
        std::uint64_t serial = 0;
    };
    struct Call {
        std::vector<StreamFigures> streams;  // waiting for their dialog
        std::vector<ReportedFigures> reported;
        std::int64_t waiting_since = 0;  // when the first of them arrived (0: none waiting)
        std::vector<Held> held;
    };
    struct Due {
        std::int64_t at = 0;
        std::uint64_t serial = 0;
        std::string call_id;
    };
    struct Waiting {
        std::int64_t since = 0;
        std::string call_id;
    };

    void start_waiting(Call& c, const std::string& call_id, std::int64_t now_us);
    void drop_media(Call& c);
    void release(const std::string& call_id);
    void emit(const std::string& call_id, std::uint64_t serial, std::vector<CallRecord>& out);

    JoinerOptions options_;
    std::unordered_map<std::string, Call> calls_;
    std::deque<Due> due_;          // in arrival order; `at` grows with it
    std::deque<Waiting> waiting_;  // Call-IDs in the order their media started waiting
    std::size_t held_count_ = 0;
    std::size_t waiting_count_ = 0;
    std::uint64_t next_serial_ = 1;
    JoinerCounts counts_;
};

}  // namespace hepd::records
