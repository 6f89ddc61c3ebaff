#pragma once
// The daemon's DatagramSink: one shard::Pipeline::Producer per receive thread.
#include "ingest/ingest_path.hpp"
#include "shard/pipeline.hpp"

namespace hepd::ingest {

class ProducerSink final : public DatagramSink {
public:
    explicit ProducerSink(shard::Pipeline::Producer& producer) noexcept : producer_(producer) {}
    void push(const shard::Datagram& d) override { producer_.push(d); }
    void flush() override { producer_.flush(); }
    std::uint64_t dropped() const noexcept override { return producer_.dropped(); }

private:
    shard::Pipeline::Producer& producer_;
};

}  // namespace hepd::ingest
