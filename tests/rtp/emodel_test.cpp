// E-model worked values. Every expectation is derived in a comment from the ITU-T formulas quoted
// in emodel.hpp (G.107 (7.4) Idd, (7.5) Ie_eff, annex B MOS; G.113 appendix I codec factors),
// step by step, and was computed by hand (python3), not by running this code. Each one is chosen
// so that a plausible slip fails it: a missing clamp, log10 for log2, BurstR ignored or
// multiplied, a missing 100 ms threshold, a wrong table row.
#include "rtp/emodel.hpp"

#include <catch2/catch.hpp>

#include <cmath>

using namespace hepd::rtp;

TEST_CASE("MOS from R: the G.107 annex B polynomial, clamped", "[rtp][emodel]") {
    // MOS = 1 + 0.035 R + R (R - 60)(100 - R) 7e-6
    // R 93.2: 1 + 3.262 + 93.2 * 33.2 * 6.8 * 7e-6 = 4.262 + 0.147285824 = 4.409285824
    CHECK(mos_from_r(93.2) == Approx(4.409285824).margin(1e-9));
    // R 50: 1 + 1.75 + 50 * (-10) * 50 * 7e-6 = 2.75 - 0.175 = 2.575 (the cubic term is negative
    // under R 60: a sign slip gives 2.925)
    CHECK(mos_from_r(50.0) == Approx(2.575).margin(1e-12));
    // R >= 100: 4.5 (the polynomial gives 1 + 3.5 + 0 at 100 and falls above it: 120 -> 4.192)
    CHECK(mos_from_r(100.0) == 4.5);
    CHECK(mos_from_r(120.0) == 4.5);
    // R <= 0: 1 (the polynomial gives 1 at 0 and rises again below it: -5 -> 1.063875)
    CHECK(mos_from_r(0.0) == 1.0);
    CHECK(mos_from_r(-5.0) == 1.0);
    // 0 < R < 6.5: the polynomial dips under 1 and is clamped.
    // R 3:   1 + 0.105 + 3 * (-57) * 97 * 7e-6 = 1.105 - 0.116109 = 0.988891 -> 1
    CHECK(mos_from_r(3.0) == 1.0);
    // R 6.5: 1 + 0.2275 + 6.5 * (-53.5) * 93.5 * 7e-6 = 1.2275 - 0.227602375 = 0.999897625 -> 1
    CHECK(mos_from_r(6.5) == 1.0);
    CHECK(mos_from_r(std::nan("")) == 1.0);
}

TEST_CASE("Idd: no delay impairment up to 100 ms, the G.107 curve above", "[rtp][emodel]") {
    // Idd = 25 ((1 + X^6)^(1/6) - 3 (1 + (X/3)^6)^(1/6) + 2), X = log2(Ta / 100), for Ta > 100.
    CHECK(delay_impairment(0.0) == 0.0);
    // Ta 50: the curve would give X = -1 -> 3.044414 (as at 200 ms, X^6 is even): the
    // threshold, not the curve, makes it 0.
    CHECK(delay_impairment(50.0) == 0.0);
    CHECK(delay_impairment(100.0) == 0.0);
    // Ta 150: X = log2(1.5) = 0.5849625; (1 + X^6)^(1/6) = 1.0065687;
    // (1 + (X/3)^6)^(1/6) = 1.0000092; 25 (1.0065687 - 3.0000275 + 2) = 0.163531
    CHECK(delay_impairment(150.0) == Approx(0.163531).margin(1e-6));
    // Ta 200: X = 1; 2^(1/6) = 1.1224620; (1 + 1/729)^(1/6) = 1.0002285;
    // 25 (1.1224620 - 3.0006855 + 2) = 3.044414 (with log10, X = 0.30103 would give 0.003087)
    CHECK(delay_impairment(200.0) == Approx(3.044414).margin(1e-6));
    // Ta 400: X = 2; 65^(1/6) = 2.0051747; (1 + 64/729)^(1/6) = 1.0141237;
    // 25 (2.0051747 - 3.0423712 + 2) = 24.070089
    CHECK(delay_impairment(400.0) == Approx(24.070089).margin(1e-6));
    CHECK(delay_impairment(std::nan("")) == 0.0);
}

