#pragma once
// An endpoint in 8 bytes, for the tables that keep one or two in every entry (stream keys, media
// addresses, binding peers): an IPv4 address, nearly every one, in place; any other in the
// EndpointPool of the table, by index. Their 20-byte Endpoints were a sixth of a call's memory.
//
// A pool slot is not shared: every pack() of an address that is not in place takes one, and its
// release() gives it back, so the pool is bounded by the entries that hold one.
#include "core/address.hpp"
#include "core/bytes.hpp"
#include "core/out_of_line.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace hepd {

struct PackedEndpoint {
    enum Kind : std::uint8_t { kNoAddress = 0, kV4 = 4, kPooled = 6 };

    std::uint32_t word = 0;  // the IPv4 address (IpAddress::v4_host_order()), or the pool index
    std::uint16_t port = 0;
    Kind kind = kNoAddress;
    std::uint8_t zero = 0;  // so that == compares all eight bytes

    friend bool operator==(const PackedEndpoint&, const PackedEndpoint&) = default;
};
static_assert(sizeof(PackedEndpoint) == 8);

class EndpointPool {
public:
    // The packed form of an endpoint that needs no pool slot (IPv4, or no address): what a
    // lookup compares stored endpoints with.
    static std::optional<PackedEndpoint> in_place(const Endpoint& e) noexcept {
        if (e.address.is_v4()) return PackedEndpoint{load_be32(e.address.bytes().data()), e.port, PackedEndpoint::kV4};
        if (e.address.empty()) return PackedEndpoint{0, e.port, PackedEndpoint::kNoAddress};
        return std::nullopt;
    }

    // Packs `e`; one not in place takes a pool slot until release().
    PackedEndpoint pack(const Endpoint& e) {
        if (const auto p = in_place(e)) return *p;
        std::uint32_t at;
        if (free_.empty()) {
            at = static_cast<std::uint32_t>(slots_.size());
            slots_.push_back(e);
            free_.reserve(slots_.capacity());  // release() then never allocates
        } else {
            at = free_.back();
            free_.pop_back();
            slots_[at] = e;
        }
        return PackedEndpoint{at, e.port, PackedEndpoint::kPooled};
    }

    void release(const PackedEndpoint& p) noexcept {
        if (p.kind == PackedEndpoint::kPooled) free_.push_back(p.word);
    }

    // The endpoint of a packed form in_place() made (IPv4, or no address).
    static Endpoint unpack_in_place(const PackedEndpoint& p) noexcept {
        return p.kind == PackedEndpoint::kV4 ? Endpoint{IpAddress::v4(p.word), p.port} : Endpoint{IpAddress{}, p.port};
    }

    Endpoint unpack(const PackedEndpoint& p) const noexcept {
        return p.kind == PackedEndpoint::kPooled ? slots_[p.word] : unpack_in_place(p);
    }

    bool matches(const PackedEndpoint& p, const Endpoint& e) const noexcept {
        if (p.kind == PackedEndpoint::kPooled) return slots_[p.word] == e;
        const auto q = in_place(e);
        return q && *q == p;
    }

    std::size_t size() const noexcept { return slots_.size() - free_.size(); }  // slots in use
    std::size_t memory_bytes() const noexcept {
        return slots_.capacity() * sizeof(Endpoint) + free_.capacity() * sizeof(std::uint32_t);
    }

private:
    std::vector<Endpoint> slots_;
    std::vector<std::uint32_t> free_;
};

// N endpoints of a record that is read without its table (a dialog: reports, call records and
// snapshots take one alone), so with no pool: IPv4 ones, nearly all, packed in place, and any
// other in one block out of line that only a record with such an endpoint allocates. Three are 32
// bytes, not 60.
template <std::size_t N>
class CompactEndpoints {
public:
    Endpoint get(std::size_t i) const noexcept {
        const PackedEndpoint& p = packed_[i];
        return p.kind == PackedEndpoint::kPooled ? spilled_.get()[i] : EndpointPool::unpack_in_place(p);
    }
    void set(std::size_t i, const Endpoint& e) {
        if (const auto p = EndpointPool::in_place(e)) {
            packed_[i] = *p;
            return;
        }
        spilled_.mut()[i] = e;
        packed_[i] = PackedEndpoint{0, e.port, PackedEndpoint::kPooled};
    }
    // Heap bytes of the out-of-line block (kept once allocated).
    std::size_t heap_bytes() const noexcept { return spilled_.allocated() ? sizeof(std::array<Endpoint, N>) : 0; }

    friend bool operator==(const CompactEndpoints& a, const CompactEndpoints& b) noexcept {
        for (std::size_t i = 0; i < N; ++i)
            if (a.get(i) != b.get(i)) return false;
        return true;
    }

private:
    std::array<PackedEndpoint, N> packed_{};
    OutOfLine<std::array<Endpoint, N>> spilled_;  // the endpoints whose kind is kPooled
};

}  // namespace hepd
