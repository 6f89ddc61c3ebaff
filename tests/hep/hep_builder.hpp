#pragma once
// Test-only helpers to write HEPv3 messages chunk by chunk (the byte layout is spelled out here
// on purpose, independently of the encoder under test).
#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <vector>

namespace hepd::hep::test {

using Bytes = std::vector<std::uint8_t>;

inline Bytes bytes_of(std::string_view text) { return Bytes(text.begin(), text.end()); }

class V3Builder {
public:
    explicit V3Builder(std::string_view magic = "HEP3") : bytes_(magic.begin(), magic.end()) {
        bytes_.push_back(0);
        bytes_.push_back(0);
        boundaries_.push_back(bytes_.size());
    }

    V3Builder& raw_chunk(std::uint16_t vendor, std::uint16_t type, const Bytes& value) {
        const std::size_t length = value.size() + 6;
        put16(vendor);
        put16(type);
        put16(static_cast<std::uint16_t>(length));
        bytes_.insert(bytes_.end(), value.begin(), value.end());
        boundaries_.push_back(bytes_.size());
        return *this;
    }
    V3Builder& chunk(std::uint16_t type, const Bytes& value) { return raw_chunk(0, type, value); }
    V3Builder& chunk(std::uint16_t type, std::initializer_list<std::uint8_t> value) {
        return raw_chunk(0, type, Bytes(value));
    }
    V3Builder& text(std::uint16_t type, std::string_view value) { return chunk(type, bytes_of(value)); }
    V3Builder& u8(std::uint16_t type, std::uint8_t v) { return chunk(type, {v}); }
    V3Builder& u16(std::uint16_t type, std::uint16_t v) {
        return chunk(type, {static_cast<std::uint8_t>(v >> 8), static_cast<std::uint8_t>(v)});
    }
    V3Builder& u32(std::uint16_t type, std::uint32_t v) {
        return chunk(type, {static_cast<std::uint8_t>(v >> 24), static_cast<std::uint8_t>(v >> 16),
                            static_cast<std::uint8_t>(v >> 8), static_cast<std::uint8_t>(v)});
    }

    // The message with its total length written in the header.
    Bytes build() const {
        Bytes out = bytes_;
        out[4] = static_cast<std::uint8_t>(out.size() >> 8);
        out[5] = static_cast<std::uint8_t>(out.size());
        return out;
    }
    // Offsets where a chunk ends (the first is the end of the 6-byte header).
    const std::vector<std::size_t>& boundaries() const { return boundaries_; }

private:
    void put16(std::uint16_t v) {
        bytes_.push_back(static_cast<std::uint8_t>(v >> 8));
        bytes_.push_back(static_cast<std::uint8_t>(v));
    }
    Bytes bytes_;
    std::vector<std::size_t> boundaries_;
};

inline void set_total_length(Bytes& message, std::size_t length) {
    message[4] = static_cast<std::uint8_t>(length >> 8);
    message[5] = static_cast<std::uint8_t>(length);
}

}  // namespace hepd::hep::test
