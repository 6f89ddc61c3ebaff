// The duplicate filter alone: window edges, sources, capacity and keys that collide.
#include "shard/duplicate_filter.hpp"

#include <catch2/catch.hpp>

#include <set>
#include <string>
#include <utility>

using namespace hepd;
using namespace hepd::shard;

namespace {

constexpr std::int64_t kWindow = 50'000;
constexpr std::uint64_t kAgentA = 101ULL << 16;  // capture_source() of capture id 101
constexpr std::uint64_t kAgentB = 202ULL << 16;

Datagram datagram(const std::string& payload, std::int64_t us, std::uint32_t capture_id,
                  PayloadClass kind = PayloadClass::sip) {
    Datagram d;
    d.time = Timestamp{1'700'000'000'000'000 + us};
    d.src = Endpoint{IpAddress::v4(0x0a000001U), 5060};
    d.dst = Endpoint{IpAddress::v4(0x0a000002U), 5060};
    d.kind = kind;
    d.capture_id = capture_id;
    d.from_agent = true;
    d.payload = as_bytes(payload);
    return d;
}

// Both halves of the fingerprint given: in a table of one bucket every key collides there.
DuplicateKey key(std::uint64_t hash, std::uint64_t check = 7) {
    DuplicateKey k;
    k.hash = hash;
    k.check = check;
    k.kind = PayloadClass::rtp;
    return k;
}

Timestamp at(std::int64_t us) { return Timestamp{1'700'000'000'000'000 + us}; }

std::uint64_t dropped(const DuplicateFilter& f, PayloadClass kind) {
    return f.stats().duplicates[static_cast<std::size_t>(kind)].value();
}

}  // namespace

TEST_CASE("a copy from another agent within the window is a duplicate, at both edges", "[shard][duplicates]") {
    const std::string invite = "INVITE sip:b@x SIP/2.0\r\nCall-ID: 1@a\r\nCSeq: 1 INVITE\r\n\r\n";
    DuplicateFilter f({kWindow, 64, false});
    REQUIRE(f.enabled());
    CHECK_FALSE(f.is_duplicate(datagram(invite, 0, 101)));
    CHECK(f.is_duplicate(datagram(invite, kWindow, 202)));            // the edge itself is inside
    CHECK(f.is_duplicate(datagram(invite, -kWindow, 303)));           // a copy stamped earlier too
    CHECK_FALSE(f.is_duplicate(datagram(invite, kWindow + 1, 404)));  // measured from the first copy
    CHECK(dropped(f, PayloadClass::sip) == 2);

    SECTION("after the window the same bytes are a new packet (a retransmission after T1)") {
        DuplicateFilter g({kWindow, 64, false});
        CHECK_FALSE(g.is_duplicate(datagram(invite, 0, 101)));
        CHECK_FALSE(g.is_duplicate(datagram(invite, 500'000, 202)));
        CHECK(g.is_duplicate(datagram(invite, 500'010, 101)));  // ...whose own copy is caught
    }
}

TEST_CASE("the first agent repeating its bytes is kept unless same_source is set", "[shard][duplicates]") {
    const std::string rtp(172, 'r');
    DuplicateFilter keep({kWindow, 64, false});
    CHECK_FALSE(keep.is_duplicate(datagram(rtp, 0, 101, PayloadClass::rtp)));
    CHECK_FALSE(keep.is_duplicate(datagram(rtp, 500, 101, PayloadClass::rtp)));  // a network duplicate
    CHECK(keep.is_duplicate(datagram(rtp, 700, 202, PayloadClass::rtp)));        // the other agent's copy
    CHECK(dropped(keep, PayloadClass::rtp) == 1);

    DuplicateFilter same({kWindow, 64, true});
    CHECK_FALSE(same.is_duplicate(datagram(rtp, 0, 101, PayloadClass::rtp)));
    CHECK(same.is_duplicate(datagram(rtp, 500, 101, PayloadClass::rtp)));  // one packet on two interfaces
    CHECK(dropped(same, PayloadClass::rtp) == 1);

    // The configured agent counts as a source too (agents that all send capture id 0).
    Datagram a = datagram(rtp, 0, 0, PayloadClass::rtp);
    Datagram b = a;
    b.agent = 3;
    DuplicateFilter by_agent({kWindow, 64, false});
    CHECK_FALSE(by_agent.is_duplicate(a));
    CHECK(by_agent.is_duplicate(b));
}

TEST_CASE("raw captured packets are compared only with same_source", "[shard][duplicates]") {
    const std::string rtp(172, 'r');
    Datagram a = datagram(rtp, 0, 0, PayloadClass::rtp);
    a.from_agent = false;  // what `hepd pcap` makes of a packet of a plain capture
    Datagram b = a;
    b.time = Timestamp{a.time.us + 500};
    DuplicateFilter keep({kWindow, 64, false});
    CHECK_FALSE(keep.is_duplicate(a));
    CHECK_FALSE(keep.is_duplicate(b));
    CHECK(dropped(keep, PayloadClass::rtp) == 0);
    DuplicateFilter same({kWindow, 64, true});  // two hosts' captures merged
    CHECK_FALSE(same.is_duplicate(a));
    CHECK(same.is_duplicate(b));
    // A HEP agent's copy of a raw packet is not compared with it either: the raw one was never kept.
    Datagram hep = a;
    hep.from_agent = true;
    hep.capture_id = 101;
    CHECK_FALSE(keep.is_duplicate(hep));
}

TEST_CASE("a window of 0 keeps every copy", "[shard][duplicates]") {
    const std::string invite = "INVITE sip:b@x SIP/2.0\r\n\r\n";
    DuplicateFilter f({0, 64, true});
    CHECK_FALSE(f.enabled());
    CHECK(f.capacity() == 0);
    CHECK_FALSE(f.is_duplicate(datagram(invite, 0, 101)));
    CHECK_FALSE(f.is_duplicate(datagram(invite, 0, 202)));
}

TEST_CASE("the fingerprint: payload, addresses, transport and kind; not time, agent or correlation id",
          "[shard][duplicates]") {
    const std::string payload = "SIP/2.0 200 OK\r\nCall-ID: 1@a\r\n\r\n";
    const std::string same_bytes_elsewhere = payload;  // equal bytes in another buffer
    Datagram a = datagram(payload, 0, 101);
    Datagram b = datagram(same_bytes_elsewhere, 10, 202);
    b.agent = 4;
    b.correlation_id = "x";
    b.hep_payload_type = 1;
    CHECK(duplicate_key(a) == duplicate_key(b));

    Datagram other = b;
    other.src.port = 5061;
    CHECK_FALSE(duplicate_key(a) == duplicate_key(other));
    other = b;
    other.dst.address = IpAddress::v4(0x0a000003U);
    CHECK_FALSE(duplicate_key(a) == duplicate_key(other));
    other = b;
    other.transport = Transport::tcp;
    CHECK_FALSE(duplicate_key(a) == duplicate_key(other));
    other = b;
    other.kind = PayloadClass::log;
    CHECK_FALSE(duplicate_key(a) == duplicate_key(other));
    other = b;
    other.src.address = IpAddress::v6(std::array<std::uint8_t, 16>{0x0a, 0, 0, 1});  // the same bytes, v6
    CHECK_FALSE(duplicate_key(a) == duplicate_key(other));
    // Both halves change with any byte, at every position and length (stripes, tail words).
    for (std::size_t size : {1, 7, 8, 9, 31, 32, 33, 172, 1000}) {
        const std::string base(size, 'x');
        Datagram d = datagram(base, 0, 1);
        const auto kb = duplicate_key(d);
        for (std::size_t at = 0; at < size; ++at) {
            std::string changed = base;
            changed[at] = 'y';
            d.payload = as_bytes(changed);
            const auto kc = duplicate_key(d);
            INFO("size " << size << " byte " << at);
            REQUIRE(kc.hash != kb.hash);
            REQUIRE(kc.check != kb.check);
        }
        // A zero byte more is another packet, not padding.
        const std::string longer = base + std::string(1, '\0');
        d.payload = as_bytes(longer);
        CHECK_FALSE(duplicate_key(d) == kb);
    }
}

TEST_CASE("the fingerprint around its block edges: every byte, bit, length, address, port and kind",
          "[shard][duplicates]") {
    // Lengths 0..100 (blocks of 16, the overlapping tail, the short reads under 16), zeros and
    // text; every one-bit change of the payload and of each other input. All keys distinct.
    std::set<std::pair<std::uint64_t, std::uint64_t>> keys;
    std::set<std::uint64_t> hashes;
    std::set<std::uint64_t> checks;
    std::size_t made = 0;
    std::size_t same_bucket = 0;  // hash and check pick the same of 1024 buckets
    auto add = [&](const Datagram& d) {
        const DuplicateKey k = duplicate_key(d);
        ++made;
        keys.emplace(k.hash, k.check);
        hashes.insert(k.hash);
        checks.insert(k.check);
        if ((k.hash & 1023) == (k.check & 1023)) ++same_bucket;
    };
    for (const char fill : {'\0', 'x'}) {
        for (std::size_t size = fill == '\0' ? 0 : 1; size <= 100; ++size) {
            const std::string base(size, fill);
            Datagram d = datagram(base, 0, 1);
            add(d);
            for (std::size_t at = 0; at < size; ++at) {
                for (int bit = 0; bit < 8; ++bit) {
                    std::string changed = base;
                    changed[at] = static_cast<char>(changed[at] ^ (1 << bit));
                    d.payload = as_bytes(changed);
                    add(d);
                }
            }
            d.payload = as_bytes(base);
            for (int bit = 0; bit < 16; ++bit) {
                Datagram o = d;
                o.src.port = static_cast<std::uint16_t>(o.src.port ^ (1 << bit));
                add(o);
                o = d;
                o.dst.port = static_cast<std::uint16_t>(o.dst.port ^ (1 << bit));
                add(o);
            }
            for (std::uint32_t bit = 0; bit < 32; ++bit) {
                Datagram o = d;
                o.src.address = IpAddress::v4(0x0a000001U ^ (1U << bit));
                add(o);
                o = d;
                o.dst.address = IpAddress::v4(0x0a000002U ^ (1U << bit));
                add(o);
            }
            for (std::size_t kind = 0; kind < kPayloadClassCount; ++kind) {
                if (static_cast<PayloadClass>(kind) == d.kind) continue;
                Datagram o = d;
                o.kind = static_cast<PayloadClass>(kind);
                add(o);
            }
            Datagram o = d;
            o.transport = Transport::tcp;
            add(o);
        }
    }
    CHECK(keys.size() == made);
    CHECK(hashes.size() == made);
    CHECK(checks.size() == made);
    // Independent halves: about one key in 1024 has both in the same bucket.
    CHECK(same_bucket < 3 * made / 1024);
}

TEST_CASE("keys whose hash collides but which differ elsewhere are never dropped", "[shard][duplicates]") {
    // One bucket (capacity 4): every key lands in it. The same first half with different second
    // halves, and the reverse: five different packets.
    DuplicateFilter f({kWindow, 4, false});
    REQUIRE(f.capacity() == 4);
    const DuplicateKey base = key(42, 7);
    const DuplicateKey other_check = key(42, 8);
    const DuplicateKey other_hash = key(43, 7);
    const DuplicateKey swapped = key(7, 42);
    CHECK_FALSE(f.is_duplicate(base, kAgentA, at(0)));
    CHECK_FALSE(f.is_duplicate(other_check, kAgentB, at(1)));
    CHECK_FALSE(f.is_duplicate(other_hash, kAgentB, at(2)));
    CHECK_FALSE(f.is_duplicate(swapped, kAgentB, at(3)));
    CHECK_FALSE(f.is_duplicate(key(42 + 4096, 7 + 4096), kAgentB, at(4)));
    CHECK(f.stats().evictions.value() == 1);  // five live keys, four ways
    for (const auto& k : {other_check, other_hash, swapped}) CHECK(f.is_duplicate(k, kAgentA, at(5)));
    CHECK(dropped(f, PayloadClass::rtp) == 3);

    // Real payloads that differ: no drop (the two hashes are independent).
    DuplicateFilter g({kWindow, 64, false});
    for (int i = 0; i < 1000; ++i) {
        const std::string p = "RTP packet " + std::to_string(i);
        REQUIRE_FALSE(g.is_duplicate(datagram(p, i, 100U + static_cast<std::uint32_t>(i % 2), PayloadClass::rtp)));
    }
}

TEST_CASE("capacity: entries outside the window are free; live ones are evicted oldest first and counted",
          "[shard][duplicates]") {
    DuplicateFilter f({kWindow, 4, false});  // one bucket of four ways
    for (std::uint64_t h = 0; h < 4; ++h)
        CHECK_FALSE(f.is_duplicate(key(h * 1024), kAgentA, at(100 * static_cast<std::int64_t>(h))));
    CHECK(f.stats().evictions.value() == 0);
    // A fifth live key pushes out the oldest (hash 0, time 0): its copy passes, counted.
    CHECK_FALSE(f.is_duplicate(key(4 * 1024), kAgentA, at(400)));
    CHECK(f.stats().evictions.value() == 1);
    CHECK_FALSE(f.is_duplicate(key(0), kAgentB, at(450)));  // evicted: not recognised (re-inserted)
    CHECK(f.stats().evictions.value() == 2);                // ...pushing out hash 1024, the next oldest
    CHECK(f.is_duplicate(key(2 * 1024), kAgentB, at(460)));
    CHECK(f.is_duplicate(key(4 * 1024), kAgentB, at(470)));

    // Once the window has passed every entry is free again: no evictions counted.
    const std::uint64_t before = f.stats().evictions.value();
    for (std::uint64_t h = 10; h < 14; ++h)
        CHECK_FALSE(f.is_duplicate(key(h * 1024), kAgentA, at(kWindow + 1000 + static_cast<std::int64_t>(h))));
    CHECK(f.stats().evictions.value() == before);

    SECTION("capacity rounds up to a power of two, at least one bucket") {
        CHECK(DuplicateFilter({kWindow, 1, false}).capacity() == 4);
        CHECK(DuplicateFilter({kWindow, 5, false}).capacity() == 8);
        CHECK(DuplicateFilter({kWindow, 16'384, false}).capacity() == 16'384);
    }
}

TEST_CASE("SIP processed ahead of held media frees none of the media's entries", "[shard][duplicates]") {
    // A reading shard processes its own SIP at once and holds its media for the peers' SIP: a
    // SIP message seconds ahead of a held RTP packet reaches the filter between the RTP packet
    // and its copy. In one bucket of one table the SIP message would take the RTP entry, which
    // is outside the SIP message's window, and the copy would pass.
    DuplicateFilter f({kWindow, 4, false});  // one bucket of four ways a table
    for (std::uint64_t h = 0; h < 4; ++h)
        CHECK_FALSE(f.is_duplicate(key(h * 1024), kAgentA, at(static_cast<std::int64_t>(h))));
    DuplicateKey sip = key(77);
    sip.kind = PayloadClass::sip;
    CHECK_FALSE(f.is_duplicate(sip, kAgentA, at(3'000'000)));
    for (std::uint64_t h = 0; h < 4; ++h)
        CHECK(f.is_duplicate(key(h * 1024), kAgentB, at(300 + static_cast<std::int64_t>(h))));
    CHECK(f.is_duplicate(sip, kAgentB, at(3'000'300)));
    CHECK(f.stats().evictions.value() == 0);
    CHECK(dropped(f, PayloadClass::rtp) == 4);
    CHECK(dropped(f, PayloadClass::sip) == 1);
}

TEST_CASE("a table half full of live entries evicts none of them", "[shard][duplicates]") {
    // Two candidate buckets per key: the documented sizing (twice the packets of one window)
    // loses nothing. With one bucket per key, evictions would start at a tenth of the capacity.
    for (int run = 0; run < 20; ++run) {
        DuplicateFilter f({kWindow, 1024, false});
        for (std::size_t i = 0; i < 512; ++i) {
            const std::string p = "packet " + std::to_string(run) + "/" + std::to_string(i);
            REQUIRE_FALSE(f.is_duplicate(datagram(p, static_cast<std::int64_t>(i), 1, PayloadClass::rtp)));
        }
        CHECK(f.stats().evictions.value() == 0);
    }
}
