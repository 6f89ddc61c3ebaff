#pragma once
// What ParseDepth::dialog promises: the result, every field the dialog and transaction tables
// read, and the answers of find_header()/count_headers() are those of a full parse. Plain bool,
// so that the unit tests and the SIP parse fuzzer share one definition.
#include "sip/message.hpp"

#include <string_view>

namespace hepd::sip::test {

inline bool same_name_addr(const NameAddr& a, const NameAddr& b) noexcept {
    return a.raw == b.raw && a.display_name == b.display_name && a.uri == b.uri && a.params == b.params &&
           a.tag == b.tag && a.has_tag == b.has_tag && a.angle_brackets == b.angle_brackets && a.valid == b.valid;
}

// The top Via up to its branch; what follows the branch is not read at dialog depth.
inline bool same_via_through_branch(const Via& a, const Via& b) noexcept {
    return a.raw == b.raw && a.protocol_name == b.protocol_name && a.protocol_version == b.protocol_version &&
           a.transport_text == b.transport_text && a.transport == b.transport && a.host == b.host && a.port == b.port &&
           a.params == b.params && a.branch == b.branch;
}

inline bool same_reason(const Reason& a, const Reason& b) noexcept {
    return a.protocol == b.protocol && a.protocol_text == b.protocol_text && a.has_cause == b.has_cause &&
           a.cause == b.cause && a.text == b.text;
}

inline bool dialog_depth_agrees(std::string_view text) noexcept {
    Message full;
    Message dialog;
    const auto full_error = parse_message_into(text, full);
    const auto dialog_error = parse_message_into(text, dialog, ParseDepth::dialog);
    if (full_error != dialog_error) return false;
    if (full_error) return true;
    const bool fields =
        full.kind == dialog.kind && full.method == dialog.method && full.method_text == dialog.method_text &&
        full.request_uri == dialog.request_uri && full.status_code == dialog.status_code &&
        full.reason_phrase == dialog.reason_phrase && full.call_id == dialog.call_id &&
        full.cseq.number == dialog.cseq.number && full.cseq.method == dialog.cseq.method &&
        full.cseq.method_text == dialog.cseq.method_text && same_name_addr(full.from, dialog.from) &&
        same_name_addr(full.to, dialog.to) && same_via_through_branch(full.top_via, dialog.top_via) &&
        full.max_forwards == dialog.max_forwards && full.content_type == dialog.content_type &&
        full.user_agent == dialog.user_agent && full.server == dialog.server &&
        same_reason(full.reason, dialog.reason) && full.reason_count == dialog.reason_count &&
        full.content_length == dialog.content_length && full.body_bytes_present == dialog.body_bytes_present &&
        full.body == dialog.body && full.content_length_invalid == dialog.content_length_invalid &&
        full.body_truncated == dialog.body_truncated && full.body_excess == dialog.body_excess &&
        full.headers_unterminated == dialog.headers_unterminated &&
        full.cseq_method_mismatch == dialog.cseq_method_mismatch && full.from_malformed == dialog.from_malformed &&
        full.to_malformed == dialog.to_malformed && full.start_line == dialog.start_line && full.raw == dialog.raw;
    // Nothing stored: every field is overflow, still reachable by name.
    const bool headers = dialog.header_count == 0 &&
                         dialog.header_overflow == full.header_count + full.header_overflow && dialog.via_count == 0 &&
                         !dialog.contact.valid;
    bool lookups = true;
    for (const std::string_view name : {"Via", "v", "Contact", "Call-ID", "X-Unknown", "k", "Route"})
        lookups = lookups && full.find_header(name) == dialog.find_header(name) &&
                  full.count_headers(name) == dialog.count_headers(name);
    return fields && headers && lookups;
}

}  // namespace hepd::sip::test
