#pragma once
// A receive thread's DatagramSink when `relay:` lists destinations: datagrams go on to the
// thread's shard producer as before, and the HEP message each was decoded from is copied, as
// received, into the thread's queue of every relay destination.
#include "ingest/ingest_path.hpp"
#include "relay/relay.hpp"

#include <vector>

namespace hepd::app {

class RelayingSink final : public ingest::DatagramSink {
public:
    RelayingSink(ingest::DatagramSink& inner, std::vector<relay::Relay::Producer*> relays)
        : inner_(inner), relays_(std::move(relays)) {}

    void accepted_message(ByteSpan message) noexcept override {
        for (auto* r : relays_) r->push(message);
    }
    void push(const shard::Datagram& d) override { inner_.push(d); }
    void flush() override { inner_.flush(); }
    std::uint64_t dropped() const noexcept override { return inner_.dropped(); }

private:
    ingest::DatagramSink& inner_;
    std::vector<relay::Relay::Producer*> relays_;
};

}  // namespace hepd::app
