#include "app/split_reading.hpp"

#include "shard/dispatch.hpp"

#include <algorithm>

namespace hepd::app {

namespace {

// A datagram's order: chunk, frame within the chunk, datagram within the frame.
constexpr unsigned kChunkShift = 40;
constexpr unsigned kFrameShift = 16;
constexpr std::uint64_t kMaxWithinFrame = (std::uint64_t{1} << kFrameShift) - 1;
static_assert(SplitReading::kChunkFrames <= (std::uint64_t{1} << (kChunkShift - kFrameShift)));

constexpr std::size_t kPrefetchAhead = 8;  // events

constexpr std::uint64_t chunk_start(std::uint64_t chunk) noexcept { return chunk << kChunkShift; }

}  // namespace

// What one shard is handed of one frame of a chunk.
struct SplitReading::Event {
    std::uint64_t order;
    // Of the others' datagrams in the chunk before this frame: the order after the last SIP
    // (0: none) and the newest time.
    std::uint64_t peer_sip_end;
    Timestamp newest;
    bool stateful;             // `frame` is to be processed here, in order; else `datagram` is ours
    shard::Datagram datagram;  // views into the capture
    pcap::Frame frame;
};

struct SplitReading::Slot {
    explicit Slot(std::size_t shards) : events(shards), peer_sip_end(shards, 0) {}

