// Feeds arbitrary bytes to the RTCP-JSON scanner and checks what it returns: every error has a
// name, and a report never claims more blocks than it holds.
#include "rtp/rtcp_json.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace {

void require(bool condition) {
    if (!condition) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace hepd::rtp;
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const auto report = parse_rtcp_json(text);
    if (!report) {
        require(to_string(report.error()) != "unknown");
        return 0;
    }
    require(report->block_count <= kMaxRtcpJsonBlocks);
    std::uint64_t sum = report->ssrc + report->sender_info.packets;
    for (std::size_t i = 0; i < report->block_count; ++i) {
        const RtcpJsonBlock& b = report->blocks[i];
        require(b.packets_lost >= -0x80'0000 && b.packets_lost < 0x80'0000);
        sum += b.source_ssrc + b.fraction_lost + b.ia_jitter;
    }
    return static_cast<int>(sum & 0);
}
