// The snapshot file: exact layout, round trip, every kind of damage refused with its own error
// and nothing restored, and the atomic replace.
#include "core/version.hpp"
#include "sample_records.hpp"
#include "snapshot/file_format.hpp"
#include "snapshot/mapping.hpp"
#include "snapshot/snapshot.hpp"
#include "temp_dir.hpp"

#include <catch2/catch.hpp>

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

using namespace hepd;
using namespace hepd::snapshot;
using namespace hepd::snapshot::test;

namespace {

SnapshotMeta meta_for_tests() {
    SnapshotMeta m;
    m.hepd_version = "0.1.0";
    m.written_at = Timestamp{300};
    m.shard_count = 2;
    return m;
}

std::string hex(const std::string& bytes) {
    static const char* digits = "0123456789abcdef";
    std::string out;
    for (const char c : bytes) {
        const auto b = static_cast<unsigned char>(c);
        out.push_back(digits[b >> 4]);
        out.push_back(digits[b & 15]);
    }
    return out;
}

std::string small_snapshot() {
    ShardImage second;
    second.dialogs.push_back(sample_dialog("second-shard-call"));
    return encode_snapshot({sample_image(), second}, meta_for_tests());
}

struct Shards {
    std::vector<std::unique_ptr<shard::ShardWorker>> owned;
    std::vector<shard::ShardWorker*> raw;
    explicit Shards(std::size_t n) {
        for (std::size_t i = 0; i < n; ++i) {
            owned.push_back(std::make_unique<shard::ShardWorker>(shard::ShardConfig{}));
            raw.push_back(owned.back().get());
        }
    }
    std::size_t records() const {
        std::size_t n = 0;
        for (const auto* w : raw)
            n += w->dialogs().size() + w->dialogs().transactions().size() + w->streams().size() +
                 w->streams().media_size() + w->streams().pending_size() + w->streams().reported_size();
        return n;
    }
};

// What the daemon does at start-up: read, and restore only what read cleanly.
std::optional<SnapshotError> load_into(const std::string& path, Shards& shards) {
    auto file = read_snapshot(path);
    if (!file.ok()) return file.error();
    restore(*file, shards.raw);
    return std::nullopt;
}

// The same from bytes, for the exhaustive loops (files for every case would make them slow on
// a busy disk; a sample of the cases goes through files as well).
std::optional<SnapshotError> load_bytes(const std::string& bytes, Shards& shards) {
    auto file = decode_snapshot(as_bytes(bytes));
    if (!file.ok()) return file.error();
    restore(*file, shards.raw);
    return std::nullopt;
}

bool sampled(std::size_t i) { return i < 40 || i % 23 == 0; }

std::string payload_with(const Header& header, const std::vector<RecordChunk>& chunks) {
    std::string payload;
    const auto put = [&payload](const std::string& message) {
        REQUIRE(message.size() < 16384);  // a varint of at most two octets
        if (message.size() >= 128) {
            payload.push_back(static_cast<char>(0x80 | (message.size() & 0x7f)));
            payload.push_back(static_cast<char>(message.size() >> 7));
        } else {
            payload.push_back(static_cast<char>(message.size()));
        }
        payload += message;
    };
    put(header.SerializeAsString());
    for (const auto& c : chunks) put(c.SerializeAsString());
    return payload;
}

Header header_v1(RecordCounts counts) {
    Header h;
    SnapshotHeader sh;
    sh.hepd_version = "t";
    sh.counts = counts;
    to_proto(sh, h);
    return h;
}

}  // namespace

TEST_CASE("CRC-32 is zlib's, also when fed in pieces", "[snapshot][file]") {
    // The check value of CRC-32/ISO-HDLC (the CRC of gzip, PNG, zlib) over "123456789".
    CHECK(crc32_update(0, as_bytes("123456789")) == 0xcbf43926U);
    CHECK(crc32_update(crc32_update(0, as_bytes("1234")), as_bytes("56789")) == 0xcbf43926U);
    CHECK(crc32_update(0, {}) == 0U);
}

