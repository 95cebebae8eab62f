// append_successors() / successors(): the intra-procedural edges every path walk shares, one
// insn kind at a time.
#include "bpf/program/cfg.hpp"

#include <gtest/gtest.h>

#include <linux/bpf.h>

namespace patchfuzz {
namespace {

using namespace isa;
using Pcs = std::vector<uint32_t>;

// `insn` at pc 1 of a program padded with `r0 = 0` to `len` insns.
Program at_pc1(Insn insn, uint32_t len = 8) {
    std::vector<Insn> v(len, mov64_imm(0, 0));
    v[1] = insn;
    v[len - 1] = exit_insn();
    return make_program(v);
}

TEST(Cfg, StraightLineInsnsContinueAtTheNext) {
    EXPECT_EQ(successors(at_pc1(alu32_imm(BPF_ADD, 1, 2)), 1), Pcs{2});
    EXPECT_EQ(successors(at_pc1(ldx(BPF_W, 1, 10, -4)), 1), Pcs{2});
    EXPECT_EQ(successors(at_pc1(st(BPF_DW, 10, -8, 1)), 1), Pcs{2});
    EXPECT_EQ(successors(at_pc1(make(BPF_LD | BPF_ABS | BPF_W, 0, 0, 0, 4)), 1), Pcs{2});
}

TEST(Cfg, LdImm64SkipsItsSecondSlot) {
    const Program p = make_program({ldimm64_lo(1, 0, 7), ldimm64_hi(0), mov64_imm(0, 0), exit_insn()});
    EXPECT_EQ(successors(p, 0), Pcs{2});
}

TEST(Cfg, ExitEndsThePath) {
    EXPECT_EQ(successors(at_pc1(exit_insn()), 1), Pcs{});
    const Program p = make_program({mov64_imm(0, 0), exit_insn()});
    EXPECT_EQ(successors(p, 1), Pcs{});
}

TEST(Cfg, CallsReturnToTheNextInsn) {
    EXPECT_EQ(successors(at_pc1(call_helper(BPF_FUNC_ktime_get_ns)), 1), Pcs{2});
    EXPECT_EQ(successors(at_pc1(call_kfunc(1234)), 1), Pcs{2});
    // bpf-to-bpf: the callee is another function; this one resumes after the call.
    const Program p = make_program({call_pseudo(2), mov64_imm(0, 0), exit_insn(), mov64_imm(0, 1), exit_insn()});
    EXPECT_EQ(successors(p, 0), Pcs{1});
}

TEST(Cfg, AFailedTailCallFallsThrough) {
    // Index out of range, an empty slot or the tail-call limit: execution goes on at pc + 1.
    EXPECT_EQ(successors(at_pc1(make(BPF_JMP | kOpTailCall, 0, 0, 0, 0)), 1), Pcs{2});
}

TEST(Cfg, UnconditionalJumpsGoToTheTargetOnly) {
    EXPECT_EQ(successors(at_pc1(ja(3)), 1), Pcs{5});
    EXPECT_EQ(successors(at_pc1(ja(-2)), 1), Pcs{0});
    EXPECT_EQ(successors(at_pc1(gotol(4)), 1), Pcs{6});  // gotol: the displacement is in imm
    EXPECT_EQ(successors(at_pc1(ja(0)), 1), Pcs{2});     // goto +0: the next insn, once
}

TEST(Cfg, ConditionalJumpsAndMayGotoHaveBothEdges) {
    EXPECT_EQ(successors(at_pc1(jmp_imm(BPF_JEQ, 1, 0, 3)), 1), (Pcs{5, 2}));
    EXPECT_EQ(successors(at_pc1(jmp_reg(BPF_JSGT, 1, 2, -1)), 1), (Pcs{1, 2}));
    EXPECT_EQ(successors(at_pc1(jmp32_imm(BPF_JSET, 1, 4, 2)), 1), (Pcs{4, 2}));
    EXPECT_EQ(successors(at_pc1(may_goto(2)), 1), (Pcs{4, 2}));
}

TEST(Cfg, GotoxReachesEveryLiveJumpTableEntry) {
    Program p = at_pc1(make(BPF_JMP | BPF_JA | BPF_X, 1, 0, 0, 0));
    EXPECT_EQ(successors(p, 1), Pcs{}) << "no insn array: nowhere to go";
    p.insn_arrays = {InsnArray{.map_index = 0, .entries = {InsnArrayEntry{.orig_off = 3, .xlated_off = 3},
                                                           InsnArrayEntry{.orig_off = 4, .xlated_off = kInsnDeleted}}},
                     InsnArray{.map_index = 1, .entries = {InsnArrayEntry{.orig_off = 6, .xlated_off = 6},
                                                           InsnArrayEntry{.orig_off = 9, .xlated_off = 99}}}};
    EXPECT_EQ(successors(p, 1), (Pcs{3, 6})) << "deleted and out-of-program entries are dropped";
    // The same edges in two parts, for analyses that join all gotox insns in one node.
    EXPECT_TRUE(jumps_through_tables(p.insns[1]));
    EXPECT_FALSE(jumps_through_tables(ja(0)));
    EXPECT_FALSE(jumps_through_tables(gotol(0)));
    std::vector<uint32_t> t;
    append_jump_table_targets(p, t);
    EXPECT_EQ(t, (Pcs{3, 6}));
}

TEST(Cfg, TargetsOutsideTheProgramAreDropped) {
    EXPECT_EQ(successors(at_pc1(ja(100)), 1), Pcs{});
    EXPECT_EQ(successors(at_pc1(ja(-5)), 1), Pcs{});
    EXPECT_EQ(successors(at_pc1(jmp_imm(BPF_JEQ, 1, 0, 100)), 1), Pcs{2});
    // Falling off the end: the last insn is not an exit.
    const Program p = make_program({mov64_imm(0, 0), jmp_imm(BPF_JEQ, 0, 0, -2)});
    EXPECT_EQ(successors(p, 1), Pcs{0});
    EXPECT_EQ(successors(p, 5), Pcs{}) << "pc past the end";
}

TEST(Cfg, AppendKeepsWhatIsThere) {
    const Program p = at_pc1(jmp_imm(BPF_JEQ, 1, 0, 3));
    std::vector<uint32_t> out{42};
    append_successors(p, 1, out);
    EXPECT_EQ(out, (Pcs{42, 5, 2}));
}

}  // namespace
}  // namespace patchfuzz
