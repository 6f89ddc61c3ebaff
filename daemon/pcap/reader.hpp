#pragma once
// Capture-file reading: classic pcap (either byte order, µs/ns, Kuznetzov's modified records) and
// pcapng (several sections in either byte order, per-interface link type and time resolution),
// optionally gzip-compressed, read from a read-only memory mapping or a memory buffer. The record
// walk is separate from decoding (decode.hpp) so that it can be measured, cloned and split.
#include "core/bytes.hpp"
#include "core/result.hpp"
#include "pcap/decode.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace hepd::pcap {

enum class FileError : std::uint8_t {
    none,
    open_failed,           // cannot open, stat or map the file (or it is not a regular file)
    not_a_capture,         // unknown magic
    truncated_header,      // file shorter than its global header / first section header
    truncated_record,      // a record or block runs past the end of the file
    bad_record,            // pcap: caplen > 256 KiB; pcapng: captured length larger than the block
    bad_block_length,      // pcapng: length < 12, not a multiple of 4, or differing at both ends
    bad_section_header,    // pcapng: unknown byte-order magic or major version
    unknown_interface,     // pcapng: packet names an interface the section has not described
    too_many_interfaces,   // pcapng: more than kMaxInterfaces in one section
    bad_interface_option,  // pcapng: IDB options overrun the block, or an impossible if_tsresol
    gzip_corrupt,          // gzip stream with bad data (frames inflated before it are delivered)
    gzip_truncated,        // gzip stream ends early (frames inflated before it are delivered)
    inflated_too_large,    // gzip content exceeds the caller's bound
};
inline constexpr std::size_t kFileErrorCount = 14;
std::string_view to_string(FileError e) noexcept;

enum class Format : std::uint8_t { pcap, pcapng };

class FileReader {
public:
    static constexpr std::size_t kDefaultMaxInflatedBytes = std::size_t{2} << 30;
    static constexpr std::size_t kMaxInterfaces = 4096;

    FileReader() = default;
    FileReader(FileReader&&) noexcept = default;
    FileReader& operator=(FileReader&&) noexcept = default;
    ~FileReader() = default;

    // Maps the file, inflates it first when it is gzip (detected by magic, never by name: at most
    // max_inflated_bytes of memory), and validates the file header.
    static Result<FileReader, FileError> open(const std::string& path,
                                              std::size_t max_inflated_bytes = kDefaultMaxInflatedBytes);
    // The same over bytes the caller keeps alive (a gzip buffer is inflated into owned memory).
    static Result<FileReader, FileError> from_memory(ByteSpan bytes,
                                                     std::size_t max_inflated_bytes = kDefaultMaxInflatedBytes);
    // The same over bytes the reader takes ownership of.
    static Result<FileReader, FileError> from_buffer(std::vector<std::uint8_t> bytes,
                                                     std::size_t max_inflated_bytes = kDefaultMaxInflatedBytes);

    // A reader over the same mapping/buffer (shared, not copied) at the same position with the same
    // section state: several walkers can split one file between them.
    FileReader clone() const { return FileReader(*this); }
    // Back to the first frame (errors cleared; a pending gzip error comes back at the end).
    void rewind() noexcept;

    // Next frame, or false at the end of the file or on an error (then error() is set). Frames
    // point into the reader's storage and stay valid as long as any reader sharing it lives.
    bool next(Frame& out) noexcept;
    // Moves past up to `frames` frames without handing them out and returns how many: fewer at
    // the end of the file or an error, as next() would.
    std::size_t skip(std::size_t frames) noexcept;
    // pcap only (else 0): how many of the next `frames` records lie whole in the file, and in
    // `end` the offset after them, without moving. Readers that split a file hand each other
    // where their parts begin this way (resume_at), instead of each walking every record.
    std::size_t frames_ahead(std::size_t frames, std::uint64_t& end) noexcept;
    // pcap only: goes to `offset`, a record boundary found by frames_ahead() on a reader of the
    // same file, with `frames` frames before it.
    void resume_at(std::uint64_t offset, std::uint64_t frames) noexcept;
    bool resumable() const noexcept { return format_ == Format::pcap; }

