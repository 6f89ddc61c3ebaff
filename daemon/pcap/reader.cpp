#include "pcap/reader.hpp"

#include <zlib.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <utility>

namespace hepd::pcap {

namespace {

constexpr std::size_t kGlobalHeaderSize = 24;
// Real snap lengths stop at 262144; anything larger is a corrupt record, not a jumbo frame.
constexpr std::uint32_t kMaxRecordBytes = 262144;

constexpr std::size_t kPrefetchDistance = 4096;
constexpr std::size_t kCacheLine = 64;
constexpr std::size_t kPopulateChunk = std::size_t{1} << 20;
constexpr std::size_t kPopulateAhead = 4 * kPopulateChunk;
constexpr std::size_t kReleaseUnit = std::size_t{2} << 20;  // a huge page of the mapping
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22  // Linux 5.14; older glibc headers lack it
#endif

constexpr std::uint32_t kMagicMicros = 0xa1b2c3d4;
constexpr std::uint32_t kMagicNanos = 0xa1b23c4d;
constexpr std::uint32_t kMagicModified = 0xa1b2cd34;  // Kuznetzov: 8 more bytes per record

constexpr std::uint32_t kBlockSection = 0x0a0d0d0a;
constexpr std::uint32_t kBlockInterface = 0x00000001;
constexpr std::uint32_t kBlockObsoletePacket = 0x00000002;
constexpr std::uint32_t kBlockSimplePacket = 0x00000003;
constexpr std::uint32_t kBlockEnhancedPacket = 0x00000006;
constexpr std::uint32_t kByteOrderMagic = 0x1a2b3c4d;

constexpr std::uint16_t kOptEnd = 0;
constexpr std::uint16_t kOptTsResol = 9;
constexpr std::uint16_t kOptTsOffset = 14;

std::size_t pad4(std::size_t n) noexcept { return (n + 3) & ~std::size_t{3}; }

bool is_gzip(ByteSpan b) noexcept { return b.size() >= 2 && b[0] == 0x1f && b[1] == 0x8b; }

std::uint64_t pow10(unsigned e) noexcept {
    std::uint64_t v = 1;
    while (e-- > 0) v *= 10;
    return v;
}

}  // namespace

// Either a read-only mapping, an owned buffer, or bytes the caller keeps alive.
struct FileReader::Storage {
    const std::uint8_t* data = nullptr;
    std::size_t size = 0;
    void* map = nullptr;
    std::size_t map_size = 0;
    std::vector<std::uint8_t> owned;
    // A mapping's page tables are filled ahead of the readers, a chunk at a time, by whichever
    // reader sharing it gets there first: this is how far they are claimed (SIZE_MAX: nothing
    // to fill, the bytes are in memory already).
    mutable std::atomic<std::size_t> populated{SIZE_MAX};
    // A mapping's pages below this offset were handed back (release_before()).
    mutable std::atomic<std::size_t> released{0};

