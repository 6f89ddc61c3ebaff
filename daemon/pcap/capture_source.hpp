#pragma once
// The offline input: capture files in, shard::Datagrams out, in file order, exactly as the live
// path would produce them. HEP found in a capture goes through intake::HepIntake (so offline HEP
// decodes like live HEP); raw SIP and media are classified here. IP fragments and TCP streams are
// reassembled. Every frame ends in exactly one counter:
//   frames == sum(decode_errors) + fragments.fragments - fragments.reassembled + sum(packets)
#include "core/time.hpp"
#include "intake/hep_intake.hpp"
#include "pcap/decode.hpp"
#include "pcap/function_ref.hpp"
#include "pcap/ip_reassembly.hpp"
#include "pcap/reader.hpp"
#include "pcap/tcp_reassembly.hpp"
#include "rtp/demux.hpp"
#include "shard/datagram.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hepd::pcap {

struct CaptureOptions {
    std::vector<std::uint16_t> hep_ports{9060};  // config pcap.hep_ports
    std::vector<std::uint16_t> sip_ports{5060};  // config pcap.sip_ports
    // UDP on other ports: a payload that starts like a SIP start line is SIP, and one that is a
    // whole HEPv3 message ("HEP3" + its own length) is HEP. TCP on other ports: a segment that
    // starts like a SIP start line, or is a WebSocket handshake for the "sip" subprotocol, opens a
    // SIP stream in its direction.
    bool sniff_sip = true;
    bool sniff_hep = true;
    intake::IntakeOptions intake;
    ReassemblyOptions fragments;
    TcpOptions tcp;  // tcp.max_streams: config pcap.max_tcp_streams
    std::size_t max_inflated_bytes = FileReader::kDefaultMaxInflatedBytes;
};

// What became of each UDP datagram or TCP segment that decoded (after IP reassembly).
enum class PacketClass : std::uint8_t {
    hep_udp,
    hep_tcp,  // segments; the messages cut from them are counted by the intake
    sip_udp,
    sip_tcp,  // segments; messages in tcp.messages
    rtp,
    rtcp,
    stun,  // media-port neighbours (RFC 7983): counted and skipped
    zrtp,
    dtls,
    turn_channel,
    unknown_udp,  // none of the above: skipped
    other_tcp,    // TCP on a port that is neither HEP nor SIP: skipped
};
inline constexpr std::size_t kPacketClassCount = 12;
std::string_view to_string(PacketClass c) noexcept;

struct CaptureStats {
    std::uint64_t files = 0;                                   // files read to the end or an error
    std::array<std::uint64_t, kFileErrorCount> file_errors{};  // [none] unused
    std::uint64_t frames = 0;
    std::uint64_t bytes = 0;  // captured bytes of those frames
    std::array<std::uint64_t, kLinkTypeSlots> frames_by_link{};
    std::array<std::uint64_t, kDecodeErrorCount> decode_errors{};  // [none] and [ip_fragment] unused
    // IP packets taken out of a tunnel, by the outermost one ([none] unused): one per frame, or
    // per reassembled outer datagram when the tunnel itself was fragmented.
    std::array<std::uint64_t, kTunnelKindCount> tunnelled{};
    std::array<std::uint64_t, kPacketClassCount> packets{};
    std::uint64_t datagrams = 0;  // handed to the sink
    std::array<std::uint64_t, kPayloadClassCount> datagrams_by_kind{};
    ReassemblyStats fragments;
    TcpStats tcp;
    intake::IntakeStats hep;  // HEP messages found in the capture (UDP and TCP)

    std::uint64_t decode_errors_total() const noexcept;
    std::uint64_t packets_total() const noexcept;
    // Adds what `other` counted of frames another source read (pcap::SplitReader's decoders):
    // files, frames, bytes, links, decode errors, tunnels, packets, datagrams and HEP (not the
    // reassembly and TCP figures: only one source reads the frames that have any).
    void add_frames(const CaptureStats& other) noexcept;
};

class CaptureSource {
public:
    using DatagramSink = FunctionRef<void(const shard::Datagram&)>;
    // How far a file has been read: the byte offset into the (inflated) capture and its size.
    using ProgressSink = FunctionRef<void(std::uint64_t offset, std::uint64_t size)>;
    static constexpr std::uint64_t kProgressFrames = 16384;               // frames between two progress calls
    static constexpr std::uint64_t kReleaseLag = std::uint64_t{8} << 20;  // bytes kept mapped behind a reader

