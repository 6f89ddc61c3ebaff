// Peer groups: which far ends a dialog's caller and callee sides are, the groups they get from a
// PeerDirectory, and the figures kept per pair of groups.
#include "dialog_test_util.hpp"
#include "peer/peer_groups.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace hepd;
using namespace hepd::sip;
using namespace hepd::sip::test;

namespace {

Cidr net(std::string_view text) { return *Cidr::parse(text); }

peer::PeerRule rule(std::string name, std::vector<Cidr> networks, std::vector<std::uint16_t> agents = {}) {
    return peer::PeerRule{std::move(name), std::move(networks), std::move(agents)};
}

// Caller A (10.0.0.1) -> proxy P (10.0.0.2) -> callee B (10.0.0.3), answered and hung up.
void relayed_call(Harness& h, int final_code = 200) {
    const Sip inv_a = Sip{};
    const Sip inv_p = inv_a.with_branch("z9hG4bK-p1");
    h.send(inv_a, A, P, ms(0));
    h.send(inv_p, P, B, ms(5));
    h.send(inv_p.resp(180).with_to_tag("b"), B, P, ms(100));
    h.send(inv_a.resp(180).with_to_tag("b"), P, A, ms(105));
    h.send(inv_p.resp(final_code).with_to_tag("b"), B, P, ms(2000));
    h.send(inv_a.resp(final_code).with_to_tag("b"), P, A, ms(2005));
    if (final_code == 200) {
        const Sip bye = inv_a.with_to_tag("b").req("BYE", "z9hG4bK-bye", 2);
        h.send(bye, A, P, ms(10'000));
        h.send(bye.with_branch("z9hG4bK-bye-p"), P, B, ms(10'005));
    }
}

}  // namespace

TEST_CASE("peer directory: ids are stable across publications and bounded", "[sip][peers]") {
    peer::PeerDirectory dir;
    CHECK(dir.name_count() == 1);
    CHECK(dir.name(0) == "other");
    const auto e0 = dir.epoch();
    CHECK(dir.publish({rule("carrier-a", {net("192.0.2.0/24")}), rule("carrier-b", {net("198.51.100.0/24")})}).empty());
    CHECK(dir.epoch() != e0);
    CHECK(dir.name(1) == "carrier-a");
    CHECK(dir.name(2) == "carrier-b");
    CHECK(dir.map()->classify(*IpAddress::parse("192.0.2.7"), 0) == 1);

    // A reload that drops carrier-a and adds carrier-c: carrier-b keeps id 2, carrier-c gets 3,
    // carrier-a's id stays reserved for its name (its series keep their label).
    CHECK(dir.publish({rule("carrier-c", {net("192.0.2.0/24")}), rule("carrier-b", {net("198.51.100.0/24")})}).empty());
    CHECK(dir.name_count() == 4);
    CHECK(dir.name(1) == "carrier-a");
    CHECK(dir.map()->classify(*IpAddress::parse("192.0.2.7"), 0) == 3);
    CHECK(dir.map()->classify(*IpAddress::parse("198.51.100.1"), 0) == 2);
    CHECK(dir.map()->classify(*IpAddress::parse("203.0.113.1"), 0) == peer::kOtherPeer);

    // 64 names over the life of the process: later new names are refused (and are "other").
    std::vector<peer::PeerRule> many;
    for (int i = 0; i < 70; ++i)
        many.push_back(rule("p" + std::to_string(i), {net("10." + std::to_string(i) + ".0.0/16")}));
    const auto refused = dir.publish(many);
    CHECK(dir.name_count() == peer::kPeerIdCount);
    CHECK(refused.size() == 70 - (peer::kMaxPeerNames - 3));
    CHECK(refused.front() == "p61");
    CHECK(dir.map()->classify(*IpAddress::parse("10.60.0.1"), 0) != peer::kOtherPeer);
    CHECK(dir.map()->classify(*IpAddress::parse("10.61.0.1"), 0) == peer::kOtherPeer);
    CHECK(dir.name(200) == "other");
}

TEST_CASE("peer map: the longest network wins, then the capture agent", "[sip][peers]") {
    peer::PeerDirectory dir;
    dir.publish({rule("wide", {net("10.0.0.0/8")}), rule("narrow", {net("10.1.0.0/16"), net("2001:db8::/32")}),
                 rule("by-agent", {}, {3})});
    const auto map = dir.map();
    CHECK(map->classify(*IpAddress::parse("10.1.2.3"), 0) == 2);
    CHECK(map->classify(*IpAddress::parse("10.2.2.3"), 3) == 1);  // a network beats the agent
    CHECK(map->classify(*IpAddress::parse("2001:db8::5"), 0) == 2);
    CHECK(map->classify(*IpAddress::parse("::ffff:10.1.0.9"), 0) == 2);  // v4 seen on a dual-stack socket
    CHECK(map->classify(*IpAddress::parse("192.0.2.1"), 3) == 3);
    CHECK(map->classify(*IpAddress::parse("192.0.2.1"), 4) == peer::kOtherPeer);
    CHECK(map->classify(*IpAddress::parse("192.0.2.1"), 0) == peer::kOtherPeer);  // agent 0 is nobody
}

TEST_CASE("peer groups: caller side is the first hop's sender, callee side the last hop's target", "[sip][peers]") {
    peer::PeerDirectory dir;
    dir.publish({rule("alice-net", {net("10.0.0.1/32")}), rule("proxy", {net("10.0.0.2/32")}),
                 rule("bob-net", {net("10.0.0.3/32")})});
    Harness h;
    h.table.set_peers(&dir);

    SECTION("through a proxy") {
        relayed_call(h);
        const Dialog* d = h.dialog();
        REQUIRE(d != nullptr);
        CHECK(d->caller() == ep(A));
        CHECK(d->callee() == ep(P));  // unchanged meaning: the first hop's target
        CHECK(d->callee_side() == ep(B));
        CHECK(d->caller_peer == 1);
        CHECK(d->callee_peer == 3);
        const PeerDialogFigures* f = h.stats().by_peers.find(1, 3);
        REQUIRE(f != nullptr);
        CHECK(f->finished[static_cast<std::size_t>(DialogOutcome::completed)].value() == 1);
        CHECK(f->final_status[final_status_index(200)].value() == 1);
        CHECK(f->pdd.count() == 1);
        CHECK(f->setup.count() == 1);
        CHECK(f->duration.count() == 1);
        CHECK(f->srd[static_cast<std::size_t>(SetupResult::success)].count() == 1);
        CHECK(h.stats().by_peers.find(1, 2) == nullptr);  // the proxy is no side of the call
    }
    SECTION("hop copies in the wrong order leave the callee side on what was seen first") {
        const Sip inv_a = Sip{};
        h.send(inv_a.with_branch("z9hG4bK-p1"), P, B, ms(0));  // the proxy's copy is seen first
        h.send(inv_a, A, P, ms(1));
        CHECK(h.dialog()->caller() == ep(P));
        CHECK(h.dialog()->callee_side() == ep(B));
        CHECK(h.dialog()->caller_peer == 2);
        CHECK(h.dialog()->callee_peer == 3);
    }
    SECTION("an INVITE going back to the caller does not move the callee side") {
        const Sip inv_a = Sip{};
        h.send(inv_a, A, P, ms(0));
        h.send(inv_a.with_branch("z9hG4bK-spiral"), P, A, ms(1));
        CHECK(h.dialog()->callee_side() == ep(P));
        CHECK(h.dialog()->callee_peer == 2);
    }
    SECTION("every party on one host (loopback): the ports tell the hops apart") {
        const Sip inv_a = Sip{};
        h.send(inv_a, "127.0.0.1:5061", "127.0.0.1:5060", ms(0));
        h.send(inv_a.with_branch("z9hG4bK-p1"), "127.0.0.1:5060", "127.0.0.1:5070", ms(1));
        CHECK(h.dialog()->callee_side() == ep("127.0.0.1:5070"));
        h.send(inv_a.with_branch("z9hG4bK-spiral"), "127.0.0.1:5070", "127.0.0.1:5061", ms(2));
        CHECK(h.dialog()->callee_side() == ep("127.0.0.1:5070"));  // back to the caller itself
    }
    SECTION("over TCP the proxy sends from another port of the same host") {
        const Sip inv_a = Sip{};
        h.send(inv_a, A, P, ms(0));
        h.send(inv_a.with_branch("z9hG4bK-p1"), "10.0.0.2:40123", B, ms(2));
        CHECK(h.dialog()->callee_side() == ep(B));
    }
}

TEST_CASE("peer groups: by capture agent, per side", "[sip][peers]") {
    peer::PeerDirectory dir;
    // Agent 1 captures the caller's hop, agent 2 the callee's; no networks.
    dir.publish({rule("edge-in", {}, {1}), rule("edge-out", {}, {2})});
    Harness h;
    h.table.set_peers(&dir);
    const Sip inv_a = Sip{};
    h.send(inv_a, A, P, ms(0), 1);
    h.send(inv_a.with_branch("z9hG4bK-p1"), P, B, ms(5), 2);
    CHECK(h.dialog()->agent == 1);
    CHECK(h.dialog()->callee_agent == 2);
    CHECK(h.dialog()->caller_peer == 1);
    CHECK(h.dialog()->callee_peer == 2);
}

TEST_CASE("peer groups: figures by pair add up to the unlabelled ones", "[sip][peers]") {
    peer::PeerDirectory dir;
    dir.publish({rule("alice-net", {net("10.0.0.1/32")}), rule("bob-net", {net("10.0.0.3/32")})});
    Harness h;
    h.table.set_peers(&dir);
    relayed_call(h, 200);
    {
        // A second call straight to C (no group), busy.
        Sip inv = Sip{};
        inv.call_id = "call-2@example.net";
        h.send(inv, A, C, ms(20'000));
        h.send(inv.resp(486).with_to_tag("c"), C, A, ms(20'300));
    }
    {
        // A call from nobody's network, evicted never: cancelled.
        Sip inv = Sip{};
        inv.call_id = "call-3@example.net";
        h.send(inv, "10.9.9.9:5060", B, ms(30'000));
        h.send(inv.resp(180).with_to_tag("b3"), B, "10.9.9.9:5060", ms(30'100));
        h.send(inv.req("CANCEL", inv.branch, 1), "10.9.9.9:5060", B, ms(31'000));
        h.send(inv.resp(487).with_to_tag("b3"), B, "10.9.9.9:5060", ms(31'010));
    }
    const DialogStats& s = h.stats();
    CHECK(s.by_peers.find(1, 2) != nullptr);  // alice-net -> bob-net
    CHECK(s.by_peers.find(1, 0) != nullptr);  // alice-net -> other
    CHECK(s.by_peers.find(0, 2) != nullptr);  // other -> bob-net
    CHECK(s.by_peers.find(0, 0) == nullptr);  // never used: not allocated
    CHECK(s.by_peers.find(1, 0)->final_status[final_status_index(486)].value() == 1);
    CHECK(s.by_peers.find(0, 2)->finished[static_cast<std::size_t>(DialogOutcome::cancelled)].value() == 1);

    std::array<std::uint64_t, kDialogOutcomeCount> finished{};
    std::array<std::uint64_t, kFinalStatusCount> final_status{};
    std::uint64_t pdd = 0, setup = 0, duration = 0, srd = 0;
    s.by_peers.for_each([&](peer::PeerId, peer::PeerId, const PeerDialogFigures& f) {
        for (std::size_t i = 0; i < kDialogOutcomeCount; ++i) finished[i] += f.finished[i].value();
        for (std::size_t i = 0; i < kFinalStatusCount; ++i) final_status[i] += f.final_status[i].value();
        pdd += f.pdd.count();
        setup += f.setup.count();
        duration += f.duration.count();
        srd += f.srd[0].count() + f.srd[1].count();
    });
    for (std::size_t i = 0; i < kDialogOutcomeCount; ++i) CHECK(finished[i] == s.dialogs_finished[i].value());
    for (std::size_t i = 0; i < kFinalStatusCount; ++i) CHECK(final_status[i] == s.final_status[i].value());
    CHECK(pdd == s.pdd.count());
    CHECK(setup == s.setup.count());
    CHECK(duration == s.duration.count());
    CHECK(srd == s.srd[0].count() + s.srd[1].count());
    CHECK(pdd == 2);

    // Merging shards merges pairs.
    DialogStats merged;
    merged.merge(s);
    merged.merge(s);
    CHECK(merged.by_peers.find(1, 0)->final_status[final_status_index(486)].value() == 2);
}

TEST_CASE("peer groups: a reload applies to new dialogs; a restore finds the groups again", "[sip][peers]") {
    peer::PeerDirectory dir;
    dir.publish({rule("bob-net", {net("10.0.0.3/32")})});
    Harness h;
    h.table.set_peers(&dir);
    const Sip inv = Sip{};
    h.send(inv, A, B, ms(0));
    CHECK(h.dialog()->callee_peer == 1);

    dir.publish({rule("bob-new", {net("10.0.0.3/32")})});
    // The open dialog keeps its group; its answer counts under it.
    h.send(inv.resp(200).with_to_tag("b"), B, A, ms(1000));
    CHECK(h.stats().by_peers.find(0, 1)->final_status[final_status_index(200)].value() == 1);
    Sip inv2 = Sip{};
    inv2.call_id = "call-2@example.net";
    h.send(inv2, A, B, ms(2000));
    CHECK(h.dialog("call-2@example.net")->callee_peer == 2);

    // Restored into a table under another directory: the groups come from its map.
    peer::PeerDirectory other;
    other.publish({rule("alice", {net("10.0.0.1/32")}), rule("bob", {net("10.0.0.3/32")})});
    Harness restored;
    restored.table.set_peers(&other);
    Dialog copy = *h.dialog();
    copy.caller_peer = 7;  // ids of another process mean nothing here
    REQUIRE(restored.table.restore("call-1@example.net", "caller-tag", copy));
    CHECK(restored.dialog()->caller_peer == 1);
    CHECK(restored.dialog()->callee_peer == 2);
}

TEST_CASE("peer groups: media bindings carry the dialog's groups", "[sip][peers]") {
    peer::PeerDirectory dir;
    dir.publish({rule("alice-net", {net("10.0.0.1/32")}), rule("bob-net", {net("10.0.0.3/32")})});
    Harness h;
    h.table.set_peers(&dir);
    const std::string sdp = "v=0\no=- 1 1 IN IP4 10.0.0.1\ns=-\nc=IN IP4 10.0.0.1\nt=0 0\nm=audio 4000 RTP/AVP 0\n";
    h.send(Sip{}.with_body(sdp), A, B, ms(0));
    REQUIRE(!h.sink.got.empty());
    CHECK(h.sink.got.back().binding.caller_peer == 1);
    CHECK(h.sink.got.back().binding.callee_peer == 2);
}
