#pragma once
// After a crash the snapshot that is restored is older than the record file: calls whose dialogs
// it holds may have had their records written since it was taken. These are found in the record
// files, so that they are not written a second time (RECORDS.md, "Across a restart").
#include "core/time.hpp"

#include <string>
#include <unordered_set>

namespace hepd::records {

// A record written at `since` reaches a file whose modification time is at least this much
// earlier (the kernel stamps files with a coarse clock); files are looked into from there on.
inline constexpr std::int64_t kWrittenSlackUs = 2'000'000;

// Of `wanted` (record_key()s), those that begin a whole line (one ending in '\n') of the record
// file at `path` or of its rotated files (PATH.*) modified at or after `since` - kWrittenSlackUs.
std::unordered_set<std::string> find_written(const std::string& path, Timestamp since,
                                             const std::unordered_set<std::string>& wanted);

}  // namespace hepd::records
