// Encoding and checked decoding of snapshot files (layout in snapshot.hpp).
#include "core/version.hpp"
#include "snapshot/file_format.hpp"
#include "snapshot/mapping.hpp"
#include "snapshot/payload.hpp"
#include "snapshot/snapshot.hpp"

#include <algorithm>
#include <climits>
#include <cstring>
#include <new>
#include <string>

namespace hepd::snapshot {

std::string_view to_string(SnapshotError error) noexcept {
    switch (error) {
    case SnapshotError::not_found: return "not_found";
    case SnapshotError::unreadable: return "unreadable";
    case SnapshotError::bad_magic: return "bad_magic";
    case SnapshotError::unsupported_version: return "unsupported_version";
    case SnapshotError::truncated: return "truncated";
    case SnapshotError::trailing_data: return "trailing_data";
    case SnapshotError::checksum_mismatch: return "checksum_mismatch";
    case SnapshotError::parse_error: return "parse_error";
    case SnapshotError::invalid_record: return "invalid_record";
    }
    return "unknown";
}

std::string_view describe(SnapshotError error) noexcept {
    switch (error) {
    case SnapshotError::not_found: return "no snapshot file";
    case SnapshotError::unreadable: return "the snapshot file cannot be read";
    case SnapshotError::bad_magic: return "not a hepd snapshot file";
    case SnapshotError::unsupported_version: return "a snapshot format this build of hepd does not read";
    case SnapshotError::truncated: return "the snapshot file is cut short (interrupted write or copy)";
    case SnapshotError::trailing_data: return "the snapshot file is longer than its header says";
    case SnapshotError::checksum_mismatch: return "the snapshot file is corrupted (checksum mismatch)";
    case SnapshotError::parse_error: return "the snapshot payload is malformed";
    case SnapshotError::invalid_record: return "the snapshot holds a record this build cannot represent";
    }
    return "unknown snapshot error";
}

// ---- encoding ------------------------------------------------------------------------------

namespace {

void append_varint(std::string& out, std::uint64_t v) {
    while (v >= 0x80) {
        out.push_back(static_cast<char>(static_cast<std::uint8_t>(v) | 0x80));
        v >>= 7;
    }
    out.push_back(static_cast<char>(v));
}

// Appends `message` with its varint length prefix.
template <class Message>
void append_delimited(std::string& out, const Message& message) {
    const std::size_t size = message.ByteSizeLong();
    append_varint(out, size);
    const std::size_t at = out.size();
    out.resize(at + size);
    message.SerializeWithCachedSizesToArray(reinterpret_cast<std::uint8_t*>(out.data() + at));
}

class ChunkEncoder {
public:
    ChunkEncoder(PayloadSink& sink, std::size_t flush_bytes) : sink_(sink), flush_bytes_(flush_bytes) {}

