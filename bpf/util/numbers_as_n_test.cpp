#include "bpf/util/numbers_as_n.hpp"

#include <gtest/gtest.h>

namespace patchfuzz {
namespace {

TEST(NumbersAsN, ReplacesEveryFreeNumberAndKeepsWordsWithDigits) {
    EXPECT_EQ(numbers_as_n("misc_fixups: err -22 insn 58: sdiv/smod needs cpu v4 (not in 6.1)"),
              "misc_fixups: err -N insn N: sdiv/smod needs cpu v4 (not in N.N)");
    EXPECT_EQ(numbers_as_n("load of 8 bytes at 0xffff0010 from r10"), "load of N bytes at N from r10");
    EXPECT_EQ(numbers_as_n("retval: kernel 3, interpreter 4"), numbers_as_n("retval: kernel 70000, interpreter 0"));
    EXPECT_NE(numbers_as_n("retval: kernel 3, interpreter 4"), numbers_as_n("map 0 key 00: kernel 01, interpreter 02"));
    EXPECT_EQ(numbers_as_n(""), "");
    EXPECT_EQ(numbers_as_n("u64 and __u32"), "u64 and __u32");
}

}  // namespace
}  // namespace patchfuzz
