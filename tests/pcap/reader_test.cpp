#include "pcap/reader.hpp"

#include "support/fixtures.hpp"

#include <catch2/catch.hpp>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using namespace hepd;
using namespace hepd::pcap;

namespace {

// Builds a classic pcap file in memory: global header + records, in the requested byte order.
class PcapWriter {
public:
    PcapWriter(std::uint32_t link, bool big_endian, bool nanos) : big_(big_endian) {
        put32(nanos ? 0xa1b23c4dU : 0xa1b2c3d4U);
        put16(2);
        put16(4);
        put32(0);
        put32(0);
        put32(65535);
        put32(link);
    }
    void record(std::uint32_t secs, std::uint32_t frac, const std::vector<std::uint8_t>& data) {
        put32(secs);
        put32(frac);
        put32(static_cast<std::uint32_t>(data.size()));
        put32(static_cast<std::uint32_t>(data.size()));
        bytes_.insert(bytes_.end(), data.begin(), data.end());
    }
    std::string write(const std::string& name, std::size_t cut = 0) const {
        const auto path = (std::filesystem::temp_directory_path() / name).string();
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(bytes_.data()), static_cast<std::streamsize>(bytes_.size() - cut));
        return path;
    }

private:
    void put16(std::uint16_t v) {
        if (big_) {
            bytes_.push_back(static_cast<std::uint8_t>(v >> 8));
            bytes_.push_back(static_cast<std::uint8_t>(v));
        } else {
            bytes_.push_back(static_cast<std::uint8_t>(v));
            bytes_.push_back(static_cast<std::uint8_t>(v >> 8));
        }
    }
    void put32(std::uint32_t v) {
        if (big_) {
            put16(static_cast<std::uint16_t>(v >> 16));
            put16(static_cast<std::uint16_t>(v));
        } else {
            put16(static_cast<std::uint16_t>(v));
            put16(static_cast<std::uint16_t>(v >> 16));
        }
    }
    bool big_;
    std::vector<std::uint8_t> bytes_;
};

// 10.0.0.1:5060 -> 10.0.0.2:5080, UDP, payload "hi" (IPv4 header checksum is not verified).
std::vector<std::uint8_t> ipv4_udp_hi() {
    return {0x45, 0,  0, 30, 0, 1,    0x40, 0,    64,   17, 0,  0, 10, 0,   0,
            1,    10, 0, 0,  2, 0x13, 0xc4, 0x13, 0xd8, 0,  10, 0, 0,  'h', 'i'};
}

std::vector<std::uint8_t> with_prefix(std::vector<std::uint8_t> prefix, const std::vector<std::uint8_t>& body) {
    prefix.insert(prefix.end(), body.begin(), body.end());
    return prefix;
}

void check_hi(const L4Packet& p) {
    CHECK(p.transport == Transport::udp);
    CHECK(p.src.to_string() == "10.0.0.1:5060");
    CHECK(p.dst.to_string() == "10.0.0.2:5080");
    CHECK(as_text(p.payload) == "hi");
}

}  // namespace

TEST_CASE("classic pcap in both byte orders and timestamp resolutions", "[pcap]") {
    for (bool big : {false, true}) {
        for (bool nanos : {false, true}) {
            PcapWriter w(101, big, nanos);
            w.record(1700000000, nanos ? 123456789U : 123456U, ipv4_udp_hi());
            const auto path = w.write("hepd_pcap_order.pcap");
            auto reader = FileReader::open(path);
            REQUIRE(reader.ok());
            CHECK(reader->link_type() == LinkType::raw);
            Frame f;
            REQUIRE(reader->next(f));
            CHECK(f.time.us == 1700000000LL * 1'000'000 + 123456);
            auto p = decode_frame(f);
            REQUIRE(p.ok());
            check_hi(*p);
            CHECK_FALSE(reader->next(f));
            CHECK(reader->error() == FileError::none);
        }
    }
}

TEST_CASE("link types: Ethernet with QinQ, SLL, SLL2, BSD loopback", "[pcap]") {
    const auto ip = ipv4_udp_hi();
    struct Case {
        std::uint32_t link;
        std::vector<std::uint8_t> prefix;
        std::uint16_t vlan;
    };
    const std::vector<Case> cases{
        {1, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x08, 0x00}, 0},
        {1, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x88, 0xa8, 0x00, 0x0a, 0x81, 0x00, 0x20, 0x2a, 0x08, 0x00}, 42},
        {113, {0, 0, 0, 1, 0, 6, 0, 1, 2, 3, 4, 5, 0, 0, 0x08, 0x00}, 0},
        {276, {0x08, 0x00, 0, 0, 0, 0, 0, 1, 0, 1, 0, 6, 0, 1, 2, 3, 4, 5, 0, 0}, 0},
        {0, {2, 0, 0, 0}, 0},
    };
    for (const auto& c : cases) {
        PcapWriter w(c.link, false, false);
        w.record(1, 2, with_prefix(c.prefix, ip));
        auto reader = FileReader::open(w.write("hepd_pcap_link.pcap"));
        REQUIRE(reader.ok());
        Frame f;
        REQUIRE(reader->next(f));
        auto p = decode_frame(f);
        INFO("link type " << c.link);
        REQUIRE(p.ok());
        check_hi(*p);
        CHECK(p->vlan == c.vlan);
    }
}

