#pragma once
// Capture-file reading: a memory-mapped classic pcap reader yielding link-layer frames, and a
// pure L2-L4 decoder that turns a frame into addresses, ports and a payload view.
#include "core/address.hpp"
#include "core/bytes.hpp"
#include "core/result.hpp"
#include "core/time.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace hepd::pcap {

// LINKTYPE_* values from the tcpdump registry.
enum class LinkType : std::uint32_t {
    null_loopback = 0,  // BSD loopback: 4-byte host-order family
    ethernet = 1,
    raw = 101,
    linux_sll = 113,
    linux_sll2 = 276,
    ipv4 = 228,
    ipv6 = 229,
};

struct Frame {
    Timestamp time;
    LinkType link_type = LinkType::ethernet;
    ByteSpan data;               // captured bytes (may be shorter than orig_length)
    std::uint32_t orig_length = 0;
};

enum class FileError : std::uint8_t {
    none,
    open_failed,
    not_a_capture,     // unknown magic
    truncated_header,  // file shorter than its global header
    truncated_record,  // a record header or body runs past the end of the file
    bad_record,        // caplen larger than the snap length / 256 KiB
};
std::string_view to_string(FileError e) noexcept;

// Reads a classic pcap file (either byte order, microsecond or nanosecond timestamps) through a
// read-only memory mapping. Frames returned by next() point into the mapping and stay valid for
// the reader's lifetime.
class FileReader {
public:
    FileReader() = default;
    FileReader(const FileReader&) = delete;
    FileReader& operator=(const FileReader&) = delete;
    FileReader(FileReader&& other) noexcept;
    FileReader& operator=(FileReader&& other) noexcept;
    ~FileReader();

    // Opens and validates the global header; the error says why it is not readable.
    static Result<FileReader, FileError> open(const std::string& path);

    // Next frame, or false at the end of the file or on an error (then error() is set).
    bool next(Frame& out) noexcept;
    FileError error() const noexcept { return error_; }
    LinkType link_type() const noexcept { return link_type_; }
    std::uint64_t offset() const noexcept { return offset_; }

private:
    const std::uint8_t* base_ = nullptr;
    std::size_t size_ = 0;
    std::size_t offset_ = 0;
    bool swapped_ = false;
    bool nanos_ = false;
    LinkType link_type_ = LinkType::ethernet;
    FileError error_ = FileError::none;
};

enum class Transport : std::uint8_t { udp, tcp, other };

struct L4Packet {
    Timestamp time;
    Endpoint src;
    Endpoint dst;
    Transport transport = Transport::other;
    std::uint8_t ip_protocol = 0;
    std::uint16_t vlan = 0;       // innermost VLAN id, 0 when untagged
    std::uint32_t tcp_seq = 0;    // TCP only
    std::uint8_t tcp_flags = 0;   // TCP only
    ByteSpan payload;             // UDP/TCP payload, bounded by the IP length and the capture
};

enum class DecodeError : std::uint8_t {
    none,
    unsupported_link,
    truncated_link,
    not_ip,             // ARP, LLDP…: skipped, not an error worth alarming on
    truncated_ip,
    bad_ip_header,
    ip_fragment,        // non-first or incomplete fragment (reassembly comes with issue 4)
    unsupported_transport,
    truncated_transport,
};
std::string_view to_string(DecodeError e) noexcept;

// Pure: decodes link layer (Ethernet with VLAN/QinQ, Linux SLL/SLL2, raw IP, BSD loopback), IPv4
// or IPv6 (skipping extension headers) and UDP/TCP. No allocation, no I/O.
Result<L4Packet, DecodeError> decode_frame(const Frame& frame) noexcept;

} // namespace hepd::pcap
