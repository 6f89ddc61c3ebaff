#include "ingest/net_address.hpp"

#include <netinet/in.h>

#include <cstring>

namespace hepd::ingest {

namespace asio = boost::asio;

Endpoint to_endpoint(const asio::ip::address& address, std::uint16_t port) {
    Endpoint e;
    e.port = port;
    if (address.is_v4()) {
        e.address = IpAddress::v4(address.to_v4().to_uint());
    } else {
        const auto b = address.to_v6().to_bytes();
        e.address = IpAddress::v6(std::span<const std::uint8_t, 16>(b.data(), 16)).unmapped();
    }
    return e;
}

asio::ip::address to_asio(const IpAddress& address) {
    if (address.is_v6()) {
        asio::ip::address_v6::bytes_type b;
        std::memcpy(b.data(), address.bytes().data(), 16);
        return asio::ip::address_v6(b);
    }
    return asio::ip::address_v4(address.v4_host_order());
}

Endpoint from_sockaddr(const sockaddr_storage& address) noexcept {
    Endpoint e;
    if (address.ss_family == AF_INET) {
        sockaddr_in in{};
        std::memcpy(&in, &address, sizeof in);
        std::uint8_t b[4];
        std::memcpy(b, &in.sin_addr, 4);
        e.address = IpAddress::v4(std::span<const std::uint8_t, 4>(b));
        e.port = ntohs(in.sin_port);
    } else if (address.ss_family == AF_INET6) {
        sockaddr_in6 in6{};
        std::memcpy(&in6, &address, sizeof in6);
        std::uint8_t b[16];
        std::memcpy(b, &in6.sin6_addr, 16);
        e.address = IpAddress::v6(std::span<const std::uint8_t, 16>(b)).unmapped();
        e.port = ntohs(in6.sin6_port);
    }
    return e;
}

}  // namespace hepd::ingest
