#include "hep/message.hpp"

#include <algorithm>

namespace hepd::hep {

namespace {
bool same_bytes(ByteSpan a, ByteSpan b) noexcept { return std::equal(a.begin(), a.end(), b.begin(), b.end()); }
}  // namespace

bool operator==(const Message& a, const Message& b) noexcept {
    return a.version == b.version && a.present == b.present && a.ip_family == b.ip_family &&
           a.ip_protocol == b.ip_protocol && a.src == b.src && a.dst == b.dst && a.seconds == b.seconds &&
           a.micros == b.micros && a.payload_type == b.payload_type && a.capture_id == b.capture_id &&
           a.keep_alive == b.keep_alive && same_bytes(a.auth_key, b.auth_key) && same_bytes(a.payload, b.payload) &&
           a.compressed == b.compressed && same_bytes(a.correlation_id, b.correlation_id) && a.vlan == b.vlan &&
           same_bytes(a.node_name, b.node_name) && same_bytes(a.mac_src, b.mac_src) &&
           same_bytes(a.mac_dst, b.mac_dst) && a.ethertype == b.ethertype && a.tcp_flags == b.tcp_flags &&
           a.tos == b.tos && a.mos == b.mos && a.r_factor == b.r_factor && a.jitter == b.jitter &&
           same_bytes(a.transaction_type, b.transaction_type) && a.event_type == b.event_type &&
           same_bytes(a.extra_correlation, b.extra_correlation);
}

}  // namespace hepd::hep
