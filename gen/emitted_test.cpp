// Emitted<T> (gen/emitted.hpp) against std::vector: appends within and past the reserved room,
// growth that keeps every element, and moves.
#include "gen/emitted.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "bpf/program/program.hpp"

namespace patchfuzz::gen {
namespace {

template <class T>
std::vector<T> contents(const Emitted<T>& e) {
    return std::vector<T>(e.begin(), e.end());
}

TEST(Emitted, AppendsLikeAVectorThroughEveryGrowth) {
    Emitted<InsnAux> e;
    std::vector<InsnAux> want;
    EXPECT_TRUE(e.full());  // no room before the first reserve
    e.reserve(3);
    for (uint32_t i = 0; i < 1000; ++i) {
        if (e.full()) e.reserve(2 * e.size() + 1);
        InsnAux a;
        a.orig_idx = i;
        a.map_index = static_cast<int32_t>(i * 7);
        a.zext_dst = i % 3 == 0;
        e.append(a);
        want.push_back(a);
        ASSERT_EQ(e.size(), want.size());
    }
    EXPECT_EQ(contents(e), want);
    e[17].alu_limit = 99;  // writes go to the element
    want[17].alu_limit = 99;
    EXPECT_EQ(contents(e), want);
    e.reserve(10);  // less than the room there is: nothing changes
    EXPECT_EQ(contents(e), want);
}

TEST(Emitted, AMoveTakesTheElements) {
    Emitted<int> a;
    a.reserve(4);
    for (int i = 0; i < 4; ++i) a.append(i);
    Emitted<int> b(std::move(a));
    EXPECT_EQ(contents(b), (std::vector<int>{0, 1, 2, 3}));
    EXPECT_EQ(a.size(), 0u);  // NOLINT(bugprone-use-after-move): the moved-from state is empty
    EXPECT_TRUE(a.full());
}

}  // namespace
}  // namespace patchfuzz::gen
