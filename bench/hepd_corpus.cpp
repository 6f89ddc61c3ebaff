// Writes a generated capture (see bench/gen/call_generator.hpp) and prints its ground truth.
//   hepd_corpus OUT.pcap [--calls N] [--call-ids K] [--stream-pairs K] [--media-seconds S]
//               [--loss P] [--duplicates P] [--reorder P] [--jitter-ms J] [--failed P]
//               [--cancelled P] [--interval-us U] [--seed S] [--truth FILE.json]
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
    for (int i = 2; i + 1 < argc; i += 2) {
        const std::string k = argv[i];
        const char* v = argv[i + 1];
        if (k == "--calls") o.calls = static_cast<std::uint32_t>(std::strtoul(v, nullptr, 10));
        else if (k == "--call-ids") o.call_ids = static_cast<std::uint32_t>(std::strtoul(v, nullptr, 10));
        else if (k == "--stream-pairs") o.stream_pairs = static_cast<std::uint32_t>(std::strtoul(v, nullptr, 10));
        else if (k == "--media-seconds") o.media_seconds = std::strtod(v, nullptr);
        else if (k == "--loss") o.loss_percent = std::strtod(v, nullptr);
        else if (k == "--duplicates") o.duplicate_percent = std::strtod(v, nullptr);
        else if (k == "--reorder") o.reorder_percent = std::strtod(v, nullptr);
        else if (k == "--jitter-ms") o.jitter_ms = std::strtod(v, nullptr);
        else if (k == "--failed") o.failed_percent = std::strtod(v, nullptr);
        else if (k == "--cancelled") o.cancelled_percent = std::strtod(v, nullptr);
        else if (k == "--interval-us") o.call_interval_us = std::strtoll(v, nullptr, 10);
        else if (k == "--seed") o.seed = std::strtoull(v, nullptr, 10);
        else if (k == "--truth") truth_path = v;
        else {
            std::fprintf(stderr, "unknown option %s\n", k.c_str());
            return 64;
        }
    }
    gen::PcapWriter out(argv[1]);
    const auto truth = gen::generate(o, [&](Timestamp t, const Endpoint& s, const Endpoint& d, ByteSpan p) {
        out.udp(t, s, d, p);
    });
    std::map<gen::CallOutcome, std::uint64_t> outcomes;
    for (const auto& c : truth.calls) ++outcomes[c.outcome];
    std::uint64_t lost = 0;
    for (const auto& s : truth.streams) lost += s.lost;
    char summary[512];
    std::snprintf(summary, sizeof summary,
                  "{\"packets\": %llu, \"sip_packets\": %llu, \"rtp_packets\": %llu, \"calls\": %zu, "
                  "\"completed\": %llu, \"failed\": %llu, \"cancelled\": %llu, \"streams\": %zu, \"rtp_lost\": %llu}\n",
                  static_cast<unsigned long long>(out.frames()), static_cast<unsigned long long>(truth.sip_packets),
                  static_cast<unsigned long long>(truth.rtp_packets), truth.calls.size(),
                  static_cast<unsigned long long>(outcomes[gen::CallOutcome::completed]),
                  static_cast<unsigned long long>(outcomes[gen::CallOutcome::failed]),
                  static_cast<unsigned long long>(outcomes[gen::CallOutcome::cancelled]), truth.streams.size(),
                  static_cast<unsigned long long>(lost));
    std::fputs(summary, stdout);
    if (!truth_path.empty()) std::ofstream(truth_path) << summary;
    return 0;
}
