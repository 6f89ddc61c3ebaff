// Restore: every record lands in the shard that owns it for the current shard count, the tables
// refuse what they must, and a restart in the middle of live calls loses nothing.
#include "gen/call_generator.hpp"
#include "sample_records.hpp"
#include "shard/dispatch.hpp"
#include "snapshot/snapshot.hpp"
#include "temp_dir.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

using namespace hepd;
using namespace hepd::snapshot;
using namespace hepd::snapshot::test;

namespace {

using StreamId = std::tuple<Endpoint, Endpoint, std::uint32_t>;
using DialogId = std::pair<std::string, std::string>;

// Everything a shard leaves behind: dialogs when they leave the table, streams when they finish.
class Recorder final : public rtp::StreamSink, public sip::DialogSink {
public:
    void on_stream_finished(const rtp::FinishedStream& f) override {
        const StreamId id{f.key.src, f.key.dst, f.key.ssrc};
        CHECK(streams.count(id) == 0);
        streams[id] = f.stream;
        stream_calls[id] = f.binding != nullptr ? std::string(f.binding->call_id.view()) : std::string();
    }
    void on_dialog_removed(std::string_view call_id, std::string_view from_tag, const sip::Dialog& d,
                           const sip::CallerIdentity& /*caller*/, bool /*evicted*/) override {
        dialogs[{std::string(call_id), std::string(from_tag)}] = d;
    }
    std::map<DialogId, sip::Dialog> dialogs;
    std::map<StreamId, rtp::Stream> streams;
    std::map<StreamId, std::string> stream_calls;
};

struct Shards {
    std::vector<std::unique_ptr<Recorder>> recorders;
    std::vector<std::unique_ptr<shard::ShardWorker>> owned;
    std::vector<shard::ShardWorker*> raw;

    explicit Shards(std::size_t n, const shard::ShardConfig& config = {}) {
        for (std::size_t i = 0; i < n; ++i) {
            recorders.push_back(std::make_unique<Recorder>());
            owned.push_back(std::make_unique<shard::ShardWorker>(config, recorders.back().get()));
            owned.back()->dialogs().set_sink(recorders.back().get());
            raw.push_back(owned.back().get());
        }
    }
    std::vector<const shard::ShardWorker*> readonly() const { return {raw.begin(), raw.end()}; }
};

// Feeds shards in-line, as the pipeline does but on one thread: datagrams to shard_of(), media
// bindings straight to the shard of their address, the packet clock every 100 ms.
class Router final : public shard::BindingSink {
public:
    explicit Router(std::vector<shard::ShardWorker*> shards) : shards_(std::move(shards)) {}
    void send(const MediaBinding& b) override { shards_[shard::shard_of_media(b.media, shards_.size())]->bind(b); }
    void feed(const shard::Datagram& d, Timestamp& next_tick) {
        if (d.time >= next_tick) {
            for (auto* w : shards_) w->advance(d.time, *this);
            next_tick = Timestamp{d.time.us + 100'000};
        }
        shards_[shard::shard_of(d, shards_.size())]->process(d, *this);
    }
    void finish(Timestamp end) {
        for (auto* w : shards_) w->finish(end);
    }

private:
    std::vector<shard::ShardWorker*> shards_;
};

struct Packet {
    Timestamp time;
    Endpoint src;
    Endpoint dst;
    std::string payload;
};

shard::Datagram datagram(const Packet& p) {
    shard::Datagram d;
    d.time = p.time;
    d.src = p.src;
    d.dst = p.dst;
    d.kind = (p.dst.port == 5060 || p.src.port == 5060) ? PayloadClass::sip : PayloadClass::rtp;
    d.payload = as_bytes(p.payload);
    return d;
}

struct Outcome {
    std::map<DialogId, sip::Dialog> dialogs;
    std::map<StreamId, rtp::Stream> streams;
    std::map<StreamId, std::string> stream_calls;