TEST_CASE("an empty snapshot is 49 octets, byte for byte", "[snapshot][file]") {
    // Payload: varint 16, then Header { 1: 1, 2: "0.1.0", 3: 300 (0xac 0x02), 4: 2, 5: {} }.
    const std::string payload_hex =
        "10"
        "0801"
        "1205302e312e30"
        "18ac02"
        "2002"
        "2a00";
    // Frame: magic, version 1, flags 0, length 17, CRC-32 of the payload, CRC-32 of octets 0..27
    // (both CRCs computed independently with Python's zlib.crc32).
    const std::string frame_hex =
        "48455044534e4150"
        "00000001"
        "00000000"
        "0000000000000011"
        "8a5bf10e"
        "3a91ed5b";
    const std::string file = encode_snapshot({}, meta_for_tests());
    CHECK(hex(file) == frame_hex + payload_hex);

    const auto back = decode_snapshot(as_bytes(file));
    REQUIRE(back.ok());
    CHECK(back->header.format_version == 1);
    CHECK(back->header.hepd_version == "0.1.0");
    CHECK(back->header.written_at == Timestamp{300});
    CHECK(back->header.captured_at == Timestamp{});  // as in files of builds before the field
    CHECK(back->header.shard_count == 2);
    CHECK(back->header.counts == RecordCounts{});
    CHECK(back->records == ShardImage{});

    SnapshotMeta captured = meta_for_tests();
    captured.captured_at = Timestamp{250};
    const auto again = decode_snapshot(as_bytes(encode_snapshot({}, captured)));
    REQUIRE(again.ok());
    CHECK(again->header.captured_at == Timestamp{250});
}

TEST_CASE("records of every kind come back as they were written", "[snapshot][file]") {
    ShardImage a = sample_image();
    ShardImage b;
    b.dialogs.push_back(sample_dialog("call-on-shard-1"));
    b.streams.push_back(sample_stream("203.0.113.9:4000"));
    b.bindings.push_back(sample_binding("203.0.113.9:4000"));
    SnapshotMeta meta = meta_for_tests();
    meta.shard_count = 0;       // taken from the images
    meta.hepd_version.clear();  // this build's

    const auto back = decode_snapshot(as_bytes(encode_snapshot({a, b}, meta)));
    REQUIRE(back.ok());
    CHECK(back->header.shard_count == 2);
    CHECK(back->header.hepd_version == kVersion);
    CHECK(back->header.counts == RecordCounts{2, 1, 2, 2, 1});
    // The images are concatenated in shard order.
    const ShardImage& r = back->records;
    REQUIRE(r.dialogs.size() == 2);
    CHECK(r.dialogs[0] == a.dialogs[0]);
    CHECK(r.dialogs[1] == b.dialogs[0]);
    CHECK(r.transactions == a.transactions);
    REQUIRE(r.streams.size() == 2);
    CHECK(r.streams[0] == a.streams[0]);
    CHECK(r.streams[1] == b.streams[0]);
    REQUIRE(r.bindings.size() == 2);
    CHECK(r.bindings[0] == a.bindings[0]);
    CHECK(r.bindings[1] == b.bindings[0]);
    CHECK(r.reported_streams == a.reported_streams);
}

TEST_CASE("large tables are written in several chunks and read back whole", "[snapshot][file]") {
    ShardImage big;
    for (int i = 0; i < 2500; ++i) {
        big.dialogs.push_back(sample_dialog("call-" + std::to_string(i)));
        big.streams.push_back(sample_stream());
        big.streams.back().key.ssrc = static_cast<std::uint32_t>(i);
    }
    const std::string file = encode_snapshot({big}, meta_for_tests());
    const auto back = decode_snapshot(as_bytes(file));
    REQUIRE(back.ok());
    CHECK(back->records == big);

    // 2500 records of a kind make 3 chunks (1024 + 1024 + 452) each, after the header.
    std::size_t messages = 0;
    std::size_t pos = kFrameHeaderSize;
    while (pos < file.size()) {
        std::uint64_t len = 0;
        for (int shift = 0;; shift += 7) {
            const auto b = static_cast<std::uint8_t>(file[pos++]);
            len |= std::uint64_t{b & 0x7fU} << shift;
            if ((b & 0x80) == 0) break;
        }
        pos += len;
        ++messages;
    }
    CHECK(pos == file.size());
    CHECK(messages == 1 + 3 + 3);
}