    Storage() = default;
    Storage(const Storage&) = delete;
    Storage& operator=(const Storage&) = delete;
    ~Storage() {
        if (map != nullptr) munmap(map, map_size);
    }
};

namespace {

struct Inflated {
    std::vector<std::uint8_t> bytes;
    FileError error = FileError::none;  // gzip_corrupt / gzip_truncated: bytes hold what came before
    std::uint64_t error_offset = 0;     // into the compressed input
};

// Inflates every gzip member of `in`. Stops with inflated_too_large (fatal) past `max_out` bytes.
Inflated gunzip(ByteSpan in, std::size_t max_out) {
    Inflated r;
    // ISIZE (the last member's size mod 2^32) is only a hint for the first allocation.
    // A damaged file's last bytes are not ISIZE at all, hence the plausibility window.
    std::size_t hint = in.size() * 4;
    if (in.size() >= 18) {
        const std::size_t isize = load_le32(in.data() + in.size() - 4);
        if (isize >= in.size() / 2 && isize / 16 <= in.size()) hint = isize;
    }
    r.bytes.resize(std::min<std::size_t>(std::max<std::size_t>(hint, 4096), max_out == 0 ? 1 : max_out));

    z_stream z{};
    if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) {
        r.bytes.clear();
        r.error = FileError::gzip_corrupt;
        return r;
    }
    std::size_t in_pos = 0;
    std::size_t out_pos = 0;
    while (true) {
        if (out_pos == r.bytes.size()) {
            if (r.bytes.size() >= max_out) {
                r.error = FileError::inflated_too_large;
                r.error_offset = in_pos;
                break;
            }
            r.bytes.resize(std::min(max_out, std::max<std::size_t>(r.bytes.size() * 2, 4096)));
        }
        const std::size_t in_chunk = std::min<std::size_t>(in.size() - in_pos, std::numeric_limits<uInt>::max());
        const std::size_t out_chunk = std::min<std::size_t>(r.bytes.size() - out_pos, std::numeric_limits<uInt>::max());
        // zlib's interface is not const-correct; it never writes through next_in.
        z.next_in = const_cast<Bytef*>(in.data() + in_pos);
        z.avail_in = static_cast<uInt>(in_chunk);
        z.next_out = r.bytes.data() + out_pos;
        z.avail_out = static_cast<uInt>(out_chunk);
        const int rc = inflate(&z, Z_NO_FLUSH);
        in_pos += in_chunk - z.avail_in;
        out_pos += out_chunk - z.avail_out;
        if (rc == Z_STREAM_END) {
            // Concatenated members (gzip a >> f; gzip b >> f) make one stream; anything else after
            // a member is damage, except the zero padding some tape-era tools add.
            const ByteSpan rest = in.subspan(in_pos);
            if (rest.empty() || std::all_of(rest.begin(), rest.end(), [](std::uint8_t b) { return b == 0; })) break;
            if (!is_gzip(rest)) {
                r.error = FileError::gzip_corrupt;
                r.error_offset = in_pos;
                break;
            }
            inflateReset(&z);
            continue;
        }
        if (rc == Z_OK) continue;
        if (rc == Z_BUF_ERROR && z.avail_out == 0) continue;  // output full: grow and go on
        if (rc == Z_BUF_ERROR && in_pos == in.size()) {
            r.error = FileError::gzip_truncated;
            r.error_offset = in.size();
        } else if (rc == Z_MEM_ERROR) {
            r.error = FileError::inflated_too_large;
            r.error_offset = in_pos;
        } else {
            r.error = FileError::gzip_corrupt;
            r.error_offset = in_pos;
        }
        break;
    }
    inflateEnd(&z);
    r.bytes.resize(out_pos);
    return r;
}

}  // namespace

std::string_view to_string(FileError e) noexcept {
    switch (e) {
    case FileError::none: return "none";
    case FileError::open_failed: return "open_failed";
    case FileError::not_a_capture: return "not_a_capture";
    case FileError::truncated_header: return "truncated_header";
    case FileError::truncated_record: return "truncated_record";
    case FileError::bad_record: return "bad_record";
    case FileError::bad_block_length: return "bad_block_length";
    case FileError::bad_section_header: return "bad_section_header";
    case FileError::unknown_interface: return "unknown_interface";
    case FileError::too_many_interfaces: return "too_many_interfaces";
    case FileError::bad_interface_option: return "bad_interface_option";
    case FileError::gzip_corrupt: return "gzip_corrupt";
    case FileError::gzip_truncated: return "gzip_truncated";
    case FileError::inflated_too_large: return "inflated_too_large";
    }
    return "unknown";
}

Result<FileReader, FileError> FileReader::open(const std::string& path, std::size_t max_inflated_bytes) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return fail(FileError::open_failed);
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        return fail(FileError::open_failed);
    }
    const auto size = static_cast<std::size_t>(st.st_size);
    if (size < 4) {
        ::close(fd);
        return fail(FileError::not_a_capture);
    }
    void* map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (map == MAP_FAILED) return fail(FileError::open_failed);
    madvise(map, size, MADV_SEQUENTIAL);
    // A capture read cold is then read ahead into 2 MiB page-cache folios, mapped one page-table
    // entry each: every later run over the same cached file touches 512 times fewer pages (a
    // page's first touch is the walk's main stall, dearer still under a hypervisor).
    madvise(map, size, MADV_HUGEPAGE);
    auto storage = std::make_shared<Storage>();
    storage->map = map;
    storage->map_size = size;
    storage->populated = 0;
    storage->data = static_cast<const std::uint8_t*>(map);
    storage->size = size;
    return start(std::move(storage), max_inflated_bytes);
}

