#pragma once
// Which shard owns a datagram: a pure function of the datagram and the shard count, so live and
// offline input, and a snapshot restored onto another core count, all agree.
//   SIP                         -> hash(Call-ID)
//   RTP                         -> hash(media_key(destination))
//   RTCP, RTCP-XR, RTCP-JSON    -> hash(media_key(source)) (the reporter: its blocks describe
//                                  the stream sent to it, which lives on that shard; a
//                                  correlation id names the call, not that shard)
//   other with correlation id   -> hash(correlation id)   (senders put the Call-ID there)
#include "core/address.hpp"
#include "core/media_binding.hpp"
#include "shard/datagram.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace hepd::shard {

// The Call-ID header value of a SIP message (full or compact form, any case), trimmed; empty
// when there is none. A header scan only: the owning shard parses the message properly.
std::string_view find_call_id(std::string_view sip) noexcept;

std::uint64_t call_key(std::string_view call_id) noexcept;
// Applies media_key(). Inline: every reading shard routes every media packet with it.
inline std::uint64_t media_hash(const Endpoint& media) noexcept { return hash_endpoint(media_key(media)); }

std::uint64_t dispatch_hash(const Datagram& d) noexcept;

// The address whose media_key() routes RTP (its destination) or RTCP and RTCP-JSON (its source).
inline const Endpoint& routing_media(PayloadClass kind, const Endpoint& src, const Endpoint& dst) noexcept {
    return kind == PayloadClass::rtp ? dst : src;
}

// The shard of a hash: its high 32 bits scaled to [0, shards) by a multiply, not a division (one
// per datagram, in every reading shard, offline).
constexpr std::size_t shard_index(std::uint64_t hash, std::size_t shards) noexcept {
    return static_cast<std::size_t>(((hash >> 32) * static_cast<std::uint64_t>(shards)) >> 32);
}
inline std::size_t shard_of(const Datagram& d, std::size_t shards) noexcept {
    return shards <= 1 ? 0 : shard_index(dispatch_hash(d), shards);
}
inline std::size_t shard_of_call(std::string_view call_id, std::size_t shards) noexcept {
    return shards <= 1 ? 0 : shard_index(call_key(call_id), shards);
}
inline std::size_t shard_of_media(const Endpoint& media, std::size_t shards) noexcept {
    return shards <= 1 ? 0 : shard_index(media_hash(media), shards);
}

}  // namespace hepd::shard
