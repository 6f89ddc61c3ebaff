// Copying records out of a shard, and putting them back into whichever shard owns them now.
#include "shard/dispatch.hpp"
#include "snapshot/snapshot.hpp"

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <string>
#include <string_view>
#include <vector>

namespace hepd::snapshot {

namespace {

// Room kept in a prepared record's Call-ID strings: most Call-IDs fit (longer ones allocate).
constexpr std::size_t kPreparedCallIdBytes = 64;

// Writes record `n` of `records` (n <= size()): over the one there, its strings keeping their
// room, or appended.
template <class Record, class Assign>
void put(ImageRecords<Record>& records, std::size_t n, Assign&& assign) {
    if (n == records.size()) records.emplace_back();
    assign(records[n]);
}

}  // namespace

void capture(const shard::ShardWorker& worker, ShardImage& image) {
    const sip::DialogTable& dialogs = worker.dialogs();
    const rtp::StreamTable& streams = worker.streams();

    std::size_t n = 0;
    dialogs.for_each_in_full([&](std::string_view call_id, std::string_view from_tag, const sip::Dialog& d,
                                 const sip::SdpSides& sdp_sides, const sip::CallerIdentity& caller) {
        put(image.dialogs, n++, [&](DialogRecord& r) {
            r.call_id.assign(call_id);
            r.from_tag.assign(from_tag);
            r.dialog = d;
            r.sdp_sides = sdp_sides;
            r.caller = caller;
        });
    });
    image.dialogs.resize(n);
    n = 0;
    dialogs.transactions().for_each([&](const sip::TransactionKey& key, const sip::Transaction& t) {
        put(image.transactions, n++, [&](TransactionRecord& r) {
            r.key.call_id.assign(key.call_id);
            r.key.cseq = key.cseq;
            r.key.method = key.method;
            r.transaction = t;
        });
    });
    image.transactions.resize(n);
    n = 0;
    // Bindings are captured on their own below.
    streams.for_each([&](const rtp::StreamKey& key, const rtp::Stream& s, const rtp::Binding* /*binding*/) {
        put(image.streams, n++, [&](StreamRecord& r) { r = StreamRecord{key, s}; });
    });
    image.streams.resize(n);
    n = 0;
    streams.for_each_binding(
        [&](const Endpoint& media, const Endpoint& peer, const rtp::Binding& b, bool waiting, bool released) {
            put(image.bindings, n++, [&](BindingRecord& r) { r = BindingRecord{media, peer, b, waiting, released}; });
        });
    image.bindings.resize(n);
    n = 0;
    streams.for_each_reported([&](const rtp::ReportedKey& key, const rtp::ReportedStream& r) {
        put(image.reported_streams, n++, [&](ReportedRecord& out) { out = ReportedRecord{key, r}; });
    });
    image.reported_streams.resize(n);
}

ShardImage capture(const shard::ShardWorker& worker) {
    const sip::DialogTable& dialogs = worker.dialogs();
    const rtp::StreamTable& streams = worker.streams();
    ShardImage image;
    image.dialogs.reserve(dialogs.size());
    image.transactions.reserve(dialogs.transactions().size());
    image.streams.reserve(streams.size());
    image.bindings.reserve(streams.media_size() + streams.pending_size());
    image.reported_streams.reserve(streams.reported_size());
    capture(worker, image);
    return image;
}

ShardImage prepare_image(const RecordCounts& expected) {
    ShardImage image;
    image.dialogs.resize(expected.dialogs);
    for (DialogRecord& r : image.dialogs) r.call_id.reserve(kPreparedCallIdBytes);
    image.transactions.resize(expected.transactions);
    for (TransactionRecord& r : image.transactions) r.key.call_id.reserve(kPreparedCallIdBytes);
    image.streams.resize(expected.streams);
    image.bindings.resize(expected.bindings);
    image.reported_streams.resize(expected.reported_streams);
    return image;
}

RecordCounts image_room(const RecordCounts& captured, const RecordCounts& published) noexcept {
    const auto room = [](std::uint64_t a, std::uint64_t b) {
        const std::uint64_t n = std::max(a, b);
        return n == 0 ? 0 : n + n / 10 + 16;
    };
    return {room(captured.dialogs, published.dialogs), room(captured.transactions, published.transactions),
            room(captured.streams, published.streams), room(captured.bindings, published.bindings),
            room(captured.reported_streams, published.reported_streams)};
}

namespace {

// Indices of `records` by the time their table orders them by (least recent first). Each
// shard's records are already in that order; sorting merges the shards, so that a table that
// expires from its oldest entry (streams, reported streams) meets them in time order.
template <class Records, class Time>
std::vector<std::size_t> by_time(const Records& records, Time&& time_of) {
    std::vector<std::size_t> order(records.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return time_of(records[a]) < time_of(records[b]); });
    return order;
}

void count(RestoreKindCounts& c, bool restored) noexcept {
    if (restored)
        ++c.restored;
    else
        ++c.refused;
}

}  // namespace

