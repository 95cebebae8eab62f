#pragma once
// Emitted<T>: a function's insns or aux records while the program generator (program_gen.cpp)
// emits them. An array that only grows, appended to without a check (the caller makes room first,
// out of line): emit() is the generator's most frequent call (a hundred per case), and with two
// std::vectors' growth inlined in it, it saved and restored six registers on every call.
// Trivially copyable T only: growth copies bytes, and the spare capacity stays unconstructed.
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>
#include <utility>

namespace patchfuzz::gen {

template <class T>
class Emitted {
public:
    static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);
    Emitted() = default;
    Emitted(Emitted&& o) noexcept
        : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)), cap_(std::exchange(o.cap_, 0)) {}
    Emitted(const Emitted&) = delete;
    Emitted& operator=(const Emitted&) = delete;
    Emitted& operator=(Emitted&&) = delete;
    ~Emitted() { std::allocator<T>().deallocate(data_, cap_); }

    [[nodiscard]] bool full() const { return size_ == cap_; }
    // Room for n in all (nothing to do if there is).
    [[gnu::noinline]] void reserve(uint32_t n) {
        if (n <= cap_) return;
        T* bigger = std::allocator<T>().allocate(n);
        if (size_ != 0) std::memcpy(static_cast<void*>(bigger), data_, sizeof(T) * size_);
        std::allocator<T>().deallocate(data_, cap_);
        data_ = bigger;
        cap_ = n;
    }
    // Precondition: !full().
    void append(const T& v) { std::construct_at(data_ + size_++, v); }

    [[nodiscard]] uint32_t size() const { return size_; }
    T& operator[](uint32_t i) { return data_[i]; }
    const T& operator[](uint32_t i) const { return data_[i]; }
    [[nodiscard]] const T* begin() const { return data_; }
    [[nodiscard]] const T* end() const { return data_ + size_; }

private:
    T* data_ = nullptr;
    uint32_t size_ = 0, cap_ = 0;
};

}  // namespace patchfuzz::gen
