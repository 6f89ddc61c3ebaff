#include "hep/payload_type.hpp"

namespace hepd::hep {

PayloadTypeTable::PayloadTypeTable() noexcept {
    // Codes as the senders use them (HEP.md "Payload types"), not always the spec's numbering.
    set(payload_type::sip, "sip", PayloadClass::sip);
    set(payload_type::rtp, "rtp", PayloadClass::rtp);
    set(payload_type::rtcp_json, "rtcp_json", PayloadClass::rtcp_json);  // Asterisk, rtpengine
    set(payload_type::iax, "iax", PayloadClass::other);                  // Asterisk res_hep
    set(payload_type::qos_report, "qos_report", PayloadClass::qos);
    set(payload_type::rtp_agent_stats, "rtp_agent_stats", PayloadClass::qos);
    set(payload_type::rtcp_xr, "rtcp_xr", PayloadClass::rtcp);
    set(payload_type::dns, "dns", PayloadClass::other);
    set(payload_type::isup, "isup", PayloadClass::other);
    set(payload_type::rtpengine_ng, "rtpengine_ng", PayloadClass::other);
    set(payload_type::qos_json, "qos_json", PayloadClass::qos);
    set(payload_type::log, "log", PayloadClass::log);
}

bool PayloadTypeTable::set(std::uint8_t code, std::string_view name, PayloadClass cls) noexcept {
    if (name.empty() || name.size() > max_name_length) return false;
    for (const char ch : name)
        if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_')) return false;
    Entry& e = entries_[code];
    e.text = {};
    for (std::size_t i = 0; i < name.size(); ++i) e.text[i] = name[i];
    e.length = static_cast<std::uint8_t>(name.size());
    e.cls = cls;
    return true;
}

std::string_view PayloadTypeTable::name(std::uint8_t code) const noexcept {
    const Entry& e = entries_[code];
    if (e.length == 0) return "unknown";
    return {e.text.data(), e.length};
}

}  // namespace hepd::hep