    explicit CaptureSource(CaptureOptions options = {});

    // Opens and reads one file to its end or first error, then returns that error (none at a
    // clean end). `message` (optional) gets a human-readable account of an error; `progress`
    // (optional) is called every kProgressFrames frames and once at the end.
    FileError read_file(const std::string& path, DatagramSink sink, std::string* message = nullptr,
                        const ProgressSink* progress = nullptr);
    // As read_file(), on what FileReader::open() gave for `path`: several sources can read
    // one opening (each a clone of it), sharing its mapping or inflated bytes.
    FileError read_opened(const std::string& path, const Result<FileReader, FileError>& opened, DatagramSink sink,
                          std::string* message = nullptr, const ProgressSink* progress = nullptr);
    // Reads what is left of `reader`.
    FileError read(FileReader& reader, DatagramSink sink, const ProgressSink* progress = nullptr);
    // One frame: the unit the walk-and-split modes use.
    void process(const Frame& frame, DatagramSink sink);
    // One frame if it is plain UDP (decode_plain_udp: Ethernet, IPv4, unfragmented), which
    // needs nothing from the frames before it, as process() would; false, and nothing done or
    // counted, for any other, which then needs process() in input order.
    bool process_plain(const Frame& frame, DatagramSink sink);
    // A file read to its end (none) or an error, or one that did not open.
    void count_file(FileError result) noexcept;
    // End of all input: incomplete fragments and TCP streams are counted and dropped.
    void finish() noexcept;

    CaptureStats stats() const noexcept;

private:
    void count_frame(CaptureStats& s, const Frame& frame) noexcept {
        ++s.frames;
        s.bytes += frame.data.size();
        ++s.frames_by_link[link_type_slot(frame.link_type)];
    }
    // A frame process_plain() did not take: IP reassembly, tunnels, TCP, decode errors.
    void process_other(const Frame& frame, DatagramSink sink);
    // What a UDP packet off the HEP and SIP ports carries (rtp::classify); unknown on them.
    rtp::PacketKind media_kind(const L4Packet& p) const noexcept;
    void udp(const L4Packet& p, rtp::PacketKind kind, DatagramSink sink);
    void tcp(const L4Packet& p, DatagramSink sink);
    void hep(ByteSpan bytes, intake::Carrier carrier, Timestamp time, DatagramSink sink);
    // Inlined into udp(), the per-packet path (GCC otherwise calls it: 10 instructions a packet).
    [[gnu::always_inline]] inline void raw(const L4Packet& p, PayloadClass kind, ByteSpan payload, Timestamp time,
                                           DatagramSink sink);
    void count(PacketClass c) noexcept { ++stats_.packets[static_cast<std::size_t>(c)]; }
    bool is_hep_port(std::uint16_t port) const noexcept { return test(hep_ports_, port); }
    bool is_sip_port(std::uint16_t port) const noexcept { return test(sip_ports_, port); }
    // HEP or SIP: media on such a port is not looked for.
    bool is_signalling_port(std::uint16_t port) const noexcept { return test(signalling_ports_, port); }
    static bool test(const std::array<std::uint64_t, 1024>& bits, std::uint16_t port) noexcept {
        return ((bits[port >> 6] >> (port & 63U)) & 1U) != 0;
    }

    CaptureOptions options_;
    std::array<std::uint64_t, 1024> hep_ports_{};
    std::array<std::uint64_t, 1024> sip_ports_{};
    std::array<std::uint64_t, 1024> signalling_ports_{};  // both of the above
    intake::HepIntake intake_;
    Reassembler fragments_;
    TcpReassembler tcp_;
    CaptureStats stats_;
    shard::Datagram datagram_;
    std::vector<std::uint8_t> inner_fragment_;
};

// Whether a UDP payload starts like a SIP request line ("INVITE sip:… SIP/2.0") or status line
// ("SIP/2.0 200 …"). Looks at the first line only.
bool looks_like_sip(ByteSpan payload) noexcept;

}  // namespace hepd::pcap
