// jump_taken on hand-picked values where the width and the signedness decide the answer.
#include "bpf/isa/jump_condition.hpp"

#include <gtest/gtest.h>

namespace patchfuzz::isa {
namespace {

TEST(JumpCondition, WidthAndSignednessDecide) {
    const uint64_t minus_one = ~uint64_t{0};
    EXPECT_EQ(jump_taken(BPF_JGT, minus_one, 1, false), true);   // unsigned: 2^64-1 > 1
    EXPECT_EQ(jump_taken(BPF_JSGT, minus_one, 1, false), false); // signed: -1 > 1 is false
    // 32 bits see only the low halves: 0x1_0000_0000 == 0 and 0xffffffff is -1
    EXPECT_EQ(jump_taken(BPF_JEQ, 0x100000000ull, 0, true), true);
    EXPECT_EQ(jump_taken(BPF_JEQ, 0x100000000ull, 0, false), false);
    EXPECT_EQ(jump_taken(BPF_JSLT, 0xffffffffull, 0, true), true);
    EXPECT_EQ(jump_taken(BPF_JSLT, 0xffffffffull, 0, false), false);
    EXPECT_EQ(jump_taken(BPF_JSET, 0x10, 0x30, false), true);
    EXPECT_EQ(jump_taken(BPF_JSET, 0x100000000ull, 0x100000000ull, true), false);
    EXPECT_EQ(jump_taken(BPF_JLE, 3, 3, false), true);
    EXPECT_EQ(jump_taken(BPF_JLT, 3, 3, false), false);
    EXPECT_EQ(jump_taken(BPF_JNE, 3, 4, false), true);
    EXPECT_EQ(jump_taken(BPF_JGE, 2, 3, false), false);
    EXPECT_EQ(jump_taken(BPF_JSGE, minus_one, minus_one, false), true);
    EXPECT_EQ(jump_taken(BPF_JSLE, 1, minus_one, false), false);
}

TEST(JumpCondition, OpsThatCompareNothingHaveNoOutcome) {
    EXPECT_FALSE(jump_taken(BPF_JA, 0, 0, false).has_value());
    EXPECT_FALSE(jump_taken(BPF_CALL, 0, 0, false).has_value());
    EXPECT_FALSE(jump_taken(BPF_EXIT, 0, 0, false).has_value());
    EXPECT_FALSE(jump_taken(0xe0 /* BPF_JCOND */, 0, 0, false).has_value());
}

}  // namespace
}  // namespace patchfuzz::isa
