#pragma once
// `hepd pcap` with several shards: the shards share the decoding of a capture instead of each
// decoding all of it. Its frames are cut into chunks of kChunkFrames; shard c % N decodes chunk c
// (it walks the other chunks' record headers only, which costs little) and hands every shard the
// datagrams it owns, with what the shard needs to know of the others' (their newest time, their
// last SIP). Frames that do not stand alone (IP fragments, TCP segments, HEP) go to every shard,
// which processes them in input order with its own CaptureSource, as a reader of the whole
// capture would. A datagram's order is (chunk, frame within it, datagram within the frame): the
// same in every shard, so the pipeline's ordering rules hold as with whole readers.
//
// A shard decodes at most kSlotsPerShard of its chunks ahead of where it processes; a chunk's
// slot is reused once every shard has processed it, so memory is bounded whatever the capture.
#include "pcap/capture_source.hpp"
#include "pcap/reader.hpp"
#include "shard/pipeline.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hepd::app {

class SplitReading {
public:
    static constexpr std::uint64_t kChunkFrames = 2048;
    static constexpr std::size_t kSlotsPerShard = 4;

    explicit SplitReading(std::size_t shards);
    ~SplitReading();
    SplitReading(const SplitReading&) = delete;
    SplitReading& operator=(const SplitReading&) = delete;

    // What one shard's thread keeps between files: every shard reads the same files in the same
    // order, and chunks are numbered on across them.
    struct Reader {
        pcap::CaptureSource* in_order = nullptr;    // processes the stateful frames, counts files
        pcap::CaptureSource* classifier = nullptr;  // decodes this shard's chunks (their frame counts)
        std::uint64_t next_chunk = 0;
        std::uint64_t datagrams = 0;  // handed to the shards, for progress (shard 0's view)
    };

    // One opened file, on the reading shard's thread; returns the file's error (none at its end)
    // and puts its account in `message` (optional). Every shard must call it for every file, in
    // the same order. `progress` as for CaptureSource::read().
    pcap::FileError read(Reader& reader, const pcap::FileReader& opened, shard::Pipeline::Feed& feed,
                         std::string* message, const pcap::CaptureSource::ProgressSink* progress);

private:
    struct Event;
    struct Slot;

    bool decode(Reader& reader, pcap::FileReader& walker, std::uint64_t& walked, std::uint64_t chunk,
                shard::Pipeline::Feed& feed);
    Slot& slot(std::uint64_t chunk) noexcept { return *slots_[chunk % slots_.size()]; }

    std::size_t shards_;
    std::vector<std::unique_ptr<Slot>> slots_;
};

}  // namespace hepd::app
