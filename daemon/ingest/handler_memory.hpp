#pragma once
// Room for one outstanding Asio operation, reused from one operation to the next, so that the
// thread running the TCP listeners (reads, idle timers and the flush timer outstanding at once)
// allocates nothing in the steady state. (Asio's own per-thread cache keeps a single block.)
// Usage: socket.async_wait(type, with_memory(memory_, [this](error_code ec) { ... })), with one
// HandlerMemory (made once, shared) per kind of operation that may be outstanding at the same
// time. The handler shares ownership of the block, so an operation destroyed after its owner (an
// io_context outliving a listener) still gives it back to live memory.
#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace hepd::ingest {

class HandlerMemory {
public:
    HandlerMemory() = default;
    HandlerMemory(const HandlerMemory&) = delete;
    HandlerMemory& operator=(const HandlerMemory&) = delete;

    // The block when it is free and large enough; the heap otherwise (still correct, just not free).
    void* allocate(std::size_t bytes) {
        if (!in_use_ && bytes <= sizeof(storage_)) {
            in_use_ = true;
            return storage_;
        }
        return ::operator new(bytes);
    }
    void deallocate(void* p) noexcept {
        if (p == storage_) {
            in_use_ = false;
            return;
        }
        ::operator delete(p);
    }

private:
    alignas(std::max_align_t) unsigned char storage_[256]{};
    bool in_use_ = false;
};

template <class T>
class HandlerAllocator {
public:
    using value_type = T;
    explicit HandlerAllocator(HandlerMemory& memory) noexcept : memory_(&memory) {}
    template <class U>
    HandlerAllocator(const HandlerAllocator<U>& other) noexcept : memory_(other.memory()) {}

    T* allocate(std::size_t n) { return static_cast<T*>(memory_->allocate(sizeof(T) * n)); }
    void deallocate(T* p, std::size_t) noexcept { memory_->deallocate(p); }
    HandlerMemory* memory() const noexcept { return memory_; }

    template <class U>
    bool operator==(const HandlerAllocator<U>& other) const noexcept {
        return memory_ == other.memory();
    }
    template <class U>
    bool operator!=(const HandlerAllocator<U>& other) const noexcept {
        return memory_ != other.memory();
    }

private:
    HandlerMemory* memory_;
};

// A completion handler whose operation Asio keeps in `memory` (its associated allocator).
template <class Handler>
class WithMemory {
public:
    using allocator_type = HandlerAllocator<Handler>;
    WithMemory(std::shared_ptr<HandlerMemory> memory, Handler handler)
        : memory_(std::move(memory)), handler_(std::move(handler)) {}
    allocator_type get_allocator() const noexcept { return allocator_type(*memory_); }
    template <class... Args>
    void operator()(Args&&... args) {
        handler_(std::forward<Args>(args)...);
    }

private:
    std::shared_ptr<HandlerMemory> memory_;
    Handler handler_;
};

template <class Handler>
WithMemory<std::decay_t<Handler>> with_memory(const std::shared_ptr<HandlerMemory>& memory, Handler&& handler) {
    return WithMemory<std::decay_t<Handler>>(memory, std::forward<Handler>(handler));
}

}  // namespace hepd::ingest
