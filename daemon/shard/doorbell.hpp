#pragma once
// A thread that runs out of work sleeps on its Doorbell; whoever can give it work rings it. While
// the sleeper is awake a ring costs a fence and a load, so a busy pipeline makes no system call;
// an idle one blocks and wakes only when rung (or at its timeout, for timers).
//
// No wake-up is lost (Dekker): the sleeper stores `asleep_`, fences (seq_cst), then looks for
// work once more; the ringer publishes its work, fences (seq_cst), then loads `asleep_`. Of two
// seq_cst fences one comes first, so at least one side sees the other's store: the sleeper finds
// the work, or the ringer finds it asleep and rings. The ring is kept in `rung_` (under the
// mutex), so it also holds when it comes before the sleeper blocks.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace hepd::shard {

class Doorbell {
public:
    static constexpr std::chrono::microseconds kForever = std::chrono::microseconds::max();

    // Ringer side, after publishing the work (a queue push, an atomic store).
    void ring() {
        std::atomic_thread_fence(std::memory_order_seq_cst);
        if (asleep_.load(std::memory_order_relaxed)) wake();
    }

    // Sleeper side: returns at once when `ready()` holds, else blocks until rung or until the
    // timeout passed; the caller then looks again. `ready` is evaluated after the sleeper has
    // announced itself, so it must read everything that ringers publish. True when the thread
    // actually blocked (a wake-up). No spinning first: measured, a short spin saved nothing
    // offline and cost CPU live.
    template <class Ready>
    bool sleep_unless(Ready&& ready, std::chrono::microseconds timeout = kForever) {
        asleep_.store(true, std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_seq_cst);
        if (ready()) {
            asleep_.store(false, std::memory_order_relaxed);
            return false;
        }
        return block(timeout);
    }

private:
    void wake() {
        // Notified under the lock: the sleeper may go on to destroy the bell once it sees rung_.
        std::lock_guard lock(mutex_);
        rung_ = true;
        wakeup_.notify_one();
    }

    bool block(std::chrono::microseconds timeout) {
        std::unique_lock lock(mutex_);
        const bool slept = !rung_ && timeout.count() > 0;
        if (slept) {
            if (timeout == kForever) {
                wakeup_.wait(lock, [this] { return rung_; });
            } else {
                wakeup_.wait_for(lock, timeout, [this] { return rung_; });
            }
        }
        // A ring that read asleep_ before this store may still land later: the next sleep then
        // returns at once and the caller looks again (harmless).
        rung_ = false;
        asleep_.store(false, std::memory_order_relaxed);
        return slept;
    }

    std::atomic<bool> asleep_{false};
    std::mutex mutex_;
    std::condition_variable wakeup_;
    bool rung_ = false;
};

}  // namespace hepd::shard
