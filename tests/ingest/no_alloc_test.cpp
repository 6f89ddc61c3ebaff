// The steady state of the live receive path allocates nothing: UDP receive (recvmmsg) and TCP
// read (framer) -> IngestPath -> HepIntake -> ProducerSink -> Pipeline producer, the copy of each
// accepted message into a HEP relay's queue, and the flush timer. This executable replaces the global operator new and
// counts the allocations made on the receive threads (the UDP receive thread and the thread running the TCP listener),
// which mark themselves through their sink; the test thread, the shard thread and the kernel are not counted.
#include "hep_message.hpp"
#include "ingest/listeners.hpp"
#include "ingest/udp_receiver.hpp"
#include "ingest_support.hpp"
#include "relay/relay.hpp"
#include "shard_support.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <vector>

namespace {

std::atomic<bool> g_counting{false};
std::atomic<std::uint64_t> g_allocations{0};
thread_local bool t_receive_thread = false;

void note_allocation() noexcept {
    if (t_receive_thread && g_counting.load(std::memory_order_relaxed))
        g_allocations.fetch_add(1, std::memory_order_relaxed);
}

void* allocate(std::size_t n) {
    note_allocation();
    if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
    throw std::bad_alloc();
}

void* allocate_aligned(std::size_t n, std::align_val_t a) {
    note_allocation();
    const auto align = static_cast<std::size_t>(a);
    const std::size_t size = (n + align - 1) / align * align;
    if (void* p = std::aligned_alloc(align, size == 0 ? align : size)) return p;
    throw std::bad_alloc();
}

}  // namespace

