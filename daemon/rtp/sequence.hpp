#pragma once
// RTP sequence number bookkeeping, RFC 3550 appendix A.1: extended (32-bit) sequence numbers,
// source validation (probation), tolerance for drop-outs and misordering, restart after a
// confirmed large jump. Expected and received counts follow the RFC, so lost = expected -
// received goes negative when duplicates arrive, exactly as a receiver report would say.
//
// On top of A.1 a 128-bit window of the most recent sequence numbers tells a duplicate from a
// late (reordered) packet: every packet A.1 accepts as "duplicate or reordered" is at most
// kMaxMisorder - 1 = 99 behind the highest, so the window covers all of them.
//
// Plain data: a snapshot stores the fields as they are.
#include <cstdint>

namespace hepd::rtp {

inline constexpr std::uint32_t kSeqMod = 1U << 16;
inline constexpr std::uint8_t kMinSequential = 2;
inline constexpr std::uint32_t kMaxDropout = 3000;
inline constexpr std::uint32_t kMaxMisorder = 100;

enum class SeqVerdict : std::uint8_t {
    probation,  // source not validated yet: not counted as received (A.1)
    in_order,   // the next number
    gap,        // in order, skipping one or more numbers
    late,       // older than the highest and not seen before (reordered)
    duplicate,  // seen before
    jump,       // very large jump, ignored until the next packet confirms it
    restart,    // the confirmation: the sender restarted its numbering (counts restart over)
};

struct SequenceTracker {
    std::uint64_t window_low = 0;      // bit i: number (max - i) seen, i < 64
    std::uint64_t window_high = 0;     // bit i: number (max - 64 - i) seen
    std::uint32_t cycles = 0;          // wrap-arounds << 16, as in A.1
    std::uint32_t received = 0;        // since the last (re)initialisation, duplicates included
    std::uint32_t prior_expected = 0;  // expected/received of the runs before each restart
    std::uint32_t prior_received = 0;
    std::uint32_t gaps = 0;  // loss events: advances that skipped numbers
    std::uint16_t base_seq = 0;
    std::uint16_t max_seq = 0;
    std::uint16_t bad_seq = 0;  // A.1's bad_seq when has_bad_seq (A.1 uses MOD + 1 for none)
    std::uint16_t restarts = 0;
    std::uint8_t probation = 0;
    bool started = false;
    bool validated = false;
    bool has_bad_seq = false;

    SeqVerdict update(std::uint16_t seq) noexcept {
        if (!started) {
            started = true;
            init_run(seq);
            max_seq = static_cast<std::uint16_t>(seq - 1);
            window_low = 0;
            probation = kMinSequential;
        }
        const auto udelta = static_cast<std::uint16_t>(seq - max_seq);
        if (probation > 0) {
            if (seq == static_cast<std::uint16_t>(max_seq + 1)) {
                --probation;
                max_seq = seq;
                if (probation == 0) {
                    init_run(seq);
                    validated = true;
                    ++received;
                    return SeqVerdict::in_order;
                }
            } else {
                probation = kMinSequential - 1;
                max_seq = seq;
            }
            return SeqVerdict::probation;
        }
        if (udelta == 0) {  // A.1 counts it (received++), it is the highest seen again
            ++received;
            return SeqVerdict::duplicate;
        }
        if (udelta < kMaxDropout) {
            if (seq < max_seq) cycles += kSeqMod;
            max_seq = seq;
            advance_window(udelta);
            ++received;
            if (udelta > 1) {
                ++gaps;
                return SeqVerdict::gap;
            }
            return SeqVerdict::in_order;
        }
        if (udelta <= kSeqMod - kMaxMisorder) {
            if (has_bad_seq && seq == bad_seq) {
                prior_expected += run_expected();
                prior_received += received;
                init_run(seq);
                ++restarts;
                ++received;
                return SeqVerdict::restart;
            }
            bad_seq = static_cast<std::uint16_t>(seq + 1U);
            has_bad_seq = true;
            return SeqVerdict::jump;
        }
        ++received;
        return mark_behind(static_cast<std::uint16_t>(max_seq - seq)) ? SeqVerdict::duplicate : SeqVerdict::late;
    }

    std::uint32_t extended_max() const noexcept { return cycles + max_seq; }
    // Expected and received over every run of the source (restarts included).
    std::int64_t expected() const noexcept { return std::int64_t{prior_expected} + run_expected(); }
    std::int64_t received_total() const noexcept { return std::int64_t{prior_received} + received; }
    std::int64_t lost() const noexcept { return expected() - received_total(); }

    friend bool operator==(const SequenceTracker&, const SequenceTracker&) = default;

private:
    void init_run(std::uint16_t seq) noexcept {
        base_seq = seq;
        max_seq = seq;
        has_bad_seq = false;
        cycles = 0;
        received = 0;
        window_low = 1;
        window_high = 0;
    }

    std::uint32_t run_expected() const noexcept { return validated ? extended_max() - base_seq + 1 : 0; }

    void advance_window(std::uint32_t by) noexcept {
        if (by >= 128) {
            window_high = 0;
            window_low = 0;
        } else if (by >= 64) {
            window_high = window_low << (by - 64);
            window_low = 0;
        } else {
            window_high = (window_high << by) | (window_low >> (64 - by));
            window_low <<= by;
        }
        window_low |= 1;
    }

    // Records that the number `behind` places under the highest arrived; true if it had.
    bool mark_behind(std::uint16_t behind) noexcept {
        std::uint64_t* word = &window_low;
        std::uint32_t bit = behind;
        if (behind >= 64) {
            word = &window_high;
            bit = behind - 64U;
        }
        if (bit >= 64) return false;  // unreachable for A.1-accepted packets (behind < 100)
        const std::uint64_t mask = std::uint64_t{1} << bit;
        const bool seen = (*word & mask) != 0;
        *word |= mask;
        return seen;
    }
};

}  // namespace hepd::rtp