    void take(const Shards& s) {
        for (std::size_t i = 0; i < s.raw.size(); ++i) {
            const Recorder& r = *s.recorders[i];
            for (const auto& [k, v] : r.dialogs) CHECK(dialogs.emplace(k, v).second);
            for (const auto& [k, v] : r.streams) CHECK(streams.emplace(k, v).second);
            stream_calls.insert(r.stream_calls.begin(), r.stream_calls.end());
        }
    }
    void take_remaining(const Shards& s) {
        for (const auto* w : s.raw)
            w->dialogs().for_each([&](std::string_view c, std::string_view f, const sip::Dialog& d) {
                CHECK(dialogs.emplace(DialogId{std::string(c), std::string(f)}, d).second);
            });
    }
};

gen::CorpusOptions corpus() {
    gen::CorpusOptions o;
    o.calls = 160;
    o.media_seconds = 2.0;
    o.loss_percent = 3;
    o.duplicate_percent = 1;
    o.reorder_percent = 2;
    o.jitter_ms = 6;
    o.failed_percent = 10;
    o.cancelled_percent = 10;
    o.call_interval_us = 25'000;
    return o;
}

std::vector<Packet> packets(const gen::CorpusOptions& o, gen::Truth& truth) {
    std::vector<Packet> out;
    truth = gen::generate(o, [&](Timestamp t, const Endpoint& s, const Endpoint& d, ByteSpan p) {
        out.push_back(Packet{t, s, d, std::string(as_text(p))});
    });
    return out;
}

// Media bindings across all shards: still waiting for a stream, and released by their
// dialog's end (hepd_rtp_pending_bindings, hepd_rtp_binding_events_total{event="released"}).
struct BindingFigures {
    std::int64_t pending = 0;
    std::uint64_t released = 0;