TEST_CASE("a file cut at any length is refused as truncated, and nothing is restored",
          "[snapshot][file][corrupt][catalogue]") {
    TempDir dir;
    const std::string whole = small_snapshot();
    const std::string path = dir.file("state.snap");
    // One set of shards for every attempt: a refused file restores nothing, as the check after
    // each attempt shows. (Shards per attempt made this slow under qemu-user, whose mmap costs
    // in proportion to the address space the tables reserve.)
    Shards refusing(3);
    for (std::size_t len = 0; len < whole.size(); ++len) {
        INFO("length " << len);
        Shards& shards = refusing;
        const auto error = load_bytes(whole.substr(0, len), shards);
        REQUIRE(error.has_value());
        CHECK(*error == SnapshotError::truncated);
        if (sampled(len)) {
            write_file(path, whole.substr(0, len));
            CHECK(load_into(path, shards) == error);
        }
        CHECK(shards.records() == 0);
    }
    // The whole file does restore: the loop above was not refusing everything.
    write_file(path, whole);
    Shards shards(3);
    CHECK_FALSE(load_into(path, shards).has_value());
    // 2 dialogs, 1 transaction, 1 stream and the media entry its binding joined, 1 reported stream.
    CHECK(shards.records() == 6);
}

TEST_CASE("a flipped octet anywhere is refused, and nothing is restored", "[snapshot][file][corrupt][catalogue]") {
    TempDir dir;
    const std::string whole = small_snapshot();
    const std::string path = dir.file("state.snap");
    Shards shards(2);  // one set for every attempt, as above
    for (std::size_t i = 0; i < whole.size(); ++i) {
        for (const unsigned mask : {0x01U, 0x80U, 0xffU}) {
            INFO("octet " << i << " xor " << int(mask));
            std::string bad = whole;
            bad[i] = static_cast<char>(static_cast<unsigned char>(bad[i]) ^ mask);
            const auto error = load_bytes(bad, shards);
            REQUIRE(error.has_value());
            if (sampled(i)) {
                write_file(path, bad);
                CHECK(load_into(path, shards) == error);
            }
            const SnapshotError expected = i < 8    ? SnapshotError::bad_magic
                                           : i < 12 ? SnapshotError::unsupported_version
                                                    : SnapshotError::checksum_mismatch;
            CHECK(*error == expected);
            CHECK(shards.records() == 0);
        }
    }
}

