#pragma once
// A realistic HEPv3 SIP message as Kamailio's siptrace sends it, for the ingest tests.
#include "hep/encoder.hpp"
#include "hep/message.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace hepd::test {

inline hep::Message sip_message(std::string_view payload, std::uint32_t seconds = 1'700'000'000) {
    hep::Message m;
    m.version = 3;
    m.ip_family = hep::family_ipv4;
    m.mark(hep::Field::ip_family);
    m.ip_protocol = 17;
    m.mark(hep::Field::ip_protocol);
    m.src = Endpoint{IpAddress::v4(0x0a000001U), 5060};
    m.dst = Endpoint{IpAddress::v4(0x0a000002U), 5080};
    for (auto f : {hep::Field::src_address, hep::Field::dst_address, hep::Field::src_port, hep::Field::dst_port})
        m.mark(f);
    m.seconds = seconds;
    m.micros = 250'000;
    m.mark(hep::Field::seconds);
    m.mark(hep::Field::micros);
    m.payload_type = 1;
    m.mark(hep::Field::payload_type);
    m.capture_id = 2001;
    m.mark(hep::Field::capture_id);
    m.payload = as_bytes(payload);
    m.mark(hep::Field::payload);
    return m;
}

inline std::vector<std::uint8_t> encode(const hep::Message& m) {
    std::vector<std::uint8_t> out;
    hep::encode_v3(m, out);
    return out;
}

inline constexpr std::string_view kOptions =
    "OPTIONS sip:10.0.0.2:5080 SIP/2.0\r\nVia: SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bK1\r\n"
    "Call-ID: opt-1@10.0.0.1\r\nCSeq: 1 OPTIONS\r\nFrom: <sip:a@x>;tag=1\r\nTo: <sip:b@y>\r\n"
    "Content-Length: 0\r\n\r\n";

// A HEPv3 message of exactly `total` bytes carrying an OPTIONS whose body pads it to size.
struct SizedMessage {
    std::string sip;
    std::vector<std::uint8_t> bytes;
};
inline SizedMessage sized_message(std::size_t total) {
    const std::size_t overhead = encode(sip_message(kOptions)).size() - kOptions.size();
    const std::string head(kOptions.substr(0, kOptions.find("Content-Length: ") + 16));
    const std::size_t sip_size = total - overhead;
    SizedMessage out;
    for (std::size_t digits = 1; digits <= 5 && out.sip.empty(); ++digits) {
        const std::size_t body = sip_size - head.size() - digits - 4;
        if (std::to_string(body).size() == digits)
            out.sip = head + std::to_string(body) + "\r\n\r\n" + std::string(body, 'x');
    }
    out.bytes = encode(sip_message(out.sip));
    return out;
}

}  // namespace hepd::test
