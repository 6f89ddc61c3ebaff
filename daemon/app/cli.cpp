#include "app/cli.hpp"

#include "export/exporter.hpp"

#include <string_view>

namespace hepd::app {

namespace {

struct FlagKey {
    std::string_view flag;
    std::string_view key;
};

// Flags that set one configuration key each; they win over the file and the defaults.
constexpr FlagKey kOverrideFlags[] = {
    {"--hep-listen", "hep.listen"},
    {"--hep-rate-limit", "hep.rate_limit.rate"},
    {"--metrics-listen", "metrics.listen"},
    {"--state-dir", "state.dir"},
    {"--cores", "shards.count"},
    {"--log-level", "log_level"},
};

}  // namespace

std::string usage_text() {
    return R"(hepd - HEP collector: rebuilds SIP dialogs and RTP streams, exports them to Prometheus

Usage:
  hepd [OPTIONS]                 run the collector (embedded defaults when no --config)
  hepd pcap FILE... [--cores N] [--report] [--json PATH] [--records PATH] [--config FILE]
                                 read pcap/pcapng captures (gzip too) through the same shards
                                 and report: --report prints the full report (else one line),
                                 --json writes it as JSON (- for stdout), --records writes one
                                 call record (JSON line) per finished dialog (- for stdout)
  hepd check-config FILE [--print]
                                 validate FILE; --print shows the effective configuration
  hepd snapshot show FILE        print a snapshot (dialogs and streams in progress) as JSON
  hepd -V | --version            print the version and the commit it was built from
  hepd -h | --help               print this help (also after a subcommand)

Options (each overrides the configuration file):
  --config FILE                  YAML configuration (see /etc/hepd/hepd.yaml for every key)
  --hep-listen ADDR:PORT         HEP listen address for UDP and TCP; repeat for several
                                 (default 0.0.0.0:9060; IPv6 as [::]:9060)
  --hep-rate-limit RATE          HEP packets per second accepted before decoding, over all
                                 senders; 0 means unlimited (default 0)
  --metrics-listen ADDR:PORT     Prometheus endpoint (default 0.0.0.0:9469, path /metrics)
  --state-dir DIR                where snapshots are kept (default /var/lib/hepd)
  --cores N                      reconstruction shards; 0 = one per hardware thread, less the
                                 daemon's UDP receive threads (default 0)
  --log-level LEVEL              trace, debug, info, warn, error, critical or off (default info)

Signals: SIGTERM or SIGINT stops the daemon after a final snapshot; SIGHUP re-reads --config.

Exit status: 0 success, 64 usage error, 65 bad input file (pcap, snapshot show), 69 a HEP
listener or the metrics port cannot be opened, 73 unusable state directory, 78 configuration
error.
)";
}

CommandLine parse_command_line(int argc, char** argv) {
    CommandLine cl;
    std::vector<std::string_view> args(argv + 1, argv + argc);
    std::size_t i = 0;
    auto take_value = [&](std::string_view flag) -> std::string {
        if (i + 1 >= args.size()) throw UsageError(std::string(flag) + " needs a value");
        return std::string(args[++i]);
    };

    // Help wins wherever it is asked for, so that every subcommand has it (`hepd pcap --help`).
    for (const auto arg : args) {
        if (arg == "--help" || arg == "-h") {
            cl.verb = Verb::help;
            return cl;
        }
    }
    if (!args.empty() && args[0] == "snapshot") {
        if (args.size() != 3 || args[1] != "show") throw UsageError("usage: hepd snapshot show FILE");
        cl.verb = Verb::snapshot_show;
        cl.snapshot_path = args[2];
        return cl;
    }
    if (!args.empty() && args[0] == "check-config") {
        cl.verb = Verb::check_config;
        for (i = 1; i < args.size(); ++i) {
            if (args[i] == "--print") {
                cl.print_config = true;
            } else if (!args[i].empty() && args[i][0] == '-') {
                throw UsageError("check-config: unknown option " + std::string(args[i]));
            } else if (cl.config_path.empty()) {
                cl.config_path = args[i];
            } else {
                throw UsageError("check-config takes one FILE");
            }
        }
        if (cl.config_path.empty()) throw UsageError("check-config needs a FILE");
        return cl;
    }

    std::size_t first = 0;
    if (!args.empty() && args[0] == "pcap") {
        cl.verb = Verb::pcap;
        first = 1;
    }
    for (i = first; i < args.size(); ++i) {
        const std::string_view arg = args[i];
        if (cl.verb == Verb::pcap) {
            if (arg == "--report") {
                cl.pcap_report = true;
                continue;
            }
            if (arg == "--json") {
                cl.pcap_json = take_value(arg);
                continue;
            }
            if (arg == "--records") {
                cl.pcap_records = take_value(arg);
                continue;
            }
            if (arg.empty() || arg[0] != '-') {
                cl.pcap_files.emplace_back(arg);
                continue;
            }
        }
        if (arg == "--version" || arg == "-V") {
            cl.verb = Verb::version;
            return cl;
        }
        if (arg == "--config") {
            cl.config_path = take_value(arg);
            continue;
        }
        bool matched = false;
        for (const auto& fk : kOverrideFlags) {
            if (arg == fk.flag) {
                cl.overrides.push_back({std::string(fk.flag), std::string(fk.key), take_value(arg)});
                matched = true;
                break;
            }
        }
        if (!matched) throw UsageError("unknown argument " + std::string(arg) + " (see hepd --help)");
    }
    if (cl.verb == Verb::pcap && cl.pcap_files.empty()) throw UsageError("pcap needs at least one FILE");
    return cl;
}

config::Config load_config(const std::string& path, const std::vector<Override>& overrides) {
    // Checked against what this build serves, as the daemon's start would find it.
    const config::Capabilities caps{metrics::serves_ipv6()};
    config::Config cfg = path.empty() ? config::defaults() : config::load_file(path, caps);
    // A repeated --hep-listen builds one list; every other flag sets its key once more. All are
    // applied before the configuration is checked as a whole: a flag's value may clash with the
    // file's only until another flag replaces that.
    std::vector<Override> merged;
    std::string listen;
    for (const auto& o : overrides) {
        if (o.key == "hep.listen") {
            listen += (listen.empty() ? "" : ",") + o.value;
        } else {
            merged.push_back(o);
        }
    }
    if (!listen.empty()) merged.push_back({"--hep-listen", "hep.listen", listen});
    config::apply_overrides(cfg, merged, caps);
    return cfg;
}

}  // namespace hepd::app
