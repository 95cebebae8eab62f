// Bar of issue 6: the cost model's inlined/non-inlined ratio is within 15% of the seed's on both
// arches; the other columns follow the model's formula.
#include <gtest/gtest.h>

#include <cmath>

#include "oracles/exec/cost_table.hpp"

namespace patchfuzz::oracles::exec {
namespace {

TEST(CostTable, InlinedOverCallRatioWithin15PercentOfTheSeed) {
    auto t = cost_table();
    ASSERT_TRUE(t.ok()) << t.error().to_string();
    ASSERT_EQ(t->size(), 2u);
    for (const CostRow& r : *t) {
        double rel = r.model_inl_call() / r.seed_inl_call();
        EXPECT_GT(rel, 0.85) << r.arch << " model " << r.model_inl_call() << " seed " << r.seed_inl_call();
        EXPECT_LT(rel, 1.15) << r.arch << " model " << r.model_inl_call() << " seed " << r.seed_inl_call();
        // The inlined loop executes fewer BPF insns per iteration than the call form's program side
        // plus kfunc body would suggest, and more than the bare loop.
        EXPECT_GT(r.insns[kBpfForInlined], r.insns[kBpfLoop] - 8);
    }
    // x86-64 is issue-bound (inlining ~2x), arm64 latency-bound (~1x): the qualitative result.
    EXPECT_GT((*t)[0].model_inl_call(), 1.6);
    EXPECT_LT(std::fabs((*t)[1].model_inl_call() - 1.0), 0.1);
}

}  // namespace
}  // namespace patchfuzz::oracles::exec
