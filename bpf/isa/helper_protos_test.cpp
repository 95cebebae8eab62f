// helper_protos: the one table of helper argument facts.
#include "bpf/isa/helper_protos.hpp"

#include <gtest/gtest.h>

#include <linux/bpf.h>

namespace patchfuzz::isa {
namespace {

TEST(HelperProtos, KnownArgumentCounts) {
    EXPECT_EQ(helper_arg_count(BPF_FUNC_ktime_get_ns), 0);
    EXPECT_EQ(helper_arg_count(BPF_FUNC_get_prandom_u32), 0);
    EXPECT_EQ(helper_arg_count(BPF_FUNC_jiffies64), 0);
    EXPECT_EQ(helper_arg_count(BPF_FUNC_map_lookup_elem), 2);
    EXPECT_EQ(helper_arg_count(BPF_FUNC_map_delete_elem), 2);
    EXPECT_EQ(helper_arg_count(BPF_FUNC_tail_call), 3);
    EXPECT_EQ(helper_arg_count(BPF_FUNC_map_lookup_percpu_elem), 3);
    EXPECT_EQ(helper_arg_count(BPF_FUNC_map_update_elem), 4);
    EXPECT_EQ(helper_arg_count(BPF_FUNC_loop), 4);
}

TEST(HelperProtos, UnknownHelpersHaveNoCount) {
    // Each caller picks its own default for these; the table must not invent one.
    EXPECT_EQ(helper_arg_count(BPF_FUNC_trace_printk), std::nullopt);
    EXPECT_EQ(helper_arg_count(0), std::nullopt);
    EXPECT_EQ(helper_arg_count(-1), std::nullopt);
    EXPECT_EQ(helper_arg_count(1 << 20), std::nullopt);
    EXPECT_EQ(helper_scalar_args(BPF_FUNC_trace_printk), 0);
}

TEST(HelperProtos, ScalarArguments) {
    EXPECT_EQ(helper_scalar_args(BPF_FUNC_loop), (1u << 1) | (1u << 4));  // nr_loops, flags
    EXPECT_EQ(helper_scalar_args(BPF_FUNC_map_update_elem), 1u << 4);    // flags
    EXPECT_EQ(helper_scalar_args(BPF_FUNC_tail_call), 1u << 3);          // index
    EXPECT_EQ(helper_scalar_args(BPF_FUNC_map_lookup_elem), 0);
    EXPECT_EQ(helper_scalar_args(BPF_FUNC_ktime_get_ns), 0);
}

TEST(HelperProtos, ScalarArgumentsAreArguments) {
    for (int32_t id = 0; id < 256; ++id) {
        const uint8_t s = helper_scalar_args(id);
        if (!s) continue;
        ASSERT_TRUE(helper_arg_count(id).has_value()) << id;
        EXPECT_EQ(s & ~(((1u << (*helper_arg_count(id) + 1)) - 1) & ~1u), 0u) << "helper " << id;
    }
}

}  // namespace
}  // namespace patchfuzz::isa
