#include "pcap/reader.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <utility>

namespace hepd::pcap {

namespace {

constexpr std::size_t kGlobalHeaderSize = 24;
constexpr std::size_t kRecordHeaderSize = 16;
// Real snap lengths stop at 262144; anything larger is a corrupt record, not a jumbo frame.
constexpr std::uint32_t kMaxRecordBytes = 262144;

constexpr std::uint32_t kMagicMicros = 0xa1b2c3d4;
constexpr std::uint32_t kMagicNanos = 0xa1b23c4d;

std::uint32_t byte_swap32(std::uint32_t v) noexcept {
    return (v >> 24) | ((v >> 8) & 0xff00U) | ((v << 8) & 0xff0000U) | (v << 24);
}

} // namespace

std::string_view to_string(FileError e) noexcept {
    switch (e) {
    case FileError::none: return "none";
    case FileError::open_failed: return "open_failed";
    case FileError::not_a_capture: return "not_a_capture";
    case FileError::truncated_header: return "truncated_header";
    case FileError::truncated_record: return "truncated_record";
    case FileError::bad_record: return "bad_record";
    }
    return "unknown";
}

FileReader::FileReader(FileReader&& other) noexcept { *this = std::move(other); }

FileReader& FileReader::operator=(FileReader&& other) noexcept {
    if (this != &other) {
        if (base_ != nullptr) munmap(const_cast<std::uint8_t*>(base_), size_);
        base_ = std::exchange(other.base_, nullptr);
        size_ = std::exchange(other.size_, 0);
        offset_ = other.offset_;
        swapped_ = other.swapped_;
        nanos_ = other.nanos_;
        link_type_ = other.link_type_;
        error_ = other.error_;
    }
    return *this;
}

FileReader::~FileReader() {
    if (base_ != nullptr) munmap(const_cast<std::uint8_t*>(base_), size_);
}

Result<FileReader, FileError> FileReader::open(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return fail(FileError::open_failed);
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        return fail(FileError::open_failed);
    }
    const auto size = static_cast<std::size_t>(st.st_size);
    if (size < kGlobalHeaderSize) {
        ::close(fd);
        return fail(size < 4 ? FileError::not_a_capture : FileError::truncated_header);
    }
    void* map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (map == MAP_FAILED) return fail(FileError::open_failed);
    madvise(map, size, MADV_SEQUENTIAL);

    FileReader reader;
    reader.base_ = static_cast<const std::uint8_t*>(map);
    reader.size_ = size;
    const std::uint32_t magic = load_le32(reader.base_);
    if (magic == kMagicMicros || magic == kMagicNanos) {
        reader.swapped_ = false;
    } else if (byte_swap32(magic) == kMagicMicros || byte_swap32(magic) == kMagicNanos) {
        reader.swapped_ = true;
    } else {
        return fail(FileError::not_a_capture);
    }
    const std::uint32_t host_magic = reader.swapped_ ? byte_swap32(magic) : magic;
    reader.nanos_ = host_magic == kMagicNanos;
    const std::uint32_t link =
        reader.swapped_ ? load_be32(reader.base_ + 20) : load_le32(reader.base_ + 20);
    // The upper bits of the link-type field carry FCS information (pcap-linktype(7)).
    reader.link_type_ = static_cast<LinkType>(link & 0x0fffffffU);
    reader.offset_ = kGlobalHeaderSize;
    return reader;
}

bool FileReader::next(Frame& out) noexcept {
    if (error_ != FileError::none || offset_ >= size_) return false;
    if (size_ - offset_ < kRecordHeaderSize) {
        error_ = FileError::truncated_record;
        return false;
    }
    const std::uint8_t* h = base_ + offset_;
    auto u32 = [this](const std::uint8_t* p) { return swapped_ ? load_be32(p) : load_le32(p); };
    const std::uint32_t secs = u32(h);
    const std::uint32_t frac = u32(h + 4);
    const std::uint32_t caplen = u32(h + 8);
    const std::uint32_t origlen = u32(h + 12);
    if (caplen > kMaxRecordBytes) {
        error_ = FileError::bad_record;
        return false;
    }
    if (size_ - offset_ - kRecordHeaderSize < caplen) {
        error_ = FileError::truncated_record;
        return false;
    }
    out.time = Timestamp{std::int64_t{secs} * 1'000'000 + (nanos_ ? frac / 1000 : frac)};
    out.link_type = link_type_;
    out.data = ByteSpan(h + kRecordHeaderSize, caplen);
    out.orig_length = origlen;
    offset_ += kRecordHeaderSize + caplen;
    return true;
}

} // namespace hepd::pcap
