// Snapshot files on disk: the atomic writer and the reader.
//
// Crash safety of the writer: the new contents go to `path`.tmp, which is fsynced before it is
// renamed over `path`; rename(2) replaces the name atomically, and the directory is fsynced so
// that the new name survives a power cut. At every instant `path` names either the old complete
// file or the new complete file; a crash leaves at worst a stale .tmp, which the next write
// replaces and the reader never looks at.
#include "core/log.hpp"
#include "snapshot/file_format.hpp"
#include "snapshot/payload.hpp"
#include "snapshot/snapshot.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <exception>
#include <new>
#include <string>

namespace hepd::snapshot {

std::string_view to_string(WriteError error) noexcept {
    switch (error) {
    case WriteError::create_failed: return "create_failed";
    case WriteError::write_failed: return "write_failed";
    case WriteError::sync_failed: return "sync_failed";
    case WriteError::close_failed: return "close_failed";
    case WriteError::rename_failed: return "rename_failed";
    case WriteError::dir_sync_failed: return "dir_sync_failed";
    case WriteError::encode_failed: return "encode_failed";
    }
    return "unknown";
}

namespace {

WriteFailure failure(WriteError error, int e, const std::string& what) {
    WriteFailure f;
    f.error = error;
    f.system_error = e;
    f.message = e != 0 ? "snapshot: " + what + ": " + error_text(e) : "snapshot: " + what;
    return f;
}

bool write_all(int fd, const std::uint8_t* p, std::size_t n, off_t offset, bool positioned) {
    while (n > 0) {
        const ssize_t w = positioned ? ::pwrite(fd, p, n, offset) : ::write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        if (w == 0) {
            errno = EIO;
            return false;
        }
        p += w;
        n -= static_cast<std::size_t>(w);
        offset += w;
    }
    return true;
}

std::string directory_of(const std::string& path) {
    const auto slash = path.find_last_of('/');
    if (slash == std::string::npos) return ".";
    if (slash == 0) return "/";
    return path.substr(0, slash);
}

// Streams the payload into the temporary file, computing its CRC and length on the way.
class FileSink final : public PayloadSink {
public:
    explicit FileSink(int fd) : fd_(fd) {}
    bool append(ByteSpan bytes) override {
        crc_ = crc32_update(crc_, bytes);
        length_ += bytes.size();
        if (write_all(fd_, bytes.data(), bytes.size(), 0, false)) return true;
        errno_ = errno;
        return false;
    }
    std::uint32_t crc() const noexcept { return crc_; }
    std::uint64_t length() const noexcept { return length_; }
    int error() const noexcept { return errno_; }

private:
    int fd_;
    std::uint32_t crc_ = 0;
    std::uint64_t length_ = 0;
    int errno_ = 0;
};

// Owns the temporary file until it is renamed: removed on every failure path.
class TempFile {
public:
    explicit TempFile(std::string path) : path_(std::move(path)) {}
    TempFile(const TempFile&) = delete;
    TempFile& operator=(const TempFile&) = delete;
    ~TempFile() {
        if (fd_ >= 0) ::close(fd_);
        if (created_ && !renamed_) ::unlink(path_.c_str());
    }

