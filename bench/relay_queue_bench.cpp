// What the HEP relay adds per accepted message on a receive thread: the copy into the
// preallocated MessageRing and the doorbell check of Relay::Producer::push() (the sender thread
// awake, as under load), plus the release the sender does once sent; one thread, a ring of 4 MiB
// drained every 1,024 messages, no sockets. Sizes: a short SIP response and a Kamailio siptrace
// INVITE with SDP. The refused counter must stay 0 (the ring never fills here).
#include "relay/message_ring.hpp"
#include "shard/doorbell.hpp"

#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

using namespace hepd;

namespace {

void relay_push_and_release(benchmark::State& state) {
    const std::vector<std::uint8_t> message(static_cast<std::size_t>(state.range(0)), 0x48);
    shard::Doorbell bell;
    relay::MessageRing ring(4u << 20);
    std::uint64_t refused = 0;
    std::uint64_t pushed = 0;
    for (auto _ : state) {
        if (ring.try_push(message)) {
            bell.ring();
        } else {
            ++refused;
        }
        if (++pushed % 1024 == 0) {
            while (ring.has_message()) {
                benchmark::DoNotOptimize(ring.front().data());
                ring.pop();
            }
        }
    }
    state.SetItemsProcessed(state.iterations());
    state.SetBytesProcessed(state.iterations() * state.range(0));
    state.counters["refused"] = static_cast<double>(refused);
}
BENCHMARK(relay_push_and_release)->Arg(400)->Arg(1200);

}  // namespace

BENCHMARK_MAIN();
