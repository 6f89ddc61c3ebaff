// Writes a generated capture (see bench/gen/call_generator.hpp) and prints its ground truth.
//   hepd_corpus OUT.pcap [--calls N] [--call-ids K] [--stream-pairs K] [--media-seconds S]
//               [--loss P] [--duplicates P] [--reorder P] [--jitter-ms J] [--failed P]
//               [--cancelled P] [--interval-us U] [--seed S] [--truth FILE.json]
//               [--media-reuse restart|continue] [--reuse-gap-ms MS] [--no-sip] [--codec pcma|opus]
//               [--reinvite P] [--reinvite-every N] [--early-media P] [--early-media-every N]
//               [--ssrc-change P] [--ssrc-change-every N] [--capture-from-ms MS]
//               [--rtcp] [--rtcp-xr] [--rtcp-json] [--rtcp-interval-ms MS] [--idle-timeout-s S]
//               [--streams FILE.jsonl]
//
// Re-use: --stream-pairs K shares K media address pairs round robin, a pair taken again only once
// the previous call on it ended plus --reuse-gap-ms (default 100); --media-reuse restart (sipp:
// same SSRC, sequence and timestamp base every call, the default) or continue (SBC: carry on
// from the previous call on the pair). --call-ids K re-uses Call-IDs the same way. --codec opus
// offers Opus (dynamic payload type 111, 48 kHz) instead of PCMA (8, 8 kHz).
// Scenarios (completed calls; P percent of them drawn at random, or every Nth): a mid-call
// re-INVITE moving the caller's media port, early media (183 + SDP and RTP from an announcement
// address, then 200 + SDP), an SSRC change half way through the caller's stream. --capture-from-ms
// drops every packet before that offset (calls already set up have no SDP in the capture);
// --no-sip writes media (and RTCP) only.
// RTCP: --rtcp raw SR/RR + SDES from each stream's receiver (port + 1), --rtcp-xr adds an XR VoIP
// metrics block, --rtcp-json the same reports as HEPv3 type 5 (correlation id = Call-ID) from a
// media relay (10.8.0.1) to the collector (10.0.0.100:9060). --idle-timeout-s is the collector's
// stream idle timeout the truth's finish reasons assume (default 30). --streams writes the
// per-stream truth, one JSON object a line.
#include "gen/call_generator.hpp"
#include "gen/pcap_writer.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>

using namespace hepd;

