// Feeds arbitrary bytes to the TCP framer as a stream delivered in pieces. The first two bytes set
// the piece size and the maximum frame size. Checks that the framer always makes progress, never
// frames past the buffer, and that every frame it cuts can be handed to the decoder safely.
#include "hep/decoder.hpp"
#include "hep/framer.hpp"

#include <cstdint>
#include <cstdlib>
#include <vector>

using namespace hepd;
using namespace hepd::hep;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 2) return 0;
    const std::size_t piece = 1 + data[0] % 64;
    const StreamFramer framer(6 + std::size_t{data[1]} * 16);
    const std::uint8_t* stream = data + 2;
    const std::size_t length = size - 2;

    std::vector<std::uint8_t> buffer;
    std::size_t consumed = 0;
    for (std::size_t fed = 0; fed < length;) {
        const std::size_t n = std::min(piece, length - fed);
        buffer.insert(buffer.end(), stream + fed, stream + fed + n);
        fed += n;
        for (;;) {
            const FrameStatus s = framer.next(buffer);
            if (s.is_error()) return 0;  // the connection would be closed here
            if (s.need_more()) {
                if (s.size <= buffer.size() || s.size > framer.max_frame()) std::abort();
                break;
            }
            if (s.size < StreamFramer::header_size || s.size > buffer.size() || s.size > framer.max_frame())
                std::abort();
            // An exact-size copy, so that AddressSanitizer sees any read past the frame.
            const std::vector<std::uint8_t> frame(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(s.size));
            const auto m = decode(frame);
            if (!m.ok() && m.error() == DecodeError::length_mismatch) std::abort();  // the framer cut it
            buffer.erase(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(s.size));
            consumed += s.size;
        }
    }
    if (consumed + buffer.size() != length) std::abort();
    return 0;
}
