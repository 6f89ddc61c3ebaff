#pragma once
// Conversions between hepd addresses, Asio addresses and socket addresses.
#include "core/address.hpp"

#include <boost/asio/ip/address.hpp>

#include <sys/socket.h>

#include <cstdint>

namespace hepd::ingest {

// A v4 peer on a dual-stack socket shows as ::ffff:a.b.c.d; it is reported as the v4 it is.
Endpoint to_endpoint(const boost::asio::ip::address& address, std::uint16_t port);
boost::asio::ip::address to_asio(const IpAddress& address);
// AF_INET / AF_INET6 (v4-mapped unmapped as above); an empty Endpoint for anything else.
Endpoint from_sockaddr(const sockaddr_storage& address) noexcept;

}  // namespace hepd::ingest
