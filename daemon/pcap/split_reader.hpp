#pragma once
// `hepd pcap --cores N`: the N shard threads read the captures together, and each frame is
// decoded once. The frames are cut into blocks of kBlockFrames; shard i decodes blocks i, i+N,
// i+2N... (plain UDP, the bulk of any capture: CaptureSource::process_plain) and names each
// datagram's owner (shard::shard_of) as it goes. Every shard then takes every block in input
// order: its own datagrams to its tables (Feed::push_own), the others' as a count and a time
// (Feed::pass), so each shard sees the input exactly as a single reader would have handed it
// out. Frames off the plain path (IP fragments, TCP, tunnels) carry state from one to the next
// (reassembly), so every shard decodes those itself, in order, and keeps what it owns; their
// figures are counted by shard 0 only.
//
// A shard decodes its blocks up to two of its own ahead of the one it takes (a ring of 4N
// blocks), and takes ready blocks while it cannot decode, so that it seldom waits. In a pcap
// file a block's decoder hands the next block's start on as soon as it has walked its own
// record lengths, so no shard reads records it does not decode (pcapng, whose blocks carry
// section state, is walked over by every shard: FileReader::skip). Every wait goes through
// Feed::wait_until, which keeps the ordered pipeline's promises (no two shards wait on each
// other). Measured against every shard walking the whole capture: bench/README.md.
#include "pcap/capture_source.hpp"
#include "shard/pipeline.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hepd::pcap {

class SplitReader {
public:
    static constexpr std::size_t kBlockFrames = 1024;

    // Shard 0's view of the reading, called on its thread only.
    struct Observer {
        virtual ~Observer() = default;
        virtual void file_started(std::size_t index) = 0;
        // How far the current file is taken (its offset and size) and the datagrams so far.
        virtual void progress(std::uint64_t offset, std::uint64_t size, std::uint64_t datagrams) = 0;
    };

    SplitReader(std::vector<std::string> files, std::size_t shards, const CaptureOptions& options);
    ~SplitReader();
    SplitReader(const SplitReader&) = delete;
    SplitReader& operator=(const SplitReader&) = delete;

    // Runs once on every shard's thread (shard::Pipeline::run_readers) and pushes the whole
    // input, in input order, to that shard's feed. Reading stops after the first file that
    // fails (all shards stop at the same frame).
    void read(std::size_t shard, shard::Pipeline::Feed& feed, Observer* observer = nullptr);

    // Once every read() has returned: the input in full, and the first error ("path: what"),
    // empty when none.
    CaptureStats stats() const;
    const std::string& error() const noexcept { return error_; }

private:
    struct Item;
    struct Block;
    struct Start;
    struct Opening;
    struct Reader;
    struct Walk;

    const Result<FileReader, FileError>& open(std::size_t file);
    void done_with(std::size_t file);
    Block& slot(std::uint64_t block) noexcept;
    enum class Step : std::uint8_t { none, decode, end };
    Step next_step(const Walk& walk, std::uint64_t upto) const;
    // Decodes this shard's next block, or finds the file has none left for it; false when it
    // can do neither yet.
    bool decode_next(Walk& walk, std::uint64_t upto, Reader& reader, shard::Pipeline::Feed& feed);
    void decode(FileReader& walker, ByteSpan input, Block& block, Reader& reader) const;
    std::uint64_t take(const Block& block, std::size_t shard, Reader& reader, shard::Pipeline::Feed& feed) const;

    std::vector<std::string> files_;
    std::size_t shards_;
    std::size_t ring_size_;
    CaptureOptions options_;
    std::vector<std::unique_ptr<Opening>> openings_;
    std::unique_ptr<Block[]> ring_;
    std::unique_ptr<Start[]> starts_;  // 2 rings' worth, by block
    std::vector<std::unique_ptr<Reader>> readers_;
    std::string error_;  // written by shard 0
};

}  // namespace hepd::pcap
