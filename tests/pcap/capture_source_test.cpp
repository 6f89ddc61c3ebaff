// CaptureSource end to end over real and generated captures. Expected counts come from tshark /
// capinfos (Wireshark 4.0, Debian 12) run on the same files, and from the generator's stated
// contents for the small captures under tests/pcap/data (see data/README.md); none were taken from
// this code's output.
#include "pcap/capture_source.hpp"

#include "core/bytes.hpp"
#include "pcap/split_reader.hpp"
#include "shard/dispatch.hpp"
#include "support/fixtures.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

using namespace hepd;
using namespace hepd::pcap;

namespace {

std::string data_file(const std::string& name) { return std::string(HEPD_SOURCE_DIR) + "/tests/pcap/data/" + name; }

struct Got {
    Timestamp time;
    std::string src;
    std::string dst;
    shard::Transport transport = shard::Transport::other;
    PayloadClass kind = PayloadClass::other;
    std::uint8_t hep_payload_type = 0;
    std::uint32_t capture_id = 0;
    std::string correlation_id;
    std::string payload;
};

struct Run {
    std::vector<Got> got;
    FileError error = FileError::none;
    std::string message;
    CaptureStats stats;
};

Got got_of(const shard::Datagram& d) {
    return Got{d.time,
               d.src.to_string(),
               d.dst.to_string(),
               d.transport,
               d.kind,
               d.hep_payload_type,
               d.capture_id,
               std::string(d.correlation_id),
               std::string(as_text(d.payload))};
}

Run run_file(const std::string& path, CaptureOptions options = {}) {
    CaptureSource source(std::move(options));
    Run r;
    auto sink = [&](const shard::Datagram& d) { r.got.push_back(got_of(d)); };
    r.error = source.read_file(path, sink, &r.message);
    source.finish();
    r.stats = source.stats();
    return r;
}

std::string call_id(const std::string& sip) {
    const auto at = sip.find("\r\nCall-ID: ");
    if (at == std::string::npos) return {};
    const auto start = at + 11;
    return sip.substr(start, sip.find("\r\n", start) - start);
}

std::string first_line(const std::string& sip) { return sip.substr(0, sip.find("\r\n")); }

void check_accounting(const CaptureStats& s) {
    // Every frame ends in exactly one place.
    CHECK(s.frames == s.decode_errors_total() + s.fragments.fragments - s.fragments.reassembled + s.packets_total());
}

std::uint64_t packets(const CaptureStats& s, PacketClass c) { return s.packets[static_cast<std::size_t>(c)]; }
std::uint64_t kind_count(const CaptureStats& s, PayloadClass k) {
    return s.datagrams_by_kind[static_cast<std::size_t>(k)];
}

constexpr std::int64_t kT0 = 1'700'000'000'000'000;  // the generator's base time, µs

}  // namespace

TEST_CASE("looks_like_sip: start lines only", "[pcap][classify]") {
    CHECK(looks_like_sip(as_bytes("INVITE sip:bob@example.com SIP/2.0\r\nVia: x\r\n")));
    CHECK(looks_like_sip(as_bytes("SIP/2.0 200 OK\r\n")));
    CHECK(looks_like_sip(as_bytes("SIP/2.0 100 \r\n")));
    CHECK(looks_like_sip(as_bytes("BYE sip:x SIP/2.0\n")));
    CHECK_FALSE(looks_like_sip(as_bytes("SIP/2.0 2x0 OK\r\n")));
    CHECK_FALSE(looks_like_sip(as_bytes("GET / HTTP/1.1\r\n")));
    CHECK_FALSE(looks_like_sip(as_bytes("invite sip:x SIP/2.0\r\n")));
    CHECK_FALSE(looks_like_sip(as_bytes("INVITE sip:x SIP/2.0")));  // no line end
    CHECK_FALSE(looks_like_sip(as_bytes("INVITE\r\n")));
    CHECK_FALSE(looks_like_sip(as_bytes("")));
    CHECK_FALSE(looks_like_sip(as_bytes("A sip:x SIP/2.0\r\n")));  // one-letter method
    CHECK_FALSE(looks_like_sip(as_bytes("INVITE SIP/2.0\r\n")));   // no Request-URI
    const std::string long_line = "OPTIONS sip:" + std::string(2000, 'a') + " SIP/2.0\r\n";
    CHECK_FALSE(looks_like_sip(as_bytes(long_line)));  // the line must end within 1 KiB
}

