// hepd: parses the command line and dispatches to the daemon, `hepd pcap` or the small verbs.
// With the daemon, the only code tests do not link; they run the built binary instead.
#include "app/cli.hpp"
#include "app/daemon.hpp"
#include "app/pcap_command.hpp"
#include "config/config.hpp"
#include "core/log.hpp"
#include "core/version.hpp"
#include "snapshot/snapshot.hpp"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <csignal>
#include <cstdio>
#include <iostream>
#include <string>

namespace {

using namespace hepd;

constexpr int kExitUsage = 64;      // EX_USAGE
constexpr int kExitDataError = 65;  // EX_DATAERR: a file that is not what it should be

// glibc raises its mmap threshold to the size of every large block freed, after which blocks of
// that size come from the heap arenas instead, where the pages stay resident after free and the
// shard's small allocations settle between them. A snapshot capture copies each table into a
// vector of tens of MB once a minute: with the threshold fixed, those always come from mmap and
// go back to the kernel when freed, and the daemon's RSS follows its tables instead of climbing
// capture after capture (issue 13's soak).
void fix_mmap_threshold() {
#if defined(__GLIBC__)
    mallopt(M_MMAP_THRESHOLD, 1 << 20);  // NOLINT(concurrency-mt-unsafe): before any thread starts
#endif
}

}  // namespace

int main(int argc, char** argv) {
    app::hold_signals();  // until the daemon's handlers exist; released at once for the other commands
    // A file size limit (RLIMIT_FSIZE, LimitFSIZE=) would kill hepd with SIGXFSZ in the middle of
    // a snapshot; ignored, the write fails with EFBIG instead, is counted and retried.
    std::signal(SIGXFSZ, SIG_IGN);
    app::CommandLine cl;
    try {
        cl = app::parse_command_line(argc, argv);
    } catch (const app::UsageError& e) {
        std::fprintf(stderr, "hepd: %s\n", e.what());
        return kExitUsage;
    }

    if (cl.verb != app::Verb::daemon) app::release_signals();  // Ctrl-C stops them as usual

    switch (cl.verb) {
    case app::Verb::help: std::cout << app::usage_text(); return 0;
    case app::Verb::version: std::printf("hepd %s (commit %s)\n", kVersion, kGitCommit); return 0;
    case app::Verb::snapshot_show: {
        std::string detail;
        auto file = snapshot::read_snapshot(cl.snapshot_path, &detail);
        if (!file) {
            std::fprintf(stderr, "hepd: %s: %s (%s) %s\n", cl.snapshot_path.c_str(),
                         std::string(snapshot::describe(file.error())).c_str(),
                         std::string(snapshot::to_string(file.error())).c_str(), detail.c_str());
            return kExitDataError;
        }
        std::cout << snapshot::to_json(*file) << "\n";
        return 0;
    }
    case app::Verb::check_config:
    case app::Verb::pcap:
    case app::Verb::daemon: break;
    }

    config::Config cfg;
    try {
        cfg = app::load_config(cl.config_path, cl.overrides);
    } catch (const config::ConfigError& e) {
        std::fprintf(stderr, "hepd: configuration error: %s\n", e.what());
        return config::kExitConfig;
    }

    if (cl.verb == app::Verb::check_config) {
        if (cl.print_config) std::cout << config::to_yaml(cfg);
        std::fprintf(stderr, "%s: configuration ok\n", cl.config_path.c_str());
        return 0;
    }
    setup_logging(config::to_string(cfg.log_level));
    if (cl.verb == app::Verb::pcap) {
        app::PcapArgs args;
        args.files = cl.pcap_files;
        for (const auto& o : cl.overrides)
            if (o.key == "shards.count") args.cores = cfg.shards.count;
        args.report = cl.pcap_report;
        args.json_path = cl.pcap_json;
        args.records_path = cl.pcap_records;
        return app::run_pcap(args, cfg);
    }
    fix_mmap_threshold();
    return app::Daemon(cfg, cl.config_path, cl.overrides).run();
}
