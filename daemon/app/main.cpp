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
#include "ingest/ingest_control.hpp"
#include "ingest/ingest_path.hpp"
#include "ingest/listeners.hpp"
#include "ingest/udp_receiver.hpp"

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
    using hep::PayloadClass;
    std::uint64_t decode_errors = 0;
    for (const auto& n : s.decode_errors) decode_errors += n.value();
    spdlog::info("{}: {} HEP packets received, {} accepted (sip {}, rtcp {}, rtcp_json {}, qos {}, log {}, other {}), "
                 "{} decode errors, {} dropped by the rate limit, {} dropped for auth, {} not allowed",
                 when, s.received(), s.accepted(), s.by_class(PayloadClass::sip), s.by_class(PayloadClass::rtcp),
                 s.by_class(PayloadClass::rtcp_json), s.by_class(PayloadClass::qos), s.by_class(PayloadClass::log),
                 s.by_class(PayloadClass::other), decode_errors, s.drops(ingest::DropReason::rate_limit),
                 s.drops(ingest::DropReason::auth), s.drops(ingest::DropReason::not_allowed));
}

// Configuration -> what ingest can change on SIGHUP (rate limits, auth key, allow list, agents).
ingest::IngestPolicy ingest_policy(const config::Config& cfg) {
    ingest::IngestPolicy p;
    p.limits.rate = cfg.hep.rate_limit.rate;
    p.limits.burst = cfg.hep.rate_limit.burst;
    p.limits.per_agent_rate = cfg.hep.rate_limit.per_agent_rate;
    p.limits.per_agent_burst = cfg.hep.rate_limit.per_agent_burst;
    p.auth_key = cfg.hep.auth_key;
    std::vector<ingest::Prefix> allow;
    for (const auto& c : cfg.hep.allow)
        if (auto prefix = ingest::Prefix::make(c.network(), c.prefix_len())) allow.push_back(*prefix);
    p.allow = ingest::AllowList(std::move(allow));
    std::vector<ingest::AgentRule> rules;
    for (const auto& a : cfg.agents) {
        switch (a.selector) {
        case config::AgentConfig::Selector::capture_id:
            rules.push_back(ingest::AgentRule::by_capture_id(a.name, a.capture_id));
            break;
        case config::AgentConfig::Selector::node_name:
            rules.push_back(ingest::AgentRule::by_node_name(a.name, a.node_name));
            break;
        case config::AgentConfig::Selector::cidr:
            if (auto prefix = ingest::Prefix::make(a.cidr.network(), a.cidr.prefix_len()))
                rules.push_back(ingest::AgentRule::by_source(a.name, *prefix));
            break;
        }
    }
    p.agents = ingest::AgentMap(std::move(rules));
    if (p.agents.ignored_rules() > 0)
        spdlog::warn("{} agent entries ignored: at most {} agent names are labelled", p.agents.ignored_rules(),
                     ingest::AgentMap::kMaxNames);
    return p;
}

// Until the shards are wired in: accepted datagrams are only traced (one sink per receive thread).
class TraceSink final : public ingest::DatagramSink {
public:
    void push(const shard::Datagram& d) override {
        if (spdlog::should_log(spdlog::level::trace)) {
            spdlog::trace("{} {} {} -> {} ({} bytes)", shard::to_string(d.kind), format_iso8601(d.time),
                          d.src.to_string(), d.dst.to_string(), d.payload.size());
        }
    }
    void flush() override {}
    std::uint64_t dropped() const noexcept override { return 0; }
};

int run_daemon(const config::Config& cfg) {
    setup_logging(config::to_string(cfg.log_level));
    spdlog::info("hepd {} ({}) starting", kVersion, kGitCommit);

    boost::asio::io_context io(1);
    const SystemClock clock;
    const SteadyClock steady;
    ingest::IngestControl control(ingest_policy(cfg), steady);
    if (cfg.hep.rate_limit.rate == 0) {
        spdlog::info("HEP rate limit: none");
    } else {
        spdlog::info("HEP rate limit: {} packets/s, burst {}", cfg.hep.rate_limit.rate,
                     cfg.hep.rate_limit.burst == 0 ? cfg.hep.rate_limit.rate : cfg.hep.rate_limit.burst);
    }
    ingest::IngestPathOptions path_options;
    path_options.intake = app::intake_options(cfg);
    std::vector<std::unique_ptr<TraceSink>> sinks;
    auto new_sink = [&](std::size_t) -> ingest::DatagramSink& { return *sinks.emplace_back(std::make_unique<TraceSink>()); };
    // The TCP listeners all run on this thread's io_context and share one path.
    ingest::IngestPath tcp_path(control, new_sink(0), clock, path_options);

    std::vector<std::unique_ptr<ingest::UdpReceiver>> udp;
    std::vector<std::unique_ptr<ingest::TcpListener>> tcp;
    for (const auto& at : cfg.hep.listen) {
        try {
            if (cfg.hep.udp.enabled) {
                ingest::UdpOptions o;
                o.listen = at;
                o.threads = cfg.hep.udp.receive_threads;
                o.batch_size = cfg.hep.udp.batch_size;
                o.receive_buffer_bytes = cfg.hep.udp.receive_buffer_bytes;
                udp.push_back(std::make_unique<ingest::UdpReceiver>(o, control, path_options, new_sink, clock));
                spdlog::info("listening for HEP on udp://{} ({} receive threads)",
                             udp.back()->local_endpoint().to_string(), udp.back()->threads());
            }
            if (cfg.hep.tcp.enabled) {
                ingest::TcpOptions o;
                o.listen = at;
                o.max_connections = cfg.hep.tcp.max_connections;
                o.max_frame_bytes = cfg.hep.tcp.max_frame_bytes;
                o.idle_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(cfg.hep.tcp.idle_timeout);
                tcp.push_back(std::make_unique<ingest::TcpListener>(io, o, tcp_path));
                spdlog::info("listening for HEP on tcp://{}", tcp.back()->local_endpoint().to_string());
            }
        } catch (const boost::system::system_error& e) {
            spdlog::critical("cannot listen on {}: {}", at.to_string(), e.code().message());
            return kExitUnavailable;
        }
    }
    for (auto& r : udp) r->start();

    auto merged = [&] {
        ingest::IntakeStats total;
        total.merge(tcp_path.stats());
        for (const auto& r : udp) total.merge(r->merged_stats());
        return total;
    };

    boost::asio::signal_set signals(io, SIGINT, SIGTERM);
    signals.async_wait([&](boost::system::error_code ec, int signo) {
        if (ec) return;
        spdlog::info("signal {} received, stopping", signo);
        for (auto& l : udp) l->stop();
        for (auto& l : tcp) l->close();
        io.stop();
    });

    boost::asio::steady_timer summary(io);
    std::function<void()> schedule_summary = [&] {
        summary.expires_after(std::chrono::seconds(60));
        summary.async_wait([&](boost::system::error_code ec) {
            if (ec) return;
            log_summary(merged(), "last minute");
            schedule_summary();
        });
    };
    schedule_summary();

    spdlog::info("ready; Ctrl-C or SIGTERM stops");
    io.run();
    for (auto& l : udp) l->stop();
    log_summary(merged(), "at exit");
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
