#pragma once
// Records <-> protobuf messages, field for field. Writing cannot fail; reading refuses (false,
// with the field named in `why`) any value the C++ record cannot hold: an integer wider than its
// field, an enum value this build does not know, more array entries than the build keeps, a
// ring position past its end, an address that is neither 4 nor 16 octets. Semantic checks
// (key lengths, duplicates) are the tables' business at restore.
//
// Internal to the snapshot module and its tests: it exposes the generated types.
#include "snapshot.pb.h"
#include "snapshot/records.hpp"

#include <string>

namespace hepd::snapshot {

void to_proto(const hepd::Endpoint& in, Endpoint& out);
void to_proto(const DialogRecord& in, Dialog& out);
void to_proto(const TransactionRecord& in, Transaction& out);
void to_proto(const StreamRecord& in, Stream& out);
void to_proto(const BindingRecord& in, Binding& out);
void to_proto(const ReportedRecord& in, ReportedStream& out);
void to_proto(const SnapshotHeader& in, Header& out);

bool from_proto(const Endpoint& in, hepd::Endpoint& out, std::string& why);
bool from_proto(const Dialog& in, DialogRecord& out, std::string& why);
bool from_proto(const Transaction& in, TransactionRecord& out, std::string& why);
bool from_proto(const Stream& in, StreamRecord& out, std::string& why);
bool from_proto(const Binding& in, BindingRecord& out, std::string& why);
bool from_proto(const ReportedStream& in, ReportedRecord& out, std::string& why);
bool from_proto(const Header& in, SnapshotHeader& out, std::string& why);

}  // namespace hepd::snapshot
