// Feeds arbitrary bytes to the RTP parser, the RFC 8285 element reader and the demultiplexer,
// and checks that every view stays inside the input and the parts add up to the whole.
#include "core/bytes.hpp"
#include "rtp/demux.hpp"
#include "rtp/rtp_packet.hpp"

#include <cstddef>
#include <cstdint>

namespace {

void require(bool condition) {
    if (!condition) __builtin_trap();
}

bool inside(hepd::ByteSpan part, const std::uint8_t* data, std::size_t size) {
    return part.empty() || (part.data() >= data && part.data() + part.size() <= data + size);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace hepd::rtp;
    const hepd::ByteSpan bytes(data, size);
    const PacketKind kind = classify(bytes);
    require(!to_string(kind).empty());

    const auto packet = parse_rtp(bytes);
    if (!packet) {
        require(!to_string(packet.error()).empty());
        return 0;
    }
    require(kind == PacketKind::rtp || kind == PacketKind::rtcp);
    require(packet->header_size + packet->payload.size() + packet->padding_size == size);
    require(inside(packet->payload, data, size));
    require(inside(packet->extension_data, data, size));
    require(inside(packet->csrcs.bytes(), data, size));
    require(packet->csrcs.size() <= 15);

    std::uint32_t sum = 0;
    for (const std::uint32_t csrc : packet->csrcs) sum += csrc;
    for (const std::uint8_t octet : packet->payload) sum += octet;
    ExtensionElementReader reader(*packet);
    for (ExtensionElement element; reader.next(element);) {
        require(element.id != 0);
        require(inside(element.data, packet->extension_data.data(), packet->extension_data.size()));
        for (const std::uint8_t octet : element.data) sum += octet;
    }
    return static_cast<int>(sum & 0);
}