TEST_CASE("fixture: HEP over UDP gives 60 SIP datagrams with the HEP message's own fields", "[pcap][fixture]") {
    const auto name = "kamailio-siptrace-hep3-udp.pcap";
    const Run r = run_file(test::fixture_path(name));
    CHECK(r.error == FileError::none);
    REQUIRE(r.got.size() == 60);
    std::set<std::string> ids;
    std::vector<std::size_t> with_correlation;
    for (std::size_t i = 0; i < r.got.size(); ++i) {
        const Got& g = r.got[i];
        CHECK(g.kind == PayloadClass::sip);
        CHECK(g.hep_payload_type == 1);
        CHECK(g.capture_id == 2001);
        CHECK(g.transport == shard::Transport::udp);
        ids.insert(call_id(g.payload));
        if (!g.correlation_id.empty()) {
            CHECK(g.correlation_id == call_id(g.payload));
            with_correlation.push_back(i + 1);
        }
    }
    CHECK(ids == std::set<std::string>{"1-18897@127.0.0.1", "2-18897@127.0.0.1", "3-18897@127.0.0.1",
                                       "4-18897@127.0.0.1", "5-18897@127.0.0.1"});
    CHECK(with_correlation == std::vector<std::size_t>{1, 8, 9, 16, 17, 24, 25, 32, 33, 40, 41, 45, 49, 53, 57});
    // First message: the UAC's INVITE to the proxy, HEP time 1796013063.512829, 509 bytes of SIP.
    CHECK(r.got[0].time == Timestamp::from_parts(1796013063, 512829));
    CHECK(r.got[0].src == "127.0.0.1:5061");
    CHECK(r.got[0].dst == "127.0.0.1:5060");
    CHECK(r.got[0].payload.size() == 509);
    CHECK(first_line(r.got[0].payload) == "INVITE sip:service@127.0.0.1:5060 SIP/2.0");
    CHECK(r.got[59].time == Timestamp::from_parts(1796013065, 321863));

    const CaptureStats& s = r.stats;
    CHECK(s.frames == 60);
    CHECK(s.frames_by_link[link_type_slot(LinkType::ethernet)] == 60);
    CHECK(packets(s, PacketClass::hep_udp) == 60);
    CHECK(s.datagrams == 60);
    CHECK(kind_count(s, PayloadClass::sip) == 60);
    CHECK(s.hep.packets[0][2] == 60);  // udp, version 3
    CHECK(s.hep.accepted() == 60);
    CHECK(s.files == 1);
    check_accounting(s);
}

TEST_CASE("fixture: HEP over TCP is reassembled and framed into the same 60 messages", "[pcap][fixture][tcp]") {
    const auto tcp_name = "kamailio-siptrace-hep3-tcp.pcap";
    const Run r = run_file(test::fixture_path(tcp_name));
    CHECK(r.error == FileError::none);
    REQUIRE(r.got.size() == 60);
    std::set<std::string> ids;
    std::vector<std::size_t> with_correlation;
    for (std::size_t i = 0; i < r.got.size(); ++i) {
        const Got& g = r.got[i];
        CHECK(g.kind == PayloadClass::sip);
        CHECK(g.capture_id == 2001);
        ids.insert(call_id(g.payload));
        if (!g.correlation_id.empty()) with_correlation.push_back(i + 1);
    }
    // A separate Kamailio/sipp run from the UDP capture: the same flow, other Call-IDs (strings(1)
    // on the file: 12 messages each).
    CHECK(ids == std::set<std::string>{"1-19189@127.0.0.1", "2-19189@127.0.0.1", "3-19189@127.0.0.1",
                                       "4-19189@127.0.0.1", "5-19189@127.0.0.1"});
    CHECK(with_correlation == std::vector<std::size_t>{1, 8, 9, 16, 17, 24, 25, 32, 33, 40, 41, 45, 49, 53, 57});

    const CaptureStats& s = r.stats;
    // capinfos: 121 frames; tshark: one conversation, 63 frames client -> 9060 (60 with data, SYN,
    // ACK and FIN-ACK) and 58 back (SYN-ACK and ACKs).
    CHECK(s.frames == 121);
    CHECK(packets(s, PacketClass::hep_tcp) == 121);
    CHECK(s.tcp.segments == 121);
    CHECK(s.tcp.payload_bytes == 31095);  // tshark -z follow,tcp,raw,0: all from the client
    CHECK(s.tcp.messages == 60);
    CHECK(s.tcp.retransmitted_segments == 0);
    CHECK(s.tcp.out_of_order_segments == 0);
    CHECK(s.tcp.leftover_bytes == 0);
    CHECK(s.hep.packets[1][2] == 60);  // tcp, version 3
    CHECK(s.hep.accepted() == 60);
    check_accounting(s);
}