TEST_CASE("damaged or foreign files are refused with the error that names the damage",
          "[snapshot][file][corrupt][catalogue]") {
    TempDir dir;
    const std::string path = dir.file("state.snap");
    const std::string whole = small_snapshot();
    const std::string payload = whole.substr(kFrameHeaderSize);
    std::string detail;

    const auto refused = [&](const std::string& bytes) {
        write_file(path, bytes);
        Shards shards(2);
        auto file = read_snapshot(path, &detail);
        if (!file.ok()) return std::optional<SnapshotError>{file.error()};
        restore(*file, shards.raw);
        CHECK(shards.records() > 0);
        return std::optional<SnapshotError>{};
    };

    SECTION("empty file") {
        CHECK(refused("") == SnapshotError::truncated);
        CHECK(detail == path + ": 0 octets: shorter than the frame header (32)");
    }
    SECTION("wrong magic") {
        std::string bad = whole;
        bad.replace(0, 8, "HEPDSNAQ");
        CHECK(refused(bad) == SnapshotError::bad_magic);
        CHECK(refused("GIF89a") == SnapshotError::bad_magic);
        CHECK(refused("\x1f\x8b\x08") == SnapshotError::bad_magic);
    }
    SECTION("a future format version, correctly framed") {
        CHECK(refused(frame_payload(payload, 2)) == SnapshotError::unsupported_version);
        CHECK(detail == path + ": format version 2, this build reads version 1");
        CHECK(refused(frame_payload(payload, 0)) == SnapshotError::unsupported_version);
        // Only the magic and the version are read from a newer file: the rest may have moved.
        CHECK(refused(std::string(kMagic) + std::string("\x00\x00\x00\x07", 4)) == SnapshotError::unsupported_version);
    }
    SECTION("flags this version does not define") {
        CHECK(refused(frame_payload(payload, 1, 1)) == SnapshotError::unsupported_version);
    }
    SECTION("bytes after the payload") {
        CHECK(refused(whole + "x") == SnapshotError::trailing_data);
        CHECK(detail == path + ": 1 octets after the " + std::to_string(payload.size()) + "-octet payload");
    }
    SECTION("well framed but not protobuf") {
        CHECK(refused(frame_payload("\x05\xff\xff\xff\xff\xff", 1)) == SnapshotError::parse_error);
        CHECK(refused(frame_payload("", 1)) == SnapshotError::parse_error);  // no header at all
        // A chunk whose length prefix runs past the end.
        CHECK(refused(frame_payload(payload + "\x7f", 1)) == SnapshotError::parse_error);
    }
    SECTION("counts that disagree with the records") {
        RecordChunk chunk;
        to_proto(sample_dialog(), *chunk.add_dialogs());
        CHECK(refused(frame_payload(payload_with(header_v1({2, 0, 0, 0, 0}), {chunk}), 1)) ==
              SnapshotError::parse_error);
        CHECK(detail == path + ": the header announces 2 records, 1 present");
        CHECK(refused(frame_payload(payload_with(header_v1({1, 0, 0, 0, 0}), {chunk}), 1)) == std::nullopt);
    }
    SECTION("a header version that disagrees with the frame") {
        Header h = header_v1({});
        h.set_format_version(2);
        CHECK(refused(frame_payload(payload_with(h, {}), 1)) == SnapshotError::parse_error);
    }
    SECTION("a record this build cannot hold refuses the whole file") {
        // The first record is fine, the second is not: neither may be restored.
        RecordChunk chunk;
        to_proto(sample_transaction(), *chunk.add_transactions());
        to_proto(sample_transaction("other"), *chunk.add_transactions());
        chunk.mutable_transactions(1)->set_method(static_cast<Method>(99));
        CHECK(refused(frame_payload(payload_with(header_v1({0, 2, 0, 0, 0}), {chunk}), 1)) ==
              SnapshotError::invalid_record);
        CHECK(detail == path + ": transaction #1: method: unknown value 99");
    }
    SECTION("no file, or a directory") {
        Shards shards(1);
        auto missing = read_snapshot(dir.file("absent.snap"), &detail);
        REQUIRE_FALSE(missing.ok());
        CHECK(missing.error() == SnapshotError::not_found);
        auto directory = read_snapshot(dir.path(), &detail);
        REQUIRE_FALSE(directory.ok());
        CHECK(directory.error() == SnapshotError::unreadable);
        CHECK(detail == dir.path() + ": not a regular file");
    }
}

TEST_CASE("every snapshot error has a snake_case name and a sentence", "[snapshot][file]") {
    const std::vector<std::string_view> names{"not_found",           "unreadable",  "bad_magic",
                                              "unsupported_version", "truncated",   "trailing_data",
                                              "checksum_mismatch",   "parse_error", "invalid_record"};
    REQUIRE(names.size() == kSnapshotErrorCount);
    for (std::size_t i = 0; i < kSnapshotErrorCount; ++i) {
        const auto e = static_cast<SnapshotError>(i);
        CHECK(to_string(e) == names[i]);
        CHECK(describe(e).size() > 10);
    }
    const std::vector<std::string_view> writes{"create_failed", "write_failed",    "sync_failed",  "close_failed",
                                               "rename_failed", "dir_sync_failed", "encode_failed"};
    REQUIRE(writes.size() == kWriteErrorCount);
    for (std::size_t i = 0; i < kWriteErrorCount; ++i) CHECK(to_string(static_cast<WriteError>(i)) == writes[i]);
}

// ---- the atomic writer ---------------------------------------------------------------------