TEST_CASE("Ie_eff: loss, burstiness and codec robustness", "[rtp][emodel]") {
    // Ie_eff = Ie + (95 - Ie) Ppl / (Ppl / BurstR + Bpl); G.711 + PLC: Ie 0, Bpl 25.1 (G.113 I.3).
    const CodecImpairment g711_plc = codec_impairment(Codec::pcma);
    CHECK(g711_plc.ie == 0.0);
    CHECK(g711_plc.bpl == 25.1);
    CHECK(effective_equipment_impairment(g711_plc, 0.0, 1.0) == 0.0);
    // 1 %, random: 95 * 1 / (1 + 25.1) = 3.639847
    CHECK(effective_equipment_impairment(g711_plc, 1.0, 1.0) == Approx(95.0 / 26.1));
    // 5 %, BurstR 2: 95 * 5 / (5 / 2 + 25.1) = 475 / 27.6 = 17.210145 (BurstR ignored: 475 / 30.1
    // = 15.781; multiplied instead of divided: 475 / 35.1 = 13.533)
    CHECK(effective_equipment_impairment(g711_plc, 5.0, 2.0) == Approx(17.210145).margin(1e-6));
    // 100 %: 9500 / 125.1 = 75.939249; Ppl over 100 is clamped to 100.
    CHECK(effective_equipment_impairment(g711_plc, 100.0, 1.0) == Approx(95.0 * 100 / 125.1));
    CHECK(effective_equipment_impairment(g711_plc, 250.0, 1.0) == Approx(95.0 * 100 / 125.1));
    // Negative loss is clamped to 0 (unclamped: -285 / 22.1 = -12.896).
    CHECK(effective_equipment_impairment(g711_plc, -3.0, 1.0) == 0.0);
    // BurstR under 1 is taken as 1: 475 / 30.1, not 475 / 50.1.
    CHECK(effective_equipment_impairment(g711_plc, 5.0, 0.2) == Approx(475.0 / 30.1));

    // G.711 without PLC: Bpl 4.3 (G.113 I.3); 1 %: 95 / (1 + 4.3) = 17.924528
    const CodecImpairment g711 = codec_impairment(Codec::pcmu, false);
    CHECK(g711.ie == 0.0);
    CHECK(g711.bpl == 4.3);
    CHECK(effective_equipment_impairment(g711, 1.0, 1.0) == Approx(17.924528).margin(1e-6));
}

TEST_CASE("codec table: G.113 appendix I values and the documented assumptions", "[rtp][emodel]") {
    // Ie from G.113 (11/2007) table I.1, Bpl from table I.3; the rows not tabulated there (GSM-FR
    // Bpl, G.722, iLBC, Opus, unknown, other) are the assumptions emodel.hpp documents.
    struct Row {
        Codec codec;
        double ie;
        double bpl;
    };
    const Row rows[] = {
        {Codec::pcmu, 0, 25.1},    {Codec::pcma, 0, 25.1},  {Codec::g729, 11, 19.0}, {Codec::g723, 15, 16.1},
        {Codec::gsm, 20, 10.0},    {Codec::g722, 0, 25.1},  {Codec::ilbc, 10, 25.1}, {Codec::opus, 0, 25.1},
        {Codec::unknown, 0, 25.1}, {Codec::other, 0, 25.1},
    };
    for (const Row& row : rows) {
        INFO(to_string(row.codec));
        CHECK(codec_impairment(row.codec).ie == row.ie);
        CHECK(codec_impairment(row.codec).bpl == row.bpl);
    }
}