TEST_CASE("truncated and garbage files give clear errors", "[pcap]") {
    PcapWriter w(101, false, false);
    w.record(1, 0, ipv4_udp_hi());
    w.record(2, 0, ipv4_udp_hi());
    auto reader = FileReader::open(w.write("hepd_pcap_cut.pcap", 5));
    REQUIRE(reader.ok());
    Frame f;
    CHECK(reader->next(f));
    CHECK_FALSE(reader->next(f));
    CHECK(reader->error() == FileError::truncated_record);

    const auto garbage = (std::filesystem::temp_directory_path() / "hepd_pcap_garbage.pcap").string();
    std::ofstream(garbage) << "this is not a capture file at all";
    auto bad = FileReader::open(garbage);
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.error() == FileError::not_a_capture);
    CHECK(to_string(bad.error()) == "not_a_capture");

    auto missing = FileReader::open("/nonexistent/file.pcap");
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.error() == FileError::open_failed);
}

TEST_CASE("IPv4 fragments and non-IP frames are reported, not decoded", "[pcap]") {
    auto ip = ipv4_udp_hi();
    ip[6] = 0x20;  // More Fragments
    Frame f{Timestamp{}, LinkType::raw, ByteSpan(ip), 30};
    auto p = decode_frame(f);
    REQUIRE_FALSE(p.ok());
    CHECK(p.error() == DecodeError::ip_fragment);

    const std::vector<std::uint8_t> arp{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x08, 0x06, 0, 1};
    Frame a{Timestamp{}, LinkType::ethernet, ByteSpan(arp), 16};
    auto q = decode_frame(a);
    REQUIRE_FALSE(q.ok());
    CHECK(q.error() == DecodeError::not_ip);
}

TEST_CASE("every truncation of a frame is rejected without reading out of bounds", "[pcap]") {
    const auto full = with_prefix({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x08, 0x00}, ipv4_udp_hi());
    for (std::size_t n = 0; n < full.size(); ++n) {
        std::vector<std::uint8_t> cut(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n));
        Frame f{Timestamp{}, LinkType::ethernet, ByteSpan(cut), static_cast<std::uint32_t>(n)};
        auto p = decode_frame(f);
        // Cut inside the UDP payload still decodes (the capture is what it is); anything shorter fails.
        if (n >= 14 + 28) {
            REQUIRE(p.ok());
            CHECK(p->payload.size() == n - 14 - 28);
        } else {
            CHECK_FALSE(p.ok());
        }
    }
}

TEST_CASE("the Kamailio HEP-over-UDP fixture reads as 60 UDP datagrams to 9060", "[pcap][fixture]") {
    const auto name = "kamailio-siptrace-hep3-udp.pcap";
    auto reader = FileReader::open(test::fixture_path(name));
    REQUIRE(reader.ok());
    CHECK(reader->link_type() == LinkType::ethernet);
    Frame f;
    int count = 0;
    while (reader->next(f)) {
        auto p = decode_frame(f);
        REQUIRE(p.ok());
        CHECK(p->transport == Transport::udp);
        CHECK(p->dst.to_string() == "127.0.0.1:9060");
        CHECK(p->payload.size() > 6);
        ++count;
    }
    CHECK(reader->error() == FileError::none);
    CHECK(count == 60);
}

// ---------------------------------------------------------------------------------------------
// pcapng, gzip, memory buffers, cloning, and hostile files.

