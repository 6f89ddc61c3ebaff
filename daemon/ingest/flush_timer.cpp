#include "ingest/flush_timer.hpp"

namespace hepd::ingest {

FlushTimer::FlushTimer(boost::asio::io_context& io, IngestPath& path) : path_(path), timer_(io) {}

void FlushTimer::after_process() {
    if (armed_ || !path_.holds_partial()) return;
    armed_ = true;
    timer_.expires_after(path_.max_batch_age());
    timer_.async_wait(with_memory(memory_, [this](boost::system::error_code ec) {
        if (ec) return;  // cancelled by flush_now(), which has disarmed
        armed_ = false;
        if (path_.holds_partial()) path_.flush();
    }));
}

void FlushTimer::flush_now() {
    if (armed_) {
        timer_.cancel();
        armed_ = false;
    }
    if (path_.holds_partial()) path_.flush();
}

}  // namespace hepd::ingest
