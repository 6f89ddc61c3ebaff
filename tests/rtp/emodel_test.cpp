// E-model worked values. Expectations were computed by hand (python3) from the formulas quoted
// in emodel.hpp, not by running this code.
#include "rtp/emodel.hpp"

#include <catch2/catch.hpp>

#include <cmath>

using namespace hepd::rtp;

TEST_CASE("MOS from R: the G.107 annex B polynomial, clamped", "[rtp][emodel]") {
    CHECK(mos_from_r(93.2) == Approx(4.409285824).margin(1e-9));
    CHECK(mos_from_r(50.0) == Approx(2.575).margin(1e-12));  // 1 + 1.75 + 50*(-10)*50*7e-6
    CHECK(mos_from_r(100.0) == 4.5);
    CHECK(mos_from_r(120.0) == 4.5);
    CHECK(mos_from_r(0.0) == 1.0);
    CHECK(mos_from_r(-5.0) == 1.0);
    CHECK(mos_from_r(3.0) == 1.0);   // polynomial gives 0.9969: clamped
    CHECK(mos_from_r(6.5) == 1.0);   // 0.99998
    CHECK(mos_from_r(std::nan("")) == 1.0);
}

TEST_CASE("Idd: no delay impairment up to 100 ms, the G.107 curve above", "[rtp][emodel]") {
    CHECK(delay_impairment(0.0) == 0.0);
    CHECK(delay_impairment(100.0) == 0.0);
    CHECK(delay_impairment(150.0) == Approx(0.163531).margin(1e-6));
    CHECK(delay_impairment(200.0) == Approx(3.044414).margin(1e-6));  // X = 1
    CHECK(delay_impairment(400.0) == Approx(24.070089).margin(1e-6)); // X = 2
    CHECK(delay_impairment(std::nan("")) == 0.0);
}

TEST_CASE("Ie_eff: loss, burstiness and codec robustness", "[rtp][emodel]") {
    const CodecImpairment g711_plc = codec_impairment(Codec::pcma);
    CHECK(g711_plc.ie == 0.0);
    CHECK(g711_plc.bpl == 25.1);
    CHECK(effective_equipment_impairment(g711_plc, 0.0, 1.0) == 0.0);
    CHECK(effective_equipment_impairment(g711_plc, 1.0, 1.0) == Approx(95.0 / 26.1));
    CHECK(effective_equipment_impairment(g711_plc, 5.0, 2.0) == Approx(17.210145).margin(1e-6));
    CHECK(effective_equipment_impairment(g711_plc, 100.0, 1.0) == Approx(95.0 * 100 / 125.1));
    CHECK(effective_equipment_impairment(g711_plc, 250.0, 1.0) == Approx(95.0 * 100 / 125.1));  // clamped
    CHECK(effective_equipment_impairment(g711_plc, -3.0, 1.0) == 0.0);
    CHECK(effective_equipment_impairment(g711_plc, 5.0, 0.2) == effective_equipment_impairment(g711_plc, 5.0, 1.0));

    const CodecImpairment g711 = codec_impairment(Codec::pcmu, false);
    CHECK(g711.bpl == 4.3);
    CHECK(effective_equipment_impairment(g711, 1.0, 1.0) == Approx(17.924528).margin(1e-6));
}

TEST_CASE("codec table: G.113 appendix I values and the documented assumptions", "[rtp][emodel]") {
    struct Row {
        Codec codec;
        double ie;
        double bpl;
    };
    const Row rows[] = {
        {Codec::pcmu, 0, 25.1}, {Codec::pcma, 0, 25.1},  {Codec::g729, 11, 19.0}, {Codec::g723, 15, 16.1},
        {Codec::gsm, 20, 10.0}, {Codec::g722, 0, 25.1},  {Codec::ilbc, 10, 25.1}, {Codec::opus, 0, 25.1},
        {Codec::unknown, 0, 25.1}, {Codec::other, 0, 25.1},
    };
    for (const Row& row : rows) {
        INFO(to_string(row.codec));
        CHECK(codec_impairment(row.codec).ie == row.ie);
        CHECK(codec_impairment(row.codec).bpl == row.bpl);
    }
}

TEST_CASE("worked E-model results", "[rtp][emodel]") {
    SECTION("G.711, no loss, no delay: R 93.2, MOS 4.41") {
        const EmodelResult r = evaluate(codec_impairment(Codec::pcmu), {0.0, 1.0, 0.0});
        CHECK(r.r == Approx(93.2).margin(1e-12));
        CHECK(r.mos == Approx(4.409286).margin(1e-6));
    }
    SECTION("G.711 + PLC, 1 % random loss") {
        const EmodelResult r = evaluate(codec_impairment(Codec::pcma), {1.0, 1.0, 0.0});
        CHECK(r.r == Approx(89.560153).margin(1e-6));
        CHECK(r.mos == Approx(4.328075).margin(1e-6));
    }
    SECTION("G.729, 2 % random loss: Ie_eff = 11 + 84 * 2 / 21 = 19") {
        const EmodelResult r = evaluate(codec_impairment(Codec::g729), {2.0, 1.0, 0.0});
        CHECK(r.r == Approx(74.2).margin(1e-9));
        CHECK(r.mos == Approx(3.787287).margin(1e-6));
    }
    SECTION("G.723.1, 5 %") {
        const EmodelResult r = evaluate(codec_impairment(Codec::g723), {5.0, 1.0, 0.0});
        CHECK(r.r == Approx(59.242654).margin(1e-6));
        CHECK(r.mos == Approx(3.060692).margin(1e-6));
    }
    SECTION("GSM full rate, no loss") {
        const EmodelResult r = evaluate(codec_impairment(Codec::gsm), {0.0, 1.0, 0.0});
        CHECK(r.r == Approx(73.2).margin(1e-9));
        CHECK(r.mos == Approx(3.743267).margin(1e-6));
    }
    SECTION("G.711 + PLC, 5 % with BurstR 2") {
        const EmodelResult r = evaluate(codec_impairment(Codec::pcma), {5.0, 2.0, 0.0});
        CHECK(r.r == Approx(75.989855).margin(1e-6));
        CHECK(r.mos == Approx(3.863862).margin(1e-6));
    }
    SECTION("G.711, 400 ms one way") {
        const EmodelResult r = evaluate(codec_impairment(Codec::pcma), {0.0, 1.0, 400.0});
        CHECK(r.r == Approx(69.129911).margin(1e-6));
        CHECK(r.mos == Approx(3.555932).margin(1e-6));
    }
    SECTION("everything lost: R far below zero, MOS 1") {
        const EmodelResult r = evaluate(codec_impairment(Codec::g723), {100.0, 1.0, 2000.0});
        CHECK(r.r < 0.0);
        CHECK(r.mos == 1.0);
    }
}