TEST_CASE("fixture: raw sipp calls classify as tshark counts them", "[pcap][fixture]") {
    const auto name = "sipp-10-calls-g711-via-kamailio.pcap";
    const Run r = run_file(test::fixture_path(name));
    CHECK(r.error == FileError::none);
    // tshark -q -z io,phs: 1010 frames, all UDP; sip 130; rtp 880 (of which 200 RFC 2833
    // events); no rtcp. 272,279 captured bytes.
    const CaptureStats& s = r.stats;
    CHECK(s.frames == 1010);
    CHECK(s.bytes == 272279);
    CHECK(s.datagrams == 1010);
    CHECK(packets(s, PacketClass::sip_udp) == 130);
    CHECK(packets(s, PacketClass::rtp) == 880);
    CHECK(packets(s, PacketClass::rtcp) == 0);
    CHECK(kind_count(s, PayloadClass::sip) == 130);
    CHECK(kind_count(s, PayloadClass::rtp) == 880);
    CHECK(s.decode_errors_total() == 0);
    std::set<std::string> ids;
    for (const Got& g : r.got) {
        CHECK(g.transport == shard::Transport::udp);
        if (g.kind == PayloadClass::sip) ids.insert(call_id(g.payload));
    }
    CHECK(ids.size() == 10);
    check_accounting(s);
}

TEST_CASE("generated: fragmented INVITEs over IPv4, in order and out of order", "[pcap][fragments]") {
    for (const char* name : {"fragmented_invite.pcap", "fragmented_invite.pcap.gz"}) {
        INFO(name);
        const Run r = run_file(data_file(name));
        CHECK(r.error == FileError::none);
        REQUIRE(r.got.size() == 4);
        // Frames 1-3: the first INVITE, 3 fragments in order (UDP payload 3253 bytes).
        CHECK(r.got[0].time == Timestamp{kT0 + 2000});
        CHECK(r.got[0].src == "10.1.0.1:5060");
        CHECK(r.got[0].dst == "10.1.0.2:5060");
        CHECK(r.got[0].kind == PayloadClass::sip);
        CHECK(r.got[0].payload.size() == 3253);
        CHECK(first_line(r.got[0].payload) == "INVITE sip:bob@example.com SIP/2.0");
        CHECK(call_id(r.got[0].payload) == "frag-1@hepd");
        CHECK(r.got[0].payload.substr(r.got[0].payload.size() - 5) == "ppp\r\n");
        // Frame 4: 100 Trying (203 bytes), frame 5: RTP on 40000 -> 40002 (12 + 160 bytes).
        CHECK(r.got[1].time == Timestamp{kT0 + 3000});
        CHECK(first_line(r.got[1].payload) == "SIP/2.0 100 Trying");
        CHECK(r.got[1].payload.size() == 203);
        CHECK(r.got[2].kind == PayloadClass::rtp);
        CHECK(r.got[2].src == "10.1.0.9:40000");
        CHECK(r.got[2].payload.size() == 172);
        // Frames 6-9: last, first, first again, middle: complete at frame 9 (3755 bytes).
        CHECK(r.got[3].time == Timestamp{kT0 + 8000});
        CHECK(r.got[3].dst == "10.1.0.3:5062");
        CHECK(r.got[3].payload.size() == 3755);
        CHECK(call_id(r.got[3].payload) == "frag-2@hepd");
        CHECK(r.got[3].payload.find("Content-Length: 3500\r\n\r\nv=0\r\n") != std::string::npos);

        const CaptureStats& s = r.stats;
        CHECK(s.frames == 9);
        CHECK(s.fragments.fragments == 7);
        CHECK(s.fragments.reassembled == 2);
        CHECK(s.fragments.duplicates == 1);
        CHECK(s.fragments.dropped_total() == 0);
        CHECK(packets(s, PacketClass::sip_udp) == 3);
        CHECK(packets(s, PacketClass::rtp) == 1);
        check_accounting(s);
    }
}

TEST_CASE("generated: IPv6 fragments behind a hop-by-hop header, last piece first", "[pcap][fragments]") {
    const Run r = run_file(data_file("ipv6_fragment.pcap"));
    CHECK(r.error == FileError::none);
    REQUIRE(r.got.size() == 1);
    const Got& g = r.got[0];
    CHECK(g.time == Timestamp{kT0 + 5'001'000});
    CHECK(g.src == "[2001:db8::1]:5060");
    CHECK(g.dst == "[2001:db8::2]:5060");
    CHECK(g.kind == PayloadClass::sip);
    CHECK(g.payload.size() == 2052);
    CHECK(first_line(g.payload) == "MESSAGE sip:bob@example.com SIP/2.0");
    CHECK(g.payload.substr(g.payload.size() - 4) == "xxxx");
    CHECK(r.stats.fragments.fragments == 2);
    CHECK(r.stats.fragments.reassembled == 1);
    check_accounting(r.stats);
}

