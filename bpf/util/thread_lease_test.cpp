#include "bpf/util/thread_lease.hpp"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace patchfuzz {
namespace {

struct Counter {
    std::vector<int> grown;  // storage a lease keeps for the next one on its thread
};

// One lease after another on a thread gets the same T, with what the one before left in it.
TEST(ThreadLease, LeasesOneAfterAnotherShareTheThreadsT) {
    Counter* first = nullptr;
    {
        ThreadLease<Counter> a;
        a->grown.push_back(1);
        first = &*a;
    }
    ThreadLease<Counter> b;
    EXPECT_EQ(&*b, first);
    EXPECT_EQ(b->grown, std::vector<int>{1});
    b->grown.clear();
}

// A lease inside a lease, or one asked to stand apart, gets a fresh T of its own; the thread's T
// is free again once its lease ends.
TEST(ThreadLease, NestedAndApartLeasesGetTheirOwn) {
    Counter* threads = nullptr;
    {
        ThreadLease<Counter> outer;
        outer->grown.push_back(7);
        threads = &*outer;
        ThreadLease<Counter> inner;
        EXPECT_NE(&*inner, threads);
        EXPECT_TRUE(inner->grown.empty());
    }
    {
        ThreadLease<Counter> apart(true);  // apart, though the thread's T is free
        EXPECT_NE(&*apart, threads);
        EXPECT_TRUE(apart->grown.empty());
    }
    ThreadLease<Counter> again;  // the thread's, with what the first lease left
    EXPECT_EQ(&*again, threads);
    EXPECT_EQ(again->grown, std::vector<int>{7});
    again->grown.clear();
}

// Every thread has a T of its own.
TEST(ThreadLease, ThreadsHaveTheirOwnT) {
    ThreadLease<Counter> mine;
    Counter* other = nullptr;
    std::thread([&] {
        ThreadLease<Counter> theirs;
        other = &*theirs;
    }).join();
    EXPECT_NE(other, &*mine);
}

}  // namespace
}  // namespace patchfuzz
