#include "rtp/reported_stream.hpp"

#include "rtp/emodel.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>

namespace hepd::rtp {

ReportedSummary summarize_reported(const ReportedStream& s, const QualityOptions& options) noexcept {
    ReportedSummary out;
    const ReceiverView& v = s.view;
    out.reports = v.reports;
    out.lost = v.cumulative_lost;
    out.lost_clamped = v.cumulative_lost > 0 ? static_cast<std::uint64_t>(v.cumulative_lost) : 0;
    out.fraction_lost = v.fraction_lost / 256.0;
    out.codec = s.codec;
    out.clock_rate = s.clock_rate != 0 ? s.clock_rate : kAssumedReportedClockRate;
    out.jitter_ms = 1000.0 * v.jitter / out.clock_rate;
    out.max_jitter_ms = 1000.0 * s.max_jitter / out.clock_rate;
    out.has_rtt = v.rtt_us != kNoRtt;
    if (out.has_rtt) out.rtt_ms = v.rtt_us / 1000.0;
    if (v.reports == 0) return out;
    out.loss_percent = 100.0 * s.fraction_lost_sum / 256.0 / v.reports;
    out.has_quality = true;
    const double network_ms = out.has_rtt ? out.rtt_ms / 2.0 : options.default_network_delay_ms;
    out.one_way_delay_ms = network_ms + options.jitter_buffer_factor * out.max_jitter_ms;
    const EmodelResult e =
        evaluate(codec_impairment(out.codec, options.g711_plc), {out.loss_percent, 1.0, out.one_way_delay_ms});
    out.r_factor = e.r;
    out.mos = e.mos;
    return out;
}

void take_codec(ReportedStream& s, Codec codec, std::uint32_t clock_rate) noexcept {
    if (s.clock_rate != 0 && clock_rate != 0 && clock_rate != s.clock_rate) {
        const std::uint64_t scaled = (std::uint64_t{s.max_jitter} * clock_rate + s.clock_rate / 2) / s.clock_rate;
        s.max_jitter =
            static_cast<std::uint32_t>(std::min<std::uint64_t>(scaled, std::numeric_limits<std::uint32_t>::max()));
    }
    s.codec = codec;
    s.clock_rate = clock_rate;
}

}  // namespace hepd::rtp
