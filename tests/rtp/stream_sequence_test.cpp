// RFC 3550 appendix A.1 sequence bookkeeping. Expected values are worked out from the RFC's
// rules: the first packet only starts probation, so a clean run of N packets has expected =
// received = N - 1 with base_seq = the second packet's number.
#include "rtp/sequence.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <set>
#include <vector>

using namespace hepd::rtp;

namespace {

std::vector<SeqVerdict> feed(SequenceTracker& t, std::uint32_t first, std::uint32_t last,
                             const std::set<std::uint32_t>& skip = {}) {
    std::vector<SeqVerdict> out;
    for (std::uint32_t s = first; s <= last; ++s)
        if (skip.count(s) == 0) out.push_back(t.update(static_cast<std::uint16_t>(s)));
    return out;
}

}  // namespace

TEST_CASE("a clean run: probation, then every packet expected and received", "[rtp][stream][sequence]") {
    SequenceTracker t;
    CHECK(t.update(1000) == SeqVerdict::probation);
    CHECK_FALSE(t.validated);
    CHECK(t.expected() == 0);
    CHECK(t.received_total() == 0);
    CHECK(t.update(1001) == SeqVerdict::in_order);
    CHECK(t.validated);
    CHECK(t.base_seq == 1001);
    for (std::uint32_t s = 1002; s <= 1049; ++s)
        REQUIRE(t.update(static_cast<std::uint16_t>(s)) == SeqVerdict::in_order);
    CHECK(t.expected() == 49);
    CHECK(t.received_total() == 49);
    CHECK(t.lost() == 0);
    CHECK(t.extended_max() == 1049);
    CHECK(t.gaps == 0);
    CHECK(t.restarts == 0);
}

TEST_CASE("a single packet is neither expected nor received", "[rtp][stream][sequence]") {
    SequenceTracker t;
    CHECK(t.update(7) == SeqVerdict::probation);
    CHECK(t.expected() == 0);
    CHECK(t.received_total() == 0);
    CHECK(t.lost() == 0);
}

TEST_CASE("known losses: expected minus received, loss events counted per gap", "[rtp][stream][sequence]") {
    SequenceTracker t;
    const auto verdicts = feed(t, 1000, 1099, {1010, 1020, 1021, 1050});
    // 96 packets; the first is probation. Expected 1001..1099 = 99, received 95, lost 4.
    CHECK(t.expected() == 99);
    CHECK(t.received_total() == 95);
    CHECK(t.lost() == 4);
    CHECK(t.gaps == 3);
    CHECK(std::count(verdicts.begin(), verdicts.end(), SeqVerdict::gap) == 3);
}

TEST_CASE("wrap-around at 65535 extends the sequence number", "[rtp][stream][sequence]") {
    SequenceTracker t;
    feed(t, 65530, 65535 + 14);  // 65530..65535 then 0..13
    CHECK(t.cycles == 65536);
    CHECK(t.max_seq == 13);
    CHECK(t.extended_max() == 65536 + 13);
    CHECK(t.base_seq == 65531);
    CHECK(t.expected() == 19);
    CHECK(t.received_total() == 19);
    CHECK(t.lost() == 0);
}

TEST_CASE("wrap-around across a gap", "[rtp][stream][sequence]") {
    SequenceTracker t;
    feed(t, 65500, 65533);
    CHECK(t.update(2) == SeqVerdict::gap);  // 65534, 65535, 0, 1 missing
    CHECK(t.cycles == 65536);
    CHECK(t.lost() == 4);
}

TEST_CASE("reordering: a late packet is counted, not lost", "[rtp][stream][sequence]") {
    SequenceTracker t;
    feed(t, 1, 11);
    CHECK(t.update(13) == SeqVerdict::gap);
    CHECK(t.update(12) == SeqVerdict::late);
    CHECK(t.update(14) == SeqVerdict::in_order);
    CHECK(t.expected() == 13);  // 2..14
    CHECK(t.received_total() == 13);
    CHECK(t.lost() == 0);
    CHECK(t.gaps == 1);  // the gap was seen when 13 arrived, whatever came later
}

TEST_CASE("duplicates are received twice, so lost goes negative", "[rtp][stream][sequence]") {
    SequenceTracker t;
    feed(t, 1, 10);
    CHECK(t.update(10) == SeqVerdict::duplicate);  // the highest again
    CHECK(t.update(5) == SeqVerdict::duplicate);   // an older one again
    CHECK(t.update(11) == SeqVerdict::in_order);
    CHECK(t.expected() == 10);        // 2..11
    CHECK(t.received_total() == 12);  // 2..11 plus two duplicates
    CHECK(t.lost() == -2);
}

