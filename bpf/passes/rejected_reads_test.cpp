// rejected_reads(): register reads the verifier would reject.
#include "bpf/passes/passes_test_util.hpp"
#include "bpf/passes/rejected_reads.hpp"

namespace patchfuzz::passes::testing {
namespace {

using namespace isa;
using Pcs = std::vector<uint32_t>;

TEST(RejectedReads, RegistersWrittenOnEveryPathAreReadable) {
    // r0 = r1 (ctx, written at entry); if r0 == 0 goto +1; r0 = 2; exit
    EXPECT_EQ(rejected_reads(make_program({mov64_reg(0, 1), jmp_imm(BPF_JEQ, 0, 0, 1), mov64_imm(0, 2), exit_insn()})), Pcs{});
    // r0 written on one path only: the exit reads it uninitialized when the jump is taken.
    EXPECT_EQ(rejected_reads(make_program({jmp_imm(BPF_JEQ, 1, 0, 1), mov64_imm(0, 2), exit_insn()})), Pcs{2});
    // r2 is not an argument of the main program; neither is r3 as a store base.
    EXPECT_EQ(rejected_reads(make_program({mov64_reg(0, 2), st(BPF_W, 3, 0, 1), exit_insn()})), (Pcs{0, 1}));
}

TEST(RejectedReads, CallsDefineR0AndClobberTheArguments) {
    // call ktime_get_ns; r0 += r1 (r1 clobbered by the call); exit
    EXPECT_EQ(rejected_reads(make_program({call_helper(BPF_FUNC_ktime_get_ns), alu64_reg(BPF_ADD, 0, 1), exit_insn()})), Pcs{1});
    // bpf_loop reads r1-r4: r3 and r4 missing.
    Program loop = make_program({mov64_imm(1, 3), ldimm64_lo(2, BPF_PSEUDO_FUNC, 3), ldimm64_hi(0), call_helper(BPF_FUNC_loop),
                                 exit_insn(), mov64_imm(0, 0), exit_insn()});
    loop.subprogs = {SubprogInfo{.start = 0}, SubprogInfo{.start = 5, .is_cb = true}, SubprogInfo{.start = 7}};
    EXPECT_EQ(rejected_reads(loop), Pcs{3});
}

TEST(RejectedReads, HelperArgumentsComeFromTheSharedPrototypeTable) {
    // map_lookup_percpu_elem(map, key, cpu) reads r3: unwritten here. A helper without a modelled
    // prototype (trace_printk) has its arguments unchecked.
    EXPECT_EQ(rejected_reads(make_program({mov64_reg(2, 10), call_helper(BPF_FUNC_map_lookup_percpu_elem), exit_insn()})), Pcs{1});
    EXPECT_EQ(rejected_reads(make_program({call_helper(BPF_FUNC_trace_printk), exit_insn()})), Pcs{});
}

TEST(RejectedReads, AFailedTailCallFallsThrough) {
    // The internal tail call continues at the next insn when it fails: the exit after it reads r0
    // unwritten (no write before the tail call) and is reached.
    EXPECT_EQ(rejected_reads(make_program({make(BPF_JMP | kOpTailCall, 0, 0, 0, 0), exit_insn()})), Pcs{1});
}

TEST(RejectedReads, ACallbackMustSetR0BeforeItsExit) {
    // The callback's `r0 = 0` deleted: its exit reads r0 unwritten (its args r1-r5 are written).
    Program p = make_program({mov64_imm(1, 3), ldimm64_lo(2, BPF_PSEUDO_FUNC, 5), ldimm64_hi(0), mov64_imm(3, 0), mov64_imm(4, 0),
                              call_helper(BPF_FUNC_loop), exit_insn(), mov64_reg(6, 2), exit_insn()});
    p.subprogs = {SubprogInfo{.start = 0}, SubprogInfo{.start = 7, .is_cb = true}, SubprogInfo{.start = 9}};
    EXPECT_EQ(rejected_reads(p), Pcs{8});
    p.insns[7] = mov64_reg(0, 2);
    EXPECT_EQ(rejected_reads(p), Pcs{});
}

TEST(RejectedReads, ABpfLoopCallbackHasTwoArguments) {
    // The callback stores its r3 through r2 (ctx): bpf_loop passes index and ctx alone, so r3 is
    // unreadable there once the facts name the function as the call's callback; without those
    // facts the check cannot tell and lets it pass.
    Program p = make_program({mov64_imm(1, 3), ldimm64_lo(2, BPF_PSEUDO_FUNC, 5), ldimm64_hi(0), mov64_imm(3, 0), mov64_imm(4, 0),
                              call_helper(BPF_FUNC_loop), exit_insn(), stx(BPF_DW, 2, 3, 0), mov64_imm(0, 0), exit_insn()});
    p.subprogs = {SubprogInfo{.start = 0}, SubprogInfo{.start = 7, .is_cb = true}, SubprogInfo{.start = 10}};
    EXPECT_EQ(rejected_reads(p), Pcs{});
    p.aux[5].loop_fit_for_inline = true;
    p.aux[5].loop_callback_subprogno = 1;
    EXPECT_EQ(rejected_reads(p), Pcs{7});
    p.insns[7] = stx(BPF_DW, 2, 1, 0);  // the index: an argument
    EXPECT_EQ(rejected_reads(p), Pcs{});
}

TEST(RejectedReads, PointersWhereAHelperWantsAScalar) {
    // bpf_loop(nr_loops = r1, ...) with the def of nr_loops deleted: R1 is still the ctx pointer
    // ("R1 type=ctx expected=scalar" from the 6.12 verifier).
    Program p = make_program({mov64_imm(1, 3), ldimm64_lo(2, BPF_PSEUDO_FUNC, 5), ldimm64_hi(0), mov64_imm(3, 0), mov64_imm(4, 0),
                              call_helper(BPF_FUNC_loop), exit_insn(), mov64_imm(0, 0), exit_insn()});
    p.subprogs = {SubprogInfo{.start = 0}, SubprogInfo{.start = 7, .is_cb = true}, SubprogInfo{.start = 9}};
    EXPECT_EQ(rejected_reads(p), Pcs{});
    p.insns[0] = mov64_imm(6, 0);  // the def of r1 gone, another in its place
    EXPECT_EQ(rejected_reads(p), Pcs{5});
    // A copy of the stack pointer, offset by a constant, is a pointer too (as flags, R4).
    p.insns[0] = mov64_imm(1, 3);
    p.insns[4] = mov64_reg(4, 10);
    EXPECT_EQ(rejected_reads(p), Pcs{5});
}

TEST(RejectedReads, APointerOnOnePathIsEnough) {
    // if r1 == 0 goto +1; r1 = 3; r2 = cb; r3 = 0; r4 = 0; bpf_loop: when the jump is taken R1 is
    // still the ctx pointer (the verifier explores both paths).
    Program p = make_program({jmp_imm(BPF_JEQ, 1, 0, 1), mov64_imm(1, 3), ldimm64_lo(2, BPF_PSEUDO_FUNC, 5), ldimm64_hi(0),
                              mov64_imm(3, 0), mov64_imm(4, 0), call_helper(BPF_FUNC_loop), exit_insn(), mov64_imm(0, 0),
                              exit_insn()});
    p.subprogs = {SubprogInfo{.start = 0}, SubprogInfo{.start = 8, .is_cb = true}, SubprogInfo{.start = 10}};
    EXPECT_EQ(rejected_reads(p), Pcs{6});
    p.insns[0] = mov64_imm(0, 0);
    EXPECT_EQ(rejected_reads(p), Pcs{});
}

}  // namespace
}  // namespace patchfuzz::passes::testing