TEST_CASE("generated: SIP over TCP with packing, splitting, reordering, retransmission, wrap", "[pcap][tcp]") {
    const Run r = run_file(data_file("sip_tcp.pcap"));
    CHECK(r.error == FileError::none);
    // tshark -o tcp.reassemble_out_of_order:TRUE -Y sip: frames 4 (OPTIONS + MESSAGE), 5 (200),
    // 8 (INVITE), 13 (BYE).
    REQUIRE(r.got.size() == 5);
    const std::int64_t t = kT0 + 10'000'000;
    CHECK(r.got[0].time == Timestamp{t + 3000});
    CHECK(first_line(r.got[0].payload) == "OPTIONS sip:10.2.0.2 SIP/2.0");
    CHECK(r.got[0].payload.size() == 212);
    CHECK(r.got[0].src == "10.2.0.1:40000");
    CHECK(r.got[0].dst == "10.2.0.2:5060");
    CHECK(r.got[0].transport == shard::Transport::tcp);
    CHECK(r.got[1].time == Timestamp{t + 3000});
    CHECK(r.got[1].payload.size() == 260);
    CHECK(r.got[1].payload.substr(r.got[1].payload.size() - 14) == "hello over tcp");
    CHECK(r.got[2].time == Timestamp{t + 4000});
    CHECK(first_line(r.got[2].payload) == "SIP/2.0 200 OK");
    CHECK(r.got[2].src == "10.2.0.2:5060");
    CHECK(r.got[2].dst == "10.2.0.1:40000");
    CHECK(r.got[3].time == Timestamp{t + 7000});
    CHECK(first_line(r.got[3].payload) == "INVITE sip:bob@example.com SIP/2.0");
    CHECK(r.got[3].payload.size() == 950);
    CHECK(call_id(r.got[3].payload) == "tcp-3@hepd");
    CHECK(r.got[4].time == Timestamp{t + 12000});
    CHECK(first_line(r.got[4].payload) == "BYE sip:bob@example.com SIP/2.0");
    CHECK(r.got[4].payload.size() == 211);
    CHECK(r.got[4].src == "10.2.0.1:40001");
    for (const Got& g : r.got) CHECK(g.kind == PayloadClass::sip);

    const TcpStats& s = r.stats.tcp;
    CHECK(s.segments == 13);
    CHECK(s.messages == 5);
    CHECK(s.streams_opened == 3);
    CHECK(s.streams_closed_fin == 1);
    CHECK(s.retransmitted_segments == 1);
    CHECK(s.out_of_order_segments == 1);
    CHECK(s.overlapping_segments == 0);
    CHECK(s.leftover_bytes == 0);
    CHECK(packets(r.stats, PacketClass::sip_tcp) == 13);
    check_accounting(r.stats);
}

TEST_CASE("generated: pcapng with two interfaces, a simple packet and blocks to skip", "[pcap][pcapng]") {
    for (const char* name : {"two_interfaces.pcapng", "two_interfaces.pcapng.gz"}) {
        INFO(name);
        const Run r = run_file(data_file(name));
        CHECK(r.error == FileError::none);
        REQUIRE(r.got.size() == 4);
        CHECK(r.got[0].time == Timestamp{kT0 + 1});
        CHECK(r.got[0].kind == PayloadClass::sip);
        CHECK(r.got[0].src == "10.3.0.1:5060");
        CHECK(r.got[0].payload.size() == 210);
        // Interface 1: raw IP, nanoseconds, if_tsoffset 100 s.
        CHECK(r.got[1].time == Timestamp{kT0 + 100'123'456});
        CHECK(r.got[1].kind == PayloadClass::rtp);
        CHECK(r.got[1].dst == "10.3.0.4:40002");
        // Simple packet block: interface 0, the previous frame's time.
        CHECK(r.got[2].time == Timestamp{kT0 + 100'123'456});
        CHECK(r.got[2].kind == PayloadClass::rtcp);
        CHECK(r.got[2].payload.size() == 28);
        CHECK(r.got[3].time == Timestamp{kT0 + 2'000'000});
        CHECK(r.stats.frames_by_link[link_type_slot(LinkType::ethernet)] == 3);
        CHECK(r.stats.frames_by_link[link_type_slot(LinkType::raw)] == 1);
        check_accounting(r.stats);
    }
}