TEST_CASE("the window tells late from duplicate up to A.1's misorder limit", "[rtp][stream][sequence]") {
    SequenceTracker t;
    feed(t, 1, 200, {120, 150});
    CHECK(t.lost() == 2);
    CHECK(t.update(150) == SeqVerdict::late);  // 50 behind: low word
    CHECK(t.update(150) == SeqVerdict::duplicate);
    CHECK(t.update(120) == SeqVerdict::late);  // 80 behind: high word
    CHECK(t.update(120) == SeqVerdict::duplicate);
    CHECK(t.update(101) == SeqVerdict::duplicate);  // 99 behind, seen long ago
    CHECK(t.update(100) == SeqVerdict::jump);       // 100 behind: A.1 treats it as a jump
    CHECK(t.expected() == 199);                     // 2..200
    CHECK(t.received_total() == 202);               // 197 + 2 late + 3 duplicates
    CHECK(t.lost() == -3);
    CHECK(t.update(201) == SeqVerdict::in_order);  // not the jump's successor: no restart
    CHECK(t.restarts == 0);
}

TEST_CASE("the window shifts across long gaps", "[rtp][stream][sequence]") {
    SequenceTracker t;
    feed(t, 1, 10);
    CHECK(t.update(80) == SeqVerdict::gap);  // shift by 70: bit of 10 moves to the high word
    CHECK(t.update(10) == SeqVerdict::duplicate);
    CHECK(t.update(11) == SeqVerdict::late);
    CHECK(t.update(300) == SeqVerdict::gap);  // shift by 220: everything forgotten
    CHECK(t.update(299) == SeqVerdict::late);
    CHECK(t.update(299) == SeqVerdict::duplicate);
}

TEST_CASE("a confirmed large jump restarts the counts, keeping the earlier run", "[rtp][stream][sequence]") {
    SequenceTracker t;
    feed(t, 1, 10);
    CHECK(t.update(20000) == SeqVerdict::jump);
    CHECK(t.has_bad_seq);
    CHECK(t.bad_seq == 20001);
    CHECK(t.update(20001) == SeqVerdict::restart);
    CHECK(t.restarts == 1);
    CHECK(t.base_seq == 20001);
    feed(t, 20002, 20010);
    // First run 2..10: 9 expected, 9 received. Second run 20001..20010: 10 and 10. The jump
    // packet 20000 is in neither.
    CHECK(t.prior_expected == 9);
    CHECK(t.prior_received == 9);
    CHECK(t.expected() == 19);
    CHECK(t.received_total() == 19);
    CHECK(t.lost() == 0);
}

TEST_CASE("an unconfirmed jump is ignored", "[rtp][stream][sequence]") {
    SequenceTracker t;
    feed(t, 1, 10);
    CHECK(t.update(40000) == SeqVerdict::jump);
    CHECK(t.update(11) == SeqVerdict::in_order);
    CHECK(t.restarts == 0);
    CHECK(t.expected() == 10);
    CHECK(t.received_total() == 10);
}

TEST_CASE("a drop-out under MAX_DROPOUT is loss, not a restart", "[rtp][stream][sequence]") {
    SequenceTracker t;
    feed(t, 1, 10);
    CHECK(t.update(2000) == SeqVerdict::gap);
    feed(t, 2001, 2010);
    CHECK(t.expected() == 2009);  // 2..2010
    CHECK(t.received_total() == 20);
    CHECK(t.lost() == 1989);  // 11..1999
}

TEST_CASE("probation restarts on a non-consecutive number", "[rtp][stream][sequence]") {
    SequenceTracker t;
    CHECK(t.update(5) == SeqVerdict::probation);
    CHECK(t.update(7) == SeqVerdict::probation);
    CHECK(t.update(8) == SeqVerdict::in_order);
    CHECK(t.update(9) == SeqVerdict::in_order);
    CHECK(t.base_seq == 8);
    CHECK(t.expected() == 2);
    CHECK(t.received_total() == 2);
}

TEST_CASE("probation at the wrap", "[rtp][stream][sequence]") {
    SequenceTracker t;
    CHECK(t.update(65535) == SeqVerdict::probation);
    CHECK(t.update(0) == SeqVerdict::in_order);
    CHECK(t.update(1) == SeqVerdict::in_order);
    CHECK(t.expected() == 2);
    CHECK(t.lost() == 0);
}