namespace {

std::string data_file(const std::string& name) { return std::string(HEPD_SOURCE_DIR) + "/tests/pcap/data/" + name; }

std::vector<std::uint8_t> read_all(const std::string& path) { return test::read_binary_file(path); }

// pcapng blocks, written field by field in the requested byte order.
class NgBuilder {
public:
    explicit NgBuilder(bool big = false) : big_(big) {}
    NgBuilder& shb(bool big, std::uint16_t major = 1) {
        big_ = big;
        Block b(*this);
        b.u32(0x1a2b3c4d).u16(major).u16(0).u32(0xffffffff).u32(0xffffffff);
        return b.finish(0x0a0d0d0a);
    }
    NgBuilder& idb(std::uint16_t link, std::uint32_t snap, std::vector<std::uint8_t> options = {}) {
        Block b(*this);
        b.u16(link).u16(0).u32(snap).raw(options);
        return b.finish(1);
    }
    NgBuilder& epb(std::uint32_t itf, std::uint64_t ts, const std::vector<std::uint8_t>& data,
                   std::uint32_t caplen_override = 0xffffffff) {
        Block b(*this);
        const auto caplen = caplen_override == 0xffffffff ? static_cast<std::uint32_t>(data.size()) : caplen_override;
        b.u32(itf).u32(static_cast<std::uint32_t>(ts >> 32)).u32(static_cast<std::uint32_t>(ts));
        b.u32(caplen).u32(static_cast<std::uint32_t>(data.size())).raw(data).pad();
        return b.finish(6);
    }
    NgBuilder& spb(std::uint32_t orig, const std::vector<std::uint8_t>& data) {
        Block b(*this);
        b.u32(orig).raw(data).pad();
        return b.finish(3);
    }
    NgBuilder& other(std::uint32_t type, std::size_t body) {
        Block b(*this);
        b.raw(std::vector<std::uint8_t>(body, 0xee)).pad();
        return b.finish(type);
    }
    // An option: code, length, value, padding (in the current byte order).
    std::vector<std::uint8_t> option(std::uint16_t code, std::vector<std::uint8_t> value) const {
        std::vector<std::uint8_t> o;
        put16(o, code);
        put16(o, static_cast<std::uint16_t>(value.size()));
        o.insert(o.end(), value.begin(), value.end());
        while (o.size() % 4 != 0) o.push_back(0);
        return o;
    }
    std::vector<std::uint8_t> end_of_options() const { return {0, 0, 0, 0}; }
    std::vector<std::uint8_t>& bytes() { return bytes_; }

private:
    friend class Block;
    class Block {
    public:
        explicit Block(NgBuilder& o) : owner_(o) {}
        Block& u16(std::uint16_t v) {
            owner_.put16(body_, v);
            return *this;
        }
        Block& u32(std::uint32_t v) {
            owner_.put32(body_, v);
            return *this;
        }
        Block& raw(const std::vector<std::uint8_t>& v) {
            body_.insert(body_.end(), v.begin(), v.end());
            return *this;
        }
        Block& pad() {
            while (body_.size() % 4 != 0) body_.push_back(0);
            return *this;
        }
        NgBuilder& finish(std::uint32_t type) {
            const auto len = static_cast<std::uint32_t>(12 + body_.size());
            owner_.put32(owner_.bytes_, type);
            owner_.put32(owner_.bytes_, len);
            owner_.bytes_.insert(owner_.bytes_.end(), body_.begin(), body_.end());
            owner_.put32(owner_.bytes_, len);
            return owner_;
        }

    private:
        NgBuilder& owner_;
        std::vector<std::uint8_t> body_;
    };
    void put16(std::vector<std::uint8_t>& out, std::uint16_t v) const {
        if (big_) {
            out.push_back(static_cast<std::uint8_t>(v >> 8));
            out.push_back(static_cast<std::uint8_t>(v));
        } else {
            out.push_back(static_cast<std::uint8_t>(v));
            out.push_back(static_cast<std::uint8_t>(v >> 8));
        }
    }
    void put32(std::vector<std::uint8_t>& out, std::uint32_t v) const {
        if (big_) {
            put16(out, static_cast<std::uint16_t>(v >> 16));
            put16(out, static_cast<std::uint16_t>(v));
        } else {
            put16(out, static_cast<std::uint16_t>(v));
            put16(out, static_cast<std::uint16_t>(v >> 16));
        }
    }
    bool big_;
    std::vector<std::uint8_t> bytes_;
};

struct FrameCopy {
    std::int64_t us;
    LinkType link;
    std::uint32_t itf;
    std::uint32_t orig;
    std::vector<std::uint8_t> data;
    friend bool operator==(const FrameCopy&, const FrameCopy&) = default;
};

std::vector<FrameCopy> read_frames(FileReader& r) {
    std::vector<FrameCopy> out;
    Frame f;
    while (r.next(f))
        out.push_back({f.time.us, f.link_type, f.interface_id, f.orig_length, {f.data.begin(), f.data.end()}});
    return out;
}

constexpr std::int64_t kT0 = 1'700'000'000'000'000;

}  // namespace

TEST_CASE("pcapng: per-frame link type, interface, resolution and offset", "[pcap][pcapng]") {
    auto reader = FileReader::open(data_file("two_interfaces.pcapng"));
    REQUIRE(reader.ok());
    CHECK(reader->format() == Format::pcapng);
    CHECK_FALSE(reader->compressed());
    CHECK(reader->link_type() == LinkType::ethernet);
    const auto frames = read_frames(*reader);
    CHECK(reader->error() == FileError::none);
    CHECK(reader->error_message().empty());
    REQUIRE(frames.size() == 4);  // capinfos: 4 packets
    CHECK(frames[0].us == kT0 + 1);
    CHECK(frames[0].link == LinkType::ethernet);
    CHECK(frames[0].itf == 0);
    CHECK(frames[0].data.size() == 252);
    CHECK(frames[1].us == kT0 + 100'123'456);  // ns, +100 s
    CHECK(frames[1].link == LinkType::raw);
    CHECK(frames[1].itf == 1);
    CHECK(frames[1].data.size() == 200);
    CHECK(frames[2].us == kT0 + 100'123'456);  // SPB: previous frame's time
    CHECK(frames[2].link == LinkType::ethernet);
    CHECK(frames[2].data.size() == 70);
    CHECK(frames[2].orig == 70);
    CHECK(frames[3].us == kT0 + 2'000'000);
    CHECK(reader->frames() == 4);
    CHECK(reader->offset() == reader->bytes().size());
}

