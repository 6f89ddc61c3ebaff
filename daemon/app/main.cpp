// hepd: command line, configuration, wiring of listeners, signals. The only code tests do not
// link; they run the built binary instead.
#include "app/cli.hpp"
#include "app/pcap_command.hpp"
#include "app/wiring.hpp"
#include "config/config.hpp"
#include "core/log.hpp"
#include "core/version.hpp"
#include "hep/payload_type.hpp"
#include "ingest/hep_intake.hpp"
#include "ingest/listeners.hpp"
#include "ingest/token_bucket.hpp"

#include <boost/asio.hpp>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

namespace {

using namespace hepd;

constexpr int kExitUsage = 64;     // EX_USAGE
constexpr int kExitUnavailable = 69;  // EX_UNAVAILABLE: cannot bind a listener

config::Config load_config(const app::CommandLine& cl) {
    config::Config cfg = cl.config_path.empty() ? config::defaults() : config::load_file(cl.config_path);
    // A repeated --hep-listen builds one list; every other flag sets its key once more.
    std::string listen;
    for (const auto& o : cl.overrides) {
        if (o.key == "hep.listen") {
            listen += (listen.empty() ? "" : ",") + o.value;
        } else {
            config::apply_override(cfg, o.key, o.value, o.flag);
        }
    }
    if (!listen.empty()) config::apply_override(cfg, "hep.listen", listen, "--hep-listen");
    return cfg;
}

void log_summary(const ingest::IntakeStats& s, std::string_view when) {
    std::uint64_t decode_errors = 0;
    for (auto n : s.decode_errors) decode_errors += n;
    spdlog::info("{}: {} HEP packets received, {} accepted (sip {}, rtcp {}, rtcp_json {}, qos {}, log {}, other {}), "
                 "{} decode errors, {} dropped by the rate limit, {} dropped for auth",
                 when, s.received(), s.accepted(), s.accepted_by_class[0], s.accepted_by_class[1],
                 s.accepted_by_class[2], s.accepted_by_class[3], s.accepted_by_class[4], s.accepted_by_class[5],
                 decode_errors, s.dropped[static_cast<std::size_t>(ingest::DropReason::rate_limit)],
                 s.dropped[static_cast<std::size_t>(ingest::DropReason::auth)]);
}

int run_daemon(const config::Config& cfg) {
    setup_logging(config::to_string(cfg.log_level));
    spdlog::info("hepd {} ({}) starting", kVersion, kGitCommit);

    boost::asio::io_context io(1);
    ingest::HepIntake intake(app::intake_options(cfg));
    const SystemClock clock;
    const SteadyClock steady;
    ingest::TokenBucket global_limit(cfg.hep.rate_limit.rate, cfg.hep.rate_limit.burst, steady.now());
    if (global_limit.unlimited()) {
        spdlog::info("HEP rate limit: none");
    } else {
        spdlog::info("HEP rate limit: {} packets/s, burst {}", cfg.hep.rate_limit.rate,
                     cfg.hep.rate_limit.burst == 0 ? cfg.hep.rate_limit.rate : cfg.hep.rate_limit.burst);
    }
    shard::Datagram datagram;
    auto on_message = [&](ByteSpan bytes, const Endpoint& from, ingest::Carrier carrier) {
        // Refuse before decoding: dropping is cheaper than parsing.
        if (!global_limit.try_take(steady.now())) {
            intake.count_drop(ingest::DropReason::rate_limit, bytes, carrier);
            return;
        }
        if (!intake.accept(bytes, carrier, clock.now(), datagram)) return;
        if (spdlog::should_log(spdlog::level::trace)) {
            spdlog::trace("{} {} from {}: {} {} -> {} ({} bytes)", ingest::to_string(carrier),
                          shard::to_string(datagram.kind), from.to_string(), format_iso8601(datagram.time),
                          datagram.src.to_string(), datagram.dst.to_string(), datagram.payload.size());
        }
    };

    std::vector<std::unique_ptr<ingest::UdpListener>> udp;
    std::vector<std::unique_ptr<ingest::TcpListener>> tcp;
    for (const auto& at : cfg.hep.listen) {
        try {
            if (cfg.hep.udp.enabled) {
                udp.push_back(std::make_unique<ingest::UdpListener>(io, at, cfg.hep.udp.receive_buffer_bytes, on_message));
                spdlog::info("listening for HEP on udp://{}", udp.back()->local_endpoint().to_string());
            }
            if (cfg.hep.tcp.enabled) {
                const auto idle = std::chrono::duration_cast<std::chrono::seconds>(cfg.hep.tcp.idle_timeout);
                tcp.push_back(std::make_unique<ingest::TcpListener>(io, at, cfg.hep.tcp.max_connections,
                                                                    cfg.hep.tcp.max_frame_bytes, idle, on_message));
                spdlog::info("listening for HEP on tcp://{}", tcp.back()->local_endpoint().to_string());
            }
        } catch (const boost::system::system_error& e) {
            spdlog::critical("cannot listen on {}: {}", at.to_string(), e.code().message());
            return kExitUnavailable;
        }
    }

    boost::asio::signal_set signals(io, SIGINT, SIGTERM);
    signals.async_wait([&](boost::system::error_code ec, int signo) {
        if (ec) return;
        spdlog::info("signal {} received, stopping", signo);
        for (auto& l : udp) l->close();
        for (auto& l : tcp) l->close();
        io.stop();
    });

    boost::asio::steady_timer summary(io);
    std::function<void()> schedule_summary = [&] {
        summary.expires_after(std::chrono::seconds(60));
        summary.async_wait([&](boost::system::error_code ec) {
            if (ec) return;
            log_summary(intake.stats(), "last minute");
            schedule_summary();
        });
    };
    schedule_summary();

    spdlog::info("ready; Ctrl-C or SIGTERM stops");
    io.run();
    log_summary(intake.stats(), "at exit");
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    app::CommandLine cl;
    try {
        cl = app::parse_command_line(argc, argv);
    } catch (const app::UsageError& e) {
        std::fprintf(stderr, "hepd: %s\n", e.what());
        return kExitUsage;
    }

    switch (cl.verb) {
    case app::Verb::help: std::cout << app::usage_text(); return 0;
    case app::Verb::version: std::printf("hepd %s (commit %s)\n", kVersion, kGitCommit); return 0;
    case app::Verb::check_config:
    case app::Verb::pcap:
    case app::Verb::daemon: break;
    }

    config::Config cfg;
    try {
        cfg = load_config(cl);
    } catch (const config::ConfigError& e) {
        std::fprintf(stderr, "hepd: configuration error: %s\n", e.what());
        return config::kExitConfig;
    }

    if (cl.verb == app::Verb::check_config) {
        if (cl.print_config) std::cout << config::to_yaml(cfg);
        std::fprintf(stderr, "%s: configuration ok\n", cl.config_path.c_str());
        return 0;
    }
    if (cl.verb == app::Verb::pcap) {
        setup_logging(config::to_string(cfg.log_level));
        app::PcapArgs args;
        args.files = cl.pcap_files;
        for (const auto& o : cl.overrides)
            if (o.key == "shards.count") args.cores = cfg.shards.count;
        args.report = cl.pcap_report;
        args.json_path = cl.pcap_json;
        return app::run_pcap(args, cfg);
    }
    return run_daemon(cfg);
}
