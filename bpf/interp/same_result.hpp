#pragma once
// For the interpreter's tests: gtest expectations that two results agree in every field (runs
// that must be the same run, however they were made).
#include <gtest/gtest.h>

#include "bpf/interp/interp.hpp"

namespace patchfuzz::interp {

inline void expect_same_result(const ExecResult& a, const ExecResult& b) {
    EXPECT_EQ(a.status, b.status);
    EXPECT_EQ(a.r0, b.r0);
    EXPECT_EQ(a.fault_pc, b.fault_pc);
    EXPECT_EQ(a.reason, b.reason);
    EXPECT_EQ(a.steps, b.steps);
    EXPECT_EQ(a.stack, b.stack);
    EXPECT_EQ(a.maps, b.maps);
    EXPECT_EQ(a.map_digests, b.map_digests);
    EXPECT_EQ(a.effects, b.effects);
    EXPECT_EQ(a.cycles, b.cycles);
    EXPECT_EQ(a.ctx, b.ctx);
    EXPECT_EQ(a.packet, b.packet);
    ASSERT_EQ(a.trace.size(), b.trace.size());
    for (size_t k = 0; k < a.trace.size(); ++k) {
        EXPECT_EQ(a.trace[k].pc, b.trace[k].pc);
        EXPECT_EQ(a.trace[k].frame, b.trace[k].frame);
        EXPECT_EQ(a.trace[k].dst_after, b.trace[k].dst_after);
    }
}

}  // namespace patchfuzz::interp
