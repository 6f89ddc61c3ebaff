#include "intake/sender_clocks.hpp"

#include "core/hash.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <string>

namespace hepd::intake {

namespace {

std::uint64_t hash_sender(const SenderKey& k) noexcept {
    const std::uint64_t a = hash_bytes(k.address.bytes().data(), k.address.bytes().size());
    const std::uint64_t id = k.has_capture_id ? (std::uint64_t{1} << 32) | k.capture_id : 0;
    return mix64(a ^ mix64(id + static_cast<std::uint64_t>(k.address.family())));
}

std::string describe(const SenderKey& k) {
    std::string s = k.address.empty() ? std::string("(no address)") : k.address.to_string();
    if (k.has_capture_id) s += " capture id " + std::to_string(k.capture_id);
    return s;
}

double seconds(std::int64_t us) noexcept { return static_cast<double>(us) / 1e6; }

}  // namespace

std::uint64_t SenderKeyHash::operator()(const SenderKey& key) const noexcept { return hash_sender(key); }

SenderClocks::SenderClocks(SenderClockOptions options) : options_(options), table_(options.max_senders) {}

std::int64_t SenderClocks::offset_for(std::int64_t raw_us) const noexcept {
    return std::llabs(raw_us) > options_.offset_limit_us ? raw_us : 0;
}

void SenderClocks::measure(SenderClock& c, std::int64_t raw_us, bool exact) noexcept {
    c.measured_us = raw_us;
    c.offset_us = offset_for(raw_us);
    const bool provisional = c.offset_us != 0 && !exact;
    if (provisional != c.provisional) provisional ? ++provisional_ : --provisional_;
    c.provisional = provisional;
}

Timestamp SenderClocks::correct(const SenderKey& sender, Timestamp capture_time, ReceiveTime received,
                                std::uint16_t agent, std::string_view agent_name, SenderClockStats& stats) {
    const std::size_t a = agent < kMaxAgents ? agent : 0;
    const Timestamp receive_time = received.at;
    const std::int64_t raw = receive_time.us - capture_time.us;
    const std::uint64_t h = hash_sender(sender);
    std::uint32_t at = table_.find(h, [&](const SenderKey& k) { return k == sender; });
    if (at == LruTable<SenderKey, SenderClock, SenderKeyHash>::kNone) {
        SenderClock c;
        measure(c, raw, received.exact);
        if (c.offset_us != 0) {
            c.note = Note::shifted;
            stats.offset_exceeded[a].add();
        }
        auto [index, evicted] = table_.insert(sender, c);
        at = index;
        if (evicted) {
            if (evicted->value.provisional) --provisional_;
            stats.evictions.add();
            log_throttled(eviction_log_, receive_time, spdlog::level::warn, [&](auto level, std::uint64_t more) {
                spdlog::log(level,
                            "hep sender clocks: table full ({} senders), {} evicted the least recently active "
                            "sender ({} more since the last line); it is measured again if it comes back",
                            table_.capacity(), describe(sender), more);
            });
        }
    } else {
        table_.touch(at);
        SenderClock& c = table_[at];
        if (std::llabs(raw - c.offset_us) > options_.offset_limit_us) {
            stats.steps[a].add();
            c.previous_offset_us = c.offset_us;
            measure(c, raw, received.exact);
            c.note = Note::stepped;
            if (c.offset_us != 0) stats.offset_exceeded[a].add();
        } else if (c.provisional && received.exact) {
            // The shift was taken from a batch's read time, later than the datagram's arrival
            // by the time it waited to be read. An arrival can only lower it: a datagram on the
            // wire longer than the first one says nothing of the wait. Not a step: not counted.
            c.offset_us = std::min(c.offset_us, raw);
            c.provisional = false;
            --provisional_;
        }
    }
    SenderClock& c = table_[at];
    if (c.note != Note::none && receive_time >= next_log_) log_note(sender, c, receive_time, agent_name);
    return Timestamp{capture_time.us + c.offset_us};
}

void SenderClocks::log_note(const SenderKey& sender, SenderClock& c, Timestamp receive_time,
                            std::string_view agent_name) {
    next_log_ = Timestamp{receive_time.us + kLogIntervalUs};
    const Note note = c.note;
    c.note = Note::none;
    if (!spdlog::should_log(spdlog::level::warn)) return;
    const char* direction = c.measured_us >= 0 ? "behind" : "ahead of";
    if (note == Note::shifted) {
        spdlog::warn(
            "hep sender {} (agent {}): clock {:.3f} s {} the receive time, beyond hep.clock_offset_limit "
            "({:.3f} s); its capture times are shifted by {:+.6f} s (timers run on receive time, intervals "
            "within the sender are kept)",
            describe(sender), agent_name, seconds(std::llabs(c.measured_us)), direction,
            seconds(options_.offset_limit_us), seconds(c.offset_us));
        return;
    }
    spdlog::warn(
        "hep sender {} (agent {}): clock stepped, now {:.3f} s {} the receive time; shift {:+.6f} s -> "
        "{:+.6f} s{}",
        describe(sender), agent_name, seconds(std::llabs(c.measured_us)), direction, seconds(c.previous_offset_us),
        seconds(c.offset_us), c.offset_us == 0 ? " (back within hep.clock_offset_limit: times used as sent)" : "");
}

std::optional<std::int64_t> SenderClocks::offset_us(const SenderKey& sender) const noexcept {
    const std::uint32_t at = table_.find(hash_sender(sender), [&](const SenderKey& k) { return k == sender; });
    if (at == LruTable<SenderKey, SenderClock, SenderKeyHash>::kNone) return std::nullopt;
    return table_.entry(at).value.offset_us;
}

}  // namespace hepd::intake