int main(int argc, char** argv) {
    if (argc < 2 || argv[1][0] == '-') {
        std::fprintf(stderr, "usage: %s OUT.pcap [options] (see the source header)\n", argv[0]);
        return 64;
    }
    gen::CorpusOptions o;
    std::string truth_path;
    std::string streams_path;
    for (int i = 2; i < argc; ++i) {
        const std::string k = argv[i];
        // Flags without a value.
        if (k == "--no-sip") {
            o.sip = false;
            continue;
        }
        if (k == "--rtcp") {
            o.rtcp = true;
            continue;
        }
        if (k == "--rtcp-xr") {
            o.rtcp = true;
            o.rtcp_xr = true;
            continue;
        }
        if (k == "--rtcp-json") {
            o.rtcp_json = true;
            continue;
        }
        if (i + 1 >= argc) {
            std::fprintf(stderr, "option %s needs a value\n", k.c_str());
            return 64;
        }
        const char* v = argv[++i];
        const auto u32 = [v] { return static_cast<std::uint32_t>(std::strtoul(v, nullptr, 10)); };
        const auto ms = [v] { return static_cast<std::int64_t>(std::strtod(v, nullptr) * 1000); };
        if (k == "--calls")
            o.calls = u32();
        else if (k == "--call-ids")
            o.call_ids = u32();
        else if (k == "--stream-pairs")
            o.stream_pairs = u32();
        else if (k == "--media-seconds")
            o.media_seconds = std::strtod(v, nullptr);
        else if (k == "--loss")
            o.loss_percent = std::strtod(v, nullptr);
        else if (k == "--duplicates")
            o.duplicate_percent = std::strtod(v, nullptr);
        else if (k == "--reorder")
            o.reorder_percent = std::strtod(v, nullptr);
        else if (k == "--jitter-ms")
            o.jitter_ms = std::strtod(v, nullptr);
        else if (k == "--failed")
            o.failed_percent = std::strtod(v, nullptr);
        else if (k == "--cancelled")
            o.cancelled_percent = std::strtod(v, nullptr);
        else if (k == "--interval-us")
            o.call_interval_us = std::strtoll(v, nullptr, 10);
        else if (k == "--seed")
            o.seed = std::strtoull(v, nullptr, 10);
        else if (k == "--truth")
            truth_path = v;
        else if (k == "--streams")
            streams_path = v;
        else if (k == "--reuse-gap-ms")
            o.reuse_gap_us = ms();
        else if (k == "--codec") {
            if (std::strcmp(v, "pcma") == 0) {
                o.codec = gen::VoiceCodec::pcma;
            } else if (std::strcmp(v, "opus") == 0) {
                o.codec = gen::VoiceCodec::opus;
            } else {
                std::fprintf(stderr, "--codec is pcma or opus, not %s\n", v);
                return 64;
            }
        } else if (k == "--media-reuse") {
            if (std::strcmp(v, "restart") == 0) {
                o.media_reuse = gen::MediaReuse::restart;
            } else if (std::strcmp(v, "continue") == 0) {
                o.media_reuse = gen::MediaReuse::continue_;
            } else {
                std::fprintf(stderr, "--media-reuse is restart or continue, not %s\n", v);
                return 64;
            }
        } else if (k == "--reinvite")
            o.reinvite.percent = std::strtod(v, nullptr);
        else if (k == "--reinvite-every")
            o.reinvite.every = u32();
        else if (k == "--early-media")
            o.early_media.percent = std::strtod(v, nullptr);
        else if (k == "--early-media-every")
            o.early_media.every = u32();
        else if (k == "--ssrc-change")
            o.ssrc_change.percent = std::strtod(v, nullptr);
        else if (k == "--ssrc-change-every")
            o.ssrc_change.every = u32();
        else if (k == "--capture-from-ms")
            o.capture_from_us = ms();
        else if (k == "--rtcp-interval-ms")
            o.rtcp_interval_us = ms();
        else if (k == "--idle-timeout-s")
            o.stream_idle_timeout_us = ms() * 1000;
        else {
            std::fprintf(stderr, "unknown option %s\n", k.c_str());
            return 64;
        }
    }
    gen::PcapWriter out(argv[1]);
    const auto truth = gen::generate(
        o, [&](Timestamp t, const Endpoint& s, const Endpoint& d, ByteSpan p, const gen::PacketInfo& info) {
            if (info.kind == gen::PacketKind::rtcp_json) {
                out.hep3(t, s, d, p, 5, info.correlation_id);  // HEP payload type 5: RTCP as JSON
            } else {
                out.udp(t, s, d, p);
            }
        });
    std::map<gen::CallOutcome, std::uint64_t> outcomes;
    for (const auto& c : truth.calls) ++outcomes[c.outcome];
    std::uint64_t lost = 0;
    std::map<gen::ExpectedFinish, std::uint64_t> finishes;
    for (const auto& s : truth.streams) {
        lost += s.lost;
        ++finishes[s.finish];
    }
    const auto n = [](std::uint64_t v) { return static_cast<unsigned long long>(v); };
    char summary[1024];
    std::snprintf(summary, sizeof summary,
                  "{\"packets\": %llu, \"sip_packets\": %llu, \"rtp_packets\": %llu, \"rtcp_packets\": %llu, "
                  "\"rtcp_json_packets\": %llu, \"calls\": %zu, \"hidden_calls\": %llu, "
                  "\"completed\": %llu, \"failed\": %llu, \"cancelled\": %llu, \"streams\": %zu, \"rtp_lost\": %llu, "
                  "\"streams_finished\": {\"rebound\": %llu, \"restarted\": %llu, \"idle\": %llu, \"flushed\": %llu, "
                  "\"unknown\": %llu}}\n",
                  n(out.frames()), n(truth.sip_packets), n(truth.rtp_packets), n(truth.rtcp_packets),
                  n(truth.rtcp_json_packets), truth.calls.size(), n(truth.hidden_calls),
                  n(outcomes[gen::CallOutcome::completed]), n(outcomes[gen::CallOutcome::failed]),
                  n(outcomes[gen::CallOutcome::cancelled]), truth.streams.size(), n(lost),
                  n(finishes[gen::ExpectedFinish::rebound]), n(finishes[gen::ExpectedFinish::restarted]),
                  n(finishes[gen::ExpectedFinish::idle]), n(finishes[gen::ExpectedFinish::flushed]),
                  n(finishes[gen::ExpectedFinish::unknown]));
    std::fputs(summary, stdout);
    if (!truth_path.empty()) std::ofstream(truth_path) << summary;
    if (!streams_path.empty()) {
        std::ofstream f(streams_path);
        for (const auto& st : truth.streams) {
            char line[1024];
            const auto& r = st.receiver;
            std::snprintf(line, sizeof line,
                          "{\"call_id\": \"%s\", \"call\": %u, \"calls\": %u, \"src\": \"%s\", \"dst\": \"%s\", "
                          "\"ssrc\": %u, \"first_us\": %lld, \"last_us\": %lld, \"sent\": %llu, \"received\": %llu, "
                          "\"lost\": %llu, \"duplicates\": %llu, \"jitter_ms\": %.6f, \"finish\": \"%s\", "
                          "\"receiver\": {\"reports\": %u, \"xr_reports\": %u, \"fraction_lost\": %u, "
                          "\"cumulative_lost\": %d, \"highest_seq\": %u, \"jitter\": %u, \"rtt_us\": %u}}\n",
                          st.call_id.c_str(), st.call_index, st.calls, st.src.to_string().c_str(),
                          st.dst.to_string().c_str(), st.ssrc, static_cast<long long>(st.first.us),
                          static_cast<long long>(st.last.us), n(st.sent), n(st.received), n(st.lost), n(st.duplicates),
                          st.jitter_ms, std::string(gen::to_string(st.finish)).c_str(), r.reports, r.xr_reports,
                          unsigned{r.fraction_lost}, r.cumulative_lost, r.highest_seq, r.jitter, r.rtt_us);
            f << line;
        }
    }
    return 0;
}