    BindingFigures() = default;
    explicit BindingFigures(const Shards& s) {
        for (const auto* w : s.raw) {
            pending += w->streams().stats().pending_bindings.value();
            released += w->streams().stats().bindings_released.value();
        }
    }
};

// A SIP message between two of the hosts of relayed_call(), with SDP naming `media` if given.
std::string sip_text(std::string_view first_line, std::string_view cseq, std::string_view to_tag,
                     std::string_view branch, std::string_view media = {}) {
    std::string body;
    if (!media.empty()) {
        const std::size_t colon = media.rfind(':');
        const std::string host(media.substr(0, colon));
        body = "v=0\r\no=- 1 1 IN IP4 " + host + "\r\ns=-\r\nc=IN IP4 " + host + "\r\nt=0 0\r\nm=audio " +
               std::string(media.substr(colon + 1)) + " RTP/AVP 8\r\n";
    }
    std::string out = std::string(first_line) + "\r\n";
    out += "Via: SIP/2.0/UDP 192.0.2.10:5060;branch=" + std::string(branch) + "\r\n";
    out += "From: <sip:alice@example.net>;tag=caller-tag\r\n";
    out += "To: <sip:bob@example.net>" + (to_tag.empty() ? std::string() : ";tag=" + std::string(to_tag)) + "\r\n";
    out += "Call-ID: relayed-1@example.net\r\nCSeq: " + std::string(cseq) + "\r\n";
    if (!body.empty()) out += "Content-Type: application/sdp\r\n";
    out += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    return out;
}

// A call relayed by a proxy that anchors media (rtpengine): caller A, proxy P, callee B, four
// media addresses on two hops. Answered at 0.9 s, hung up at 10 s.
std::vector<Packet> relayed_call() {
    const Endpoint a = ep("192.0.2.10:5060");
    const Endpoint p = ep("192.0.2.99:5060");
    const Endpoint b = ep("192.0.2.20:5060");
    const auto at = [](std::int64_t ms) { return Timestamp{1'700'000'000'000'000 + ms * 1000}; };
    const std::string invite = "INVITE sip:bob@example.net SIP/2.0";
    const std::string ok = "SIP/2.0 200 OK";
    const std::string ack = "ACK sip:bob@example.net SIP/2.0";
    const std::string bye = "BYE sip:bob@example.net SIP/2.0";
    return {
        {at(0), a, p, sip_text(invite, "1 INVITE", "", "z9hG4bK-a1", "192.0.2.10:49170")},
        {at(5), p, b, sip_text(invite, "1 INVITE", "", "z9hG4bK-p1", "192.0.2.99:20000")},
        {at(900), b, p, sip_text(ok, "1 INVITE", "tt", "z9hG4bK-p1", "192.0.2.20:3456")},
        {at(905), p, a, sip_text(ok, "1 INVITE", "tt", "z9hG4bK-a1", "192.0.2.99:20002")},
        {at(910), a, p, sip_text(ack, "1 ACK", "tt", "z9hG4bK-a2")},
        {at(915), p, b, sip_text(ack, "1 ACK", "tt", "z9hG4bK-p2")},
        // The restart comes here.
        {at(10'000), a, p, sip_text(bye, "2 BYE", "tt", "z9hG4bK-a3")},
        {at(10'005), p, b, sip_text(bye, "2 BYE", "tt", "z9hG4bK-p3")},
        {at(10'010), b, p, sip_text(ok, "2 BYE", "tt", "z9hG4bK-p3")},
        {at(10'015), p, a, sip_text(ok, "2 BYE", "tt", "z9hG4bK-a3")},
    };
}

// Runs the shards' timers to 40 s after `last`, the last message: past the linger (32 s) of
// every dialog that ended, which then leaves its table and ends its media bindings.
void linger_out(const Shards& s, Router& router, Timestamp last) {
    for (auto* w : s.raw) w->advance(Timestamp{last.us + 40'000'000}, router);
}

}  // namespace

TEST_CASE("a call restored mid-way releases its media bindings when it ends", "[snapshot][restore][media]") {
    // The dialog's SDP sides travel with it: at its end the owners of its media addresses are
    // told, so its bindings do not wait as pending until pending_media_timeout (4 h).
    const std::size_t target = GENERATE(std::size_t{1}, std::size_t{2});
    INFO("restored into " << target << " shards");
    const std::vector<Packet> call = relayed_call();
    const std::size_t cut = 6;

    Shards reference(2);
    {
        Router router(reference.raw);
        Timestamp tick{};
        for (const Packet& p : call) router.feed(datagram(p), tick);
        linger_out(reference, router, call.back().time);
    }
    const BindingFigures uninterrupted(reference);
    REQUIRE(uninterrupted.released == 4);  // one binding for each of the four addresses
    CHECK(uninterrupted.pending == 0);

    Shards before(2);
    Timestamp tick{};
    {
        Router router(before.raw);
        for (std::size_t i = 0; i < cut; ++i) router.feed(datagram(call[i]), tick);
    }
    CHECK(BindingFigures(before).pending == 4);  // no RTP came
    const auto file =
        decode_snapshot(as_bytes(encode_snapshot({capture(*before.raw[0]), capture(*before.raw[1])}, {})));
    REQUIRE(file.ok());
    REQUIRE(file->records.dialogs.size() == 1);
    CHECK(std::count_if(file->records.dialogs[0].sdp_sides.begin(), file->records.dialogs[0].sdp_sides.end(),
                        [](const sip::SdpSide& s) { return s.hop != 0; }) == 4);

    Shards after(target);
    const RestoreCounts counts = restore(*file, after.raw);
    CHECK(counts.refused() == 0);
    CHECK(BindingFigures(after).pending == BindingFigures(before).pending);
    Router router(after.raw);
    for (std::size_t i = cut; i < call.size(); ++i) router.feed(datagram(call[i]), tick);
    linger_out(after, router, call.back().time);

    const BindingFigures restarted(after);
    CHECK(restarted.pending == 0);
    CHECK(restarted.released == uninterrupted.released);
    std::size_t dialogs = 0;
    for (const auto* w : after.raw) dialogs += w->dialogs().size();
    CHECK(dialogs == 0);
}

TEST_CASE("a binding released while its stream lives is restored released", "[snapshot][restore][media]") {
    // The dialog ended while RTP still flowed: the binding stays for its stream and goes with it.
    // Restored unreleased, it would wait as pending for pending_media_timeout (4 h) instead.
    const bool with_streams = GENERATE(true, false);
    INFO((with_streams ? "streams restored" : "streams not in the file"));
    const Endpoint media = ep("192.0.2.99:20002");
    const Endpoint sender = ep("192.0.2.10:49170");
    const Timestamp t0{1'700'000'000'000'000};
    MediaBinding bind;
    bind.media = media;
    bind.time = t0;
    bind.call_id = "released-1@example.net";
    bind.dialog = 7;
    const std::string rtp =
        std::string("\x80\x08\x00\x01\x00\x00\x00\xa0\x00\x00\x00\x2a", 12) + std::string(160, '\xd5');
    shard::Datagram packet;
    packet.time = Timestamp{t0.us + 20'000};
    packet.src = sender;
    packet.dst = media;
    packet.kind = PayloadClass::rtp;
    packet.payload = as_bytes(rtp);

    Shards before(1);
    Router router(before.raw);
    before.raw[0]->bind(bind);
    before.raw[0]->process(packet, router);
    MediaBinding unbind = bind;
    unbind.dialog_ended = true;
    unbind.time = Timestamp{t0.us + 40'000};
    before.raw[0]->bind(unbind);
    REQUIRE(before.raw[0]->streams().size() == 1);
    REQUIRE(BindingFigures(before).pending == 0);   // in use by its stream
    REQUIRE(BindingFigures(before).released == 0);  // not yet: its stream lives

    auto file = decode_snapshot(as_bytes(encode_snapshot({capture(*before.raw[0])}, {})));
    REQUIRE(file.ok());
    REQUIRE(file->records.bindings.size() == 1);
    CHECK(file->records.bindings[0].released);
    if (!with_streams) file->records.streams.clear();

    Shards after(2);
    CHECK(restore(*file, after.raw).refused() == 0);
    Router later(after.raw);
    for (auto* w : after.raw) w->advance(Timestamp{t0.us + 600'000'000}, later);  // the stream idles out
    const BindingFigures restarted(after);
    CHECK(restarted.pending == 0);
    CHECK(restarted.released == 1);
    std::size_t bindings = 0;
    for (const auto* w : after.raw) w->streams().for_each_binding([&](auto&&...) { ++bindings; });
    CHECK(bindings == 0);
}

TEST_CASE("a restart in the middle of live calls loses nothing", "[snapshot][restore][truth]") {
    const std::size_t target = GENERATE(std::size_t{1}, std::size_t{3});
    INFO("restored into " << target << " shards");
    gen::Truth truth;
    const std::vector<Packet> all = packets(corpus(), truth);
    REQUIRE(all.size() > 1000);
    const Timestamp end = all.back().time;

    // The uninterrupted run.
    Outcome reference;
    BindingFigures reference_bindings;
    {
        Shards shards(2);
        Router router(shards.raw);
        Timestamp tick{};
        for (const Packet& p : all) router.feed(datagram(p), tick);
        linger_out(shards, router, end);
        reference_bindings = BindingFigures(shards);
        router.finish(end);
        reference.take(shards);
        reference.take_remaining(shards);
    }
    REQUIRE(reference.dialogs.size() == truth.calls.size());
    REQUIRE(reference.streams.size() == truth.streams.size());

    // The same traffic, stopped half-way: snapshot, a new process with `target` shards, the rest.
    TempDir dir;
    const std::string path = dir.file("hepd.snap");
    const std::size_t cut = all.size() / 2;
    Outcome restarted;
    std::uint64_t released_before = 0;
    Timestamp tick{};
    {
        Shards before(2);
        Router router(before.raw);
        for (std::size_t i = 0; i < cut; ++i) router.feed(datagram(all[i]), tick);

        // The cut must catch calls in every phase, or this test proves little.
        std::map<sip::DialogState, int> states;
        std::size_t streams = 0;
        std::size_t bound_mid_flow = 0;
        for (const auto* w : before.raw) {
            w->dialogs().for_each([&](std::string_view, std::string_view, const sip::Dialog& d) { ++states[d.state]; });
            streams += w->streams().size();
            w->streams().for_each([&](const rtp::StreamKey&, const rtp::Stream& s, const rtp::Binding* b) {
                if (b != nullptr && s.sequence.validated) ++bound_mid_flow;
            });
        }
        CHECK(states[sip::DialogState::early] > 0);
        CHECK(states[sip::DialogState::confirmed] > 0);
        CHECK(states[sip::DialogState::terminated] + states[sip::DialogState::failed] +
                  states[sip::DialogState::cancelled] >
              0);
        CHECK(streams > 0);
        CHECK(bound_mid_flow > 0);

        SnapshotMeta meta;
        meta.written_at = all[cut - 1].time;
        const auto written = write_snapshot(before.readonly(), path, meta);
        REQUIRE(written.ok());
        CHECK(written->counts.dialogs > 0);
        CHECK(written->counts.bindings > 0);
        restarted.take(before);  // what had already finished before the restart
        released_before = BindingFigures(before).released;
    }

    const auto file = read_snapshot(path);
    REQUIRE(file.ok());
    CHECK(file->header.shard_count == 2);
    Shards after(target);
    const RestoreCounts counts = restore(*file, after.raw);
    CHECK(counts.refused() == 0);
    CHECK(counts.restored() == file->header.counts.total());

    // Each record is where the dispatch functions say, for the new shard count.
    for (std::size_t i = 0; i < target; ++i) {
        const ShardImage image = capture(*after.raw[i]);
        for (const auto& d : image.dialogs) CHECK(shard::shard_of_call(d.call_id, target) == i);
        for (const auto& s : image.streams) CHECK(shard::shard_of_media(s.key.dst, target) == i);
        for (const auto& b : image.bindings) CHECK(shard::shard_of_media(b.media, target) == i);
    }

    Router router(after.raw);
    for (std::size_t i = cut; i < all.size(); ++i) router.feed(datagram(all[i]), tick);
    // Calls that ended after the restart released their media bindings as they would have.
    linger_out(after, router, end);
    const BindingFigures restarted_bindings(after);
    CHECK(reference_bindings.released > 0);
    CHECK(released_before + restarted_bindings.released == reference_bindings.released);
    CHECK(restarted_bindings.pending == reference_bindings.pending);
    router.finish(end);
    restarted.take(after);
    restarted.take_remaining(after);

    CHECK(restarted.dialogs.size() == reference.dialogs.size());
    CHECK(restarted.dialogs == reference.dialogs);
    CHECK(restarted.streams.size() == reference.streams.size());
    CHECK(restarted.streams == reference.streams);
    CHECK(restarted.stream_calls == reference.stream_calls);

    // And against the generator's ground truth: the calls in progress at the restart ended
    // with the right outcome and timings.
    for (const auto& call : truth.calls) {
        INFO(call.call_id);
        const auto it = restarted.dialogs.find({call.call_id, call.from_tag});
        REQUIRE(it != restarted.dialogs.end());
        CHECK(it->second.pdd_us() == call.pdd_us);
        CHECK(it->second.final_status == call.final_code);
        if (call.outcome == gen::CallOutcome::completed) {
            CHECK(it->second.setup_us() == call.setup_us);
            CHECK(it->second.duration_us() == call.duration_us);
        }
    }
    for (const auto& st : truth.streams) {
        const auto it = restarted.streams.find({st.src, st.dst, st.ssrc});
        REQUIRE(it != restarted.streams.end());
        CHECK(it->second.duplicates == st.duplicates);
        CHECK(it->second.sequence.lost() ==
              static_cast<std::int64_t>(st.lost) - static_cast<std::int64_t>(st.duplicates));
        CHECK(restarted.stream_calls.at({st.src, st.dst, st.ssrc}) == st.call_id);
    }
}

TEST_CASE("records are re-routed to their owners for the current shard count", "[snapshot][restore]") {
    SnapshotFile file;
    ShardImage& r = file.records;
    for (int i = 0; i < 40; ++i) {
        const std::string call = "call-" + std::to_string(i) + "@example.org";
        r.dialogs.push_back(sample_dialog(call));
        r.transactions.push_back(sample_transaction(call));
        r.reported_streams.push_back(sample_reported(call));
        const std::string media = "198.51.100." + std::to_string(i + 1) + ":" + std::to_string(20000 + 2 * i);
        r.streams.push_back(sample_stream(media.c_str()));
        if (i % 2 == 0) {
            r.bindings.push_back(sample_binding(media.c_str()));
            r.bindings.back().binding.call_id = call;
            r.bindings.back().waiting = false;
        }
    }
    // A binding still waiting for its first packet.
    r.bindings.push_back(sample_binding("203.0.113.77:7000"));

    const std::size_t n = GENERATE(std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{5});
    INFO(n << " shards");
    Shards shards(n);
    const RestoreCounts counts = restore(file, shards.raw);
    CHECK(counts.dialogs == RestoreKindCounts{40, 0});
    CHECK(counts.transactions == RestoreKindCounts{40, 0});
    CHECK(counts.streams == RestoreKindCounts{40, 0});
    CHECK(counts.bindings == RestoreKindCounts{21, 0});
    CHECK(counts.reported_streams == RestoreKindCounts{40, 0});

    std::vector<std::size_t> dialogs_per_shard(n);
    for (const auto& d : r.dialogs) {
        const std::size_t owner = shard::shard_of_call(d.call_id, n);
        ++dialogs_per_shard[owner];
        for (std::size_t i = 0; i < n; ++i) {
            const sip::Dialog* found = shards.raw[i]->dialogs().find(d.call_id, d.from_tag);
            if (i == owner) {
                REQUIRE(found != nullptr);
                CHECK(*found == d.dialog);
            } else {
                CHECK(found == nullptr);
            }
        }
    }
    if (n > 1) CHECK(std::count(dialogs_per_shard.begin(), dialogs_per_shard.end(), 0U) == 0);
    for (const auto& t : r.transactions) {
        const auto& table = shards.raw[shard::shard_of_call(t.key.call_id, n)]->dialogs().transactions();
        const sip::Transaction* found = table.find(t.key.call_id, t.key.cseq, t.key.method);
        REQUIRE(found != nullptr);
        CHECK(*found == t.transaction);
    }
    for (const auto& rs : r.reported_streams) {
        // Beside the streams of the reporter, where its next reports go.
        const auto& table = shards.raw[shard::shard_of_media(rs.stream.reporter, n)]->streams();
        const rtp::ReportedStream* found = table.find_reported(rs.key.call_id, rs.key.ssrc);
        REQUIRE(found != nullptr);
        CHECK(*found == rs.stream);
    }
    for (std::size_t k = 0; k < r.streams.size(); ++k) {
        const auto& s = r.streams[k];
        const auto& table = shards.raw[shard::shard_of_media(s.key.dst, n)]->streams();
        const rtp::Stream* found = table.find(s.key);
        REQUIRE(found != nullptr);
        CHECK(*found == s.stream);
        // Bindings went in first, so each stream joined its call again.
        const rtp::Binding* bound = table.binding_of(s.key);
        if (k % 2 == 0) {
            REQUIRE(bound != nullptr);
            CHECK(bound->call_id == "call-" + std::to_string(k) + "@example.org");
        } else {
            CHECK(bound == nullptr);
        }
    }
    const Endpoint waiting = ep("203.0.113.77:7000");
    const rtp::Binding* parked = shards.raw[shard::shard_of_media(waiting, n)]->streams().pending_binding(waiting);
    REQUIRE(parked != nullptr);
    CHECK(*parked == r.bindings.back().binding);
}

TEST_CASE("records the tables refuse are counted, not restored", "[snapshot][restore]") {
    SnapshotFile file;
    ShardImage& r = file.records;
    r.dialogs.push_back(sample_dialog("dup"));
    r.dialogs.push_back(sample_dialog("dup"));                  // same key twice
    r.dialogs.push_back(sample_dialog(std::string(256, 'c')));  // Call-ID over sip::kMaxCallIdSize
    r.dialogs.push_back(sample_dialog("no-tag"));
    r.dialogs.back().from_tag.clear();
    r.transactions.push_back(sample_transaction("t"));
    r.transactions.push_back(sample_transaction("t"));
    r.streams.push_back(sample_stream());
    r.streams.push_back(sample_stream());
    r.bindings.push_back(sample_binding());
    r.bindings.push_back(sample_binding());
    r.reported_streams.push_back(sample_reported("r"));
    r.reported_streams.push_back(sample_reported("r"));

    Shards shards(2);
    const RestoreCounts counts = restore(file, shards.raw);
    CHECK(counts.dialogs == RestoreKindCounts{1, 3});
    CHECK(counts.transactions == RestoreKindCounts{1, 1});
    CHECK(counts.streams == RestoreKindCounts{1, 1});
    CHECK(counts.bindings == RestoreKindCounts{1, 1});
    CHECK(counts.reported_streams == RestoreKindCounts{1, 1});
    CHECK(counts.restored() == 5);
    CHECK(counts.refused() == 7);

    // With no shards there is nowhere to put anything.
    Shards none(0);
    const RestoreCounts nowhere = restore(file, none.raw);
    CHECK(nowhere.restored() == 0);
    CHECK(nowhere.refused() == 12);
}

TEST_CASE("streams from several old shards expire in time order after the merge", "[snapshot][restore]") {
    // Old shard A held streams last seen at 10 s and 30 s, shard B at 20 s and 40 s. Merged into
    // one table they must be ordered 10, 20, 30, 40: the table expires from its oldest entry and
    // stops at the first live one.
    const auto stream_at = [](std::uint32_t ssrc, std::int64_t last_s) {
        StreamRecord s = sample_stream();
        s.key.ssrc = ssrc;
        s.stream.first = Timestamp::from_parts(1, 0);
        s.stream.last = Timestamp::from_parts(last_s, 0);
        return s;
    };
    SnapshotFile file;
    file.records.streams = {stream_at(1, 10), stream_at(3, 30), stream_at(2, 20), stream_at(4, 40)};
    Shards shards(1);
    REQUIRE(restore(file, shards.raw).streams.restored == 4);
    // Idle timeout 30 s: at 55 s the streams last seen at 10 s and 20 s are over.
    Router router(shards.raw);
    shards.raw[0]->advance(Timestamp::from_parts(55, 0), router);
    const auto& table = shards.raw[0]->streams();
    CHECK(table.size() == 2);
    StreamRecord probe = sample_stream();
    probe.key.ssrc = 2;
    CHECK(table.find(probe.key) == nullptr);
    probe.key.ssrc = 3;
    CHECK(table.find(probe.key) != nullptr);
    CHECK(shards.recorders[0]->streams.size() == 2);
}

TEST_CASE("a capture into an image made ready beforehand gives the same image", "[snapshot]") {
    gen::CorpusOptions o = corpus();
    o.calls = 40;
    o.rtcp = true;  // receiver views
    o.rtcp_interval_us = 200'000;
    gen::Truth truth;
    const std::vector<Packet> all = packets(o, truth);
    Shards shards(1);
    Router router(shards.raw);
    Timestamp tick{};
    std::size_t fed = 0;
    const auto feed_until = [&](std::size_t end) {
        for (; fed < end; ++fed) router.feed(datagram(all[fed]), tick);
    };
    feed_until(all.size() / 3);
    const ShardImage earlier = capture(*shards.raw[0]);
    feed_until(all.size() * 2 / 3);
    const ShardImage reference = capture(*shards.raw[0]);
    const RecordCounts n = reference.counts();
    REQUIRE(n.dialogs > 0);
    REQUIRE(n.streams > 0);
    REQUIRE(n.bindings > 0);

    // Made ready for fewer records than there are (the rest appended), for exactly as many, and
    // for more (the rest dropped); and an image still holding an earlier capture's records.
    const auto scaled = [&](double f) {
        const auto s = [f](std::uint64_t v) { return static_cast<std::uint64_t>(static_cast<double>(v) * f); };
        return RecordCounts{s(n.dialogs), s(n.transactions), s(n.streams), s(n.bindings), s(n.reported_streams)};
    };
    for (const double f : {0.0, 0.5, 1.0, 1.5}) {
        ShardImage image = prepare_image(scaled(f));
        capture(*shards.raw[0], image);
        CHECK(image == reference);
    }
    ShardImage reused = earlier;
    capture(*shards.raw[0], reused);
    CHECK(reused == reference);
}

TEST_CASE("an image is made ready for the larger of the last capture and the published sizes", "[snapshot]") {
    // Before the first capture only the shard's published figures say how large the tables are.
    CHECK(image_room({}, {1000, 0, 2000, 3000, 100}) == RecordCounts{1116, 0, 2216, 3316, 126});
    // Each kind on its own: the larger of the two, a tenth more and 16; nothing stays nothing.
    CHECK(image_room({1000, 50, 0, 10, 0}, {900, 60, 0, 20, 0}) == RecordCounts{1116, 82, 0, 38, 0});
}

TEST_CASE("capture, write, read and restore give back the same tables", "[snapshot][restore]") {
    gen::CorpusOptions o = corpus();
    o.calls = 40;
    gen::Truth truth;
    const std::vector<Packet> all = packets(o, truth);
    Shards original(1);
    Router router(original.raw);
    Timestamp tick{};
    for (std::size_t i = 0; i < all.size() * 2 / 3; ++i) router.feed(datagram(all[i]), tick);

    const ShardImage before = capture(*original.raw[0]);
    const shard::ShardWorker& w = *original.raw[0];
    CHECK(before.counts() == RecordCounts{w.dialogs().size(), w.dialogs().transactions().size(), w.streams().size(),
                                          w.streams().bindings_size(), w.streams().reported_size()});
    REQUIRE(!before.dialogs.empty());
    REQUIRE(!before.streams.empty());
    REQUIRE(!before.bindings.empty());

    TempDir dir;
    REQUIRE(write_snapshot(std::vector<ShardImage>{before}, dir.file("s"), SnapshotMeta{}).ok());
    const auto file = read_snapshot(dir.file("s"));
    REQUIRE(file.ok());
    Shards copy(1);
    restore(*file, copy.raw);
    const ShardImage after = capture(*copy.raw[0]);

    // Same records; bound and waiting bindings stay what they were.
    const auto sorted = [](ShardImage i) {
        std::sort(i.dialogs.begin(), i.dialogs.end(), [](const auto& a, const auto& b) {
            return std::tie(a.call_id, a.from_tag) < std::tie(b.call_id, b.from_tag);
        });
        std::sort(i.streams.begin(), i.streams.end(), [](const auto& a, const auto& b) {
            return std::tie(a.key.src, a.key.dst, a.key.ssrc) < std::tie(b.key.src, b.key.dst, b.key.ssrc);
        });
        std::sort(i.bindings.begin(), i.bindings.end(), [](const auto& a, const auto& b) { return a.media < b.media; });
        return i;
    };
    CHECK(sorted(after) == sorted(before));
}
