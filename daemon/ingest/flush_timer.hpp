#pragma once
// Age-bounded hand-over for an IngestPath: its partial batches go to the shards once the oldest
// datagram in them is max_batch_age old (full batches go at once, in the sink). An Asio timer on
// the path's own thread, armed only while the path holds a partial batch: with nothing waiting
// the thread sleeps without a timeout (an idle receiver makes no wake-ups).
#include "ingest/handler_memory.hpp"
#include "ingest/ingest_path.hpp"

#include <boost/asio.hpp>

namespace hepd::ingest {

class FlushTimer {
public:
    // `path` must outlive the timer; the io_context must be run by the path's thread only.
    FlushTimer(boost::asio::io_context& io, IngestPath& path);
    FlushTimer(const FlushTimer&) = delete;
    FlushTimer& operator=(const FlushTimer&) = delete;

    // Call after path.process(): when datagrams were left waiting and no hand-over is due yet,
    // one is scheduled max_batch_age from now (the age of the oldest of them, give or take the
    // receive call).
    void after_process();
    // Hands over what waits now and drops the schedule (shutdown). From the path's thread, or
    // another one once that thread has stopped.
    void flush_now();

private:
    IngestPath& path_;
    boost::asio::steady_timer timer_;
    std::shared_ptr<HandlerMemory> memory_ = std::make_shared<HandlerMemory>();
    bool armed_ = false;
};

}  // namespace hepd::ingest