    template <class Records, class Add>
    bool put(const Records& records, Add&& add) {
        for (std::size_t i = 0; i < records.size(); i += kChunkRecords) {
            chunk_.Clear();
            const std::size_t end = std::min(records.size(), i + kChunkRecords);
            for (std::size_t k = i; k < end; ++k) add(records[k], chunk_);
            append_delimited(buffer_, chunk_);
            if (buffer_.size() >= flush_bytes_ && !flush()) return false;
        }
        return true;
    }
    bool header(const Header& h) {
        append_delimited(buffer_, h);
        return true;
    }
    bool flush() {
        if (buffer_.empty()) return true;
        const bool ok = sink_.append(as_bytes(buffer_));
        buffer_.clear();
        return ok;
    }

private:
    PayloadSink& sink_;
    std::size_t flush_bytes_;
    std::string buffer_;
    RecordChunk chunk_;
};

class StringSink final : public PayloadSink {
public:
    explicit StringSink(std::string& out) : out_(out) {}
    bool append(ByteSpan bytes) override {
        out_.append(as_text(bytes));
        return true;
    }

private:
    std::string& out_;
};

}  // namespace

SnapshotHeader make_header(const std::vector<ShardImage>& images, const SnapshotMeta& meta) {
    SnapshotHeader h;
    h.format_version = kFormatVersion;
    h.hepd_version = meta.hepd_version.empty() ? std::string(kVersion) : meta.hepd_version;
    h.written_at = meta.written_at;
    h.captured_at = meta.captured_at;
    h.shard_count = meta.shard_count != 0 ? meta.shard_count : static_cast<std::uint32_t>(images.size());
    for (const ShardImage& image : images) h.counts += image.counts();
    return h;
}

bool encode_payload(const std::vector<ShardImage>& images, const SnapshotHeader& header, PayloadSink& sink,
                    std::size_t flush_bytes) {
    ChunkEncoder enc(sink, flush_bytes);
    Header h;
    to_proto(header, h);
    enc.header(h);
    for (const ShardImage& image : images) {
        const bool ok =
            enc.put(image.dialogs, [](const DialogRecord& r, RecordChunk& c) { to_proto(r, *c.add_dialogs()); }) &&
            enc.put(image.transactions,
                    [](const TransactionRecord& r, RecordChunk& c) { to_proto(r, *c.add_transactions()); }) &&
            enc.put(image.streams, [](const StreamRecord& r, RecordChunk& c) { to_proto(r, *c.add_streams()); }) &&
            enc.put(image.bindings, [](const BindingRecord& r, RecordChunk& c) { to_proto(r, *c.add_bindings()); }) &&
            enc.put(image.reported_streams,
                    [](const ReportedRecord& r, RecordChunk& c) { to_proto(r, *c.add_reported_streams()); });
        if (!ok) return false;
    }
    return enc.flush();
}

std::string encode_snapshot(const std::vector<ShardImage>& images, const SnapshotMeta& meta) {
    std::string payload;
    StringSink sink(payload);
    encode_payload(images, make_header(images, meta), sink, 1 << 20);
    return frame_payload(payload, kFormatVersion);
}

// ---- decoding ------------------------------------------------------------------------------

namespace {

using Failure = Unexpected<SnapshotError>;

Failure refuse(SnapshotError error, std::string* detail, std::string text) {
    if (detail != nullptr) *detail = std::move(text);
    return fail(error);
}

// Reads one varint-length-prefixed message from payload[pos...]; false on a malformed prefix
// or a length running past the end.
bool next_message(ByteSpan payload, std::size_t& pos, ByteSpan& message) {
    std::uint64_t length = 0;
    for (int shift = 0;; shift += 7) {
        if (pos >= payload.size() || shift > 63) return false;
        const std::uint8_t b = payload[pos++];
        length |= std::uint64_t{b & 0x7fU} << shift;
        if ((b & 0x80) == 0) break;
    }
    if (length > payload.size() - pos || length > static_cast<std::uint64_t>(INT_MAX)) return false;
    message = payload.subspan(pos, static_cast<std::size_t>(length));
    pos += static_cast<std::size_t>(length);
    return true;
}

template <class Message>
bool parse(Message& m, ByteSpan bytes) {
    return m.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
}

// Converts every record of one kind; false (with `why` naming kind, index and field) at the
// first one the build cannot represent.
template <class Repeated, class Record>
bool convert(const Repeated& in, ImageRecords<Record>& out, const char* kind, std::string& why) {
    for (const auto& message : in) {
        Record r;
        std::string field;
        if (!from_proto(message, r, field)) {
            why = std::string(kind) + " #" + std::to_string(out.size()) + ": " + field;
            return false;
        }
        out.push_back(std::move(r));
    }
    return true;
}

std::string hex32(std::uint32_t v) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%08x", v);
    return buf;
}

}  // namespace