    // The chunk whose events are here (UINT64_MAX: none yet), and the chunk the slot takes next
    // once every shard has processed the one in it.
    std::atomic<std::uint64_t> ready{UINT64_MAX};
    std::atomic<std::uint64_t> free_for{0};
    std::atomic<std::size_t> consumed{0};
    // Written by the decoding shard before `ready`, read-only after.
    std::vector<std::vector<Event>> events;   // by shard
    std::vector<std::uint64_t> peer_sip_end;  // by shard, at the chunk's end
    Timestamp newest{};                       // of the chunk's standalone datagrams
    std::uint64_t datagrams = 0;              // standalone datagrams in the chunk
    std::uint64_t end_offset = 0;             // walker's byte offset after the chunk
    bool last = false;                        // the file ends in this chunk
    pcap::FileError error = pcap::FileError::none;
    std::string error_message;
};

SplitReading::SplitReading(std::size_t shards) : shards_(shards) {
    for (std::size_t i = 0; i < shards * kSlotsPerShard; ++i) {
        slots_.push_back(std::make_unique<Slot>(shards));
        slots_.back()->free_for.store(i, std::memory_order_relaxed);
    }
}

SplitReading::~SplitReading() = default;

// Walks to `chunk`, decodes it into its slot and publishes it. False when the file ended before
// it (nothing published: a shard further back publishes the last chunk) or in it.
bool SplitReading::decode(Reader& reader, pcap::FileReader& walker, std::uint64_t& walked, std::uint64_t chunk,
                          shard::Pipeline::Feed& feed) {
    pcap::Frame frame;
    for (; walked < chunk; ++walked)
        for (std::uint64_t i = 0; i < kChunkFrames; ++i)
            if (!walker.next(frame)) return false;
    Slot& s = slot(chunk);
    for (auto& e : s.events) e.clear();
    std::fill(s.peer_sip_end.begin(), s.peer_sip_end.end(), 0);
    s.newest = {};
    s.datagrams = 0;
    s.last = false;
    s.error = pcap::FileError::none;
    s.error_message.clear();
    shard::Datagram d;
    for (std::uint64_t f = 0; f < kChunkFrames; ++f) {
        if (!walker.next(frame)) {
            s.last = true;
            s.error = walker.error();
            s.error_message = walker.error_message();
            break;
        }
        const std::uint64_t order = chunk_start(chunk) | (f << kFrameShift);
        switch (reader.classifier->classify(frame, d)) {
        case pcap::FrameVerdict::nothing: break;
        case pcap::FrameVerdict::datagram: {
            const std::size_t owner = shard::shard_of(d, shards_);
            s.events[owner].push_back(Event{order, s.peer_sip_end[owner], s.newest, false, d, {}});
            if (d.time > s.newest) s.newest = d.time;
            if (d.kind == PayloadClass::sip)
                for (std::size_t t = 0; t < shards_; ++t)
                    if (t != owner) s.peer_sip_end[t] = order + 1;
            ++s.datagrams;
            break;
        }
        case pcap::FrameVerdict::stateful:
            for (std::size_t t = 0; t < shards_; ++t)
                s.events[t].push_back(Event{order, s.peer_sip_end[t], s.newest, true, {}, frame});
            break;
        }
    }
    s.end_offset = walker.offset();
    walked = chunk + 1;
    s.ready.store(chunk, std::memory_order_release);
    feed.wake_peers();
    return !s.last;
}

pcap::FileError SplitReading::read(Reader& reader, const pcap::FileReader& opened, shard::Pipeline::Feed& feed,
                                   std::string* message, const pcap::CaptureSource::ProgressSink* progress) {
    const std::size_t me = feed.shard();
    const std::uint64_t ring = slots_.size();
    const std::uint64_t size = opened.bytes().size();

    // Decoding ahead: this shard's chunks, as far as the ring allows. Done between chunks and
    // whenever the shard would wait, so that no peer waits for a chunk this shard sleeps on.
    class Ahead final : public shard::Pipeline::Feed::SideWork {
    public:
        Ahead(SplitReading& split, Reader& reader, const pcap::FileReader& opened, shard::Pipeline::Feed& feed,
              std::uint64_t first, std::size_t me)
            : split_(split),
              reader_(reader),
              feed_(feed),
              walker_(opened.clone()),
              walked_(first),
              next_(first + (me + split.shards_ - first % split.shards_) % split.shards_),
              at_(first) {}
        bool ready() override {
            return !done_ && next_ < at_ + split_.slots_.size() &&
                   split_.slot(next_).free_for.load(std::memory_order_acquire) == next_;
        }
        void run() override {
            while (ready()) {
                done_ = !split_.decode(reader_, walker_, walked_, next_, feed_);
                next_ += split_.shards_;
            }
        }
        void at(std::uint64_t chunk) noexcept { at_ = chunk; }

    private:
        SplitReading& split_;
        Reader& reader_;
        shard::Pipeline::Feed& feed_;
        pcap::FileReader walker_;
        std::uint64_t walked_;  // the walker stands at this chunk's start
        std::uint64_t next_;    // this shard's next chunk to decode
        std::uint64_t at_;      // the chunk being processed: the ring's window starts there
        bool done_ = false;     // the file ended
    } ahead(*this, reader, opened, feed, reader.next_chunk, me);
    feed.set_side_work(&ahead);

    for (std::uint64_t c = reader.next_chunk;; ++c) {
        ahead.at(c);
        ahead.run();
        Slot& s = slot(c);
        feed.wait_until([&] { return s.ready.load(std::memory_order_acquire) == c; });
        const std::vector<Event>& events = s.events[me];
        for (std::size_t i = 0; i < events.size(); ++i) {
            // The bytes were read on the decoding shard's core: ask for them ahead, as the
            // record walk does for its own reader.
            if (i + kPrefetchAhead < events.size()) {
                const Event& later = events[i + kPrefetchAhead];
                __builtin_prefetch(later.stateful ? later.frame.data.data() : later.datagram.payload.data());
            }
            const Event& e = events[i];
            feed.skip_to(e.order, e.newest, e.peer_sip_end);
            if (!e.stateful) {
                feed.push_at(e.datagram, e.order);
                continue;
            }
            std::uint64_t within = 0;
            reader.in_order->process(e.frame, [&](const shard::Datagram& d) {
                feed.push_at(d, e.order + within);
                within = std::min(within + 1, kMaxWithinFrame);
                ++reader.datagrams;
            });
        }
        feed.skip_to(chunk_start(c + 1), s.newest, s.peer_sip_end[me]);
        feed.publish();
        reader.datagrams += s.datagrams;
        const bool last = s.last;
        const pcap::FileError error = s.error;
        if (error != pcap::FileError::none && message != nullptr) *message = s.error_message;
        const std::uint64_t end_offset = s.end_offset;
        // The last shard done with the chunk hands its slot on; it is not to be touched after.
        if (s.consumed.fetch_add(1, std::memory_order_acq_rel) + 1 == shards_) {
            s.consumed.store(0, std::memory_order_relaxed);
            s.free_for.store(c + ring, std::memory_order_release);
            feed.wake_peers();
        }
        if (progress != nullptr && (last || (c + 1) % 8 == 0)) (*progress)(end_offset, size);
        if (last) {
            feed.set_side_work(nullptr);
            reader.next_chunk = c + 1;
            reader.in_order->end_file(error);
            return error;
        }
    }
}

}  // namespace hepd::app