RestoreCounts restore(const SnapshotFile& file, const std::vector<shard::ShardWorker*>& shards) {
    RestoreCounts counts;
    const ShardImage& r = file.records;
    const std::size_t n = shards.size();
    if (n == 0 || std::find(shards.begin(), shards.end(), nullptr) != shards.end()) {
        counts.dialogs.refused = r.dialogs.size();
        counts.transactions.refused = r.transactions.size();
        counts.streams.refused = r.streams.size();
        counts.bindings.refused = r.bindings.size();
        counts.reported_streams.refused = r.reported_streams.size();
        return counts;
    }

    for (const std::size_t i :
         by_time(r.dialogs, [](const DialogRecord& d) { return d.dialog.time(sip::DialogTime::last_activity); })) {
        const DialogRecord& d = r.dialogs[i];
        sip::DialogTable& table = shards[shard::shard_of_call(d.call_id, n)]->dialogs();
        count(counts.dialogs, table.restore(d.call_id, d.from_tag, d.dialog, d.sdp_sides, d.caller));
    }
    for (const std::size_t i :
         by_time(r.transactions, [](const TransactionRecord& t) { return t.transaction.last_activity; })) {
        const TransactionRecord& t = r.transactions[i];
        sip::TransactionTable& table = shards[shard::shard_of_call(t.key.call_id, n)]->dialogs().transactions();
        count(counts.transactions, table.restore(t.key, t.transaction));
    }
    // Bindings first: a stream inserted afterwards joins the binding of its media address.
    for (const std::size_t i : by_time(r.bindings, [](const BindingRecord& b) { return b.binding.time; })) {
        const BindingRecord& b = r.bindings[i];
        rtp::StreamTable& table = shards[shard::shard_of_media(b.media, n)]->streams();
        // Every binding is parked until its streams arrive, so one already there is a second
        // record for the same address pair.
        const bool fresh = table.find_binding(b.media, b.peer) == nullptr;
        if (fresh) table.insert_binding(b.media, b.peer, b.binding, b.released);
        count(counts.bindings, fresh);
    }
    for (const std::size_t i : by_time(r.streams, [](const StreamRecord& s) { return s.stream.last; })) {
        const StreamRecord& s = r.streams[i];
        rtp::StreamTable& table = shards[shard::shard_of_media(s.key.dst, n)]->streams();
        count(counts.streams, table.insert(s.key, s.stream));
    }
    for (shard::ShardWorker* w : shards) w->streams().drop_released_unused();
    for (const std::size_t i : by_time(r.reported_streams, [](const ReportedRecord& s) { return s.stream.last; })) {
        const ReportedRecord& s = r.reported_streams[i];
        // Beside the streams of its reporter (files before the reporter was kept: by call).
        const std::size_t at = s.stream.reporter.port != 0 ? shard::shard_of_media(s.stream.reporter, n)
                                                           : shard::shard_of_call(s.key.call_id, n);
        count(counts.reported_streams, shards[at]->streams().insert_reported(s.key, s.stream));
    }
    return counts;
}

}  // namespace hepd::snapshot
