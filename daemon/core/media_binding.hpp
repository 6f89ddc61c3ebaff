#pragma once
// "RTP to address A:p belongs to Call-ID X, with these codecs": learnt from SDP by the shard that
// owns the dialog, delivered to the shard that owns the media address. It is the only thing
// that joins streams to dialogs, so both the SIP and the RTP side speak this one type.
#include "core/address.hpp"
#include "core/compact_text.hpp"
#include "core/time.hpp"

#include <array>
#include <cstdint>
#include <string_view>

namespace hepd {

struct CodecInfo {
    std::uint8_t payload_type = 0;
    std::uint8_t channels = 1;
    std::uint32_t clock_rate = 0;  // Hz, from a=rtpmap or the RFC 3551 static table
    std::array<char, 16> name{};   // encoding name as in rtpmap ("PCMA", "telephone-event"), NUL-padded

    std::string_view name_view() const noexcept {
        std::size_t n = 0;
        while (n < name.size() && name[n] != '\0') ++n;
        return {name.data(), n};
    }
    void set_name(std::string_view text) noexcept {
        name.fill('\0');
        for (std::size_t i = 0; i < text.size() && i < name.size(); ++i) name[i] = text[i];
    }
};

inline constexpr std::size_t kMaxBindingCodecs = 8;

struct MediaBinding {
    Endpoint media;  // RTP destination announced in SDP: c= address + m= port
    // The other end of the same media line, from the matching offer or answer: a stream from
    // `peer` to `media` belongs to this call even where `media` is shared by many calls (a UAS
    // or media server port). Port 0 when not known (an offer not answered yet).
    Endpoint peer;
    Timestamp time;  // time of the SIP message that carried the SDP; for an end, when the dialog left its table
    // Position of that SIP message in the input (pipeline order): offline, a shard applies
    // bindings from other shards exactly where a single shard would have.
    std::uint64_t order = 0;
    // Offline, shards reading the input together: the newest input time up to that SIP message
    // (its own included); for an end at_deadline, the newest input time from which a single
    // reader applies it (before the datagram that brings the input there). Of a
    // binding and an end, the end comes first when its input clock is not later.
    Timestamp input_clock;
    // Offline, shards reading the input together, a binding (not an end): the newest input time
    // before that SIP message, where a single reader's media side (stream expiry) stands when it
    // applies it. The receiving shard runs its own there first.
    Timestamp media_clock;
    std::string_view call_id;  // a view: whoever queues a binding copies the text
    // The dialog key's block that holds call_id (DialogKey::call_id_text), or null: valid while
    // the binding is being sent; a shard that keeps the binding in its own tables shares the
    // block instead of copying the text. Whoever copies the binding elsewhere drops it.
    const CompactText* call_id_text = nullptr;
    // call_id_text when call_id is its very view, else null: the block a holder may share.
    const CompactText* call_id_block() const noexcept {
        const bool same = call_id_text != nullptr && call_id_text->view().data() == call_id.data() &&
                          call_id_text->size() == call_id.size();
        return same ? call_id_text : nullptr;
    }
    // Which dialog of that Call-ID (a hash of its From-tag, never 0): a Call-ID re-used by a
    // later call is another call.
    std::uint32_t dialog = 0;
    // Peer groups of that dialog (peer::PeerId of its caller and callee sides): a stream's
    // figures are labelled with its dialog's groups.
    std::uint8_t caller_peer = 0;
    std::uint8_t callee_peer = 0;
    std::array<CodecInfo, kMaxBindingCodecs> codecs{};
    std::uint8_t codec_count = 0;
    // Not a binding but its end: the dialog (call_id, dialog) has ended, and its bindings of
    // `media` go. Travels the same way as the bindings (to the shard that owns `media`, in
    // order), so it never overtakes them.
    bool dialog_ended = false;
    // An end the packet clock brought (the dialog's linger ran out at `time`), not a message at an
    // input position: a single reader applies it at the first clock step that reaches `time`.
    bool at_deadline = false;
    // The codecs are the other end's answer (the answer naming the offerer's address again), not
    // the formats RTP to `media` carries: they tell which of those the call chose (RFC 3264: the
    // answer's first format that the offer also had). In padding: the size is unchanged.
    bool codecs_of_peer = false;
    // `media` is where the line's RTCP alone goes (an a=rtcp address, RFC 3605, or the port
    // after an odd RTP port), another media_key() than its RTP's, and `peer` the other end's RTCP
    // address: reports from `media` belong to this call, though its streams live where its RTP
    // goes (maybe another shard).
    bool rtcp = false;
};

// RTP and its RTCP (port + 1 of an even port, or the same port with rtcp-mux) map to one key, so
// both land on the shard that owns the stream. RTCP anywhere else has a binding of its own
// (MediaBinding::rtcp).
inline Endpoint media_key(const Endpoint& e) noexcept {
    return Endpoint{e.address, static_cast<std::uint16_t>(e.port & ~1U)};
}

}  // namespace hepd