    bool create() {
        // A stale one (an earlier crash) is replaced; O_EXCL | O_NOFOLLOW then make sure the
        // file written is a new regular file of ours, not whatever a link points to.
        if (::unlink(path_.c_str()) != 0 && errno != ENOENT) return false;
        fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        created_ = fd_ >= 0;
        return created_;
    }
    bool close() {
        const int fd = fd_;
        fd_ = -1;
        return ::close(fd) == 0;
    }
    void renamed() noexcept { renamed_ = true; }
    int fd() const noexcept { return fd_; }
    const std::string& path() const noexcept { return path_; }

private:
    std::string path_;
    int fd_ = -1;
    bool created_ = false;
    bool renamed_ = false;
};

Result<WriteSummary, WriteFailure> write_file(const std::vector<ShardImage>& images, const std::string& path,
                                              const SnapshotMeta& meta) {
    TempFile tmp(path + ".tmp");
    if (!tmp.create()) return fail(failure(WriteError::create_failed, errno, "cannot create " + tmp.path()));

    // Room for the frame header, filled in once the payload's length and CRC are known.
    const std::array<std::uint8_t, kFrameHeaderSize> blank{};
    if (!write_all(tmp.fd(), blank.data(), blank.size(), 0, false))
        return fail(failure(WriteError::write_failed, errno, "cannot write " + tmp.path()));
    const SnapshotHeader header = make_header(images, meta);
    FileSink sink(tmp.fd());
    if (!encode_payload(images, header, sink, 1 << 20))
        return fail(failure(WriteError::write_failed, sink.error(), "cannot write " + tmp.path()));
    const auto frame = encode_frame_header({kFormatVersion, 0, sink.length(), sink.crc()});
    if (!write_all(tmp.fd(), frame.data(), frame.size(), 0, true))
        return fail(failure(WriteError::write_failed, errno, "cannot write " + tmp.path()));
    while (::fsync(tmp.fd()) != 0) {
        if (errno != EINTR) return fail(failure(WriteError::sync_failed, errno, "cannot fsync " + tmp.path()));
    }
    if (!tmp.close()) return fail(failure(WriteError::close_failed, errno, "cannot close " + tmp.path()));
    if (::rename(tmp.path().c_str(), path.c_str()) != 0)
        return fail(failure(WriteError::rename_failed, errno, "cannot rename " + tmp.path() + " to " + path));
    tmp.renamed();

    WriteSummary summary;
    summary.bytes = kFrameHeaderSize + sink.length();
    summary.counts = header.counts;
    const std::string dir = directory_of(path);
    const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) return fail(failure(WriteError::dir_sync_failed, errno, "cannot open directory " + dir));
    int e = 0;
    while (::fsync(dfd) != 0) {
        if (errno == EINTR) continue;
        e = errno;
        break;
    }
    ::close(dfd);
    if (e != 0) return fail(failure(WriteError::dir_sync_failed, e, "cannot fsync directory " + dir));
    return summary;
}

}  // namespace

Result<WriteSummary, WriteFailure> write_snapshot(const std::vector<ShardImage>& images, const std::string& path,
                                                  const SnapshotMeta& meta) {
    try {
        return write_file(images, path, meta);
    } catch (const std::bad_alloc&) {
        return fail(failure(WriteError::encode_failed, 0, "out of memory while writing " + path));
    } catch (const std::exception& e) {
        return fail(failure(WriteError::encode_failed, 0, std::string("writing ") + path + ": " + e.what()));
    }
}

Result<WriteSummary, WriteFailure> write_snapshot(const std::vector<const shard::ShardWorker*>& shards,
                                                  const std::string& path, const SnapshotMeta& meta) {
    std::vector<ShardImage> images;
    try {
        images.reserve(shards.size());
        for (const shard::ShardWorker* w : shards)
            if (w != nullptr) images.push_back(capture(*w));
    } catch (const std::bad_alloc&) {
        return fail(failure(WriteError::encode_failed, 0, "out of memory while capturing the tables"));
    }
    SnapshotMeta m = meta;
    if (m.shard_count == 0) m.shard_count = static_cast<std::uint32_t>(shards.size());
    return write_snapshot(images, path, m);
}

// ---- reading -------------------------------------------------------------------------------

Result<SnapshotFile, SnapshotError> read_snapshot(const std::string& path, std::string* detail) {
    const auto refuse = [&](SnapshotError error, const std::string& text) {
        if (detail != nullptr) *detail = path + ": " + text;
        return fail(error);
    };
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        const int e = errno;
        return refuse(e == ENOENT ? SnapshotError::not_found : SnapshotError::unreadable, error_text(e));
    }
    std::string bytes;
    struct stat st {};
    int e = 0;
    bool regular = true;
    try {
        if (::fstat(fd, &st) != 0) {
            e = errno;
        } else if (!S_ISREG(st.st_mode)) {
            regular = false;
        } else {
            bytes.resize(static_cast<std::size_t>(st.st_size));
            std::size_t got = 0;
            while (got < bytes.size()) {
                const ssize_t n = ::read(fd, bytes.data() + got, bytes.size() - got);
                if (n < 0 && errno == EINTR) continue;
                if (n < 0) {
                    e = errno;
                    break;
                }
                if (n == 0) break;  // shrank since fstat: decode sees the shorter file
                got += static_cast<std::size_t>(n);
            }
            bytes.resize(got);
        }
    } catch (const std::bad_alloc&) {
        ::close(fd);
        return refuse(SnapshotError::unreadable, "out of memory reading " + std::to_string(st.st_size) + " octets");
    }
    ::close(fd);
    if (!regular) return refuse(SnapshotError::unreadable, "not a regular file");
    if (e != 0) return refuse(SnapshotError::unreadable, error_text(e));
    std::string why;
    auto file = decode_snapshot(as_bytes(bytes), &why);
    if (!file.ok() && detail != nullptr) *detail = path + ": " + why;
    return file;
}

}  // namespace hepd::snapshot
