// Pass "ctx_access": the nospec barriers of bpf_convert_ctx_accesses. Expected programs are written
// out by hand from the kernel's two patch shapes ([nospec, insn] and [store, nospec]); the 7.3.4
// guest showed the second after every first store into a stack slot below bypass_spec_v4.
#include "bpf/passes/passes_test_util.hpp"

namespace patchfuzz::passes::testing {
namespace {

using namespace isa;

TEST(CtxAccessPass, BarriersBeforeAndAfterAndJumpsStillLand) {
    Program p = make_program({
        st(BPF_DW, BPF_REG_10, -8, 1),      // 0 nospec_result: [st, nospec]
        jmp_imm(BPF_JEQ, BPF_REG_1, 0, 2),  // 1 -> 4
        ldx(BPF_DW, BPF_REG_0, BPF_REG_10, -8),  // 2 nospec: [nospec, ldx]
        stx(BPF_DW, BPF_REG_10, BPF_REG_0, -16),  // 3 both: [nospec, stx, nospec]
        mov64_imm(BPF_REG_0, 0),            // 4
        exit_insn(),                        // 5
    });
    p.aux[0].nospec_result = true;
    p.aux[2].nospec = true;
    p.aux[3].nospec = true;
    p.aux[3].nospec_result = true;
    p.aux[4].nospec_result = true;  // not a store: no barrier after it (the kernel's BPF_WRITE test)
    auto r = run(p, opts_for(arch_x86_64(), {"ctx_access"}));
    ASSERT_TRUE(r.outcome.ok());
    EXPECT_TRUE(same_insns(p.insns, {st(BPF_DW, BPF_REG_10, -8, 1), nospec(), jmp_imm(BPF_JEQ, BPF_REG_1, 0, 5), nospec(),
                                     ldx(BPF_DW, BPF_REG_0, BPF_REG_10, -8), nospec(), stx(BPF_DW, BPF_REG_10, BPF_REG_0, -16),
                                     nospec(), mov64_imm(BPF_REG_0, 0), exit_insn()}));
}

TEST(CtxAccessPass, NoFactsNoPatch) {
    Program p = make_program({st(BPF_DW, BPF_REG_10, -8, 1), mov64_imm(BPF_REG_0, 0), exit_insn()});
    std::vector<patch::PatchBatch> rec;
    auto r = run(p, opts_for(arch_x86_64(), {"ctx_access"}), &rec);
    ASSERT_TRUE(r.outcome.ok());
    EXPECT_TRUE(rec.empty());
    EXPECT_EQ(p.len(), 3u);
}

}  // namespace
}  // namespace patchfuzz::passes::testing
