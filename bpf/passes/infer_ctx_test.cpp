// infer_ctx_accesses(): which accesses of a fact-less program go through the ctx pointer. Each
// program below is one a verifier would accept; the expected marks are the types its register
// tracking gives, written out by hand.
#include "bpf/passes/infer_ctx.hpp"

#include "bpf/passes/passes_test_util.hpp"

namespace patchfuzz::passes::testing {
namespace {

using namespace isa;

Program tc(std::vector<Insn> insns, uint32_t prog_type = BPF_PROG_TYPE_SCHED_CLS) {
    Program p = make_program(std::move(insns));
    p.prog_type = prog_type;
    return p;
}

std::vector<uint32_t> ctx_marked(const Program& p) {
    std::vector<uint32_t> out;
    for (uint32_t i = 0; i < p.len(); ++i)
        if (p.aux[i].ptr_type == PtrType::Ctx) out.push_back(i);
    return out;
}

TEST(InferCtx, CopiesSpillsAndCalleeSavedRegistersKeepTheCtx) {
    Program p = tc({
        mov64_reg(6, 1),                        // 0 r6 = ctx
        ldx(BPF_W, 2, 1, 0),                    // 1 len: ctx
        stx(BPF_DW, 10, 1, -8),                 // 2 spill the ctx
        call_helper(BPF_FUNC_ktime_get_ns),     // 3 r1-r5 gone, r6 and the slot stay
        ldx(BPF_W, 3, 6, 8),                    // 4 mark via r6: ctx
        ldx(BPF_DW, 7, 10, -8),                 // 5 fill
        stx(BPF_W, 7, 3, 8),                    // 6 store mark via the filled r7: ctx
        ldx(BPF_W, 4, 1, 0),                    // 7 r1 after the call: not the ctx
        ldx(BPF_B, 5, 6, 1),                    // 8 narrow read of len: ctx, field size 4
        ldx(BPF_W, 5, 6, 48),                   // 9 cb[0]: ctx, no field size
        mov64_imm(0, 0), exit_insn(),
    });
    infer_ctx_accesses(p);
    EXPECT_EQ(ctx_marked(p), (std::vector<uint32_t>{1, 4, 6, 8, 9}));
    EXPECT_EQ(p.aux[8].ctx_field_size, 4u);
    EXPECT_EQ(p.aux[9].ctx_field_size, 0u);
}

TEST(InferCtx, PathsMustAllAgreeAndAModifiedPointerIsNoCtx) {
    Program p = tc({
        mov64_reg(3, 1),                        // 0
        jmp_imm(BPF_JEQ, 2, 0, 1),              // 1
        mov64_reg(3, 10),                       // 2 on one path r3 is the stack
        ldx(BPF_W, 4, 3, -8),                   // 3 not the ctx on every path
        mov64_reg(5, 1),                        // 4
        alu64_imm(BPF_ADD, 5, 4),               // 5 modified
        ldx(BPF_W, 4, 5, 0),                    // 6 not a ctx access
        mov32_reg(6, 1),                        // 7 a 32-bit copy is no pointer
        stx(BPF_DW, 10, 1, -16),                // 8 spill
        stx(BPF_W, 2, 4, 0),                    // 9 a store through r2 (may be the stack): spill forgotten
        ldx(BPF_DW, 7, 10, -16),                // 10 fill
        ldx(BPF_W, 4, 7, 0),                    // 11 not marked
        ldx(BPF_W, 4, 1, 0),                    // 12 r1 is still the ctx
        mov64_imm(0, 0), exit_insn(),
    });
    infer_ctx_accesses(p);
    EXPECT_EQ(ctx_marked(p), (std::vector<uint32_t>{12}));
}

TEST(InferCtx, CalleesGetTheCtxWhenEveryCallPassesIt) {
    Program p = tc({
        mov64_reg(6, 1),                        // 0
        call_pseudo(5),                         // 1 -> 7, r1 = ctx
        mov64_reg(1, 6),                        // 2
        call_pseudo(6),                         // 3 -> 10, r1 = ctx
        mov64_reg(1, 10), call_pseudo(4),       // 4-5 -> 10, r1 = the stack
        exit_insn(),                            // 6
        ldx(BPF_W, 0, 1, 0), mov64_imm(0, 0), exit_insn(),  // 7-9 callee A: its r1 is the ctx
        ldx(BPF_W, 0, 1, 0), exit_insn(),                    // 10-11 callee B: not on every call
    });
    // make_program found the subprogs at 7 and 10 from the calls.
    infer_ctx_accesses(p);
    EXPECT_EQ(ctx_marked(p), (std::vector<uint32_t>{7}));
}

TEST(InferCtx, OnlyConvertedTypesAndModelledFields) {
    const std::vector<Insn> body{ldx(BPF_W, 2, 1, 0), ldx(BPF_W, 3, 1, 72), stx(BPF_W, 1, 2, 8), mov64_imm(0, 0), exit_insn()};
    Program filter = tc(body, BPF_PROG_TYPE_SOCKET_FILTER);
    infer_ctx_accesses(filter);
    EXPECT_EQ(ctx_marked(filter), (std::vector<uint32_t>{0}));  // 72 (tc_classid) unmodelled; mark is tc-only for writes
    Program cls = tc(body);
    infer_ctx_accesses(cls);
    EXPECT_EQ(ctx_marked(cls), (std::vector<uint32_t>{0, 2}));
    Program kprobe = tc(body, BPF_PROG_TYPE_KPROBE);
    infer_ctx_accesses(kprobe);
    EXPECT_TRUE(ctx_marked(kprobe).empty());
    Program xdp = tc({ldx(BPF_W, 2, 1, 4), mov64_imm(0, 0), exit_insn()}, BPF_PROG_TYPE_XDP);
    infer_ctx_accesses(xdp);
    EXPECT_EQ(ctx_marked(xdp), (std::vector<uint32_t>{0}));
}

}  // namespace
}  // namespace patchfuzz::passes::testing