TEST_CASE("generated: pcapng sections in both byte orders with four link types", "[pcap][pcapng]") {
    const Run r = run_file(data_file("sections.pcapng"));
    CHECK(r.error == FileError::none);
    REQUIRE(r.got.size() == 4);
    CHECK(r.got[0].time == Timestamp{kT0 + 500'000});  // 2^-10 s units
    CHECK(r.got[0].src == "10.4.0.1:5060");
    CHECK(r.got[0].payload.size() == 212);
    CHECK(r.got[1].src == "[2001:db8::a]:5060");
    CHECK(r.got[1].dst == "[2001:db8::b]:5080");
    CHECK(r.got[1].kind == PayloadClass::sip);
    CHECK(r.got[1].payload.size() == 219);
    CHECK(r.got[2].src == "127.0.0.1:40000");
    CHECK(r.got[2].kind == PayloadClass::rtp);
    CHECK(r.got[3].src == "[::1]:40000");
    CHECK(r.got[3].time == Timestamp{kT0 + 3'000'000});
    const auto& by_link = r.stats.frames_by_link;
    CHECK(by_link[link_type_slot(LinkType::linux_sll2)] == 1);
    CHECK(by_link[link_type_slot(LinkType::linux_sll)] == 1);
    CHECK(by_link[link_type_slot(LinkType::null_loopback)] == 1);
    CHECK(by_link[link_type_slot(LinkType::loop)] == 1);
    check_accounting(r.stats);
}

TEST_CASE("ports: HEP and SIP port lists come from the options", "[pcap][classify]") {
    const auto name = "kamailio-siptrace-hep3-udp.pcap";
    CaptureOptions o;
    o.hep_ports = {};
    o.sniff_hep = false;
    // Kamailio sends HEP from its SIP socket (tshark: all 60 are 5060 -> 9060): without the HEP
    // port and without sniffing, the SIP port rule takes them as they are.
    const Run r = run_file(test::fixture_path(name), o);
    CHECK(r.got.size() == 60);
    CHECK(packets(r.stats, PacketClass::sip_udp) == 60);
    CHECK(r.stats.hep.received() == 0);
    // Without either port they are neither media nor SIP: skipped as TURN-range data ('H' = 72).
    o.sip_ports = {};
    const Run none = run_file(test::fixture_path(name), o);
    CHECK(none.got.empty());
    CHECK(packets(none.stats, PacketClass::turn_channel) == 60);
    // With sniffing on, a whole HEPv3 message is recognised on any port, the SIP port included.
    for (bool with_sip_port : {true, false}) {
        CaptureOptions sniff;
        sniff.hep_ports = {};
        if (!with_sip_port) sniff.sip_ports = {};
        const Run h = run_file(test::fixture_path(name), sniff);
        REQUIRE(h.got.size() == 60);
        CHECK(h.got[0].capture_id == 2001);
        CHECK(packets(h.stats, PacketClass::hep_udp) == 60);
    }
}

namespace {

// Through a file, as the daemon reads captures: errors found on opening are counted too.
Run run_bytes(const std::vector<std::uint8_t>& bytes) {
    const auto path = std::filesystem::temp_directory_path() / ("hepd-catalogue-" + std::to_string(::getpid()));
    {
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
        REQUIRE(out.good());
    }
    Run r = run_file(path.string());
    std::filesystem::remove(path);
    return r;
}

// A damaged file gives its one counted file error and otherwise exactly what the whole records
// before the damage give.
void check_same_as_clean_prefix(const Run& damaged, const Run& clean, FileError error) {
    CHECK(damaged.error == error);
    CHECK(clean.error == FileError::none);
    for (std::size_t e = 0; e < kFileErrorCount; ++e) {
        INFO("file error " << to_string(static_cast<FileError>(e)));
        CHECK(damaged.stats.file_errors[e] == (static_cast<FileError>(e) == error ? 1U : 0U));
        CHECK(clean.stats.file_errors[e] == 0);
    }
    CHECK(damaged.stats.files == 1);
    CHECK(damaged.stats.frames == clean.stats.frames);
    CHECK(damaged.stats.bytes == clean.stats.bytes);
    CHECK(damaged.stats.packets == clean.stats.packets);
    CHECK(damaged.stats.decode_errors == clean.stats.decode_errors);
    CHECK(damaged.stats.datagrams == clean.stats.datagrams);
    CHECK(damaged.stats.datagrams_by_kind == clean.stats.datagrams_by_kind);
    REQUIRE(damaged.got.size() == clean.got.size());
    for (std::size_t i = 0; i < clean.got.size(); ++i) {
        CHECK(damaged.got[i].time == clean.got[i].time);
        CHECK(damaged.got[i].payload == clean.got[i].payload);
    }
    check_accounting(damaged.stats);
}

}  // namespace

TEST_CASE("catalogue: pcap records longer than the file are counted, the records before them kept",
          "[pcap][catalogue]") {
    const auto bytes = test::read_binary_file(test::fixture_path("sipp-10-calls-g711-via-kamailio.pcap"));
    std::vector<std::size_t> starts;  // little-endian µs file: caplen at +8 of each record header
    for (std::size_t at = 24; at < bytes.size(); at += 16 + load_le32(bytes.data() + at + 8)) starts.push_back(at);
    REQUIRE(starts.size() == 1010);
    for (const std::size_t k :
         {std::size_t{0}, std::size_t{1}, std::size_t{505}, std::size_t{1000}, std::size_t{1009}}) {
        const std::size_t at = starts[k];
        const Run clean =
            run_bytes(std::vector<std::uint8_t>(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(at)));
        CHECK(clean.stats.frames == k);
        const auto left = static_cast<std::uint32_t>(bytes.size() - at - 16);
        // One byte past the end of the file: refused as a record that does not fit, or, where
        // that is beyond the 256 KiB record limit, as a bad record.
        {
            INFO("record " << k << " one byte past the end");
            auto damaged = bytes;
            store_le32(damaged.data() + at + 8, left + 1);
            check_same_as_clean_prefix(run_bytes(damaged), clean,
                                       left + 1 > 256 * 1024 ? FileError::bad_record : FileError::truncated_record);
        }
        // Beyond the record limit (256 KiB) the length itself is refused, whatever the file holds.
        for (const std::uint32_t caplen : {std::uint32_t{256 * 1024 + 1}, std::uint32_t{0xffff'ffff}}) {
            INFO("record " << k << " caplen " << caplen);
            auto damaged = bytes;
            store_le32(damaged.data() + at + 8, caplen);
            check_same_as_clean_prefix(run_bytes(damaged), clean, FileError::bad_record);
        }
    }
}

TEST_CASE("catalogue: pcapng blocks with lying lengths are counted, the blocks before them kept",
          "[pcap][pcapng][catalogue]") {
    const auto bytes = test::read_binary_file(data_file("two_interfaces.pcapng"));  // little-endian
    std::vector<std::size_t> starts;
    for (std::size_t at = 0; at < bytes.size(); at += load_le32(bytes.data() + at + 4)) starts.push_back(at);
    std::vector<std::size_t> epbs;
    for (const std::size_t at : starts)
        if (load_le32(bytes.data() + at) == 6) epbs.push_back(at);
    REQUIRE(epbs.size() == 3);
    for (const std::size_t at : {epbs[1], epbs[2], starts[1]}) {  // an EPB, the last block, the first IDB
        const Run clean =
            run_bytes(std::vector<std::uint8_t>(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(at)));
        const auto length = load_le32(bytes.data() + at + 4);
        const auto left = static_cast<std::uint32_t>(bytes.size() - at);
        const auto with_length = [&](std::uint32_t lying) {
            auto damaged = bytes;
            store_le32(damaged.data() + at + 4, lying);
            return damaged;
        };
        INFO("block at " << at);
        // Past the end of the file.
        check_same_as_clean_prefix(run_bytes(with_length(left + 4)), clean, FileError::truncated_record);
        check_same_as_clean_prefix(run_bytes(with_length(0xffff'fffc)), clean, FileError::truncated_record);
        const bool last = at + length == bytes.size();
        // Impossible lengths: below 12, not a multiple of 4, 0.
        for (const std::uint32_t lying : {0U, 4U, 8U, length + 1, length - 2})
            check_same_as_clean_prefix(run_bytes(with_length(lying)), clean, FileError::bad_block_length);
        // Shorter or longer by a word than the block: the trailing copy no longer matches (or,
        // for the last block, a longer one runs past the end of the file).
        check_same_as_clean_prefix(run_bytes(with_length(length - 4)), clean, FileError::bad_block_length);
        check_same_as_clean_prefix(run_bytes(with_length(length + 4)), clean,
                                   last ? FileError::truncated_record : FileError::bad_block_length);
        // The trailing copy alone lies.
        auto trailer = bytes;
        store_le32(trailer.data() + at + length - 4, length + 4);
        check_same_as_clean_prefix(run_bytes(trailer), clean, FileError::bad_block_length);
    }
    // An EPB whose captured length is larger than the block.
    const std::size_t epb = epbs[1];
    const Run clean =
        run_bytes(std::vector<std::uint8_t>(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(epb)));
    auto lying_caplen = bytes;
    store_le32(lying_caplen.data() + epb + 20, load_le32(bytes.data() + epb + 4));
    check_same_as_clean_prefix(run_bytes(lying_caplen), clean, FileError::bad_record);
}

namespace {

// A Got with its position in the input, as the pipeline numbered it.
using Numbered = std::pair<std::uint64_t, Got>;

class KeepingWorker final : public shard::Worker {
public:
    void process(const shard::Datagram& d, shard::BindingSink&) override { got.emplace_back(d.order, got_of(d)); }
    void bind(const MediaBinding&) override {}
    void advance(Timestamp, shard::BindingSink&) override {}
    void finish(Timestamp) override {}
    std::vector<Numbered> got;
};

struct SplitRun {
    std::vector<std::vector<Numbered>> by_shard;
    CaptureStats stats;
    std::string error;
};

SplitRun run_split(const std::vector<std::string>& files, std::size_t shards) {
    std::vector<std::unique_ptr<shard::Worker>> workers;
    std::vector<KeepingWorker*> keepers;
    for (std::size_t i = 0; i < shards; ++i) {
        auto w = std::make_unique<KeepingWorker>();
        keepers.push_back(w.get());
        workers.push_back(std::move(w));
    }
    shard::PipelineOptions po;
    po.shards = shards;
    po.producers = 0;
    po.lossless = true;
    shard::Pipeline pipeline(po, std::move(workers));
    SplitReader reader(files, shards, CaptureOptions{});
    pipeline.run_readers([&](std::size_t shard, shard::Pipeline::Feed& feed) { reader.read(shard, feed); });
    SplitRun r;
    for (KeepingWorker* k : keepers) r.by_shard.push_back(k->got);
    r.stats = reader.stats();
    r.error = reader.error();
    return r;
}

// One reader over the same files, stopping at the first error; each datagram with its shard.
struct WholeRun {
    std::vector<Got> got;
    std::vector<std::size_t> owner;
    CaptureStats stats;
    std::string error;
};

WholeRun run_whole(const std::vector<std::string>& files, std::size_t shards) {
    CaptureSource source;
    WholeRun r;
    auto sink = [&](const shard::Datagram& d) {
        r.got.push_back(got_of(d));
        r.owner.push_back(shard::shard_of(d, shards));
    };
    for (const std::string& path : files)
        if (source.read_file(path, sink, &r.error) != FileError::none) break;
    source.finish();
    r.stats = source.stats();
    return r;
}

void check_same(const Got& a, const Got& b) {
    CHECK(a.time == b.time);
    CHECK(a.src == b.src);
    CHECK(a.dst == b.dst);
    CHECK(a.transport == b.transport);
    CHECK(a.kind == b.kind);
    CHECK(a.hep_payload_type == b.hep_payload_type);
    CHECK(a.capture_id == b.capture_id);
    CHECK(a.correlation_id == b.correlation_id);
    CHECK(a.payload == b.payload);
}

// Each shard got exactly the datagrams it owns, numbered by their place in the input, its SIP
// in input order and its media in input order (a shard runs its SIP ahead of media held back
// for the peers' bindings: shard/pipeline.hpp); the statistics are those of one reader.
void check_split(const std::vector<std::string>& files, std::size_t shards) {
    const WholeRun whole = run_whole(files, shards);
    SplitRun split = run_split(files, shards);
    CHECK(split.error == whole.error);
    for (auto& got : split.by_shard) {
        std::uint64_t sip = 0;
        std::uint64_t media = 0;
        for (const Numbered& n : got) {
            std::uint64_t& last = n.second.kind == PayloadClass::sip ? sip : media;
            CHECK(n.first + 1 > last);
            last = n.first + 1;
        }
        std::sort(got.begin(), got.end(), [](const Numbered& a, const Numbered& b) { return a.first < b.first; });
    }
    std::vector<std::size_t> at(shards, 0);
    for (std::size_t i = 0; i < whole.got.size(); ++i) {
        const std::size_t s = whole.owner[i];
        REQUIRE(at[s] < split.by_shard[s].size());
        const Numbered& n = split.by_shard[s][at[s]++];
        CHECK(n.first == i);
        check_same(n.second, whole.got[i]);
    }
    for (std::size_t s = 0; s < shards; ++s) CHECK(at[s] == split.by_shard[s].size());
    const CaptureStats& a = split.stats;
    const CaptureStats& b = whole.stats;
    CHECK(a.files == b.files);
    CHECK(a.file_errors == b.file_errors);
    CHECK(a.frames == b.frames);
    CHECK(a.bytes == b.bytes);
    CHECK(a.frames_by_link == b.frames_by_link);
    CHECK(a.decode_errors == b.decode_errors);
    CHECK(a.tunnelled == b.tunnelled);
    CHECK(a.packets == b.packets);
    CHECK(a.datagrams == b.datagrams);
    CHECK(a.datagrams_by_kind == b.datagrams_by_kind);
    CHECK(a.fragments.reassembled == b.fragments.reassembled);
    CHECK(a.tcp.messages == b.tcp.messages);
    CHECK(a.hep.accepted() == b.hep.accepted());
    check_accounting(a);
}

// A pcap of `frames` records taken in turn from `from` (a pcap file), written to `path`: block
// boundaries land where the test wants them.
std::string cycled_capture(const std::string& from, std::size_t frames, const std::string& path) {
    const std::vector<std::uint8_t> bytes = test::read_binary_file(from);
    std::vector<std::pair<std::size_t, std::size_t>> records;
    for (std::size_t at = 24; at + 16 <= bytes.size();) {
        const std::size_t length = 16 + load_le32(bytes.data() + at + 8);
        records.emplace_back(at, length);
        at += length;
    }
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), 24);
    for (std::size_t i = 0; i < frames; ++i) {
        const auto& [at, length] = records[i % records.size()];
        out.write(reinterpret_cast<const char*>(bytes.data() + at), static_cast<std::streamsize>(length));
    }
    return path;
}

}  // namespace

TEST_CASE("split: shards that share the decoding each get their own datagrams in input order", "[pcap][split]") {
    const std::vector<std::string> files = {test::fixture_path("sipp-10-calls-g711-via-kamailio.pcap"),
                                            test::fixture_path("kamailio-siptrace-hep3-udp.pcap"),
                                            test::fixture_path("third-party/aaa.pcap"),
                                            data_file("fragmented_invite.pcap"),
                                            data_file("sip_tcp.pcap"),
                                            data_file("two_interfaces.pcapng")};
    for (const std::string& path : files) {
        for (std::size_t shards : {2U, 3U}) {
            INFO(path << ", " << shards << " shards");
            check_split({path}, shards);
        }
    }
    SECTION("several files in one run") {
        check_split(files, 2);
        check_split(files, 4);
    }
}

TEST_CASE("split: block boundaries, files that end on one, and a file cut short", "[pcap][split]") {
    const std::string dir = std::filesystem::temp_directory_path() / ("hepd-split-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    const std::string sipp = test::fixture_path("sipp-10-calls-g711-via-kamailio.pcap");
    const std::size_t block = SplitReader::kBlockFrames;
    for (const std::size_t frames : {std::size_t{0}, block - 1, block, block + 1, 2 * block, 3 * block + 5}) {
        const std::string path = cycled_capture(sipp, frames, dir + "/cycled-" + std::to_string(frames) + ".pcap");
        for (std::size_t shards : {2U, 3U}) {
            INFO(frames << " frames, " << shards << " shards");
            check_split({path}, shards);
            check_split({path, path}, shards);
        }
    }
    // Cut in the middle of the third block: every shard stops at the same frame, with the error.
    const std::string whole = cycled_capture(sipp, 3 * block, dir + "/whole.pcap");
    std::vector<std::uint8_t> bytes = test::read_binary_file(whole);
    bytes.resize(bytes.size() * 5 / 6);
    const std::string cut = dir + "/cut.pcap";
    std::ofstream(cut, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    for (std::size_t shards : {2U, 3U}) {
        INFO(shards << " shards");
        const SplitRun split = run_split({sipp, cut, sipp}, shards);
        CHECK(split.error.find("truncated_record") != std::string::npos);
        check_split({sipp, cut, sipp}, shards);
        check_split({dir + "/missing.pcap", sipp}, shards);
    }
    std::filesystem::remove_all(dir);
}

TEST_CASE("a raw packet after a HEP one is no capture agent's copy", "[pcap][classify]") {
    // A capture on a proxy that also mirrors HEP: only the agents' copies meet the duplicate
    // filter, whatever came before a raw packet in the file.
    auto reader = FileReader::open(test::fixture_path("kamailio-siptrace-hep3-udp.pcap"));
    REQUIRE(reader);
    FileReader walk = reader->clone();
    Frame hep_frame;
    REQUIRE(walk.next(hep_frame));
    const std::string sip = "OPTIONS sip:a@example.net SIP/2.0\r\nCall-ID: raw-1\r\nCSeq: 1 OPTIONS\r\n\r\n";
    std::vector<std::uint8_t> raw = {0,    1, 2,  3, 4, 5, 0,    1,    2,    3,    4, 6, 0x08, 0x00,  // Ethernet
                                     0x45, 0, 0,  0, 0, 1, 0x40, 0,    64,   17,   0, 0, 10,   0,
                                     0,    1, 10, 0, 0, 2, 0x13, 0xc4, 0x13, 0xc4, 0, 0, 0,    0};
    store_be16(raw.data() + 14 + 2, static_cast<std::uint16_t>(28 + sip.size()));
    store_be16(raw.data() + 34 + 4, static_cast<std::uint16_t>(8 + sip.size()));
    raw.insert(raw.end(), sip.begin(), sip.end());
    Frame raw_frame;
    raw_frame.time = hep_frame.time;
    raw_frame.data = ByteSpan(raw);

    CaptureSource source{CaptureOptions{}};
    std::vector<std::pair<PayloadClass, bool>> seen;  // kind, from an agent
    auto sink = [&](const shard::Datagram& d) { seen.emplace_back(d.kind, d.from_agent); };
    source.process(hep_frame, sink);
    source.process(raw_frame, sink);
    source.process(hep_frame, sink);
    REQUIRE(seen.size() == 3);
    CHECK(seen[0] == std::pair{PayloadClass::sip, true});
    CHECK(seen[1] == std::pair{PayloadClass::sip, false});
    CHECK(seen[2] == std::pair{PayloadClass::sip, true});
}
