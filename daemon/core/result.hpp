#pragma once
// A minimal expected-like result for the per-packet path, where exceptions are not allowed
// (std::expected is C++23; Debian 12's g++ 12 lacks it).
#include <type_traits>
#include <utility>
#include <variant>

namespace hepd {

template <class E>
struct Unexpected {
    E error;
};

template <class E>
Unexpected<E> fail(E error) {
    return Unexpected<E>{error};
}

template <class T, class E>
class [[nodiscard]] Result {
public:
    Result(T value) : value_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit by design
    Result(Unexpected<E> e) : value_(std::in_place_index<1>, e.error) {}   // NOLINT: implicit by design

    bool ok() const noexcept { return value_.index() == 0; }
    explicit operator bool() const noexcept { return ok(); }

    T& value() & { return std::get<0>(value_); }
    const T& value() const& { return std::get<0>(value_); }
    T&& value() && { return std::get<0>(std::move(value_)); }
    T* operator->() { return &std::get<0>(value_); }
    const T* operator->() const { return &std::get<0>(value_); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }

    E error() const { return std::get<1>(value_); }

private:
    std::variant<T, E> value_;
};

}  // namespace hepd