Result<FileReader, FileError> FileReader::from_memory(ByteSpan bytes, std::size_t max_inflated_bytes) {
    auto storage = std::make_shared<Storage>();
    storage->data = bytes.data();
    storage->size = bytes.size();
    return start(std::move(storage), max_inflated_bytes);
}

Result<FileReader, FileError> FileReader::from_buffer(std::vector<std::uint8_t> bytes, std::size_t max_inflated_bytes) {
    auto storage = std::make_shared<Storage>();
    storage->owned = std::move(bytes);
    storage->data = storage->owned.data();
    storage->size = storage->owned.size();
    return start(std::move(storage), max_inflated_bytes);
}

Result<FileReader, FileError> FileReader::start(std::shared_ptr<const Storage> storage, std::size_t max_inflated) {
    FileReader r;
    const ByteSpan raw(storage->data, storage->size);
    if (is_gzip(raw)) {
        Inflated inflated = gunzip(raw, max_inflated);
        if (inflated.error == FileError::inflated_too_large) return fail(FileError::inflated_too_large);
        if (inflated.bytes.empty() && inflated.error != FileError::none) return fail(inflated.error);
        auto owned = std::make_shared<Storage>();
        owned->owned = std::move(inflated.bytes);
        owned->data = owned->owned.data();
        owned->size = owned->owned.size();
        storage = std::move(owned);
        r.compressed_ = true;
        r.pending_error_ = inflated.error;
        r.pending_offset_ = inflated.error_offset;
    }
    r.storage_ = std::move(storage);
    r.base_ = r.storage_->data;
    r.size_ = r.storage_->size;
    if (const FileError e = r.read_header(); e != FileError::none) {
        // A gzip stream broken inside the file header says more than "truncated header".
        if (r.pending_error_ != FileError::none) return fail(r.pending_error_);
        return fail(e);
    }
    return r;
}

FileError FileReader::read_header() noexcept {
    if (size_ < 4) return FileError::not_a_capture;
    const std::uint32_t le = load_le32(base_);
    const std::uint32_t be = load_be32(base_);
    if (le == kBlockSection) {
        format_ = Format::pcapng;
        if (const FileError e = section_header(0); e != FileError::none) return e;
        first_offset_ = 0;
        offset_ = 0;
        // Consume the first section header and the interface descriptions that follow it, so that
        // link_type() means something before the first frame.
        while (offset_ < size_ && size_ - offset_ >= 12) {
            const std::uint32_t type = u32(base_ + offset_);
            if (offset_ != 0 && type != kBlockInterface) break;
            const std::uint32_t length = u32(base_ + offset_ + 4);
            if (length < 12 || length % 4 != 0) return FileError::bad_block_length;
            if (length > size_ - offset_) return offset_ == 0 ? FileError::truncated_header : FileError::none;
            if (u32(base_ + offset_ + length - 4) != length) return FileError::bad_block_length;
            if (type == kBlockInterface) {
                if (const FileError e = interface_block(base_ + offset_, length); e != FileError::none) return e;
            }
            offset_ += length;
        }
        return FileError::none;
    }
    std::uint32_t magic = 0;
    if (le == kMagicMicros || le == kMagicNanos || le == kMagicModified) {
        big_ = false;
        magic = le;
    } else if (be == kMagicMicros || be == kMagicNanos || be == kMagicModified) {
        big_ = true;
        magic = be;
    } else {
        return FileError::not_a_capture;
    }
    if (size_ < kGlobalHeaderSize) return FileError::truncated_header;
    format_ = Format::pcap;
    nanos_ = magic == kMagicNanos;
    record_header_ = magic == kMagicModified ? 24 : 16;
    // The upper bits of the link-type field carry FCS information (pcap-linktype(7)).
    link_type_ = static_cast<LinkType>(u32(base_ + 20) & 0x0fffffffU);
    first_offset_ = kGlobalHeaderSize;
    offset_ = kGlobalHeaderSize;
    return FileError::none;
}

void FileReader::rewind() noexcept {
    error_ = FileError::none;
    error_offset_ = 0;
    frames_ = 0;
    last_time_ = Timestamp{};
    if (format_ == Format::pcap) {
        offset_ = first_offset_;
        return;
    }
    interfaces_.clear();
    big_ = false;
    // The header was valid when the reader was made; it still is.
    (void)read_header();
}

LinkType FileReader::link_type() const noexcept {
    if (format_ == Format::pcap) return link_type_;
    return interfaces_.empty() ? LinkType::ethernet : interfaces_.front().link_type;
}

