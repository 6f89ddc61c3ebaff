#include "pcap/split_reader.hpp"

#include "shard/dispatch.hpp"

#include <atomic>
#include <limits>
#include <mutex>
#include <optional>

namespace hepd::pcap {

namespace {

constexpr std::uint64_t kNoBlock = std::numeric_limits<std::uint64_t>::max();
// Progress is told every this many blocks (about 16,000 frames).
constexpr std::uint64_t kProgressBlocks = 16;

}  // namespace

// What one shard takes from a block, in input order: the other shards' datagrams before it
// (counted, not decoded again), then one of its own datagrams, a frame every shard decodes, or
// the end of the block.
struct SplitReader::Item {
    enum class What : std::uint8_t { datagram, frame, end };
    shard::PassedRun passed;
    std::uint32_t index = 0;  // into Block::datagrams, or Block::frames
    What what = What::end;
};

struct SplitReader::Block {
    std::atomic<std::uint64_t> ready{kNoBlock};  // the block decoded here, once it is whole
    std::atomic<std::uint64_t> free_for{0};      // the block that may be decoded here next
    std::atomic<std::size_t> readers_left{0};    // shards still to take it
    std::vector<std::vector<Item>> items;        // by shard
    std::vector<shard::Datagram> datagrams;
    std::vector<Frame> frames;  // off the plain path: every shard decodes them itself
    // Payloads that do not lie in the input's bytes (an inflated HEP payload), copied.
    std::vector<std::vector<std::uint8_t>> copies;
    bool last = false;  // the file ends in this block (fewer than kBlockFrames frames)
    FileError error = FileError::none;
    std::string message;  // with an error: FileReader::error_message()
    std::uint64_t end_offset = 0;
};

// Where a block begins (pcap): the decoder of the block before hands it on as soon as it has
// walked that block's record lengths, so that no shard walks records it does not decode.
struct SplitReader::Start {
    std::atomic<std::uint64_t> block{kNoBlock};  // the block this entry is for, once written
    std::uint64_t offset = 0;
    std::uint64_t frames = 0;  // frames of the file before it
};

// Each file is opened (mapped, or inflated) once, by whichever shard comes first; every shard
// walks its own clone of that opening, and the last one done lets it go.
struct SplitReader::Opening {
    std::once_flag once;
    std::optional<Result<FileReader, FileError>> reader;
    std::atomic<std::size_t> done{0};
    // pcap: the file's last block, once its decoder has found it (no block after it starts).
    std::atomic<std::uint64_t> last_block{kNoBlock};
};

struct SplitReader::Reader {
    Reader(const CaptureOptions& options, std::size_t shards) : plain(options), ordered(options), runs(shards) {}
    CaptureSource plain;                 // the blocks this shard decodes
    CaptureSource ordered;               // every frame off the plain path, in input order
    std::vector<shard::PassedRun> runs;  // decoding: by shard, the others' datagrams since its last item
};

// A shard's walk over one file to the blocks it decodes.
struct SplitReader::Walk {
    FileReader walker;
    std::size_t file;
    std::uint64_t first;  // the file's first block
    std::uint64_t at;     // the block the walker is at the start of (when it skips)
    std::uint64_t next;   // the next block this shard decodes
    bool ended = false;   // the walker has passed the file's last block
};

SplitReader::SplitReader(std::vector<std::string> files, std::size_t shards, const CaptureOptions& options)
    : files_(std::move(files)),
      shards_(shards),
      ring_size_(4 * shards),
      options_(options),
      ring_(std::make_unique<Block[]>(ring_size_)),
      starts_(std::make_unique<Start[]>(2 * ring_size_)) {
    for (std::size_t i = 0; i < files_.size(); ++i) openings_.push_back(std::make_unique<Opening>());
    for (std::size_t i = 0; i < ring_size_; ++i) {
        ring_[i].free_for.store(i, std::memory_order_relaxed);
        ring_[i].items.resize(shards_);
    }
    for (std::size_t i = 0; i < shards_; ++i) readers_.push_back(std::make_unique<Reader>(options_, shards_));
}

SplitReader::~SplitReader() = default;

const Result<FileReader, FileError>& SplitReader::open(std::size_t file) {
    Opening& o = *openings_[file];
    std::call_once(o.once, [&] { o.reader.emplace(FileReader::open(files_[file], options_.max_inflated_bytes)); });
    return *o.reader;
}

void SplitReader::done_with(std::size_t file) {
    Opening& o = *openings_[file];
    if (o.done.fetch_add(1, std::memory_order_acq_rel) + 1 == shards_) o.reader.reset();
}

SplitReader::Block& SplitReader::slot(std::uint64_t block) noexcept { return ring_[block % ring_size_]; }

void SplitReader::read(std::size_t shard, shard::Pipeline::Feed& feed, Observer* observer) {
    Reader& reader = *readers_[shard];
    std::uint64_t first = 0;  // the first block of the file (blocks are numbered across files)
    std::uint64_t datagrams = 0;
    for (std::size_t file = 0; file < files_.size(); ++file) {
        if (observer != nullptr) observer->file_started(file);
        const auto& opened = open(file);
        if (!opened) {
            if (shard == 0) {
                reader.ordered.count_file(opened.error());
                error_ = files_[file] + ": " + std::string(to_string(opened.error()));
            }
            done_with(file);
            break;
        }
        const ByteSpan input = opened->bytes();
        feed.stable_input(input);
        Walk walk{opened->clone(), file, first, first, first + (shard + shards_ - first % shards_) % shards_};
        FileError error = FileError::none;
        std::uint64_t block = first;
        for (;; ++block) {
            // Decoding first, up to two blocks of this shard's ahead of the one it takes; while
            // it cannot go on (the block before its next one not yet walked, or its slot still
            // taken), taking the blocks that are ready.
            const std::uint64_t upto = block + 2 * shards_;
            Block& b = slot(block);
            while (true) {
                if (decode_next(walk, upto, reader, feed)) continue;
                if (b.ready.load(std::memory_order_acquire) == block) break;
                feed.wait_until([&] {
                    return b.ready.load(std::memory_order_acquire) == block || next_step(walk, upto) != Step::none;
                });
            }
            datagrams += take(b, shard, reader, feed);
            const bool last = b.last;
            error = b.error;
            if (shard == 0 && error != FileError::none) error_ = files_[file] + ": " + b.message;
            if (observer != nullptr && (last || (block - first) % kProgressBlocks == 0))
                observer->progress(b.end_offset, input.size(), datagrams);
            if (b.end_offset > CaptureSource::kReleaseLag)
                walk.walker.release_before(b.end_offset - CaptureSource::kReleaseLag);
            if (b.readers_left.fetch_sub(1, std::memory_order_acq_rel) == 1) {
                b.free_for.store(block + ring_size_, std::memory_order_release);
                feed.wake_peers();
            }
            if (last) break;
        }
        feed.end_input();
        if (shard == 0) reader.ordered.count_file(error);
        done_with(file);
        first = block + 1;
        if (error != FileError::none) break;
    }
    reader.ordered.finish();
}

// What this shard can do next on its walk, without waiting.
SplitReader::Step SplitReader::next_step(const Walk& walk, std::uint64_t upto) const {
    if (walk.ended || walk.next > upto) return Step::none;
    const std::uint64_t block = walk.next;
    if (walk.walker.resumable() && block != walk.first) {
        const bool handed_on = starts_[block % (2 * ring_size_)].block.load(std::memory_order_acquire) == block;
        // Read after the start: an entry for this block id written in the next file (by a shard
        // ahead of this one) comes after this file's last block is known, and must not be taken.
        if (openings_[walk.file]->last_block.load(std::memory_order_acquire) < block) return Step::end;
        if (!handed_on) return Step::none;
    }
    return ring_[block % ring_size_].free_for.load(std::memory_order_acquire) == block ? Step::decode : Step::none;
}

bool SplitReader::decode_next(Walk& walk, std::uint64_t upto, Reader& reader, shard::Pipeline::Feed& feed) {
    const Step step = next_step(walk, upto);
    if (step == Step::none) return false;
    if (step == Step::end) {
        walk.ended = true;  // the block before its next one was the file's last
        return true;
    }
    const std::uint64_t block = walk.next;
    const bool handed_on = walk.walker.resumable();
    if (handed_on && block != walk.first) {
        const Start& start = starts_[block % (2 * ring_size_)];
        walk.walker.resume_at(start.offset, start.frames);
    }
    for (; !handed_on && walk.at < block; ++walk.at) {
        if (walk.walker.skip(kBlockFrames) < kBlockFrames) {
            walk.ended = true;  // that block was the last: its decoder says how it ended
            return true;
        }
    }
    if (handed_on) {
        std::uint64_t end = 0;
        const std::size_t n = walk.walker.frames_ahead(kBlockFrames, end);
        if (n < kBlockFrames) {
            openings_[walk.file]->last_block.store(block, std::memory_order_release);
        } else {
            // Its entry was last used two rings ago, by a block decoded before block - ring,
            // which every shard has taken now (this block's slot is free).
            Start& next = starts_[(block + 1) % (2 * ring_size_)];
            next.offset = end;
            next.frames = walk.walker.frames() + n;
            next.block.store(block + 1, std::memory_order_release);
        }
        feed.wake_peers();
    }
    Block& b = slot(block);
    decode(walk.walker, walk.walker.bytes(), b, reader);
    walk.ended = b.last;
    b.readers_left.store(shards_, std::memory_order_relaxed);
    b.ready.store(block, std::memory_order_release);
    feed.wake_peers();
    ++walk.at;
    walk.next += shards_;
    return true;
}

void SplitReader::decode(FileReader& walker, ByteSpan input, Block& b, Reader& reader) const {
    for (auto& list : b.items) list.clear();
    b.datagrams.clear();
    b.frames.clear();
    b.copies.clear();
    b.last = false;
    b.error = FileError::none;
    b.message.clear();
    std::vector<shard::PassedRun>& runs = reader.runs;
    const auto add = [&](std::size_t shard, Item::What what, std::uint32_t index) {
        b.items[shard].push_back(Item{runs[shard], index, what});
        runs[shard] = {};
    };
    const auto keep = [&](const shard::Datagram& d) {
        const auto index = static_cast<std::uint32_t>(b.datagrams.size());
        shard::Datagram& kept = b.datagrams.emplace_back(d);
        if (!within(input, d.payload)) {
            kept.payload = ByteSpan(b.copies.emplace_back(d.payload.begin(), d.payload.end()));
        }
        if (!within(input, as_bytes(d.correlation_id))) {
            const auto& copy = b.copies.emplace_back(d.correlation_id.begin(), d.correlation_id.end());
            kept.correlation_id = as_text(ByteSpan(copy));
        }
        const std::size_t owner = shard::shard_of(d, shards_);
        for (std::size_t i = 0; i < shards_; ++i)
            if (i != owner) runs[i].add(d.time, d.kind == PayloadClass::sip);
        add(owner, Item::What::datagram, index);
    };
    const CaptureSource::DatagramSink sink(keep);
    Frame frame;
    for (std::size_t n = 0; n < kBlockFrames; ++n) {
        if (!walker.next(frame)) {
            b.last = true;
            b.error = walker.error();
            if (b.error != FileError::none) b.message = walker.error_message();
            break;
        }
        if (reader.plain.process_plain(frame, sink)) continue;
        const auto index = static_cast<std::uint32_t>(b.frames.size());
        b.frames.push_back(frame);
        for (std::size_t i = 0; i < shards_; ++i) add(i, Item::What::frame, index);
    }
    for (std::size_t i = 0; i < shards_; ++i) add(i, Item::What::end, 0);
    b.end_offset = walker.offset();
}

std::uint64_t SplitReader::take(const Block& b, std::size_t shard, Reader& reader, shard::Pipeline::Feed& feed) const {
    std::uint64_t datagrams = 0;
    const auto push = [&](const shard::Datagram& d) {
        ++datagrams;
        feed.push(d);
    };
    const CaptureSource::DatagramSink ordered_sink(push);
    const std::vector<Item>& items = b.items[shard];
    constexpr std::size_t kAhead = 4;  // the datagrams were written by another shard, most likely
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (i + kAhead < items.size() && items[i + kAhead].what == Item::What::datagram) {
            const shard::Datagram& d = b.datagrams[items[i + kAhead].index];
            __builtin_prefetch(&d);
            __builtin_prefetch(reinterpret_cast<const char*>(&d) + 64);
            __builtin_prefetch(d.payload.data());
        }
        const Item& item = items[i];
        if (item.passed.count != 0) {
            datagrams += item.passed.count;
            feed.pass(item.passed);
        }
        switch (item.what) {
        case Item::What::datagram:
            ++datagrams;
            feed.push_own(b.datagrams[item.index]);
            break;
        case Item::What::frame: reader.ordered.process(b.frames[item.index], ordered_sink); break;
        case Item::What::end: break;
        }
    }
    return datagrams;
}

CaptureStats SplitReader::stats() const {
    CaptureStats s = readers_[0]->ordered.stats();
    for (const auto& r : readers_) s.add_frames(r->plain.stats());
    return s;
}

}  // namespace hepd::pcap
