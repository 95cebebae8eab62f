#pragma once
// ThreadLease<T>: this thread's T for the lease's lifetime, kept from one lease to the next so
// that the storage it grew is reused (per-case buffers a campaign would otherwise allocate again
// for every case). A lease taken while the thread's T is leased (a use inside a use), or asked
// to stand apart, gets a value-initialised T of its own instead.
#include <memory>

namespace patchfuzz {

template <class T>
class ThreadLease {
public:
    explicit ThreadLease(bool apart = false) {
        thread_local T mine{};
        thread_local bool leased = false;
        if (!apart && !leased) {
            t_ = &mine;
            leased_ = &leased;
            leased = true;
        } else {
            own_ = std::make_unique<T>();
            t_ = own_.get();
        }
    }
    ~ThreadLease() {
        if (leased_ != nullptr) *leased_ = false;
    }
    ThreadLease(const ThreadLease&) = delete;
    ThreadLease& operator=(const ThreadLease&) = delete;

    T& operator*() const { return *t_; }
    T* operator->() const { return t_; }

private:
    std::unique_ptr<T> own_;
    T* t_ = nullptr;
    bool* leased_ = nullptr;  // the thread's flag, when the thread's T is the one leased
};

}  // namespace patchfuzz