Result<SnapshotFile, SnapshotError> decode_snapshot(ByteSpan file, std::string* detail) {
    // The magic and the version first: they hold their place in every version of the format.
    const std::size_t magic_seen = std::min(file.size(), kMagic.size());
    if (std::memcmp(file.data() == nullptr ? "" : reinterpret_cast<const char*>(file.data()), kMagic.data(),
                    magic_seen) != 0)
        return refuse(SnapshotError::bad_magic, detail, "the file does not start with \"HEPDSNAP\"");
    if (file.size() < kVersionOffset + 4)
        return refuse(SnapshotError::truncated, detail,
                      std::to_string(file.size()) + " octets: shorter than the frame header (32)");
    const std::uint32_t version = load_be32(file.data() + kVersionOffset);
    if (version != kFormatVersion)
        return refuse(SnapshotError::unsupported_version, detail,
                      "format version " + std::to_string(version) + ", this build reads version " +
                          std::to_string(kFormatVersion));
    if (file.size() < kFrameHeaderSize)
        return refuse(SnapshotError::truncated, detail,
                      std::to_string(file.size()) + " octets: shorter than the frame header (32)");
    const std::uint32_t header_crc = crc32_update(0, file.first(kHeaderCrcOffset));
    if (header_crc != load_be32(file.data() + kHeaderCrcOffset))
        return refuse(SnapshotError::checksum_mismatch, detail,
                      "frame header CRC-32 " + hex32(header_crc) + ", stored " +
                          hex32(load_be32(file.data() + kHeaderCrcOffset)));
    const std::uint32_t flags = load_be32(file.data() + kFlagsOffset);
    if (flags != 0)
        return refuse(SnapshotError::unsupported_version, detail,
                      "flags " + hex32(flags) + ": none are defined in version 1");
    const std::uint64_t length = load_be64(file.data() + kLengthOffset);
    const std::size_t available = file.size() - kFrameHeaderSize;
    if (length > available)
        return refuse(SnapshotError::truncated, detail,
                      "payload of " + std::to_string(length) + " octets, " + std::to_string(available) + " present");
    if (length < available)
        return refuse(
            SnapshotError::trailing_data, detail,
            std::to_string(available - length) + " octets after the " + std::to_string(length) + "-octet payload");
    const ByteSpan payload = file.subspan(kFrameHeaderSize);
    const std::uint32_t payload_crc = crc32_update(0, payload);
    if (payload_crc != load_be32(file.data() + kPayloadCrcOffset))
        return refuse(
            SnapshotError::checksum_mismatch, detail,
            "payload CRC-32 " + hex32(payload_crc) + ", stored " + hex32(load_be32(file.data() + kPayloadCrcOffset)));

    try {
        SnapshotFile out;
        std::size_t pos = 0;
        ByteSpan message;
        Header header;
        if (!next_message(payload, pos, message) || !parse(header, message))
            return refuse(SnapshotError::parse_error, detail, "the payload does not start with a valid Header");
        std::string why;
        from_proto(header, out.header, why);
        if (out.header.format_version != version)
            return refuse(SnapshotError::parse_error, detail,
                          "Header.format_version " + std::to_string(out.header.format_version) +
                              " disagrees with the frame's " + std::to_string(version));
        RecordChunk chunk;
        ShardImage& r = out.records;
        while (pos < payload.size()) {
            const std::size_t at = pos;
            if (!next_message(payload, pos, message) || !parse(chunk, message))
                return refuse(SnapshotError::parse_error, detail,
                              "malformed record chunk at payload offset " + std::to_string(at));
            const bool ok = convert(chunk.dialogs(), r.dialogs, "dialog", why) &&
                            convert(chunk.transactions(), r.transactions, "transaction", why) &&
                            convert(chunk.streams(), r.streams, "stream", why) &&
                            convert(chunk.bindings(), r.bindings, "binding", why) &&
                            convert(chunk.reported_streams(), r.reported_streams, "reported stream", why);
            if (!ok) return refuse(SnapshotError::invalid_record, detail, why);
        }
        if (r.counts() != out.header.counts)
            return refuse(SnapshotError::parse_error, detail,
                          "the header announces " + std::to_string(out.header.counts.total()) + " records, " +
                              std::to_string(r.counts().total()) + " present");
        return out;
    } catch (const std::bad_alloc&) {
        return refuse(SnapshotError::unreadable, detail, "out of memory while decoding");
    }
}

}  // namespace hepd::snapshot