std::string FileReader::error_message() const {
    if (error_ == FileError::none) return {};
    std::string s(to_string(error_));
    s += (error_ == FileError::gzip_corrupt || error_ == FileError::gzip_truncated) ? " at compressed byte "
                                                                                    : " at byte ";
    s += std::to_string(error_offset_);
    s += " after ";
    s += std::to_string(frames_);
    s += frames_ == 1 ? " frame" : " frames";
    return s;
}

bool FileReader::fail_at(FileError e, std::uint64_t offset) noexcept {
    // When the inflated bytes end badly, the broken gzip stream is the cause worth naming.
    if (pending_error_ != FileError::none && (e == FileError::truncated_record || e == FileError::truncated_header)) {
        e = pending_error_;
        offset = pending_offset_;
    }
    error_ = e;
    error_offset_ = offset;
    return false;
}

bool FileReader::end_of_data() noexcept {
    if (pending_error_ != FileError::none) return fail_at(pending_error_, pending_offset_);
    return false;
}

// The bytes stay in the page cache, and a mapping that is read again there faults them back in:
// handing them back is never wrong, only slower if someone still reads them.
void FileReader::release_before(std::uint64_t offset) const noexcept {
    if (storage_ == nullptr || storage_->map == nullptr) return;  // inflated or caller's memory: not a mapping
    const std::size_t end = std::min<std::size_t>(offset, storage_->map_size) & ~(kReleaseUnit - 1);
    std::size_t from = storage_->released.load(std::memory_order_relaxed);
    while (from < end) {
        if (!storage_->released.compare_exchange_weak(from, end, std::memory_order_relaxed)) continue;
        // NOLINTNEXTLINE(cppcoreguidelines-pro-type-const-cast): madvise takes a mutable pointer
        void* at = const_cast<std::uint8_t*>(static_cast<const std::uint8_t*>(storage_->map) + from);
        (void)madvise(at, end - from, MADV_DONTNEED);
        return;
    }
}

// Filling the page tables a chunk at a time (MADV_POPULATE_READ) is far cheaper than one fault
// per 64 KiB of a cached capture, and unlike MAP_POPULATE it neither stalls the start on the
// whole file nor leaves one reader to fill them all. Without the call (before Linux 5.14) the
// pages simply fault in as they are read.
void FileReader::populate_ahead() noexcept {
    std::size_t claimed = storage_->populated.load(std::memory_order_relaxed);
    while (claimed < size_ && claimed < offset_ + kPopulateAhead) {
        if (!storage_->populated.compare_exchange_weak(claimed, claimed + kPopulateChunk, std::memory_order_relaxed))
            continue;
        // NOLINTNEXTLINE(cppcoreguidelines-pro-type-const-cast): madvise takes a mutable pointer, reads only
        void* at = const_cast<std::uint8_t*>(base_ + claimed);
        (void)madvise(at, std::min(kPopulateChunk, size_ - claimed), MADV_POPULATE_READ);
        claimed += kPopulateChunk;
    }
    populate_seen_ = claimed >= size_ ? SIZE_MAX : claimed;
}

bool FileReader::next(Frame& out) noexcept {
    if (error_ != FileError::none) return false;
    if (offset_ + kPopulateAhead > populate_seen_) populate_ahead();
    return format_ == Format::pcap ? next_pcap(out) : next_pcapng(out);
}

std::size_t FileReader::skip(std::size_t frames) noexcept {
    std::size_t n = 0;
    Frame frame;
    while (n < frames && next(frame)) ++n;
    return n;
}

std::size_t FileReader::frames_ahead(std::size_t frames, std::uint64_t& end) noexcept {
    std::size_t at = offset_;
    std::size_t n = 0;
    if (format_ == Format::pcap && error_ == FileError::none) {
        prefetched_ = std::max(prefetched_, offset_);
        for (; n < frames && at < size_ && size_ - at >= record_header_; ++n) {
            // The walk is a chain of loads, and what it walks is decoded next: kept in the
            // caches (not non-temporal as in next_pcap), or it is fetched twice.
            const std::size_t ahead = std::min(size_, at + kPrefetchDistance);
            for (; prefetched_ < ahead; prefetched_ += kCacheLine) __builtin_prefetch(base_ + prefetched_, 0, 3);
            const std::uint32_t caplen = u32(base_ + at + 8);
            if (caplen > kMaxRecordBytes || size_ - at - record_header_ < caplen) break;
            at += record_header_ + caplen;
        }
    }
    end = at;
    return n;
}