void* operator new(std::size_t n) { return allocate(n); }
void* operator new[](std::size_t n) { return allocate(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
    note_allocation();
    return std::malloc(n == 0 ? 1 : n);
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
    note_allocation();
    return std::malloc(n == 0 ? 1 : n);
}
void* operator new(std::size_t n, std::align_val_t a) { return allocate_aligned(n, a); }
void* operator new[](std::size_t n, std::align_val_t a) { return allocate_aligned(n, a); }
// GCC pairs a `new` it inlines (Boost's exception clones) with the free() inside these and
// warns of a mismatch it cannot see through: both sides are the replacements above.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

using namespace hepd;
using namespace hepd::ingest;
using hepd::test::ip;
namespace asio = boost::asio;

namespace {

const Timestamp kWall = Timestamp::from_parts(1'700'000'100, 0);

// Blocks the shard on the first datagram after close() until open(): the producer then fills
// every batch its link may ever own (the queue, the one the shard holds, the one being filled).
class GatedWorker final : public shard::Worker {
public:
    void process(const shard::Datagram&, shard::BindingSink&) override {
        if (closed_.load(std::memory_order_acquire)) {
            blocked_.store(true, std::memory_order_release);
            while (closed_.load(std::memory_order_acquire)) std::this_thread::sleep_for(std::chrono::milliseconds(1));
            blocked_.store(false, std::memory_order_release);
        }
        processed.fetch_add(1, std::memory_order_relaxed);
    }
    void bind(const MediaBinding&) override {}
    void advance(Timestamp, shard::BindingSink&) override {}
    void finish(Timestamp) override {}

    void close() { closed_.store(true, std::memory_order_release); }
    void open() { closed_.store(false, std::memory_order_release); }
    bool blocked() const { return blocked_.load(std::memory_order_acquire); }
    std::atomic<std::uint64_t> processed{0};

private:
    std::atomic<bool> closed_{false};
    std::atomic<bool> blocked_{false};
};

// Marks the thread that calls it as a receive thread; optionally allocates on every push (to
// show that the count sees the receive threads).
class MarkingSink final : public DatagramSink {
public:
    explicit MarkingSink(shard::Pipeline::Producer& producer) : inner(producer) {}
    void push(const shard::Datagram& d) override {
        t_receive_thread = true;
        if (allocate_on_push.load(std::memory_order_relaxed)) {
            kept_ = ::operator new(64);
            ::operator delete(kept_);
        }
        inner.push(d);
    }
    void flush() override {
        t_receive_thread = true;
        inner.flush();
    }
    std::uint64_t dropped() const noexcept override { return inner.dropped(); }
    // As the daemon's RelayingSink: the accepted message, as received, into the relay's queue.
    void accepted_message(ByteSpan message) noexcept override {
        if (relay != nullptr) relay->push(message);
    }

    test::CountingProducerSink inner;
    relay::Relay::Producer* relay = nullptr;
    std::atomic<bool> allocate_on_push{false};

private:
    void* volatile kept_ = nullptr;
};

// Distinct Call-IDs, as real traffic has.
std::vector<std::vector<std::uint8_t>> sip_messages(int n, std::uint32_t capture_id) {
    std::vector<std::vector<std::uint8_t>> out;
    for (int i = 0; i < n; ++i) {
        const std::string sip = "INVITE sip:b@192.0.2.20 SIP/2.0\r\nVia: SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bK" +
                                std::to_string(i) + "\r\nCall-ID: call-" + std::to_string(i) +
                                "@10.0.0.1\r\nCSeq: 1 INVITE\r\nFrom: <sip:a@x>;tag=1\r\nTo: <sip:b@y>\r\n"
                                "Content-Length: 0\r\n\r\n";
        auto m = test::sip_message(sip, 1'700'000'100);
        m.capture_id = capture_id;
        out.push_back(test::encode(m));
    }
    return out;
}

// Real UDP and TCP listeners on loopback feeding one threaded shard through two producers.
class Rig {
public:
    Rig()
        : steady_(Timestamp{0}),
          wall_(kWall),
          control_(IngestPolicy{}, steady_),
          pipeline_(pipeline_options(), workers()),
          udp_sink_(pipeline_.producer(0)),
          tcp_sink_(pipeline_.producer(1)),
          tcp_path_(control_, tcp_sink_, wall_, path_options()),
          relay_(relay_options(relay_socket_)) {
        udp_sink_.relay = &relay_.producer(0);
        tcp_sink_.relay = &relay_.producer(1);
        relay_.start();
        pipeline_.start();
        UdpOptions o;
        o.listen = Endpoint{ip("127.0.0.1"), 0};
        o.receive_buffer_bytes = 4u << 20;
        udp_ = std::make_unique<UdpReceiver>(
            o, control_, path_options(), [this](std::size_t) -> DatagramSink& { return udp_sink_; }, wall_);
        TcpOptions t;
        t.listen = Endpoint{ip("127.0.0.1"), 0};
        t.idle_timeout = std::chrono::seconds(60);  // re-armed on every read, as in the daemon
        tcp_ = std::make_unique<TcpListener>(tcp_io_, t, tcp_path_);
        udp_->start();
        tcp_thread_ = std::thread([this] { tcp_io_.run(); });

        const Endpoint u = udp_->local_endpoint();
        udp_to_ = asio::ip::udp::endpoint(to_asio(u.address), u.port);
        udp_client_.open(asio::ip::udp::v4());
        udp_client_.bind({asio::ip::make_address("127.0.0.1"), 0});
        const Endpoint at = tcp_->local_endpoint();
        tcp_client_.connect(asio::ip::tcp::endpoint(to_asio(at.address), at.port));
        tcp_client_.set_option(asio::ip::tcp::no_delay(true));
    }

    ~Rig() {
        udp_->stop();
        asio::post(tcp_io_, [this] {
            tcp_->close();
            tcp_io_.stop();
        });
        tcp_thread_.join();
        relay_.stop();
        pipeline_.finish(wall_.now());
    }

    // Sends in bursts that the socket buffer holds, each received before the next.
    void send_udp(int n) {
        for (int i = 0; i < n; ++i) {
            udp_client_.send_to(asio::buffer(udp_messages_[static_cast<std::size_t>(i) % udp_messages_.size()]),
                                udp_to_);
            ++udp_sent_;
            if (udp_sent_ % 50 == 0) REQUIRE(wait_udp_received());
        }
        REQUIRE(wait_udp_received());
    }
    // Writes in chunks of up to 50 frames, each read before the next.
    void send_tcp(int n) {
        std::vector<std::uint8_t> chunk;
        for (int i = 0; i < n; ++i) {
            const auto& m = tcp_messages_[static_cast<std::size_t>(i) % tcp_messages_.size()];
            chunk.insert(chunk.end(), m.begin(), m.end());
            ++tcp_sent_;
            if (tcp_sent_ % 50 == 0 || i + 1 == n) {
                asio::write(tcp_client_, asio::buffer(chunk));
                chunk.clear();
                REQUIRE(test::wait_until([&] { return tcp_path_.stats().received() == tcp_sent_; }));
            }
        }
    }
    // Waits until everything pushed has been handed over by a flush (the age bound passed).
    bool settle() {
        return test::wait_until([&] {
            return udp_sink_.inner.pushes_handed_over.load() == udp_sink_.inner.pushes.load() &&
                   tcp_sink_.inner.pushes_handed_over.load() == tcp_sink_.inner.pushes.load();
        });
    }

    // Fills every batch each producer link may own (while the shard is held), then lets it go.
    void warm_up() {
        auto fill = [&](auto send, shard::Pipeline::Producer& producer) {
            worker_->close();
            send(1);
            REQUIRE(test::wait_until([&] { return worker_->blocked(); }));
            send(400);
            REQUIRE(settle());
            CHECK(producer.dropped() > 0);  // the queue was full: the link owns all it ever will
            worker_->open();
        };
        fill([&](int n) { send_udp(n); }, pipeline_.producer(0));
        fill([&](int n) { send_tcp(n); }, pipeline_.producer(1));
        // The ordinary flow once: recycled batches, timer and socket waits on both threads.
        for (int round = 0; round < 3; ++round) {
            send_udp(300);
            send_tcp(300);
            REQUIRE(settle());
        }
    }

    MarkingSink& udp_sink() { return udp_sink_; }
    MarkingSink& tcp_sink() { return tcp_sink_; }
    std::uint64_t queue_drops() const { return pipeline_.queue_full_drops(); }
    const relay::Relay& relay() const { return relay_; }

private:
    // UDP to a socket nobody reads: the kernel takes every datagram and drops what overflows.
    static relay::RelayOptions relay_options(asio::ip::udp::socket& destination) {
        destination.open(asio::ip::udp::v4());
        destination.bind({asio::ip::make_address("127.0.0.1"), 0});
        relay::RelayOptions o;
        o.name = "downstream";
        o.host = "127.0.0.1";
        o.port = destination.local_endpoint().port();
        o.producers = 2;
        o.queue_bytes = 128u << 10;
        return o;
    }
    static shard::PipelineOptions pipeline_options() {
        shard::PipelineOptions o;
        o.shards = 1;
        o.producers = 2;
        o.threaded = true;
        o.batch_datagrams = 16;
        o.queue_batches = 4;
        return o;
    }
    std::vector<std::unique_ptr<shard::Worker>> workers() {
        auto w = std::make_unique<GatedWorker>();
        worker_ = w.get();
        std::vector<std::unique_ptr<shard::Worker>> out;
        out.push_back(std::move(w));
        return out;
    }
    // As live: senders' clocks tracked, the default age bound.
    static IngestPathOptions path_options() {
        IngestPathOptions o;
        o.intake.sender_clocks = intake::SenderClockOptions{};
        return o;
    }
    bool wait_udp_received() {
        return test::wait_until([&] { return udp_->merged_stats().received() == udp_sent_; });
    }

    ManualClock steady_;
    ManualClock wall_;
    IngestControl control_;
    GatedWorker* worker_ = nullptr;
    shard::Pipeline pipeline_;
    MarkingSink udp_sink_;
    MarkingSink tcp_sink_;
    IngestPath tcp_path_;
    asio::io_context tcp_io_{1};
    asio::executor_work_guard<asio::io_context::executor_type> tcp_work_ = asio::make_work_guard(tcp_io_);
    std::unique_ptr<UdpReceiver> udp_;
    std::unique_ptr<TcpListener> tcp_;
    std::thread tcp_thread_;
    asio::io_context client_io_;
    asio::ip::udp::socket udp_client_{client_io_};
    asio::ip::udp::endpoint udp_to_;
    asio::ip::tcp::socket tcp_client_{client_io_};
    std::vector<std::vector<std::uint8_t>> udp_messages_ = sip_messages(500, 2001);
    std::vector<std::vector<std::uint8_t>> tcp_messages_ = sip_messages(500, 2002);
    std::uint64_t udp_sent_ = 0;
    std::uint64_t tcp_sent_ = 0;
    asio::io_context relay_io_;
    asio::ip::udp::socket relay_socket_{relay_io_};
    relay::Relay relay_;
};

// Counts the receive threads' allocations while `step` runs and everything it sent is handed over.
template <class Step>
std::uint64_t allocations_during(Rig& rig, Step step) {
    g_allocations.store(0);
    g_counting.store(true);
    step();
    REQUIRE(rig.settle());
    g_counting.store(false);
    return g_allocations.load();
}

}  // namespace

TEST_CASE("the receive path allocates nothing once warm (UDP and TCP, to a real shard)", "[ingest][alloc]") {
    Rig rig;
    rig.warm_up();

    SECTION("steady state: 2,000 datagrams and 2,000 frames") {
        const auto n = allocations_during(rig, [&] {
            for (int i = 0; i < 4; ++i) {
                rig.send_udp(500);
                rig.send_tcp(500);
            }
        });
        INFO("queue drops " << rig.queue_drops());
        CHECK(n == 0);
        // The relay saw every accepted message (sent, or dropped and counted).
        const auto f = rig.relay().figures();
        std::uint64_t relay_drops = 0;
        for (const auto d : f.dropped) relay_drops += d;
        CHECK(test::wait_until([&] { return rig.relay().figures().queued_bytes == 0; }));
        CHECK(rig.relay().figures().messages + relay_drops >= 4000);
    }

    SECTION("the count sees an allocation on a receive thread") {
        rig.udp_sink().allocate_on_push = true;
        rig.tcp_sink().allocate_on_push = true;
        const auto n = allocations_during(rig, [&] {
            rig.send_udp(100);
            rig.send_tcp(100);
        });
        CHECK(n >= 200);
    }
}
