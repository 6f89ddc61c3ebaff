#pragma once
// A part of a record that most records never use, kept out of line: one pointer while absent,
// allocated on the first write. Reading an absent part sees T{}. Copies are deep and equality
// compares values (an absent part equals a default one), so the record stays plain data for
// snapshots and tests.
#include <memory>

namespace hepd {

template <class T>
class OutOfLine {
public:
    OutOfLine() noexcept = default;
    OutOfLine(const OutOfLine& o) : part_(o.part_ ? std::make_unique<T>(*o.part_) : nullptr) {}
    OutOfLine(OutOfLine&&) noexcept = default;
    OutOfLine& operator=(const OutOfLine& o) {
        if (this != &o) part_ = o.part_ ? std::make_unique<T>(*o.part_) : nullptr;
        return *this;
    }
    OutOfLine& operator=(OutOfLine&&) noexcept = default;
    ~OutOfLine() = default;

    bool allocated() const noexcept { return part_ != nullptr; }
    const T& get() const noexcept { return part_ ? *part_ : kAbsent; }
    T& mut() {
        if (!part_) part_ = std::make_unique<T>();
        return *part_;
    }

    friend bool operator==(const OutOfLine& a, const OutOfLine& b) { return a.get() == b.get(); }

private:
    static inline const T kAbsent{};
    std::unique_ptr<T> part_;
};

}  // namespace hepd