TEST_CASE("worked E-model results", "[rtp][emodel]") {
    // R = 93.2 - Idd - Ie_eff, MOS from R as above.
    SECTION("G.711, no loss, no delay: R 93.2, MOS 4.41") {
        // R = 93.2 - 0 - 0; MOS 4.409285824 (first case of the MOS test)
        const EmodelResult r = evaluate(codec_impairment(Codec::pcmu), {0.0, 1.0, 0.0});
        CHECK(r.r == Approx(93.2).margin(1e-12));
        CHECK(r.mos == Approx(4.409286).margin(1e-6));
    }
    SECTION("G.711 + PLC, 1 % random loss") {
        // Ie_eff = 95 / 26.1 = 3.639847; R = 89.560153;
        // MOS = 1 + 3.134605 + 89.560153 * 29.560153 * 10.439847 * 7e-6 = 4.134605 + 0.193470 = 4.328075
        const EmodelResult r = evaluate(codec_impairment(Codec::pcma), {1.0, 1.0, 0.0});
        CHECK(r.r == Approx(89.560153).margin(1e-6));
        CHECK(r.mos == Approx(4.328075).margin(1e-6));
    }
    SECTION("G.729, 2 % random loss: Ie_eff = 11 + 84 * 2 / 21 = 19") {
        // R = 93.2 - 19 = 74.2; MOS = 1 + 2.597 + 74.2 * 14.2 * 25.8 * 7e-6 = 3.597 + 0.190287 = 3.787287
        const EmodelResult r = evaluate(codec_impairment(Codec::g729), {2.0, 1.0, 0.0});
        CHECK(r.r == Approx(74.2).margin(1e-9));
        CHECK(r.mos == Approx(3.787287).margin(1e-6));
    }
    SECTION("G.723.1, 5 %") {
        // Ie_eff = 15 + 80 * 5 / (5 + 16.1) = 15 + 18.957346 = 33.957346; R = 59.242654;
        // MOS = 1 + 2.073493 + 59.242654 * (-0.757346) * 40.757346 * 7e-6 = 3.073493 - 0.012801 = 3.060692
        const EmodelResult r = evaluate(codec_impairment(Codec::g723), {5.0, 1.0, 0.0});
        CHECK(r.r == Approx(59.242654).margin(1e-6));
        CHECK(r.mos == Approx(3.060692).margin(1e-6));
    }
    SECTION("GSM full rate, no loss") {
        // Ie_eff = Ie = 20; R = 73.2; MOS = 1 + 2.562 + 73.2 * 13.2 * 26.8 * 7e-6 = 3.562 + 0.181267 = 3.743267
        const EmodelResult r = evaluate(codec_impairment(Codec::gsm), {0.0, 1.0, 0.0});
        CHECK(r.r == Approx(73.2).margin(1e-9));
        CHECK(r.mos == Approx(3.743267).margin(1e-6));
    }
    SECTION("G.711 + PLC, 5 % with BurstR 2") {
        // Ie_eff = 17.210145 (Ie_eff test); R = 75.989855;
        // MOS = 1 + 2.659645 + 75.989855 * 15.989855 * 24.010145 * 7e-6 = 3.659645 + 0.204218 = 3.863862
        const EmodelResult r = evaluate(codec_impairment(Codec::pcma), {5.0, 2.0, 0.0});
        CHECK(r.r == Approx(75.989855).margin(1e-6));
        CHECK(r.mos == Approx(3.863862).margin(1e-6));
    }
    SECTION("G.711, 400 ms one way") {
        // Idd(400) = 24.070089 (Idd test); R = 69.129911;
        // MOS = 1 + 2.419547 + 69.129911 * 9.129911 * 30.870089 * 7e-6 = 3.419547 + 0.136386 = 3.555932
        const EmodelResult r = evaluate(codec_impairment(Codec::pcma), {0.0, 1.0, 400.0});
        CHECK(r.r == Approx(69.129911).margin(1e-6));
        CHECK(r.mos == Approx(3.555932).margin(1e-6));
    }
    SECTION("everything lost: R far below zero, MOS 1") {
        // Ie_eff = 15 + 80 * 100 / (100 + 16.1) = 83.906115; Ta 2000: X = log2(20) = 4.321928,
        // (1 + X^6)^(1/6) = 4.322039, (1 + (X/3)^6)^(1/6) = 1.466328,
        // Idd = 25 (4.322039 - 4.398983 + 2) = 48.076375; R = 93.2 - 48.076375 - 83.906115 = -38.782490
        const EmodelResult r = evaluate(codec_impairment(Codec::g723), {100.0, 1.0, 2000.0});
        CHECK(r.r == Approx(-38.782490).margin(1e-6));
        CHECK(r.mos == 1.0);
    }
}
