// A real capture: 10 sipp calls through Kamailio on lo, G.711 A-law media replayed by sipp and
// echoed by the UAS, plus RFC 2833 DTMF on a separate SSRC (sipp replays the same pcap for every
// call, so all streams share two SSRCs and differ by address and port). Expected values were read
// with tshark 4.0.17:
//   tshark -r sipp-10-calls-g711-via-kamailio.pcap -o rtp.heuristic_rtp:TRUE -q -z rtp,streams
// (columns used: source/destination port, SSRC, Pkts, Lost, Max Delta(ms), Max Jitter(ms)).
#include "pcap/reader.hpp"
#include "rtp/demux.hpp"
#include "rtp/stream_table.hpp"
#include "stream_test_support.hpp"
#include "support/fixtures.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <tuple>

using namespace hepd;
using namespace hepd::rtp;
using namespace hepd::rtp::stream_test;

namespace {

struct TsharkStream {
    std::uint16_t src_port;
    std::uint16_t dst_port;
    std::uint32_t ssrc;
    std::uint32_t packets;
    std::int64_t lost;
    double max_delta_ms;
    double max_jitter_ms;
};

const TsharkStream tshark_streams[] = {
    {26000, 16036, 0x0e05384e, 10, -2, 20.138, 0.000}, {16036, 26000, 0x0e05384e, 10, -2, 20.106, 0.000},
    {26000, 16032, 0x0e05384e, 10, -2, 20.868, 0.000}, {16032, 26000, 0x0e05384e, 10, -2, 20.572, 0.000},
    {26000, 16028, 0x0e05384e, 10, -2, 21.560, 0.000}, {16028, 26000, 0x0e05384e, 10, -2, 21.447, 0.000},
    {26000, 16024, 0x0e05384e, 10, -2, 20.828, 0.000}, {16024, 26000, 0x0e05384e, 10, -2, 20.411, 0.000},
    {26000, 16020, 0x0e05384e, 10, -2, 20.689, 0.000}, {16020, 26000, 0x0e05384e, 10, -2, 20.661, 0.000},
    {26000, 16016, 0x0e05384e, 10, -2, 20.088, 0.000}, {16016, 26000, 0x0e05384e, 10, -2, 20.088, 0.000},
    {26000, 16012, 0x0e05384e, 10, -2, 21.697, 0.000}, {16012, 26000, 0x0e05384e, 10, -2, 21.706, 0.000},
    {26000, 16008, 0x0e05384e, 10, -2, 20.165, 0.000}, {16008, 26000, 0x0e05384e, 10, -2, 20.092, 0.000},
    {26000, 16004, 0x0e05384e, 10, -2, 20.229, 0.000}, {16004, 26000, 0x0e05384e, 10, -2, 20.165, 0.000},
    {26000, 16000, 0x0e05384e, 10, -2, 20.141, 0.000}, {16000, 26000, 0x0e05384e, 10, -2, 20.082, 0.000},
    {26000, 16036, 0xdee0ee8f, 34, 0, 31.701, 0.398},  {16036, 26000, 0xdee0ee8f, 34, 0, 31.695, 0.374},
    {26000, 16032, 0xdee0ee8f, 34, 0, 31.813, 0.379},  {16032, 26000, 0xdee0ee8f, 34, 0, 31.815, 0.370},
    {26000, 16028, 0xdee0ee8f, 34, 0, 31.829, 0.396},  {16028, 26000, 0xdee0ee8f, 34, 0, 31.825, 0.378},
    {26000, 16024, 0xdee0ee8f, 34, 0, 31.804, 0.330},  {16024, 26000, 0xdee0ee8f, 34, 0, 31.806, 0.382},
    {26000, 16020, 0xdee0ee8f, 34, 0, 31.751, 0.389},  {16020, 26000, 0xdee0ee8f, 34, 0, 31.775, 0.376},
    {26000, 16016, 0xdee0ee8f, 34, 0, 33.644, 0.622},  {16016, 26000, 0xdee0ee8f, 34, 0, 33.509, 0.604},
    {26000, 16012, 0xdee0ee8f, 34, 0, 31.801, 0.333},  {16012, 26000, 0xdee0ee8f, 34, 0, 31.760, 0.382},
    {26000, 16008, 0xdee0ee8f, 34, 0, 31.447, 0.343},  {16008, 26000, 0xdee0ee8f, 34, 0, 31.528, 0.342},
    {26000, 16004, 0xdee0ee8f, 34, 0, 31.777, 0.427},  {16004, 26000, 0xdee0ee8f, 34, 0, 31.792, 0.378},
    {26000, 16000, 0xdee0ee8f, 34, 0, 31.872, 0.395},  {16000, 26000, 0xdee0ee8f, 34, 0, 31.847, 0.386},
};

}  // namespace

