// Capture bytes of any shape: detect the format (gzip included), walk every record, decode,
// reassemble fragments and TCP streams, classify. Besides memory safety it checks that the
// record walk alone agrees with the full pipeline and that every frame is accounted for once.
#include "pcap/capture_source.hpp"
#include "pcap/reader.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace hepd;
    using namespace hepd::pcap;
    auto opened = FileReader::from_memory(ByteSpan(data, size), std::size_t{1} << 20);
    if (!opened) return 0;
    FileReader& reader = opened.value();
    FileReader walk = reader.clone();

    CaptureOptions options;
    options.tcp.max_streams = 8;
    options.tcp.max_stream_bytes = 8192;
    options.fragments.max_datagrams = 8;
    options.sip_ports = {5060, 0};
    CaptureSource source(options);
    std::uint64_t sum = 0;
    source.read(reader, [&](const shard::Datagram& d) {
        for (const std::uint8_t b : d.payload) sum += b;  // every byte of every view must be readable
        sum += d.correlation_id.size();
    });
    source.finish();
    const CaptureStats s = source.stats();

    Frame f;
    std::uint64_t frames = 0;
    while (walk.next(f)) {
        ++frames;
        L4Packet p;
        (void)decode_frame_into(f, p);
    }
    if (frames != s.frames || walk.error() != reader.error() || walk.error_offset() != reader.error_offset())
        std::abort();
    if (s.frames != s.decode_errors_total() + s.fragments.fragments - s.fragments.reassembled + s.packets_total())
        std::abort();
    (void)reader.error_message();
    return sum == 0xffffffffffffffffULL ? 1 : 0;
}
