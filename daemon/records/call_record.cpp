#include "records/call_record.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <tuple>

namespace hepd::records {

DialogFigures dialog_figures(std::string_view call_id, std::string_view from_tag, const sip::Dialog& dialog,
                             const sip::CallerIdentity& caller, bool evicted, const peer::PeerDirectory* peers) {
    DialogFigures f;
    f.call_id = std::string(call_id);
    f.from_tag = std::string(from_tag);
    f.dialog_id = sip::tag_id(from_tag);
    f.dialog = dialog;
    f.caller = caller;
    f.evicted = evicted;
    if (peers != nullptr && peers->name_count() > 1) {
        f.caller_group = std::string(peers->name(dialog.caller_peer));
        f.callee_group = std::string(peers->name(dialog.callee_peer));
    }
    return f;
}

StreamFigures stream_figures(const rtp::FinishedStream& finished) {
    StreamFigures f;
    if (finished.binding != nullptr) {
        f.call_id = finished.binding->call_id;
        f.dialog_id = finished.binding->dialog;
    }
    f.key = finished.key;
    f.first = finished.stream.first;
    f.last = finished.stream.last;
    f.packets = finished.stream.packets;
    f.summary = finished.summary;
    f.receiver = finished.stream.receiver.get();
    f.reason = finished.reason;
    return f;
}

ReportedFigures reported_figures(const rtp::FinishedReported& finished) {
    ReportedFigures f;
    f.call_id = finished.key.call_id.view();
    f.ssrc = finished.key.ssrc;
    f.reporter = finished.stream.reporter;
    f.reporter_ssrc = finished.stream.reporter_ssrc;
    f.first = finished.stream.first;
    f.last = finished.stream.last;
    f.view = finished.stream.view;
    f.summary = finished.summary;
    f.reason = finished.reason;
    return f;
}

// Two of one key from one first packet (a capture merged with one that overlaps it) go by how
// they ended, so that their order never depends on which finished first (shard count).
void sort_media(CallRecord& record) {
    std::sort(record.streams.begin(), record.streams.end(), [](const StreamFigures& a, const StreamFigures& b) {
        return std::tie(a.first, a.key.src, a.key.dst, a.key.ssrc, a.last, a.packets, a.reason, a.summary.codec) <
               std::tie(b.first, b.key.src, b.key.dst, b.key.ssrc, b.last, b.packets, b.reason, b.summary.codec);
    });
    std::sort(record.reported.begin(), record.reported.end(), [](const ReportedFigures& a, const ReportedFigures& b) {
        return std::tie(a.first, a.ssrc, a.reporter, a.reporter_ssrc, a.last, a.view.reports, a.reason,
                        a.summary.codec) < std::tie(b.first, b.ssrc, b.reporter, b.reporter_ssrc, b.last,
                                                    b.view.reports, b.reason, b.summary.codec);
    });
}

bool record_before(const CallRecord& a, const CallRecord& b) noexcept {
    const auto& x = a.dialog;
    const auto& y = b.dialog;
    const Timestamp x_start = x.dialog.invite_time();
    const Timestamp y_start = y.dialog.invite_time();
    return std::tie(x_start, x.call_id, x.from_tag) < std::tie(y_start, y.call_id, y.from_tag);
}

namespace {

// Length of the valid UTF-8 sequence at the start of `s` (RFC 3629: no overlong forms, no
// surrogates, nothing above U+10FFFF), or 0.
std::size_t utf8_sequence(std::string_view s) noexcept {
    const auto b = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
    const unsigned char c = b(0);
    std::size_t n = 0;
    unsigned char lo = 0x80;
    unsigned char hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else {
        return 0;
    }
    if (s.size() < n) return 0;
    if (b(1) < lo || b(1) > hi) return 0;
    for (std::size_t i = 2; i < n; ++i)
        if (b(i) < 0x80 || b(i) > 0xBF) return 0;
    return n;
}

// The JSON text of one record, field by field. Absent values are null, so every line has the
// same fields (a fixed column set for JSONEachRow) apart from the peer groups.
class Line {
public:
    explicit Line(std::string& out) : out_(out) {}

