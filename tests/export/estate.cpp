#include "estate.hpp"

#include "hep/encoder.hpp"
#include "hep/message.hpp"
#include "intake/agent_map.hpp"

#include <stdexcept>
#include <string_view>
#include <type_traits>

namespace hepd::test {

namespace {

intake::AgentMap estate_agents() {
    return intake::AgentMap({intake::AgentRule::by_capture_id("kamailio", kKamailioCaptureId),
                             intake::AgentRule::by_capture_id("asterisk", kAsteriskCaptureId)});
}

// TcpStats fields may be plain integers or core counters: bump them either way.
template <class T>
void bump(T& field, std::uint64_t n) {
    if constexpr (std::is_integral_v<T>)
        field += n;
    else
        field.add(static_cast<decltype(field.value())>(n));
}

constexpr std::string_view kOptionsPing =
    "OPTIONS sip:ping@10.9.0.2:5060 SIP/2.0\r\nVia: SIP/2.0/UDP 10.9.0.1:5060;branch=z9hG4bK-hep\r\n"
    "From: <sip:mon@10.9.0.1>;tag=m1\r\nTo: <sip:ping@10.9.0.2>\r\nCall-ID: hep-ping@10.9.0.1\r\n"
    "CSeq: 1 OPTIONS\r\nMax-Forwards: 70\r\nContent-Length: 0\r\n\r\n";

hep::Message hep_message(std::uint8_t version, std::uint8_t payload_type, std::uint32_t capture_id,
                         std::uint32_t seconds, std::string_view payload) {
    hep::Message m;
    m.version = version;
    m.ip_family = hep::family_ipv4;
    m.ip_protocol = 17;
    m.src = Endpoint{IpAddress::v4(0x0a090001U), 5060};
    m.dst = Endpoint{IpAddress::v4(0x0a090002U), 5060};
    for (auto f : {hep::Field::ip_family, hep::Field::ip_protocol, hep::Field::src_address, hep::Field::dst_address,
                   hep::Field::src_port, hep::Field::dst_port})
        m.mark(f);
    m.seconds = seconds;
    m.micros = 1000;
    m.mark(hep::Field::seconds);
    m.mark(hep::Field::micros);
    m.payload_type = payload_type;
    m.mark(hep::Field::payload_type);
    m.capture_id = capture_id;
    m.mark(hep::Field::capture_id);
    m.payload = as_bytes(payload);
    m.mark(hep::Field::payload);
    return m;
}

std::vector<std::uint8_t> encode(const hep::Message& m) {
    std::vector<std::uint8_t> out;
    const bool ok = m.version == 3 ? hep::encode_v3(m, out) : hep::encode_legacy(m, m.version, out);
    if (!ok) throw std::runtime_error("test HEP message did not encode");
    return out;
}

void feed_intakes(Estate& e) {
    intake::IntakeOptions options;
    options.agents = estate_agents();
    // The UDP thread is live (its senders' clocks are checked); the TCP one is not.
    intake::IntakeOptions live = options;
    live.sender_clocks = intake::SenderClockOptions{};
    e.intakes.push_back(std::make_unique<intake::HepIntake>(live));
    e.intakes.push_back(std::make_unique<intake::HepIntake>(options));
    intake::HepIntake& udp = *e.intakes[0];
    intake::HepIntake& tcp = *e.intakes[1];
    IntakeFeed& f = e.feed;
    const Timestamp now = Timestamp::from_parts(1'700'000'100, 0);
    shard::Datagram out;

    auto accept = [&](intake::HepIntake& intake, intake::Carrier carrier, const std::vector<std::uint8_t>& bytes) {
        return intake.accept(ByteSpan(bytes.data(), bytes.size()), carrier, now, out, IpAddress::v4(0x0a090001U));
    };
    auto udp_v3 = [&](const std::vector<std::uint8_t>& bytes) {
        ++f.udp_v3_packets;
        f.udp_v3_bytes += bytes.size();
        return accept(udp, intake::Carrier::udp, bytes);
    };

    const auto sip_from_kamailio = encode(hep_message(3, 1, kKamailioCaptureId, 1'700'000'000, kOptionsPing));
    for (int i = 0; i < 3; ++i) f.sip_kamailio += udp_v3(sip_from_kamailio) ? 1 : 0;
    // sofia-sip writes no time: seconds == 0, replaced by the receive time.
    f.sip_kamailio += udp_v3(encode(hep_message(3, 1, kKamailioCaptureId, 0, kOptionsPing))) ? 1 : 0;
    ++f.fixup_zero;
    f.rtcp_json_asterisk +=
        udp_v3(encode(hep_message(3, 5, kAsteriskCaptureId, 1'700'000'000, "{\"ssrc\":1}"))) ? 1 : 0;
    f.log_other += udp_v3(encode(hep_message(3, 100, 9, 1'700'000'000, "a log line"))) ? 1 : 0;
    // Each of these three senders (capture ids 2001, 2002, 9) is 100 s behind the receive time:
    // beyond the 5 s limit once each. The zero-time message is on the receive clock already.
    f.clock_offset_exceeded = {1, 1, 1};  // other, kamailio, asterisk

    const std::vector<std::uint8_t> garbage{'h', 'e', 'l', 'l', 'o'};
    for (int i = 0; i < 2; ++i) {
        accept(udp, intake::Carrier::udp, garbage);
        ++f.udp_not_hep;
    }
    udp_v3({'H', 'E', 'P', '3', 0});
    ++f.udp_truncated;
    // Refused before decoding, yet received: counted by version like any other.
    ++f.udp_v3_packets;
    f.udp_v3_bytes += sip_from_kamailio.size();
    udp.count_drop(intake::DropReason::rate_limit, ByteSpan(sip_from_kamailio.data(), sip_from_kamailio.size()),
                   intake::Carrier::udp);
    ++f.udp_rate_limited;
    udp.count_queue_full(4);
    f.queue_full = 4;

    for (int i = 0; i < 2; ++i) {
        const auto v2 = encode(hep_message(2, 1, 9, 1'700'000'000, kOptionsPing));
        ++f.tcp_v2_packets;
        f.tcp_v2_bytes += v2.size();
        f.sip_other += accept(tcp, intake::Carrier::tcp, v2) ? 1 : 0;
    }
    const auto v1 = encode(hep_message(1, 1, 0, 0, kOptionsPing));
    ++f.tcp_v1_packets;
    f.tcp_v1_bytes += v1.size();
    f.sip_other += accept(tcp, intake::Carrier::tcp, v1) ? 1 : 0;
    ++f.fixup_missing;
}

std::uint16_t agent_of(const Endpoint& src) {
    if (!src.address.is_v4() || src.address.bytes()[0] != 10) return 0;
    switch (src.address.bytes()[1]) {
    case 1: return kKamailio;
    case 2: return kAsterisk;
    case 9: return src.address.bytes()[3] == 1 ? kKamailio : kAsterisk;  // the OPTIONS pinger, the pinged
    default: return 0;
    }
}

}  // namespace

std::vector<std::string> estate_agent_names() { return metrics::agent_names(estate_agents()); }

Estate::Estate(const gen::CorpusOptions& corpus, std::size_t shards) {
    std::vector<std::unique_ptr<shard::Worker>> owned;
    for (std::size_t i = 0; i < shards; ++i) {
        auto w = std::make_unique<shard::ShardWorker>(shard::ShardConfig{});
        workers.push_back(w.get());
        owned.push_back(std::move(w));
    }
    shard::PipelineOptions po;
    po.shards = shards;
    po.lossless = true;
    po.queue_batches = 8;
    po.batch_datagrams = 64;
    pipeline = std::make_unique<shard::Pipeline>(po, std::move(owned));
    pipeline->start();

    auto push = [&](Timestamp t, const Endpoint& src, const Endpoint& dst, ByteSpan payload) {
        shard::Datagram d;
        d.time = t;
        d.src = src;
        d.dst = dst;
        const bool sip = src.port == 5060 || dst.port == 5060;
        d.kind = sip ? PayloadClass::sip : PayloadClass::rtp;
        d.agent = sip ? agent_of(src) : 0;
        d.payload = payload;
        pipeline->producer(0).push(d);
    };
    truth = gen::generate(corpus, push);

    const Endpoint monitor{IpAddress::v4(0x0a090001U), 5060};
    const Endpoint pinged{IpAddress::v4(0x0a090002U), 5060};
    Timestamp end = truth.last;
    for (std::uint32_t i = 0; i < kOptionsPings; ++i) {
        const std::string n = std::to_string(i);
        const std::string via = "Via: SIP/2.0/UDP 10.9.0.1:5060;branch=z9hG4bK-opt" + n + "\r\n";
        const std::string from = "From: <sip:mon@10.9.0.1>;tag=m" + n + "\r\n";
        const std::string call_id = "Call-ID: opt-" + n + "@10.9.0.1\r\n";
        const std::string request = "OPTIONS sip:ping@10.9.0.2:5060 SIP/2.0\r\n" + via + from +
                                    "To: <sip:ping@10.9.0.2>\r\n" + call_id +
                                    "CSeq: 1 OPTIONS\r\nMax-Forwards: 70\r\nContent-Length: 0\r\n\r\n";
        const std::string response = "SIP/2.0 200 OK\r\n" + via + from + "To: <sip:ping@10.9.0.2>;tag=p" + n + "\r\n" +
                                     call_id + "CSeq: 1 OPTIONS\r\nContent-Length: 0\r\n\r\n";
        const Timestamp asked{truth.last.us + 1'000 + std::int64_t{i} * 50'000};
        end = Timestamp{asked.us + kOptionsDelayUs};
        push(asked, monitor, pinged, as_bytes(request));
        push(end, pinged, monitor, as_bytes(response));
        options_datagrams += 2;
    }
    pipeline->producer(0).flush();
    pipeline->finish(end);

    feed_intakes(*this);
    bump(tcp.open_connections, 3);
    bump(tcp.accepted_connections, 9);
    bump(tcp.accept_errors, 1);
    bump(tcp.closed[static_cast<std::size_t>(ingest::TcpCloseReason::peer_closed)], 5);
    bump(tcp.closed[static_cast<std::size_t>(ingest::TcpCloseReason::bad_frame)], 1);
    bump(tcp.frame_errors[static_cast<std::size_t>(hep::FramerError::length_too_large)], 1);

    relay::RelayOptions relay_options;
    relay_options.name = "homer";
    relay_options.host = "127.0.0.1";
    relay_options.queue_bytes = 128u << 10;
    relay = std::make_unique<relay::Relay>(relay_options);
    const std::vector<std::uint8_t> message(60000, 0x48);
    for (int i = 0; i < 3; ++i) ++(relay->producer(0).push(message) ? relay_queued : relay_queue_full);

    metrics::CollectorOptions options;
    options.agent_names = estate_agent_names();
    options.build = metrics::BuildInfo{"9.8.7", "0123456789ab"};
    collector = std::make_shared<metrics::Collector>(options);
    for (const auto* w : workers) collector->add_shard(*w);
    for (const auto& intake : intakes) collector->add_intake(intake->stats());
    collector->add_tcp(tcp);
    collector->set_pipeline(*pipeline);
    collector->set_kernel_drops([] { return kKernelDrops; });
    collector->set_snapshot([this] { return snapshot; });
    collector->add_relay(*relay);
}

Estate::~Estate() = default;

}  // namespace hepd::test
