// Feeds arbitrary bytes to the RTCP-JSON scanner and checks what it returns: every error has a
// name, a report never claims more blocks than it holds, and a report reused across inputs (as
// the stream table reuses one) reads each input as a fresh one does.
#include "rtp/rtcp_json.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace {

void require(bool condition) {
    if (!condition) __builtin_trap();
}

bool same_report(const hepd::rtp::RtcpJsonReport& a, const hepd::rtp::RtcpJsonReport& b) {
    using Fields = hepd::rtp::RtcpJsonReportFields;
    return static_cast<const Fields&>(a) == static_cast<const Fields&>(b) &&
           std::equal(a.blocks.begin(), a.blocks.begin() + a.block_count, b.blocks.begin());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace hepd::rtp;
    static RtcpJsonReport reused;  // holds the previous input's report
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const auto report = parse_rtcp_json(text);
    const auto error = parse_rtcp_json_into(text, reused);
    require(report.ok() == !error);
    if (!report) {
        require(*error == report.error());
        require(to_string(report.error()) != "unknown");
        return 0;
    }
    require(same_report(*report, reused));
    require(report->block_count <= kMaxRtcpJsonBlocks);
    std::uint64_t sum = report->ssrc + report->sender_info.packets;
    for (std::size_t i = 0; i < report->block_count; ++i) {
        const RtcpJsonBlock& b = report->blocks[i];
        require(b.packets_lost >= -0x80'0000 && b.packets_lost < 0x80'0000);
        sum += b.source_ssrc + b.fraction_lost + b.ia_jitter;
    }
    return static_cast<int>(sum & 0);
}