    void open() {
        out_ += '{';
        first_ = true;
    }
    void close() {
        out_ += '}';
        first_ = false;
    }
    void key(std::string_view k) {
        if (!first_) out_ += ',';
        first_ = false;
        out_ += '"';
        out_ += k;  // keys are this file's literals: nothing to escape
        out_ += "\":";
    }
    void text(std::string_view k, std::string_view v) {
        key(k);
        append_json_string(out_, v);
    }
    void null(std::string_view k) {
        key(k);
        out_ += "null";
    }
    template <class Int>
    void integer(std::string_view k, Int v) {
        key(k);
        std::array<char, 24> buf{};
        const auto r = std::to_chars(buf.data(), buf.data() + buf.size(), v);
        out_.append(buf.data(), r.ptr);
    }
    // Fixed-point, `decimals` places (locale-independent).
    void number(std::string_view k, double v, int decimals) {
        key(k);
        std::array<char, 48> buf{};
        const auto r = std::to_chars(buf.data(), buf.data() + buf.size(), v, std::chars_format::fixed, decimals);
        out_.append(buf.data(), r.ptr);
    }
    void boolean(std::string_view k, bool v) {
        key(k);
        out_ += v ? "true" : "false";
    }
    void time(std::string_view k, Timestamp t) {
        if (t.us == 0) return null(k);
        text(k, format_iso8601(t));
    }
    // Microseconds as milliseconds with microsecond precision; negative means missing.
    void millis(std::string_view k, std::int64_t us) {
        if (us < 0) return null(k);
        number(k, static_cast<double>(us) / 1e3, 3);
    }
    void address(std::string_view ip_key, std::string_view port_key, const Endpoint& e) {
        if (e.address.family() == IpFamily::none) {
            null(ip_key);
            null(port_key);
            return;
        }
        text(ip_key, e.address.to_string());
        integer(port_key, e.port);
    }
    void array(std::string_view k) {
        key(k);
        out_ += '[';
        first_ = true;
    }
    void end_array() {
        out_ += ']';
        first_ = false;
    }
    void element() {
        if (!first_) out_ += ',';
        out_ += '{';
        first_ = true;
    }

private:
    std::string& out_;
    bool first_ = true;
};

// Jitter in RTP timestamp units as milliseconds, when the clock rate is known.
void jitter_field(Line& l, std::string_view k, std::uint32_t units, std::uint32_t clock_rate) {
    if (clock_rate == 0) return l.null(k);
    l.number(k, static_cast<double>(units) * 1e3 / clock_rate, 3);
}

// The receiver's RTCP view: the same fields for a measured stream's "rtcp" and a reported stream.
void receiver_fields(Line& l, const rtp::ReceiverView& v, std::uint32_t clock_rate) {
    l.integer("reports", v.reports);
    l.number("fraction_lost_pct", v.fraction_lost * 100.0 / 256.0, 2);
    l.integer("cumulative_lost", v.cumulative_lost);
    l.integer("jitter_ts", v.jitter);
    jitter_field(l, "jitter_ms", v.jitter, clock_rate);
    if (v.rtt_us == rtp::kNoRtt) {
        l.null("rtt_ms");
    } else {
        l.number("rtt_ms", v.rtt_us / 1e3, 3);
    }
    l.integer("xr_reports", v.xr_reports);
    if (v.xr_mos_lq_x10 == 127) {
        l.null("xr_mos_lq");
    } else {
        l.number("xr_mos_lq", v.xr_mos_lq_x10 / 10.0, 1);
    }
    if (v.xr_r_factor == 127) {
        l.null("xr_r_factor");
    } else {
        l.integer("xr_r_factor", v.xr_r_factor);
    }
}

void quality_fields(Line& l, bool has_quality, double r_factor, double mos) {
    if (!has_quality) {
        l.null("r_factor");
        l.null("mos");
        return;
    }
    l.number("r_factor", r_factor, 2);
    l.number("mos", mos, 2);
}

std::string_view outcome_text(const DialogFigures& f) {
    return f.evicted ? sip::to_string(sip::DialogOutcome::evicted) : sip::to_string(f.dialog.outcome());
}

std::int64_t span_us(Timestamp a, Timestamp b) {
    return (a.us == 0 || b.us == 0) ? -1 : std::max<std::int64_t>(b.us - a.us, 0);
}

}  // namespace

void append_json_string(std::string& out, std::string_view text) {
    static constexpr char kHex[] = "0123456789abcdef";
    out += '"';
    std::size_t i = 0;
    while (i < text.size()) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c >= 0x80) {
            const std::size_t n = utf8_sequence(text.substr(i));
            if (n == 0) {
                out += "\\ufffd";
                ++i;
            } else {
                out.append(text.substr(i, n));
                i += n;
            }
            continue;
        }
        switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default:
            if (c < 0x20 || c == 0x7f) {
                out += "\\u00";
                out += kHex[c >> 4];
                out += kHex[c & 0xf];
            } else {
                out += static_cast<char>(c);
            }
        }
        ++i;
    }
    out += '"';
}

namespace {

// The fields record_key() names a line by, first on every line.
void key_fields(Line& l, std::string_view call_id, std::string_view from_tag) {
    l.open();
    l.integer("v", kRecordVersion);
    l.text("call_id", call_id);
    l.text("from_tag", from_tag);
}

}  // namespace

std::string record_key(std::string_view call_id, std::string_view from_tag) {
    std::string out;
    Line l(out);
    key_fields(l, call_id, from_tag);
    out += ',';
    return out;
}