TEST_CASE("pcapng: sections in both byte orders reset the interfaces", "[pcap][pcapng]") {
    auto reader = FileReader::open(data_file("sections.pcapng"));
    REQUIRE(reader.ok());
    CHECK(reader->link_type() == LinkType::linux_sll2);
    const auto frames = read_frames(*reader);
    CHECK(reader->error() == FileError::none);
    REQUIRE(frames.size() == 4);
    CHECK(frames[0].link == LinkType::linux_sll2);
    CHECK(frames[0].us == kT0 + 500'000);
    CHECK(frames[1].link == LinkType::linux_sll);
    CHECK(frames[1].itf == 0);
    CHECK(frames[2].link == LinkType::null_loopback);
    CHECK(frames[2].itf == 1);
    CHECK(frames[3].link == LinkType::loop);
    CHECK(frames[3].itf == 2);
    CHECK(frames[3].us == kT0 + 3'000'000);
    CHECK(reader->link_type() == LinkType::linux_sll);  // interface 0 of the current section
}

TEST_CASE("gzip: either format inflates to the same frames, from a file or from memory", "[pcap][gzip]") {
    for (const std::string name : {"two_interfaces.pcapng", "fragmented_invite.pcap"}) {
        INFO(name);
        auto plain = FileReader::open(data_file(name));
        auto packed = FileReader::open(data_file(name + ".gz"));
        REQUIRE(plain.ok());
        REQUIRE(packed.ok());
        CHECK(packed->compressed());
        CHECK(packed->format() == plain->format());
        const auto expected = read_frames(*plain);
        CHECK(read_frames(*packed) == expected);
        CHECK(packed->error() == FileError::none);

        const auto gz = read_all(data_file(name + ".gz"));
        auto mem = FileReader::from_memory(ByteSpan(gz));
        REQUIRE(mem.ok());
        CHECK(read_frames(*mem) == expected);
        auto owned = FileReader::from_buffer(read_all(data_file(name)));
        REQUIRE(owned.ok());
        CHECK(read_frames(*owned) == expected);
    }
    auto bounded = FileReader::open(data_file("fragmented_invite.pcap.gz"), 9368);  // inflates to 9,369
    REQUIRE_FALSE(bounded.ok());
    CHECK(bounded.error() == FileError::inflated_too_large);
    CHECK(FileReader::open(data_file("fragmented_invite.pcap.gz"), 9369).ok());
}

TEST_CASE("gzip: concatenated members are one stream", "[pcap][gzip]") {
    // gzip -c a > f; gzip -c b >> f: the second member continues the first's bytes.
    const auto plain = read_all(data_file("fragmented_invite.pcap"));
    auto deflate_gzip = [](const std::vector<std::uint8_t>& in) {
        z_stream z{};
        REQUIRE(deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK);
        std::vector<std::uint8_t> out(deflateBound(&z, static_cast<uLong>(in.size())) + 64);
        z.next_in = const_cast<Bytef*>(in.data());
        z.avail_in = static_cast<uInt>(in.size());
        z.next_out = out.data();
        z.avail_out = static_cast<uInt>(out.size());
        REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
        out.resize(z.total_out);
        deflateEnd(&z);
        return out;
    };
    const std::size_t split = 5000;
    auto joined = deflate_gzip({plain.begin(), plain.begin() + split});
    const auto second = deflate_gzip({plain.begin() + split, plain.end()});
    joined.insert(joined.end(), second.begin(), second.end());
    auto reader = FileReader::from_buffer(joined);
    REQUIRE(reader.ok());
    auto original = FileReader::from_buffer(plain);
    REQUIRE(original.ok());
    CHECK(read_frames(*reader) == read_frames(*original));
    CHECK(reader->error() == FileError::none);
    CHECK(reader->bytes().size() == plain.size());

    // Anything but another member (or zero padding) after a member is damage.
    auto trailing = deflate_gzip(plain);
    trailing.push_back('x');
    auto damaged = FileReader::from_buffer(trailing);
    REQUIRE(damaged.ok());
    CHECK(read_frames(*damaged).size() == 9);
    CHECK(damaged->error() == FileError::gzip_corrupt);
    CHECK(damaged->error_offset() == trailing.size() - 1);
    auto padded = deflate_gzip(plain);
    padded.insert(padded.end(), 512, 0);
    auto tape = FileReader::from_buffer(padded);
    REQUIRE(tape.ok());
    CHECK(read_frames(*tape).size() == 9);
    CHECK(tape->error() == FileError::none);
}

TEST_CASE("gzip: a truncated or corrupt stream delivers what inflated before the damage", "[pcap][gzip]") {
    const auto gz = read_all(data_file("fragmented_invite.pcap.gz"));
    auto full = FileReader::from_memory(ByteSpan(gz));
    REQUIRE(full.ok());
    const auto expected = read_frames(*full);
    REQUIRE(expected.size() == 9);
    std::size_t last_count = 0;
    for (std::size_t n = 0; n < gz.size(); ++n) {
        CAPTURE(n);
        auto r = FileReader::from_memory(ByteSpan(gz.data(), n));
        if (!r.ok()) {
            // Too little to inflate even the file header.
            const bool expected_error = r.error() == FileError::gzip_truncated ||
                                        r.error() == FileError::not_a_capture || r.error() == FileError::gzip_corrupt;
            CHECK(expected_error);
            continue;
        }
        const auto got = read_frames(*r);
        REQUIRE(got.size() <= expected.size());
        CHECK(std::equal(got.begin(), got.end(), expected.begin()));
        CHECK(r->error() == FileError::gzip_truncated);
        CHECK(r->error_offset() == n);
        CHECK(got.size() >= last_count);  // more input never gives fewer frames
        last_count = got.size();
    }
    CHECK(last_count >= 8);  // the 8-byte trailer holds no frame data

    // Flip bits in the deflate data: zlib notices (bad code or bad CRC) and says where.
    auto broken = gz;
    broken[broken.size() - 6] ^= 0xff;  // inside the CRC-32 trailer
    auto r = FileReader::from_memory(ByteSpan(broken));
    REQUIRE(r.ok());
    CHECK(read_frames(*r).size() == 9);
    CHECK(r->error() == FileError::gzip_corrupt);
    CHECK(r->error_message().rfind("gzip_corrupt at compressed byte ", 0) == 0);
}

TEST_CASE("clone and rewind walk the same mapping independently", "[pcap]") {
    auto reader = FileReader::open(data_file("fragmented_invite.pcap"));
    REQUIRE(reader.ok());
    Frame f;
    REQUIRE(reader->next(f));
    REQUIRE(reader->next(f));
    FileReader copy = reader->clone();
    CHECK(copy.bytes().data() == reader->bytes().data());  // shared, not copied
    const auto rest_a = read_frames(*reader);
    const auto rest_b = read_frames(copy);
    CHECK(rest_a.size() == 7);
    CHECK(rest_a == rest_b);
    reader->rewind();
    CHECK(read_frames(*reader).size() == 9);

    auto ng = FileReader::open(data_file("sections.pcapng"));
    REQUIRE(ng.ok());
    REQUIRE(ng->next(f));
    REQUIRE(ng->next(f));  // now in the second section
    FileReader ng_copy = ng->clone();
    CHECK(read_frames(*ng) == read_frames(ng_copy));
    ng->rewind();
    const auto again = read_frames(*ng);
    REQUIRE(again.size() == 4);
    CHECK(again[0].link == LinkType::linux_sll2);
    // The clone outlives the reader it came from.
    FileReader survivor = [&] {
        auto tmp = FileReader::open(data_file("sections.pcapng"));
        REQUIRE(tmp.ok());
        return tmp->clone();
    }();
    CHECK(read_frames(survivor).size() == 4);
}

TEST_CASE("pcapng: every truncation stops at the last whole block", "[pcap][pcapng]") {
    const auto bytes = read_all(data_file("two_interfaces.pcapng"));
    // Block boundaries and which blocks carry packets (little-endian file: length at +4).
    std::vector<std::size_t> ends;
    std::vector<bool> packet;
    for (std::size_t at = 0; at < bytes.size();) {
        const std::uint32_t type = load_le32(bytes.data() + at);
        at += load_le32(bytes.data() + at + 4);
        ends.push_back(at);
        packet.push_back(type == 3 || type == 6);
    }
    REQUIRE(ends.back() == bytes.size());
    for (std::size_t n = 0; n < bytes.size(); ++n) {
        CAPTURE(n);
        auto r = FileReader::from_memory(ByteSpan(bytes.data(), n));
        if (n < ends[0]) {
            REQUIRE_FALSE(r.ok());
            CHECK((r.error() == FileError::not_a_capture || r.error() == FileError::truncated_header));
            continue;
        }
        REQUIRE(r.ok());
        std::size_t whole = 0;
        std::size_t frames = 0;
        for (std::size_t i = 0; i < ends.size() && ends[i] <= n; ++i) {
            whole = ends[i];
            frames += packet[i] ? 1 : 0;
        }
        const auto got = read_frames(*r);
        CHECK(got.size() == frames);
        if (whole == n) {
            CHECK(r->error() == FileError::none);
        } else {
            CHECK(r->error() == FileError::truncated_record);
            CHECK(r->error_offset() == whole);
        }
    }
}

TEST_CASE("classic pcap: a cut anywhere keeps every whole record before it", "[pcap]") {
    const auto name = "sipp-10-calls-g711-via-kamailio.pcap";
    const auto bytes = read_all(test::fixture_path(name));
    std::vector<std::size_t> ends;  // little-endian µs file: caplen at +8 of each record header
    for (std::size_t at = 24; at < bytes.size();) {
        at += 16 + load_le32(bytes.data() + at + 8);
        ends.push_back(at);
    }
    REQUIRE(ends.size() == 1010);
    for (std::size_t n : {std::size_t{24}, std::size_t{30}, ends[0], ends[0] + 15, ends[0] + 16, ends[499] + 100,
                          ends[1008], bytes.size() - 1}) {
        CAPTURE(n);
        auto r = FileReader::from_memory(ByteSpan(bytes.data(), n));
        REQUIRE(r.ok());
        const auto whole = static_cast<std::size_t>(std::upper_bound(ends.begin(), ends.end(), n) - ends.begin());
        const auto got = read_frames(*r);
        CHECK(got.size() == whole);
        const std::size_t last_end = whole == 0 ? 24 : ends[whole - 1];
        if (last_end == n) {
            CHECK(r->error() == FileError::none);
        } else {
            CHECK(r->error() == FileError::truncated_record);
            CHECK(r->error_offset() == last_end);
            CHECK(r->error_message() == "truncated_record at byte " + std::to_string(last_end) + " after " +
                                            std::to_string(whole) + (whole == 1 ? " frame" : " frames"));
        }
    }
}

TEST_CASE("classic pcap: a walk of record lengths hands a reader on to where it ends", "[pcap]") {
    const auto bytes = read_all(test::fixture_path("sipp-10-calls-g711-via-kamailio.pcap"));
    std::vector<std::size_t> ends;
    for (std::size_t at = 24; at < bytes.size();) {
        at += 16 + load_le32(bytes.data() + at + 8);
        ends.push_back(at);
    }
    auto whole = FileReader::from_memory(ByteSpan(bytes.data(), bytes.size()));
    REQUIRE(whole.ok());
    const auto all = read_frames(*whole);
    REQUIRE(all.size() == 1010);

    auto r = FileReader::from_memory(ByteSpan(bytes.data(), bytes.size()));
    REQUIRE(r.ok());
    REQUIRE(r->resumable());
    std::uint64_t end = 0;
    CHECK(r->frames_ahead(300, end) == 300);
    CHECK(end == ends[299]);
    CHECK(r->offset() == 24);  // it did not move
    CHECK(r->frames_ahead(5000, end) == 1010);
    CHECK(end == bytes.size());

    // Another reader of the same bytes takes over at the 300th record, as if it had read them.
    FileReader other = r->clone();
    other.resume_at(ends[299], 300);
    const auto rest = read_frames(other);
    REQUIRE(rest.size() == 710);
    CHECK(std::equal(rest.begin(), rest.end(), all.begin() + 300));
    CHECK(other.frames() == 1010);

    // skip() stops where next() would, with its error.
    CHECK(r->skip(1000) == 1000);
    CHECK(r->skip(1000) == 10);
    CHECK(r->error() == FileError::none);
    auto cut = FileReader::from_memory(ByteSpan(bytes.data(), ends[499] + 100));
    REQUIRE(cut.ok());
    std::uint64_t cut_end = 0;
    CHECK(cut->frames_ahead(1024, cut_end) == 500);
    CHECK(cut_end == ends[499]);
    CHECK(cut->skip(1024) == 500);
    CHECK(cut->error() == FileError::truncated_record);

    // pcapng blocks carry section state: not resumable, walked over with skip().
    auto ng = FileReader::open(data_file("sections.pcapng"));
    REQUIRE(ng.ok());
    CHECK_FALSE(ng->resumable());
    CHECK(ng->frames_ahead(10, end) == 0);
    CHECK(ng->skip(3) == 3);
    Frame f;
    CHECK(ng->next(f));
    CHECK_FALSE(ng->next(f));
}

TEST_CASE("pcapng: hostile blocks stop with the error and the offset", "[pcap][pcapng]") {
    const std::vector<std::uint8_t> frame{1, 2, 3, 4, 5};
    auto first_error = [](std::vector<std::uint8_t> bytes, std::size_t expect_frames) {
        auto r = FileReader::from_buffer(std::move(bytes));
        REQUIRE(r.ok());
        CHECK(read_frames(*r).size() == expect_frames);
        return std::make_pair(r->error(), r->error_offset());
    };
    SECTION("trailer length differs from the header") {
        NgBuilder b;
        b.shb(false).idb(1, 0).epb(0, 0, frame);
        const std::size_t at = b.bytes().size();
        b.epb(0, 0, frame);
        b.bytes().back() ^= 0x04;  // last byte of the trailing length (little-endian high byte)
        CHECK(first_error(b.bytes(), 1) == std::make_pair(FileError::bad_block_length, std::uint64_t{at}));
    }
    SECTION("length not a multiple of 4, or below 12") {
        for (std::uint32_t len : {13U, 8U}) {
            NgBuilder b;
            b.shb(false).idb(1, 0);
            const std::size_t at = b.bytes().size();
            b.epb(0, 0, frame);
            store_be32(b.bytes().data() + at + 4, 0);
            b.bytes()[at + 4] = static_cast<std::uint8_t>(len);
            CHECK(first_error(b.bytes(), 0) == std::make_pair(FileError::bad_block_length, std::uint64_t{at}));
        }
    }
    SECTION("a packet on an interface the section has not described") {
        NgBuilder b;
        b.shb(false).idb(1, 0);
        const std::size_t at = b.bytes().size();
        b.epb(1, 0, frame);
        CHECK(first_error(b.bytes(), 0) == std::make_pair(FileError::unknown_interface, std::uint64_t{at}));
        NgBuilder s;
        s.shb(true);
        s.spb(5, frame);
        CHECK(first_error(s.bytes(), 0) == std::make_pair(FileError::unknown_interface, std::uint64_t{28}));
        // A new section forgets the interfaces of the previous one.
        NgBuilder n;
        n.shb(false).idb(1, 0).epb(0, 0, frame).shb(true);
        const std::size_t at2 = n.bytes().size();
        n.epb(0, 0, frame);
        CHECK(first_error(n.bytes(), 1) == std::make_pair(FileError::unknown_interface, std::uint64_t{at2}));
    }
    SECTION("captured length larger than the block") {
        NgBuilder b;
        b.shb(false).idb(1, 0);
        const std::size_t at = b.bytes().size();
        b.epb(0, 0, frame, 9);  // 5 bytes padded to 8: 9 does not fit
        CHECK(first_error(b.bytes(), 0) == std::make_pair(FileError::bad_record, std::uint64_t{at}));
    }
    SECTION("options that overrun the block, impossible resolutions") {
        NgBuilder b;
        b.shb(false);
        auto opt = b.option(9, {6});
        opt[2] = 40;  // says 40 bytes of value
        b.idb(1, 0, opt);
        auto r = FileReader::from_buffer(b.bytes());
        REQUIRE_FALSE(r.ok());  // interfaces before the first packet are part of the header
        CHECK(r.error() == FileError::bad_interface_option);
        for (std::uint8_t resol : {std::uint8_t{20}, std::uint8_t{0x80 | 64}}) {
            NgBuilder d;
            d.shb(false).other(4, 8);
            const std::size_t at = d.bytes().size();
            auto o = d.option(9, {resol});
            auto end = d.end_of_options();
            o.insert(o.end(), end.begin(), end.end());
            d.idb(1, 0, o);
            CHECK(first_error(d.bytes(), 0) == std::make_pair(FileError::bad_interface_option, std::uint64_t{at}));
        }
    }
    SECTION("bad byte-order magic, unknown major version, short first block") {
        NgBuilder b;
        b.shb(false);
        b.bytes()[8] = 0x00;
        auto r = FileReader::from_buffer(b.bytes());
        REQUIRE_FALSE(r.ok());
        CHECK(r.error() == FileError::bad_section_header);
        NgBuilder v;
        v.shb(true, 2);
        auto rv = FileReader::from_buffer(v.bytes());
        REQUIRE_FALSE(rv.ok());
        CHECK(rv.error() == FileError::bad_section_header);
        NgBuilder t;
        t.shb(false);
        t.bytes().resize(20);
        auto rt = FileReader::from_buffer(t.bytes());
        REQUIRE_FALSE(rt.ok());
        CHECK(rt.error() == FileError::truncated_header);
        // A later section with a bad magic fails where it starts.
        NgBuilder l;
        l.shb(false).idb(1, 0).epb(0, 0, frame);
        const std::size_t at = l.bytes().size();
        l.shb(false);
        l.bytes()[at + 8] = 0x99;
        CHECK(first_error(l.bytes(), 1) == std::make_pair(FileError::bad_section_header, std::uint64_t{at}));
    }
    SECTION("interfaces are capped") {
        NgBuilder c;
        c.shb(false).other(4, 4);
        for (std::size_t i = 0; i <= FileReader::kMaxInterfaces; ++i) c.idb(1, 0);
        const std::size_t last = c.bytes().size() - 20;
        CHECK(first_error(c.bytes(), 0) == std::make_pair(FileError::too_many_interfaces, std::uint64_t{last}));
    }
}

TEST_CASE("pcapng: timestamp resolutions and offsets", "[pcap][pcapng]") {
    struct Case {
        std::vector<std::uint8_t> resol;  // empty: default (µs)
        std::int64_t offset_s;
        std::uint64_t ts;
        std::int64_t us;
    };
    const std::vector<Case> cases{
        {{}, 0, 1'700'000'000'000'001ULL, kT0 + 1},
        {{3}, 0, 1'700'000'000'123ULL, kT0 + 123'000},                             // milliseconds
        {{0}, 0, 1'700'000'000ULL, kT0},                                           // seconds
        {{9}, 0, 1'700'000'000'999'999'999ULL, kT0 + 999'999},                     // ns, truncated
        {{12}, 0, 5'000'000'000'001'000'000ULL, 5'000'000'000'001},                // ps
        {{0x80 | 20}, 0, (1'700'000'000ULL << 20) | (1ULL << 19), kT0 + 500'000},  // 2^-20 s
        {{0x80 | 0}, 0, 1'700'000'000ULL, kT0},                                    // 2^0 s
        {{0x80 | 63}, 0, (3ULL << 62), 1'500'000},                                 // 2^-63 s: 1.5 s
        {{}, -100, 1'700'000'100'000'000ULL, kT0},                                 // negative if_tsoffset
        {{6}, 7, 1'000'000ULL, 8'000'000},
    };
    for (bool big : {false, true}) {
        for (const auto& c : cases) {
            CAPTURE(big, c.ts, c.offset_s);
            NgBuilder b;
            b.shb(big);
            std::vector<std::uint8_t> opts;
            if (!c.resol.empty()) opts = b.option(9, c.resol);
            if (c.offset_s != 0) {
                std::vector<std::uint8_t> v(8);
                const auto u = static_cast<std::uint64_t>(c.offset_s);
                for (int i = 0; i < 8; ++i)
                    v[static_cast<std::size_t>(big ? 7 - i : i)] = static_cast<std::uint8_t>(u >> (8 * i));
                const auto o = b.option(14, v);
                opts.insert(opts.end(), o.begin(), o.end());
            }
            if (!opts.empty()) {
                const auto e = b.end_of_options();
                opts.insert(opts.end(), e.begin(), e.end());
            }
            b.idb(101, 0, opts).epb(0, c.ts, ipv4_udp_hi());
            auto r = FileReader::from_buffer(b.bytes());
            REQUIRE(r.ok());
            Frame f;
            REQUIRE(r->next(f));
            CHECK(f.time.us == c.us);
            CHECK(f.link_type == LinkType::raw);
            auto p = decode_frame(f);
            REQUIRE(p.ok());
            check_hi(*p);
        }
    }
}

TEST_CASE("simple packet blocks: snap length of interface 0 and padding", "[pcap][pcapng]") {
    NgBuilder b;
    b.shb(false).idb(101, 24).idb(1, 0);
    b.epb(1, 5'000'000, std::vector<std::uint8_t>(20, 0xaa));
    b.spb(30, ipv4_udp_hi());  // 30 bytes, snap length 24: cut at 24
    b.spb(3, {1, 2, 3});       // padded to 4: the original length tells
    auto r = FileReader::from_buffer(b.bytes());
    REQUIRE(r.ok());
    const auto frames = read_frames(*r);
    CHECK(r->error() == FileError::none);
    REQUIRE(frames.size() == 3);
    CHECK(frames[0].link == LinkType::ethernet);
    CHECK(frames[1].link == LinkType::raw);
    CHECK(frames[1].us == 5'000'000);
    CHECK(frames[1].data.size() == 24);
    CHECK(frames[1].orig == 30);
    CHECK(frames[2].data == std::vector<std::uint8_t>{1, 2, 3});
}

TEST_CASE("classic pcap: modified-format records, FCS bits in the link type", "[pcap]") {
    // Kuznetzov's format: 8 more bytes per record header (ifindex, protocol, pkt_type, pad).
    std::vector<std::uint8_t> b{
        0x34, 0xcd, 0xb2, 0xa1, 2,    0,    4, 0, 0,   0, 0, 0,
        0,    0,    0,    0,    0xff, 0xff, 0, 0, 101, 0, 0, 0x10};  // link 101 with the FCS flag bits
    const auto ip = ipv4_udp_hi();
    const std::uint8_t hdr[24] = {1, 0, 0, 0, 2, 0, 0, 0, 30, 0, 0, 0, 30, 0, 0, 0, 9, 9, 9, 9, 9, 9, 9, 9};
    b.insert(b.end(), std::begin(hdr), std::end(hdr));
    b.insert(b.end(), ip.begin(), ip.end());
    auto r = FileReader::from_buffer(b);
    REQUIRE(r.ok());
    CHECK(r->link_type() == LinkType::raw);
    Frame f;
    REQUIRE(r->next(f));
    CHECK(f.time.us == 1'000'002);
    auto p = decode_frame(f);
    REQUIRE(p.ok());
    check_hi(*p);
    CHECK_FALSE(r->next(f));
    CHECK(r->error() == FileError::none);
}

TEST_CASE("garbage in any shape is refused, never a crash", "[pcap]") {
    std::uint32_t x = 12345;
    for (std::size_t size : {0U, 1U, 3U, 4U, 23U, 24U, 100U, 4096U}) {
        std::vector<std::uint8_t> junk(size);
        for (auto& c : junk) {
            x = x * 1103515245U + 12345U;
            c = static_cast<std::uint8_t>(x >> 16);
        }
        auto r = FileReader::from_buffer(junk);
        CHECK_FALSE(r.ok());
    }
    // The right magic, then nonsense: refused at open or stopped at the first record.
    std::vector<std::uint8_t> ng{0x0a, 0x0d, 0x0d, 0x0a, 0xff, 0xff, 0xff, 0xff, 0x4d, 0x3c, 0x2b, 0x1a};
    ng.resize(64, 0xff);
    CHECK_FALSE(FileReader::from_buffer(ng).ok());
    std::vector<std::uint8_t> pc{0xd4, 0xc3, 0xb2, 0xa1};
    pc.resize(24 + 16, 0xff);  // caplen 0xffffffff
    auto r = FileReader::from_buffer(pc);
    REQUIRE(r.ok());
    Frame f;
    CHECK_FALSE(r->next(f));
    CHECK(r->error() == FileError::bad_record);
    CHECK(r->error_offset() == 24);
    CHECK(to_string(FileError::inflated_too_large) == "inflated_too_large");
}
