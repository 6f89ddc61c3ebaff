#pragma once
// Names the calling thread for top -H, ps -L, perf and /proc/PID/task/*/comm ("hepd-shard-0",
// "hepd-udp-0"): an operator tells a busy receive thread from a busy shard by its name. Linux
// keeps 15 bytes; elsewhere it does nothing.
#include <string>

#if defined(__linux__)
#include <pthread.h>
#endif

namespace hepd {

inline void name_this_thread(const std::string& name) noexcept {
#if defined(__linux__)
    (void)pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
#else
    (void)name;
#endif
}

}  // namespace hepd
