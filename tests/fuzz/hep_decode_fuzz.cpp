// Decodes arbitrary bytes as one HEP datagram, then exercises everything that follows a successful
// decode: timestamp normalisation, inflating a compressed payload under a small cap, and a
// re-encode round trip (v3, or the same legacy version) that must give back the same message.
#include "hep/compression.hpp"
#include "hep/decoder.hpp"
#include "hep/encoder.hpp"
#include "hep/timestamp.hpp"

#include <array>
#include <cstdint>
#include <cstdlib>
#include <vector>

using namespace hepd;
using namespace hepd::hep;

namespace {

bool inside(ByteSpan view, ByteSpan buffer) {
    return view.empty() || (view.data() >= buffer.data() && view.data() + view.size() <= buffer.data() + buffer.size());
}

void check_round_trip(const Message& m) {
    std::vector<std::uint8_t> encoded;
    Message expected = m;
    if (m.version == 3) {
        // Decoding drops unknown and repeated chunks, so the re-encoding is never larger.
        if (!encode_v3(m, encoded)) std::abort();
    } else if (!encode_legacy(m, m.version, encoded)) {
        std::abort();
    }
    const auto back = decode(encoded);
    if (!back.ok() || !(back.value() == expected)) std::abort();
    // The legacy message once more as v3, when it fits.
    if (m.version != 3) {
        encoded.clear();
        if (encode_v3(m, encoded)) {
            expected.version = 3;
            const auto v3 = decode(encoded);
            if (!v3.ok() || !(v3.value() == expected)) std::abort();
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const ByteSpan input(data, size);
    Message m;
    if (!decode_into(input, m).has_value()) {
        for (const ByteSpan v : {m.payload, m.auth_key, m.correlation_id, m.node_name, m.mac_src, m.mac_dst,
                                 m.transaction_type, m.extra_correlation})
            if (!inside(v, input)) std::abort();

        for (const std::int64_t now_s : {0LL, 1'796'000'000LL, 4'300'000'000LL}) {
            const Timestamp now{now_s * 1'000'000};
            const auto t = normalise_timestamp(m, now);
            if (t.time.us < now.us - max_past_us || t.time.us > now.us + max_future_us) std::abort();
        }

        if (m.compressed) {
            static std::array<std::uint8_t, 4096> out;
            const auto r = decompress_payload(m.payload, out);
            if (r.ok() && (r->data() != out.data() || r->size() > out.size())) std::abort();
        }
        check_round_trip(m);
    }

    // The raw bytes as a compressed stream too, with a cap small enough to hit the bomb guard.
    static std::array<std::uint8_t, 256> small;
    const auto r = decompress_payload(input, small);
    if (r.ok() && r->size() > small.size()) std::abort();
    return 0;
}
