#include "rtp/emodel.hpp"

#include <algorithm>
#include <cmath>

namespace hepd::rtp {

CodecImpairment codec_impairment(Codec codec, bool g711_plc) noexcept {
    switch (codec) {
    case Codec::pcmu:
    case Codec::pcma: return g711_plc ? CodecImpairment{0.0, 25.1} : CodecImpairment{0.0, 4.3};
    case Codec::g729: return {11.0, 19.0};
    case Codec::g723: return {15.0, 16.1};
    case Codec::gsm: return {20.0, 10.0};
    case Codec::ilbc: return {10.0, 25.1};
    case Codec::g722:
    case Codec::opus:
    default: return {0.0, 25.1};
    }
}

double delay_impairment(double ta) noexcept {
    if (!(ta > 100.0)) return 0.0;  // also NaN
    const double x = std::log2(ta / 100.0);
    const double x6 = std::pow(x, 6.0);
    const double x3_6 = std::pow(x / 3.0, 6.0);
    return 25.0 * (std::pow(1.0 + x6, 1.0 / 6.0) - 3.0 * std::pow(1.0 + x3_6, 1.0 / 6.0) + 2.0);
}

double effective_equipment_impairment(const CodecImpairment& codec, double ppl, double burst_r) noexcept {
    if (!(ppl > 0.0)) ppl = 0.0;
    ppl = std::min(ppl, 100.0);
    if (!(burst_r >= 1.0)) burst_r = 1.0;
    return codec.ie + (95.0 - codec.ie) * ppl / (ppl / burst_r + codec.bpl);
}

double mos_from_r(double r) noexcept {
    if (!(r > 0.0)) return 1.0;
    if (r >= 100.0) return 4.5;
    const double mos = 1.0 + 0.035 * r + r * (r - 60.0) * (100.0 - r) * 7e-6;
    return std::clamp(mos, 1.0, 4.5);
}

EmodelResult evaluate(const CodecImpairment& codec, const EmodelInput& input) noexcept {
    EmodelResult out;
    out.r = kDefaultR - delay_impairment(input.one_way_delay_ms) -
            effective_equipment_impairment(codec, input.packet_loss_percent, input.burst_ratio);
    out.mos = mos_from_r(out.r);
    return out;
}

}  // namespace hepd::rtp
