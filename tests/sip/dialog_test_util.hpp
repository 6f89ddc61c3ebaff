#pragma once
// Builders for the dialog table tests: SIP messages written out as text (then parsed by the real
// parser), a media sink that records what it gets, and a harness with fixed addresses and times.
#include "core/address.hpp"
#include "core/packet_meta.hpp"
#include "sip/dialog_table.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hepd::sip::test {

// One SIP message. For a response, `method` is the CSeq method and `code` the status.
struct Sip {
    std::string method = "INVITE";
    int code = 0;  // 0: a request
    std::string call_id = "call-1@example.net";
    std::string from_tag = "caller-tag";
    std::string to_tag;  // empty: no tag
    std::string branch = "z9hG4bK-a1";
    std::string via_host = "10.0.0.1:5060";
    std::uint32_t cseq = 1;
    std::string extra;  // more header lines, each ending in "\r\n"
    std::string content_type = "application/sdp";
    std::string body;  // SDP with '\n' line ends (converted to CRLF)

    std::string text() const {
        std::string out;
        const std::string reason = code == 100   ? "Trying"
                                   : code == 180 ? "Ringing"
                                   : code == 183 ? "Session Progress"
                                   : code < 300  ? "OK"
                                   : code == 401 ? "Unauthorized"
                                   : code == 407 ? "Proxy Authentication Required"
                                   : code == 486 ? "Busy Here"
                                   : code == 487 ? "Request Terminated"
                                                 : "Failure";
        if (code == 0)
            out += method + " sip:bob@example.net SIP/2.0\r\n";
        else
            out += "SIP/2.0 " + std::to_string(code) + " " + reason + "\r\n";
        out += "Via: SIP/2.0/UDP " + via_host + ";branch=" + branch + "\r\n";
        out += "Max-Forwards: 70\r\n";
        out += "From: \"Alice\" <sip:alice@example.net>";
        if (!from_tag.empty()) out += ";tag=" + from_tag;
        out += "\r\nTo: <sip:bob@example.net>";
        if (!to_tag.empty()) out += ";tag=" + to_tag;
        out += "\r\nCall-ID: " + call_id + "\r\n";
        out += "CSeq: " + std::to_string(cseq) + " " + method + "\r\n";
        out += extra;
        std::string crlf_body;
        for (char c : body) {
            if (c == '\n') crlf_body += '\r';
            crlf_body += c;
        }
        if (!crlf_body.empty()) out += "Content-Type: " + content_type + "\r\n";
        out += "Content-Length: " + std::to_string(crlf_body.size()) + "\r\n\r\n";
        out += crlf_body;
        return out;
    }

    // Copies with a field changed, for writing flows compactly.
    Sip req(std::string m, std::string br, std::uint32_t cs) const {
        Sip s = *this;
        s.method = std::move(m);
        s.code = 0;
        s.branch = std::move(br);
        s.cseq = cs;
        s.extra.clear();
        s.body.clear();
        return s;
    }
    Sip resp(int status) const {
        Sip s = *this;
        s.code = status;
        s.extra.clear();
        s.body.clear();
        return s;
    }
    Sip with_to_tag(std::string tag) const {
        Sip s = *this;
        s.to_tag = std::move(tag);
        return s;
    }
    Sip with_extra(std::string e) const {
        Sip s = *this;
        s.extra = std::move(e);
        return s;
    }
    Sip with_body(std::string b) const {
        Sip s = *this;
        s.body = std::move(b);
        return s;
    }
    Sip with_branch(std::string b) const {
        Sip s = *this;
        s.branch = std::move(b);
        return s;
    }
    // The same message as sent by the callee: tags swapped (From = callee's tag).
    Sip from_callee(std::string callee_tag) const {
        Sip s = *this;
        s.to_tag = s.from_tag;
        s.from_tag = std::move(callee_tag);
        return s;
    }
};

inline Endpoint ep(std::string_view text) {
    const auto e = parse_endpoint(text);
    return e ? *e : Endpoint{};
}

// Base packet time of the tests: 2023-11-14T22:13:20Z.
inline constexpr std::int64_t kT0 = 1'700'000'000'000'000;
inline Timestamp ms(std::int64_t milliseconds) { return Timestamp{kT0 + milliseconds * 1000}; }

struct RecordingSink final : MediaSink {
    struct Copy {
        MediaBinding binding;
        std::string call_id;
    };
    std::vector<Copy> got;
    void on_media_binding(const MediaBinding& b) noexcept override {
        got.push_back(Copy{b, std::string(b.call_id)});
        got.back().binding.call_id = {};
    }
};

struct Harness {
    explicit Harness(DialogConfig config = {}) : table(config, &sink) {}

    Disposition send(const Sip& sip, std::string_view src, std::string_view dst, Timestamp t, std::uint16_t agent = 1) {
        last_text = sip.text();
        PacketMeta meta;
        meta.time = t;
        meta.src = ep(src);
        meta.dst = ep(dst);
        meta.agent = agent;
        return table.process(last_text, meta);
    }

    const Dialog* dialog(std::string_view call_id = "call-1@example.net", std::string_view tag = "caller-tag") const {
        return table.find(call_id, tag);
    }
    const DialogStats& stats() const { return table.stats(); }

    std::int64_t gauge_sum() const {
        std::int64_t n = 0;
        for (const auto& g : table.stats().dialogs_by_state) n += g.value();
        return n;
    }
    bool all_gauges_zero() const {
        for (const auto& g : table.stats().dialogs_by_state)
            if (g.value() != 0) return false;
        return table.stats().transactions_pending.value() == 0 && table.stats().transactions_lingering.value() == 0;
    }

    RecordingSink sink;
    DialogTable table;
    std::string last_text;
};

// Hosts of the tests: caller A, proxy P, callees B and C.
inline constexpr std::string_view A = "10.0.0.1:5060";
inline constexpr std::string_view P = "10.0.0.2:5060";
inline constexpr std::string_view B = "10.0.0.3:5060";
inline constexpr std::string_view C = "10.0.0.4:5060";

inline std::uint64_t requests(const DialogStats& s, Method m, std::size_t agent = 1) {
    return s.requests[static_cast<std::size_t>(m)][agent].value();
}
inline std::uint64_t responses(const DialogStats& s, Method m, std::size_t cls, std::size_t agent = 1) {
    return s.responses[static_cast<std::size_t>(m)][cls - 1][agent].value();
}
inline std::uint64_t retransmissions(const DialogStats& s, Method m) {
    return s.retransmissions[static_cast<std::size_t>(m)].value();
}

}  // namespace hepd::sip::test