    // Hands the mapping's pages before `offset` back (whole 2 MiB units), so that a capture larger
    // than memory stays resident only around its readers; no effect on an inflated capture or on
    // caller's memory. Call once every reader sharing the mapping is past `offset`; bytes behind
    // it stay readable (they fault in again from the page cache).
    void release_before(std::uint64_t offset) const noexcept;

    FileError error() const noexcept { return error_; }
    // Where the error was found: a byte offset into the capture (into the compressed file for
    // gzip_* errors).
    std::uint64_t error_offset() const noexcept { return error_offset_; }
    // "truncated_record at byte 1234 after 17 frames", or "" when there is no error.
    std::string error_message() const;

    Format format() const noexcept { return format_; }
    bool compressed() const noexcept { return compressed_; }
    // pcap: the file's link type; pcapng: that of interface 0 of the current section.
    LinkType link_type() const noexcept;
    std::uint64_t offset() const noexcept { return offset_; }
    std::uint64_t frames() const noexcept { return frames_; }
    // The (inflated) capture bytes the frames point into.
    ByteSpan bytes() const noexcept { return {base_, size_}; }

private:
    struct Storage;
    struct Interface {
        LinkType link_type = LinkType::ethernet;
        std::uint32_t snap_length = 0;
        std::uint8_t resolution = 6;  // if_tsresol as written (bit 7: power of 2)
        std::uint64_t scale = 1;      // 10^|resolution - 6| when a power of 10
        std::int64_t offset_s = 0;    // if_tsoffset
    };

    FileReader(const FileReader&) = default;
    FileReader& operator=(const FileReader&) = default;

    static Result<FileReader, FileError> start(std::shared_ptr<const Storage> storage, std::size_t max_inflated);
    FileError read_header() noexcept;
    bool next_pcap(Frame& out) noexcept;
    bool next_pcapng(Frame& out) noexcept;
    bool fail_at(FileError e, std::uint64_t offset) noexcept;
    void populate_ahead() noexcept;
    bool end_of_data() noexcept;
    FileError section_header(std::size_t at) noexcept;
    FileError interface_block(const std::uint8_t* body, std::size_t length) noexcept;
    Timestamp pcapng_time(const Interface& itf, std::uint32_t high, std::uint32_t low) const noexcept;
    std::uint32_t u32(const std::uint8_t* p) const noexcept { return big_ ? load_be32(p) : load_le32(p); }
    std::uint16_t u16(const std::uint8_t* p) const noexcept { return big_ ? load_be16(p) : load_le16(p); }

    std::shared_ptr<const Storage> storage_;
    const std::uint8_t* base_ = nullptr;
    std::size_t size_ = 0;
    std::size_t offset_ = 0;
    std::size_t first_offset_ = 0;
    std::size_t prefetched_ = 0;      // pcap: lines below this offset were prefetched
    std::size_t populate_seen_ = 0;   // the mapping's page tables are filled below this offset
    std::size_t record_header_ = 16;  // pcap: 24 for the modified format
    Format format_ = Format::pcap;
    bool compressed_ = false;
    bool big_ = false;
    bool nanos_ = false;
    LinkType link_type_ = LinkType::ethernet;  // pcap only
    std::vector<Interface> interfaces_;        // pcapng: of the current section
    Timestamp last_time_{};                    // pcapng simple packets carry no time
    std::uint64_t frames_ = 0;
    FileError error_ = FileError::none;
    std::uint64_t error_offset_ = 0;
    // A gzip stream that broke part-way: reported once the inflated bytes are used up.
    FileError pending_error_ = FileError::none;
    std::uint64_t pending_offset_ = 0;
};

}  // namespace hepd::pcap
