#pragma once
// Listening/conversational quality estimate from measured loss and delay: the ITU-T G.107
// E-model in its common simplified form, mapped to MOS.
//
//   R      = 93.2 - Id - Ie_eff
//            93.2 is R0 - Is (+ the delay-free echo terms) with every other G.107 input at its
//            default value (G.107 section 7.7); A (advantage factor) = 0.
//   Id     = Idd, the G.107 (7.4) impairment of the absolute one-way delay Ta in ms:
//              Ta <= 100: Idd = 0
//              Ta >  100: X = log2(Ta / 100)
//                         Idd = 25 * ((1 + X^6)^(1/6) - 3 * (1 + (X/3)^6)^(1/6) + 2)
//            The echo terms Idte/Idle are left at their default-condition values (in 93.2).
//   Ie_eff = Ie + (95 - Ie) * Ppl / (Ppl / BurstR + Bpl)                      (G.107 7.5)
//            Ppl: packet loss in percent; BurstR: 1 for random loss, > 1 for bursty loss
//            (mean observed burst length over the mean expected for random loss, 1/(1-p)).
//   MOS    = 1 + 0.035 R + R (R - 60)(100 - R) 7e-6 for 0 < R < 100 (G.107 annex B),
//            1 for R <= 0, 4.5 for R >= 100, and clamped to [1, 4.5] (the polynomial dips
//            under 1 for 0 < R < 6.5).
//
// Worked values: G.711 with no loss and Ta <= 100 ms gives R = 93.2, MOS = 4.409 (4.41).
//
// Codec parameters (Ie, Bpl). ITU-T G.113 (11/2007) Appendix I: Ie from table I.1, Bpl from
// table I.3 (random loss, the codec's own PLC):
//   G.711, PLC (G.711 Appendix I)          Ie  0   Bpl 25.1
//   G.711, no PLC                          Ie  0   Bpl  4.3
//   G.729A + VAD (2 frames/packet)         Ie 11   Bpl 19.0   (used for G.729 and G.729A)
//   G.723.1 6.3 kbit/s + VAD               Ie 15   Bpl 16.1
//   GSM 06.10 full rate                    Ie 20              (Ie: table I.1)
// Not tabulated in G.113 Appendix I -- engineering assumptions, marked as such:
//   GSM-FR Bpl 10.0: table I.3's only GSM entry (GSM-EFR).
//   G.722: G.113 rates it on the wideband scale only (Ie,wb); on this narrowband scale it is
//          treated as G.711 + PLC (Ie 0, Bpl 25.1): it is at least as good as G.711 and has PLC.
//   iLBC: Ie 10, Bpl 25.1. RFC 3951 describes its loss behaviour as "similar to ... G.711 with
//          PLC" (so G.711 + PLC's Bpl) and its clean quality as slightly better than G.729A
//          (so G.729's Ie of 10 rather than G.729A + VAD's 11).
//   Opus:  Ie 0, Bpl 25.1 (narrowband-equivalent quality at least G.711's, built-in PLC).
//   unknown / other: treated as G.711 + PLC, so loss still counts.
#include "rtp/stream_codec.hpp"

#include <cstdint>

namespace hepd::rtp {

struct CodecImpairment {
    double ie = 0.0;    // equipment impairment factor
    double bpl = 25.1;  // packet-loss robustness factor
};

// Parameters per codec (see the table above). `g711_plc` picks the G.711 row.
CodecImpairment codec_impairment(Codec codec, bool g711_plc = true) noexcept;

inline constexpr double kDefaultR = 93.2;

struct EmodelInput {
    double packet_loss_percent = 0.0;  // Ppl, clamped to [0, 100]
    double burst_ratio = 1.0;          // BurstR, values under 1 are taken as 1
    double one_way_delay_ms = 0.0;     // Ta
};

struct EmodelResult {
    double r = kDefaultR;
    double mos = 0.0;
};

double delay_impairment(double one_way_delay_ms) noexcept;
double effective_equipment_impairment(const CodecImpairment& codec, double packet_loss_percent,
                                      double burst_ratio) noexcept;
double mos_from_r(double r) noexcept;
EmodelResult evaluate(const CodecImpairment& codec, const EmodelInput& input) noexcept;

}  // namespace hepd::rtp
