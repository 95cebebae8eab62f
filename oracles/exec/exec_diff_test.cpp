// Execution differential on the numeric-iterator inlines (issue 6 required results): the default
// (V4) inline agrees with the kfunc calls on every profile; V1 diverges under jit32 (MOVSX decoded
// as MOV: bug class B3) and V3 diverges (signed distance compare: B2), each found by generated
// inputs. Also: compare_runs classifies divergences.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

#include "bpf/interp/loop_programs.hpp"
#include "oracles/exec/exec_diff.hpp"

namespace patchfuzz::oracles::exec {
namespace {

ExecDiffOptions opts_for(passes::IterInline v, std::vector<ArchProfile> archs, uint32_t inputs, uint64_t seed) {
    ExecDiffOptions o;
    o.archs = std::move(archs);
    o.rewrite.iter_inline = v;
    o.inputs = inputs;
    o.seed = seed;
    return o;
}

TEST(ExecDiff, V4InlineAgreesWithTheKfuncsOnAllProfiles) {
    for (bool from_ctx : {true, false}) {
        interp::IterSumOptions io;
        io.bounds_from_ctx = from_ctx;
        io.start = -3;
        io.end = 3;
        ExecDiffStats st;
        Verdict v = exec_diff(interp::iter_sum_program(io), opts_for(passes::IterInline::V4, {}, 300, 42), &st);
        EXPECT_EQ(v.outcome, Outcome::Pass) << v.reason << "\n" << v.counterexample;
        EXPECT_EQ(st.skipped_inputs, 0u);
        EXPECT_GT(st.executions, 300u * 3 * 2);
    }
}

TEST(ExecDiff, V1DivergesUnderJit32Only) {
    const Program p = interp::iter_sum_program();
    Verdict ok = exec_diff(p, opts_for(passes::IterInline::V1, {arch_x86_64(), arch_arm64()}, 300, 7));
    EXPECT_EQ(ok.outcome, Outcome::Pass) << ok.counterexample;
    auto t0 = std::chrono::steady_clock::now();
    ExecDiffStats st;
    Verdict bad = exec_diff(p, opts_for(passes::IterInline::V1, {arch_jit32()}, 300, 7), &st);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_EQ(bad.outcome, Outcome::Fail);
    EXPECT_EQ(bad.arch, "jit32");
    std::printf("V1 on jit32: %s after %u inputs, %.3f s\n%s\n", bad.divergence.c_str(), st.inputs_run, secs,
                bad.counterexample.c_str());
}

TEST(ExecDiff, V3Diverges) {
    ExecDiffStats st;
    auto t0 = std::chrono::steady_clock::now();
    Verdict bad = exec_diff(interp::iter_sum_program(), opts_for(passes::IterInline::V3, {}, 300, 11), &st);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_EQ(bad.outcome, Outcome::Fail);
    EXPECT_FALSE(bad.counterexample.empty());
    std::printf("V3: %s on %s after %u inputs, %.3f s\n%s\n", bad.divergence.c_str(), bad.arch.c_str(), st.inputs_run, secs,
                bad.counterexample.c_str());
}

TEST(ExecDiff, CompareRunsClassifies) {
    interp::ExecResult a;
    a.stack.assign(512, 0);
    a.r0 = 0x1234;
    interp::ExecResult b = a;
    EXPECT_FALSE(compare_runs(a, b, 16, false));
    b.r0 = 0xffffffff00001234ULL;  // only the upper half differs: an int return agrees
    EXPECT_FALSE(compare_runs(a, b, 16, false));
    EXPECT_EQ(compare_runs(a, b, 16, true)->kind, "r0-mismatch");
    b = a;
    b.stack[512 - 9] = 1;  // fp-9: inside a 16-byte frame
    EXPECT_EQ(compare_runs(a, b, 16, false)->kind, "state-bytes-mismatch");
    EXPECT_FALSE(compare_runs(a, b, 8, false));  // below the program's own stack: the rewrite's
    b = a;
    b.effects = {"map_delete(map 0) = 0"};
    EXPECT_EQ(compare_runs(a, b, 16, false)->kind, "effects-mismatch");
    b = a;
    b.status = interp::ExecResult::Status::Fault;
    EXPECT_EQ(compare_runs(a, b, 16, false)->kind, "status-mismatch");
}

TEST(ExecDiff, MainStackDepthFromFpUses) {
    Program p = interp::iter_sum_program();
    p.subprogs[0].stack_depth = 0;
    EXPECT_EQ(main_stack_depth(p), 40u);
}

}  // namespace
}  // namespace patchfuzz::oracles::exec