void FileReader::resume_at(std::uint64_t offset, std::uint64_t frames) noexcept {
    offset_ = offset;
    frames_ = frames;
    prefetched_ = offset;
}

bool FileReader::next_pcap(Frame& out) noexcept {
    if (offset_ >= size_) return end_of_data();
    if (size_ - offset_ < record_header_) return fail_at(FileError::truncated_record, offset_);
    const std::uint8_t* h = base_ + offset_;
    // The walk is a chain of dependent loads (each length gives the next header), and the
    // hardware prefetcher stops at every page of the mapping: every line ahead is asked for once,
    // so neither the walk nor the decoders behind it wait on memory. Asked for as non-temporal
    // (read once): the capture streaming through does not push the shard's tables out of the
    // caches (two shards about 5 % faster, one unchanged).
    const std::size_t ahead = std::min(size_, offset_ + kPrefetchDistance);
    for (; prefetched_ < ahead; prefetched_ += kCacheLine) __builtin_prefetch(base_ + prefetched_, 0, 0);
    const std::uint32_t secs = u32(h);
    const std::uint32_t frac = u32(h + 4);
    const std::uint32_t caplen = u32(h + 8);
    const std::uint32_t origlen = u32(h + 12);
    if (caplen > kMaxRecordBytes) return fail_at(FileError::bad_record, offset_);
    if (size_ - offset_ - record_header_ < caplen) return fail_at(FileError::truncated_record, offset_);
    out.time = Timestamp{std::int64_t{secs} * 1'000'000 + (nanos_ ? frac / 1000 : frac)};
    out.link_type = link_type_;
    out.data = ByteSpan(h + record_header_, caplen);
    out.orig_length = origlen;
    out.interface_id = 0;
    offset_ += record_header_ + caplen;
    ++frames_;
    return true;
}

FileError FileReader::section_header(std::size_t at) noexcept {
    if (size_ - at < 12) return at == 0 ? FileError::truncated_header : FileError::truncated_record;
    const std::uint8_t* p = base_ + at;
    if (load_le32(p + 8) == kByteOrderMagic) {
        big_ = false;
    } else if (load_be32(p + 8) == kByteOrderMagic) {
        big_ = true;
    } else {
        return FileError::bad_section_header;
    }
    const std::uint32_t length = u32(p + 4);
    if (length < 28 || length % 4 != 0) return FileError::bad_block_length;
    if (length > size_ - at) return at == 0 ? FileError::truncated_header : FileError::truncated_record;
    if (u32(p + length - 4) != length) return FileError::bad_block_length;
    if (u16(p + 12) != 1) return FileError::bad_section_header;  // major version
    interfaces_.clear();
    return FileError::none;
}

FileError FileReader::interface_block(const std::uint8_t* block, std::size_t length) noexcept {
    if (length < 20) return FileError::bad_block_length;
    if (interfaces_.size() >= kMaxInterfaces) return FileError::too_many_interfaces;
    Interface itf;
    itf.link_type = static_cast<LinkType>(u16(block + 8));
    itf.snap_length = u32(block + 12);
    std::size_t off = 16;
    const std::size_t end = length - 4;
    while (end - off >= 4) {
        const std::uint16_t code = u16(block + off);
        const std::size_t len = u16(block + off + 2);
        if (code == kOptEnd) break;
        if (pad4(len) > end - off - 4) return FileError::bad_interface_option;
        const std::uint8_t* value = block + off + 4;
        if (code == kOptTsResol && len >= 1) {
            const std::uint8_t r = value[0];
            if ((r & 0x80U) != 0) {
                if ((r & 0x7fU) > 63) return FileError::bad_interface_option;
            } else {
                if (r > 19) return FileError::bad_interface_option;  // 10^-20 s does not fit 64 bits
                itf.scale = pow10(r > 6 ? r - 6U : 6U - r);
            }
            itf.resolution = r;
        } else if (code == kOptTsOffset && len >= 8) {
            const std::uint64_t v =
                big_ ? load_be64(value) : (std::uint64_t{load_le32(value + 4)} << 32) | load_le32(value);
            itf.offset_s = static_cast<std::int64_t>(v);
        }
        off += 4 + pad4(len);
    }
    interfaces_.push_back(itf);
    return FileError::none;
}