TEST_CASE("a successful write replaces the file and leaves no temporary behind", "[snapshot][write]") {
    TempDir dir;
    const std::string path = dir.file("hepd.snap");
    const std::vector<ShardImage> first{sample_image()};
    const auto w1 = write_snapshot(first, path, meta_for_tests());
    REQUIRE(w1.ok());
    CHECK(w1->counts == RecordCounts{1, 1, 1, 1, 1});
    // The streamed file is exactly what encode_snapshot makes in memory.
    const std::string expected = encode_snapshot(first, meta_for_tests());
    CHECK(read_file(path) == expected);
    CHECK(w1->bytes == expected.size());
    CHECK_FALSE(std::filesystem::exists(path + ".tmp"));
    struct stat st {};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);  // Call-IDs and addresses are not for every local user

    // A stale temporary from a crashed run is replaced; the second write wins.
    write_file(path + ".tmp", "half a snapshot");
    ShardImage second;
    second.dialogs.push_back(sample_dialog("next"));
    const auto w2 = write_snapshot(std::vector<ShardImage>{second}, path, meta_for_tests());
    REQUIRE(w2.ok());
    CHECK_FALSE(std::filesystem::exists(path + ".tmp"));
    const auto back = read_snapshot(path);
    REQUIRE(back.ok());
    CHECK(back->records == second);
}

TEST_CASE("a failed write leaves the old file untouched", "[snapshot][write]") {
    TempDir dir;
    const std::string path = dir.file("hepd.snap");
    REQUIRE(write_snapshot(std::vector<ShardImage>{sample_image()}, path, meta_for_tests()).ok());
    const std::string old = read_file(path);
    ShardImage next;
    for (int i = 0; i < 50; ++i) next.dialogs.push_back(sample_dialog("new-" + std::to_string(i)));
    const std::vector<ShardImage> images{next};

    SECTION("the directory does not exist") {
        const auto w = write_snapshot(images, dir.file("missing/hepd.snap"), meta_for_tests());
        REQUIRE_FALSE(w.ok());
        CHECK(w.error().error == WriteError::create_failed);
        CHECK(w.error().system_error == ENOENT);
        CHECK(w.error().message ==
              "snapshot: cannot create " + dir.file("missing/hepd.snap.tmp") + ": No such file or directory");
    }
    SECTION("the temporary name is taken by a directory") {
        std::filesystem::create_directory(path + ".tmp");
        write_file(path + ".tmp/keep", "x");
        const auto w = write_snapshot(images, path, meta_for_tests());
        REQUIRE_FALSE(w.ok());
        CHECK(w.error().error == WriteError::create_failed);
        CHECK(read_file(path + ".tmp/keep") == "x");  // not ours: left alone
    }
    SECTION("the disk refuses the data (file size limit)") {
        // RLIMIT_FSIZE stops writes past 100 octets even for root, like a full disk.
        struct rlimit saved {};
        REQUIRE(::getrlimit(RLIMIT_FSIZE, &saved) == 0);
        const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
        struct rlimit tight = saved;
        tight.rlim_cur = 100;
        REQUIRE(::setrlimit(RLIMIT_FSIZE, &tight) == 0);
        const auto w = write_snapshot(images, path, meta_for_tests());
        ::setrlimit(RLIMIT_FSIZE, &saved);
        std::signal(SIGXFSZ, old_handler);
        REQUIRE_FALSE(w.ok());
        CHECK(w.error().error == WriteError::write_failed);
        CHECK(w.error().system_error == EFBIG);
        CHECK_FALSE(std::filesystem::exists(path + ".tmp"));
    }
    SECTION("the target name is a directory: the rename fails") {
        const std::string target = dir.file("occupied");
        std::filesystem::create_directory(target);
        write_file(target + "/inside", "y");
        const auto w = write_snapshot(images, target, meta_for_tests());
        REQUIRE_FALSE(w.ok());
        CHECK(w.error().error == WriteError::rename_failed);
        CHECK_FALSE(std::filesystem::exists(target + ".tmp"));
        CHECK(read_file(target + "/inside") == "y");
    }
    // Permissions do not stop root, which is what CI runs as: there the cases above stand in.
    if (::geteuid() != 0) {
        SECTION("the directory is read-only") {
            REQUIRE(::chmod(dir.path().c_str(), 0500) == 0);
            const auto w = write_snapshot(images, path, meta_for_tests());
            ::chmod(dir.path().c_str(), 0700);
            REQUIRE_FALSE(w.ok());
            CHECK(w.error().error == WriteError::create_failed);
            CHECK(w.error().system_error == EACCES);
        }
    }
    CHECK(read_file(path) == old);
    CHECK(read_snapshot(path).ok());
}
