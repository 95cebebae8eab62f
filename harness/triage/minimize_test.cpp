// The minimizer on a real finding: the bpf_loop inline's 32-bit -E2BIG (corpus/regression/findings
// 0001). The result must still fail with the same signature, be smaller, and keep every verifier
// fact justified by its code (the bpf_loop call's flags = 0 and PSEUDO_FUNC callback).
#include "harness/triage/minimize.hpp"

#include <gtest/gtest.h>

#include "bpf/isa/insn.hpp"
#include "bpf/passes/infer_facts.hpp"
#include "bpf/passes/rejected_reads.hpp"

namespace patchfuzz::harness {
namespace {

const char* kFinding = PATCHFUZZ_SOURCE_ROOT "/corpus/regression/findings/0001-bpf-loop-e2big-r0-upper-half.case";
const char* kSignature = "exec/-/-/r0-mismatch/x86_64";

RunConfig exec_x86() {
    RunConfig cfg;
    cfg.oracles = {oracles::OracleId::Exec};
    cfg.arches = {arch_x86_64()};
    return cfg;
}

// Index of the first call to helper `id`, or len.
uint32_t find_helper_call(const Program& p, int32_t id) {
    for (uint32_t i = 0; i < p.len(); ++i)
        if (isa::is_helper_call(p.insns[i]) && p.insns[i].imm == id) return i;
    return p.len();
}

TEST(Minimize, ShrinksARealFindingAndKeepsItsSignature) {
    auto c = read_case(kFinding);
    ASSERT_TRUE(c) << c.error().to_string();
    ASSERT_TRUE(fails_with(*c, exec_x86(), kSignature));
    const MinimizeResult r = minimize(*c, exec_x86(), kSignature, MinimizeOptions{.max_runs = 4000, .max_seconds = 60});
    EXPECT_TRUE(fails_with(r.minimized, exec_x86(), kSignature));
    EXPECT_LT(r.minimized.program.len(), c->program.len());
    EXPECT_GT(r.steps, 0u);
}

TEST(Minimize, KeepsTheCodeThatJustifiesTheInlineFacts) {
    auto c = read_case(kFinding);
    ASSERT_TRUE(c) << c.error().to_string();
    const MinimizeResult r = minimize(*c, exec_x86(), kSignature, MinimizeOptions{.max_runs = 4000, .max_seconds = 60});
    const Program& m = r.minimized.program;
    const uint32_t call = find_helper_call(m, 181);  // bpf_loop
    ASSERT_LT(call, m.len()) << "the bpf_loop call is what fails; it cannot be shrunk away";
    ASSERT_TRUE(m.aux[call].loop_fit_for_inline);
    // What a verifier would conclude from the code alone.
    Program code;
    code.prog_type = m.prog_type;
    code.insns = m.insns;
    code.maps = m.maps;
    passes::infer_facts(code);
    EXPECT_TRUE(code.aux[call].loop_fit_for_inline)
        << "the minimizer removed the flags = 0 or callback setup the inline fact depends on";
}

TEST(Minimize, NeverLeavesARegisterReadTheVerifierRejects) {
    // Finding 0007: deleting `r1 = 0x100000003` still fails (R1 is then the ctx pointer, whose
    // upper half is not zero either), and so does deleting the callback's `r0 = 0`; a kernel
    // rejects both programs, so neither may be the reproducer.
    auto c = read_case(PATCHFUZZ_SOURCE_ROOT "/corpus/regression/findings/0007-bpf-loop-nr-loops-upper-half.case");
    ASSERT_TRUE(c) << c.error().to_string();
    ASSERT_TRUE(passes::rejected_reads(c->program).empty());
    Case without_def = *c;
    without_def.program.insns[0] = isa::ja(0);
    without_def.program.insns[1] = isa::ja(0);
    ASSERT_TRUE(fails_with(without_def, exec_x86(), kSignature)) << "the shrink this test guards against must still fail";
    ASSERT_FALSE(passes::rejected_reads(without_def.program).empty());
    const MinimizeResult r = minimize(*c, exec_x86(), kSignature, MinimizeOptions{.max_runs = 2000, .max_seconds = 60});
    EXPECT_TRUE(fails_with(r.minimized, exec_x86(), kSignature));
    EXPECT_TRUE(passes::rejected_reads(r.minimized.program).empty());
}

}  // namespace
}  // namespace patchfuzz::harness