std::string record_line(const CallRecord& record) {
    const DialogFigures& f = record.dialog;
    const sip::Dialog& d = f.dialog;
    std::string out;
    out.reserve(1024 + 512 * record.streams.size());
    Line l(out);
    key_fields(l, f.call_id, f.from_tag);
    l.time("start", d.invite_time());
    l.time("ringing", d.time(sip::DialogTime::ringing));
    l.time("answer", d.time(sip::DialogTime::answer));
    l.time("cancel", d.time(sip::DialogTime::cancel));
    l.time("bye", d.time(sip::DialogTime::bye));
    l.time("end", d.time(sip::DialogTime::end));
    l.text("from_user", f.caller.from_party.user());
    l.text("from_host", f.caller.from_party.host());
    l.text("to_user", f.caller.to_party.user());
    l.text("to_host", f.caller.to_party.host());
    l.address("caller_ip", "caller_port", d.caller());
    l.address("callee_ip", "callee_port", d.callee());
    l.address("callee_side_ip", "callee_side_port", d.callee_side());
    if (!f.caller_group.empty()) l.text("caller_group", f.caller_group);
    if (!f.callee_group.empty()) l.text("callee_group", f.callee_group);
    l.text("user_agent", f.caller.user_agent_view());
    l.text("state", f.evicted ? std::string_view("evicted") : sip::to_string(d.state));
    l.text("outcome", outcome_text(f));
    if (d.final_status == 0) {
        l.null("final_status");
    } else {
        l.integer("final_status", d.final_status);
    }
    if (d.q850_cause == sip::kNoCause) {
        l.null("q850_cause");
    } else {
        l.integer("q850_cause", d.q850_cause);
    }
    if (d.hangup == sip::Party::unknown) {
        l.null("hangup");
    } else {
        l.text("hangup", sip::to_string(d.hangup));
    }
    if (d.bye_status == 0) {
        l.null("bye_status");
    } else {
        l.integer("bye_status", d.bye_status);
    }
    l.millis("srd_ms", span_us(d.invite_time(), d.time(sip::DialogTime::indicative)));
    l.millis("pdd_ms", span_us(d.invite_time(), d.time(sip::DialogTime::ringing)));
    l.millis("setup_ms", span_us(d.invite_time(), d.time(sip::DialogTime::answer)));
    l.millis("duration_ms", span_us(d.time(sip::DialogTime::answer), d.time(sip::DialogTime::bye)));
    l.millis("sdd_ms", span_us(d.time(sip::DialogTime::bye), d.time(sip::DialogTime::bye_answer)));
    l.integer("hops", d.hop_count);
    l.integer("forks", d.fork_count);
    l.integer("retransmissions", d.retransmissions);
    l.integer("reinvites", d.reinvites);
    l.array("streams");
    for (const StreamFigures& s : record.streams) {
        const auto& m = s.summary;
        l.element();
        l.integer("ssrc", s.key.ssrc);
        l.address("src_ip", "src_port", s.key.src);
        l.address("dst_ip", "dst_port", s.key.dst);
        l.text("codec", rtp::to_string(m.codec));
        l.time("first", s.first);
        l.time("last", s.last);
        l.integer("packets", s.packets);
        l.integer("expected", m.expected);
        l.integer("lost", m.lost);
        l.number("loss_pct", m.loss_percent, 3);
        l.number("jitter_ms", m.jitter_ms, 3);
        l.number("max_jitter_ms", m.max_jitter_ms, 3);
        quality_fields(l, m.has_quality, m.r_factor, m.mos);
        l.text("end_reason", rtp::to_string(s.reason));
        if (s.receiver.reports == 0 && s.receiver.xr_reports == 0) {
            l.null("rtcp");
        } else {
            l.key("rtcp");
            l.open();
            receiver_fields(l, s.receiver, m.clock_rate);
            l.close();
        }
        l.close();
    }
    l.end_array();
    l.array("reported");
    for (const ReportedFigures& r : record.reported) {
        l.element();
        l.integer("ssrc", r.ssrc);
        l.address("reporter_ip", "reporter_port", r.reporter);
        l.integer("reporter_ssrc", r.reporter_ssrc);
        l.text("codec", rtp::to_string(r.summary.codec));
        l.time("first", r.first);
        l.time("last", r.last);
        receiver_fields(l, r.view, r.summary.clock_rate);
        l.number("loss_pct", r.summary.loss_percent, 3);
        l.number("max_jitter_ms", r.summary.max_jitter_ms, 3);
        quality_fields(l, r.summary.has_quality, r.summary.r_factor, r.summary.mos);
        l.text("end_reason", rtp::to_string(r.reason));
        l.close();
    }
    l.end_array();
    l.close();
    out += '\n';
    return out;
}

}  // namespace hepd::records