Timestamp FileReader::pcapng_time(const Interface& itf, std::uint32_t high, std::uint32_t low) const noexcept {
    const std::uint64_t ts = (std::uint64_t{high} << 32) | low;
    std::uint64_t us = 0;
    const std::uint8_t r = itf.resolution;
    if ((r & 0x80U) != 0) {
        unsigned shift = r & 0x7fU;
        const std::uint64_t secs = ts >> shift;
        std::uint64_t frac = ts & ((std::uint64_t{1} << shift) - 1);
        // Keep frac * 10^6 inside 64 bits: 40 bits of fraction are far below a microsecond.
        if (shift > 40) {
            frac >>= shift - 40;
            shift = 40;
        }
        us = secs * 1'000'000 + ((frac * 1'000'000) >> shift);
    } else if (r >= 6) {
        us = ts / itf.scale;
    } else {
        us = ts * itf.scale;  // wraps on absurd values; unsigned, so never undefined
    }
    // Unsigned arithmetic again: a hostile if_tsoffset must not be signed overflow.
    return Timestamp{static_cast<std::int64_t>(us + static_cast<std::uint64_t>(itf.offset_s) * 1'000'000U)};
}

bool FileReader::next_pcapng(Frame& out) noexcept {
    while (true) {
        if (offset_ >= size_) return end_of_data();
        if (size_ - offset_ < 12) return fail_at(FileError::truncated_record, offset_);
        const std::uint8_t* p = base_ + offset_;
        const std::uint32_t type = load_le32(p);  // SHB is a palindrome: its type reads the same either way
        if (type == kBlockSection) {
            if (const FileError e = section_header(offset_); e != FileError::none) return fail_at(e, offset_);
            offset_ += u32(p + 4);
            continue;
        }
        const std::uint32_t block_type = u32(p);
        const std::uint32_t length = u32(p + 4);
        if (length < 12 || length % 4 != 0) return fail_at(FileError::bad_block_length, offset_);
        if (length > size_ - offset_) return fail_at(FileError::truncated_record, offset_);
        if (u32(p + length - 4) != length) return fail_at(FileError::bad_block_length, offset_);

        switch (block_type) {
        case kBlockInterface:
            if (const FileError e = interface_block(p, length); e != FileError::none) return fail_at(e, offset_);
            break;
        case kBlockEnhancedPacket:
        case kBlockObsoletePacket: {
            if (length < 32) return fail_at(FileError::bad_block_length, offset_);
            const std::uint32_t itf_id = block_type == kBlockEnhancedPacket ? u32(p + 8) : u16(p + 8);
            if (itf_id >= interfaces_.size()) return fail_at(FileError::unknown_interface, offset_);
            const std::uint32_t caplen = u32(p + 20);
            if (caplen > length - 32) return fail_at(FileError::bad_record, offset_);
            const Interface& itf = interfaces_[itf_id];
            out.time = pcapng_time(itf, u32(p + 12), u32(p + 16));
            out.link_type = itf.link_type;
            out.data = ByteSpan(p + 28, caplen);
            out.orig_length = u32(p + 24);
            out.interface_id = itf_id;
            last_time_ = out.time;
            offset_ += length;
            ++frames_;
            return true;
        }
        case kBlockSimplePacket: {
            if (length < 16) return fail_at(FileError::bad_block_length, offset_);
            if (interfaces_.empty()) return fail_at(FileError::unknown_interface, offset_);
            const Interface& itf = interfaces_.front();
            const std::uint32_t orig = u32(p + 8);
            // The block is padded: the captured length is the original length cut at the snap
            // length of interface 0 (0 means unlimited).
            std::size_t caplen = std::min<std::size_t>(orig, length - 16);
            if (itf.snap_length != 0) caplen = std::min<std::size_t>(caplen, itf.snap_length);
            out.time = last_time_;
            out.link_type = itf.link_type;
            out.data = ByteSpan(p + 12, caplen);
            out.orig_length = orig;
            out.interface_id = 0;
            offset_ += length;
            ++frames_;
            return true;
        }
        default: break;  // name resolution, statistics, decryption secrets, custom: not ours
        }
        offset_ += length;
    }
}

}  // namespace hepd::pcap