TEST_CASE("sipp capture: streams, packets, loss, gaps and jitter as tshark reports them", "[rtp][stream][capture]") {
    auto reader = pcap::FileReader::open(hepd::test::fixture_path("sipp-10-calls-g711-via-kamailio.pcap"));
    REQUIRE(reader.ok());
    StreamTable table;
    RecordingSink sink;
    table.set_sink(&sink);
    std::size_t frames = 0;
    std::size_t rtp_datagrams = 0;
    Timestamp last;
    for (pcap::Frame frame; reader->next(frame);) {
        ++frames;
        const auto l4 = pcap::decode_frame(frame);
        if (!l4 || l4->transport != pcap::Transport::udp || classify(l4->payload) != PacketKind::rtp) continue;
        ++rtp_datagrams;
        table.on_rtp(PacketMeta{l4->time, l4->src, l4->dst, 0}, l4->payload);
        last = l4->time;
        table.expire(last);  // nothing is idle for 30 s in a 3 s capture
    }
    CHECK(reader->error() == pcap::FileError::none);
    CHECK(frames == 1010);
    CHECK(rtp_datagrams == 880);
    CHECK(table.stats().rtp_errors[static_cast<std::size_t>(RtpError::too_short)].value() == 0);
    CHECK(table.size() == 40);
    CHECK(table.stats().streams_active.value() == 40);
    CHECK(table.media_size() == 11);  // 26000 and the ten 160xx ports
    table.finish_all(last);
    REQUIRE(sink.finished.size() == 40);

    std::map<std::tuple<std::uint16_t, std::uint16_t, std::uint32_t>, const Finished*> ours;
    for (const Finished& f : sink.finished) ours[{f.key.src.port, f.key.dst.port, f.key.ssrc}] = &f;

    for (const TsharkStream& want : tshark_streams) {
        INFO(want.src_port << " -> " << want.dst_port << " ssrc " << want.ssrc);
        const auto it = ours.find({want.src_port, want.dst_port, want.ssrc});
        REQUIRE(it != ours.end());
        const Finished& got = *it->second;
        CHECK(got.stream.packets == want.packets);
        CHECK(got.summary.lost == want.lost);
        // tshark prints three decimals.
        CHECK(got.stream.max_gap_us / 1000.0 == Approx(want.max_delta_ms).margin(0.0006));
        CHECK(got.summary.max_jitter_ms == Approx(want.max_jitter_ms).margin(0.0006));
        if (want.ssrc == 0x0e05384eU) {
            CHECK(got.stream.event_packets == 10);
            CHECK(got.stream.duplicates == 2);  // the end of event is sent three times
            CHECK(got.summary.codec == Codec::telephone_event);
            CHECK_FALSE(got.summary.has_quality);
        } else {
            CHECK(got.summary.codec == Codec::pcma);
            CHECK(got.summary.clock_rate == 8000);
            CHECK(got.stream.markers == 1);
            CHECK(got.stream.bytes == 34U * 240U);
            CHECK(got.summary.mos == Approx(4.409286).margin(1e-6));  // no loss, jitter < 1 ms
        }
    }
    const StreamStats& s = table.stats();
    CHECK(s.rtp_packets.value() == 880);
    CHECK(s.lost_packets.value() == 0);
    CHECK(s.duplicate_packets.value() == 40);
    CHECK(s.event_packets.value() == 200);
    CHECK(s.finished_streams_by_codec[static_cast<std::size_t>(CodecLabel::pcma)].value() == 20);
    CHECK(s.finished_streams_by_codec[static_cast<std::size_t>(CodecLabel::telephone_event)].value() == 20);
    CHECK(s.mos.count() == 20);
    CHECK(s.jitter_seconds.count() == 20);
    CHECK(s.jitter_seconds.bucket(0) == 20);  // all under 1 ms
}
