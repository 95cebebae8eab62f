// Pass "bpf_loop": the 19-insn shape of docs/patching.md §5.2, the callback imm, stack growth.
// Every expected insn is written by hand from the spec text.
#include <cerrno>

#include "bpf/passes/passes_test_util.hpp"

namespace patchfuzz::passes::testing {
namespace {

using namespace isa;

std::vector<Insn> loop19(int16_t base, int32_t cb_imm) {
    return {
        jmp_imm(BPF_JLE, 1, 8388608, 2), mov32_imm(0, -7), ja(16),
        stx(BPF_DW, 10, 6, base), stx(BPF_DW, 10, 7, static_cast<int16_t>(base + 8)), stx(BPF_DW, 10, 8, static_cast<int16_t>(base + 16)),
        mov64_reg(6, 1), mov32_imm(7, 0), mov64_reg(8, 3),
        jmp_reg(BPF_JGE, 7, 6, 5), mov64_reg(1, 7), mov64_reg(2, 8), call_pseudo(cb_imm),
        alu64_imm(BPF_ADD, 7, 1), jmp_imm(BPF_JEQ, 0, 0, -6), mov64_reg(0, 7),
        ldx(BPF_DW, 6, 10, base), ldx(BPF_DW, 7, 10, static_cast<int16_t>(base + 8)), ldx(BPF_DW, 8, 10, static_cast<int16_t>(base + 16)),
    };
}

TEST(BpfLoopPass, CallbackAfterCallIsShiftedAndStackGrowsWithPadding) {
    Program p = make_program({
        mov64_imm(1, 10),            // 0
        ldimm64_lo(2, BPF_PSEUDO_FUNC, 5), ldimm64_hi(0),  // 1-2: callback at 1+1+5 = 7
        mov64_imm(3, 0),             // 3
        mov64_imm(4, 0),             // 4
        call_helper(BPF_FUNC_loop),  // 5
        exit_insn(),                 // 6
        mov64_imm(0, 0),             // 7 callback
        exit_insn(),                 // 8
    });
    ASSERT_EQ(starts(p), (std::vector<uint32_t>{0, 7, 9}));
    p.subprogs[0].stack_depth = 12;  // round_up(12, 8) - 12 = 4 bytes of padding
    p.aux[5].loop_fit_for_inline = true;
    p.aux[5].loop_callback_subprogno = 1;
    std::vector<patch::PatchBatch> rec;
    auto r = run(p, opts_for(arch_x86_64(), {"bpf_loop"}), &rec);
    ASSERT_TRUE(r.outcome.ok());
    // extra = 24 + 4 = 28; r6 at fp-(12+28) = -40. Callback 7 -> 7+18 = 25; call at 5+12 = 17:
    // imm = 25 - 17 - 1 = 7. The PSEUDO_FUNC at 1 (before the patch, target after it) gets +18.
    std::vector<Insn> want{mov64_imm(1, 10), ldimm64_lo(2, BPF_PSEUDO_FUNC, 23), ldimm64_hi(0), mov64_imm(3, 0), mov64_imm(4, 0)};
    for (auto i : loop19(-40, 7)) want.push_back(i);
    want.push_back(exit_insn());
    want.push_back(mov64_imm(0, 0));
    want.push_back(exit_insn());
    EXPECT_TRUE(same_insns(p.insns, want));
    EXPECT_EQ(starts(p), (std::vector<uint32_t>{0, 25, 27}));
    EXPECT_EQ(p.subprogs[0].stack_depth, 40u);
    EXPECT_EQ(p.subprogs[1].stack_depth, 0u);
    // the batch, in the pass's input coordinates, patch-local: slot 12 names local 12+7+1 = 20 =
    // n+1 -> original 5+1+1 = 7, the callback start.
    ASSERT_EQ(rec.size(), 1u);
    ASSERT_EQ(rec[0].patches.size(), 1u);
    EXPECT_EQ(rec[0].patches[0].pos, 5u);
    EXPECT_EQ(rec[0].patches[0].insns.size(), 19u);
}

TEST(BpfLoopPass, CallbackBeforeCallInLaterSubprog) {
    Program p = make_program({
        call_pseudo(3),               // 0 -> 4
        exit_insn(),                  // 1
        mov64_imm(0, 0),              // 2 callback (subprog 1)
        exit_insn(),                  // 3
        mov64_imm(1, 4),              // 4 subprog 2
        ldimm64_lo(2, BPF_PSEUDO_FUNC, -4), ldimm64_hi(0),  // 5-6 -> 2
        mov64_imm(3, 0),              // 7
        mov64_imm(4, 0),              // 8
        call_helper(BPF_FUNC_loop),   // 9
        exit_insn(),                  // 10
    });
    ASSERT_EQ(starts(p), (std::vector<uint32_t>{0, 2, 4, 11}));
    p.subprogs[2].stack_depth = 8;  // aligned: extra = 24, base = -32
    p.aux[9].loop_fit_for_inline = true;
    p.aux[9].loop_callback_subprogno = 1;
    auto r = run(p, opts_for(arch_arm64(), {"bpf_loop"}));
    ASSERT_TRUE(r.outcome.ok());
    // call slot at 9+12 = 21: imm = 2 - 21 - 1 = -20
    std::vector<Insn> want{call_pseudo(3), exit_insn(), mov64_imm(0, 0), exit_insn(), mov64_imm(1, 4),
                           ldimm64_lo(2, BPF_PSEUDO_FUNC, -4), ldimm64_hi(0), mov64_imm(3, 0), mov64_imm(4, 0)};
    for (auto i : loop19(-32, -20)) want.push_back(i);
    want.push_back(exit_insn());
    EXPECT_TRUE(same_insns(p.insns, want));
    EXPECT_EQ(starts(p), (std::vector<uint32_t>{0, 2, 4, 29}));
    EXPECT_EQ(p.subprogs[0].stack_depth, 0u);
    EXPECT_EQ(p.subprogs[2].stack_depth, 32u);
}

TEST(BpfLoopPass, NotFitForInlineStaysACall) {
    Program p = make_program({mov64_imm(1, 1), ldimm64_lo(2, BPF_PSEUDO_FUNC, 4), ldimm64_hi(0), mov64_imm(4, 0),
                              call_helper(BPF_FUNC_loop), exit_insn(), mov64_imm(0, 1), exit_insn()});
    const auto before = p.insns;
    auto r = run(p, opts_for(arch_x86_64(), {"bpf_loop"}));
    ASSERT_TRUE(r.outcome.ok());
    EXPECT_TRUE(same_insns(p.insns, before));
    EXPECT_EQ(p.subprogs[0].stack_depth, 0u);
}

TEST(BpfLoopPass, TwoCallsInOneSubprogShareTheSlotsAndGrowOnce) {
    Program p = make_program({
        ldimm64_lo(2, BPF_PSEUDO_FUNC, 6), ldimm64_hi(0),  // 0-1 -> 7
        call_helper(BPF_FUNC_loop),  // 2
        ldimm64_lo(2, BPF_PSEUDO_FUNC, 3), ldimm64_hi(0),  // 3-4 -> 7
        call_helper(BPF_FUNC_loop),  // 5
        exit_insn(),                 // 6
        mov64_imm(0, 1),             // 7
        exit_insn(),                 // 8
    });
    p.subprogs[0].stack_depth = 16;
    for (uint32_t i : {2u, 5u}) {
        p.aux[i].loop_fit_for_inline = true;
        p.aux[i].loop_callback_subprogno = 1;
    }
    auto r = run(p, opts_for(arch_x86_64(), {"bpf_loop"}));
    ASSERT_TRUE(r.outcome.ok());
    EXPECT_EQ(p.len(), 9u + 2 * 18);
    EXPECT_EQ(p.subprogs[0].stack_depth, 40u);
    // first call at 2: callback at 7+36 = 43, call slot 2+12 = 14 -> imm 28;
    // second call now at 5+18 = 23, slot 35 -> imm 43-35-1 = 7; both use fp-40.
    EXPECT_TRUE(same_insns({p.insns[14], p.insns[35], p.insns[5]}, {call_pseudo(28), call_pseudo(7), stx(BPF_DW, 10, 6, -40)}));
    EXPECT_EQ(starts(p), (std::vector<uint32_t>{0, 43, 45}));
}

}  // namespace
}  // namespace patchfuzz::passes::testing
