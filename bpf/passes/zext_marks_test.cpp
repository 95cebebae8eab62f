// zext_marks: the zext_dst marks the verifier's liveness sets. (The oracle-side cases of
// oracles/exec/exec_diff_test.cpp cover goto, gotox, calls and redefinitions through the oracle.)
#include "bpf/passes/zext_marks.hpp"

#include <gtest/gtest.h>

#include <linux/bpf.h>

#include <thread>

#include "bpf/isa/helper_protos.hpp"
#include "bpf/passes/insn_defs.hpp"
#include "bpf/util/rng.hpp"

namespace patchfuzz::passes {
namespace {

using namespace isa;

std::vector<uint32_t> gap_defs(const Program& p) {
    std::vector<uint32_t> out;
    for (const ZextGap& g : zext_gaps(p)) out.push_back(g.def_pc);
    return out;
}

TEST(ZextMarks, A64BitReadMarksThe32BitDef) {
    // w7 += 1; r0 = r7; exit: r0 = r7 reads all of r7.
    Program p = make_program({alu32_imm(BPF_ADD, 7, 1), mov64_reg(0, 7), exit_insn()});
    ASSERT_EQ(gap_defs(p), std::vector<uint32_t>{0});
    EXPECT_EQ(zext_gaps(p)[0].reg, 7);
    EXPECT_EQ(zext_gap_read(p, zext_gaps(p)[0]), 1u);
    add_zext_marks(p);
    EXPECT_TRUE(p.aux[0].zext_dst);
    EXPECT_TRUE(zext_gaps(p).empty());
    // A 32-bit read does not: w0 = w7 (only w0 itself, read by exit, is marked).
    EXPECT_EQ(gap_defs(make_program({alu32_imm(BPF_ADD, 7, 1), mov32_reg(0, 7), exit_insn()})), std::vector<uint32_t>{1});
}

TEST(ZextMarks, PathsGoOnAfterAFailedTailCall) {
    // w7 += 1; tail call (fails: execution goes on); r0 = r7: the tail call keeps r7, so the
    // def's upper half is read.
    const Insn tail_call = make(BPF_JMP | kOpTailCall, 0, 0, 0, 0);
    Program p = make_program({alu32_imm(BPF_ADD, 7, 1), tail_call, mov64_reg(0, 7), exit_insn()});
    EXPECT_EQ(gap_defs(p), std::vector<uint32_t>{0});
    // Same for R1-R5: the internal tail call reads and clobbers nothing.
    p.insns[0] = alu32_imm(BPF_ADD, 2, 1);
    p.insns[2] = mov64_reg(0, 2);
    EXPECT_EQ(gap_defs(p), std::vector<uint32_t>{0});
}

TEST(ZextMarks, CallsEndThePathsOfR0ToR5Only) {
    // w2 = 1; w8 = 1; call ktime_get_ns (no arguments); r0 = r2 (r2 is clobbered: the read is
    // not of the def); r0 += r8 (r8 survives the call).
    const Program p = make_program({mov32_imm(2, 1), mov32_imm(8, 1), call_helper(BPF_FUNC_ktime_get_ns),
                                    mov64_reg(0, 2), alu64_reg(BPF_ADD, 0, 8), exit_insn()});
    EXPECT_EQ(gap_defs(p), std::vector<uint32_t>{1});
    // Helper arguments are 64-bit reads; an unknown helper reads all five.
    EXPECT_TRUE(reads_reg64(call_helper(BPF_FUNC_map_lookup_elem), 2));
    EXPECT_FALSE(reads_reg64(call_helper(BPF_FUNC_map_lookup_elem), 3));
    EXPECT_TRUE(reads_reg64(call_helper(BPF_FUNC_trace_printk), 5));
    EXPECT_FALSE(reads_reg64(call_kfunc(1234), 1));
    EXPECT_FALSE(reads_reg64(call_pseudo(3), 1));
}

TEST(ZextMarks, ACalleesReadOfAnArgumentMarksTheCallersDef) {
    // main: w1 = 5; call f; exit.  f: r0 = r1; exit. The callee gets r1 with the caller's 32-bit
    // def on it (set_callee_state()) and reads all of it: the verifier marks the caller's def.
    const Program p = make_program({mov32_imm(1, 5), call_pseudo(1), exit_insn(), mov64_reg(0, 1), exit_insn()});
    ASSERT_EQ(gap_defs(p), std::vector<uint32_t>{0});
    EXPECT_EQ(zext_gap_read(p, zext_gaps(p)[0]), 3u);
    // A 32-bit read in the callee, or one after the callee redefined the argument, marks nothing;
    // nor does a callee's read of a register the call does not pass (r6 is not an argument).
    EXPECT_TRUE(gap_defs(make_program({mov32_imm(1, 5), call_pseudo(1), exit_insn(), mov32_reg(0, 1), exit_insn()})) ==
                std::vector<uint32_t>{3});  // only w0 = w1 itself, read by exit
    EXPECT_TRUE(gap_defs(make_program({mov32_imm(1, 5), call_pseudo(1), exit_insn(), mov64_imm(1, 0), mov64_reg(0, 1), exit_insn()})).empty());
    EXPECT_TRUE(gap_defs(make_program({mov32_imm(6, 5), call_pseudo(1), exit_insn(), mov64_reg(0, 6), exit_insn()})).empty());
    // After the call the argument registers are clobbered: the callee's read is the only one.
    EXPECT_TRUE(gap_defs(make_program({mov32_imm(2, 5), call_pseudo(2), mov64_reg(0, 2), exit_insn(), mov64_imm(0, 0), exit_insn()})).empty());
}

TEST(ZextMarks, ArgumentReadsGoThroughNestedCallsAndCalleesAboveTheCall) {
    // main: w2 = 7; call f; exit.  g: r0 = r2; exit.  f: call g; exit. The read is two calls
    // down, in a callee placed above the call that reaches it (swept before its caller is).
    const Program p = make_program({mov32_imm(2, 7), call_pseudo(4), exit_insn(),  // main: f at 6
                                    mov64_reg(0, 2), exit_insn(),                    // g at 3
                                    mov64_imm(0, 0),                                 // (unreached)
                                    call_pseudo(-4), exit_insn()});                  // f at 6: g at 3
    ASSERT_EQ(gap_defs(p), std::vector<uint32_t>{0});
    EXPECT_EQ(zext_gap_read(p, zext_gaps(p)[0]), 3u);
}

TEST(ZextMarks, ASideTheVerifierNeverFollowsReadsNothing) {
    // w7 += 1; r0 = 0; if r0 != 0 goto +1 (never taken: the verifier knows r0); r7 = 5; r0 = r7.
    // Only the jump would reach the 64-bit read of the 32-bit def: a privileged load never
    // explores it, so the def is not marked.
    auto prog = [](Insn before_jump, Insn jump) {
        return make_program({alu32_imm(BPF_ADD, 7, 1), before_jump, jump, mov64_imm(7, 5), mov64_reg(0, 7), exit_insn()});
    };
    EXPECT_TRUE(gap_defs(prog(mov64_imm(0, 0), jmp_imm(BPF_JNE, 0, 0, 1))).empty());
    // Taken (r0 == 0): now the fall-through, which redefines r7, is the side never followed.
    EXPECT_EQ(gap_defs(prog(mov64_imm(0, 0), jmp_imm(BPF_JEQ, 0, 0, 1))), std::vector<uint32_t>{0});
    // Unknown r0 (a load): both sides are followed.
    EXPECT_EQ(gap_defs(prog(ldx(BPF_DW, 0, 10, -8), jmp_imm(BPF_JNE, 0, 0, 1))), std::vector<uint32_t>{0});
    // 32-bit and signed compares: w0 = -1 is 0xffffffff in 64 bits, -1 in 32.
    // (the 64-bit compare reads w0's def as 64 bits: that def is marked; r7's is not)
    EXPECT_EQ(gap_defs(prog(mov32_imm(0, -1), jmp_imm(BPF_JSLT, 0, 0, 1))), std::vector<uint32_t>{1});  // 0xffffffff s< 0: no
    EXPECT_EQ(gap_defs(prog(mov32_imm(0, -1), jmp32_imm(BPF_JSLT, 0, 0, 1))), std::vector<uint32_t>{0});  // -1 s< 0: yes
    // Two known registers.
    Program two = make_program({alu32_imm(BPF_ADD, 7, 1), mov64_imm(2, 3), mov64_imm(3, 4), jmp_reg(BPF_JEQ, 2, 3, 1),
                                mov64_imm(7, 5), mov64_reg(0, 7), exit_insn()});
    EXPECT_TRUE(gap_defs(two).empty());
    two.insns[2] = mov64_imm(3, 3);
    EXPECT_EQ(gap_defs(two), std::vector<uint32_t>{0});
    // A jump into the compare's block, or a call between the constant and the compare, leaves the
    // value unknown to this model: both sides count.
    const Program entered = make_program({alu32_imm(BPF_ADD, 7, 1), ja(1), mov64_imm(0, 0), jmp_imm(BPF_JNE, 0, 0, 1),
                                          mov64_imm(7, 5), mov64_reg(0, 7), exit_insn()});
    EXPECT_EQ(gap_defs(entered), std::vector<uint32_t>{0});
    const Program called = make_program({alu32_imm(BPF_ADD, 7, 1), mov64_imm(0, 0), call_helper(BPF_FUNC_ktime_get_ns),
                                         jmp_imm(BPF_JNE, 0, 0, 1), mov64_imm(7, 5), mov64_reg(0, 7), exit_insn()});
    EXPECT_EQ(gap_defs(called), std::vector<uint32_t>{0});
}

TEST(ZextMarks, A64BitCmpxchgReadsR0) {
    // w0 = 1; r0 = cmpxchg(*(u64 *)(r10 - 8), r0, r1): the comparison uses all of r0.
    const Insn cmpxchg64 = make(BPF_STX | BPF_ATOMIC | BPF_DW, 10, 1, -8, BPF_CMPXCHG);
    const Insn cmpxchg32 = make(BPF_STX | BPF_ATOMIC | BPF_W, 10, 1, -8, BPF_CMPXCHG);
    EXPECT_TRUE(reads_reg64(cmpxchg64, 0));
    EXPECT_FALSE(reads_reg64(cmpxchg32, 0));
    EXPECT_TRUE(reads_reg64(cmpxchg32, 10));
}

TEST(ZextMarks, LoopsReachTheirReadsThroughTheBackEdge) {
    // 0: w7 = 1   1: r8 = r7 (read in the second round: 64-bit)   2: w7 = 2   3: if r9 > 0 goto -3
    // 4: r0 = 0   5: exit. The def at 2 reaches the read at 1 only through the back edge.
    const Program p = make_program({mov32_imm(7, 1), mov64_reg(8, 7), mov32_imm(7, 2), jmp_imm(BPF_JGT, 9, 0, -3),
                                    mov64_imm(0, 0), exit_insn()});
    EXPECT_EQ(gap_defs(p), (std::vector<uint32_t>{0, 2}));
    EXPECT_EQ(zext_gap_read(p, ZextGap{2, 7}), 1u);
}

TEST(ZextMarks, ReadsReachDefsThroughNestedLoopsAndJumpTables) {
    // 0: w7 = 1   1: r8 = r7 (outer loop head)   2: w9 = 0 (inner loop head)   3: w7 = 2
    // 4: if r9 > 0 goto -3 (to 2)   5: if r6 > 0 goto -5 (to 1)   6: r0 = 0   7: exit.
    // The def at 3 reaches the read at 1 only through both back edges; the def at 2 is read at 4.
    const Program p = make_program({mov32_imm(7, 1), mov64_reg(8, 7), mov32_imm(9, 0), mov32_imm(7, 2),
                                    jmp_imm(BPF_JGT, 9, 0, -3), jmp_imm(BPF_JGT, 6, 0, -5), mov64_imm(0, 0),
                                    exit_insn()});
    EXPECT_EQ(gap_defs(p), (std::vector<uint32_t>{0, 2, 3}));
    // 0: w7 = 1   1: r8 = r7   2: w7 = 2   3: gotox r5 (table: 1, 4)   4: r0 = 0   5: exit.
    // The table entry at 1 is the back edge that reads the def at 2; the deleted entry is no edge.
    Program q = make_program({mov32_imm(7, 1), mov64_reg(8, 7), mov32_imm(7, 2), make(BPF_JMP | BPF_JA | BPF_X, 5, 0, 0, 0),
                              mov64_imm(0, 0), exit_insn()});
    q.insn_arrays.push_back(InsnArray{.entries = {InsnArrayEntry{.orig_off = 4, .xlated_off = 4},
                                                   InsnArrayEntry{.orig_off = 1, .xlated_off = 1}}});
    EXPECT_EQ(gap_defs(q), (std::vector<uint32_t>{0, 2}));
    q.insn_arrays[0].entries[1].xlated_off = kInsnDeleted;
    EXPECT_EQ(gap_defs(q), (std::vector<uint32_t>{0}));
}

TEST(ZextMarks, UnseenDefsAndExistingMarksAreLeftAlone) {
    Program p = make_program({alu32_imm(BPF_ADD, 7, 1), alu32_imm(BPF_ADD, 8, 1), mov64_reg(0, 7),
                              alu64_reg(BPF_ADD, 0, 8), exit_insn()});
    p.aux[0].seen = false;    // dead code: the verifier never marks it
    p.aux[1].zext_dst = true;
    EXPECT_TRUE(zext_gaps(p).empty());
    // Extra marks are kept: they only add zero extensions.
    Program q = make_program({mov32_imm(7, 1), mov32_reg(0, 7), exit_insn()});
    q.aux[0].zext_dst = true;
    EXPECT_TRUE(with_zext_facts(q).aux[0].zext_dst);
}

TEST(ZextMarks, AThreadsFirstProgramMayBeEmpty) {
    // The liveness keeps its arrays per thread, made at the thread's first program (the random
    // programs below reuse them, larger and smaller): an empty one too.
    std::thread([] { EXPECT_TRUE(zext_gaps(make_program({})).empty()); }).join();
}

// The opcode table behind liveness_insn() against the functions it stands for (read64() through
// reads_reg64(), def_regno(), has_def32(), insn_successors()) for every opcode byte, with register fields,
// immediates (END widths, atomic operations, helper ids) and offsets that reach both inside and
// outside the program.
// is_reg64(insn, regno, NULL, SRC_OP) of kernel/bpf/verifier.c as a mask, written out by class and
// op without the opcode facts: what reads_reg64() must give.
uint16_t reference_read64(const Insn& i) {
    const uint8_t c = cls(i), o = op(i);
    const bool x = src_bit(i) != 0;
    const auto dst = static_cast<uint16_t>(1u << i.dst_reg), src = static_cast<uint16_t>(1u << i.src_reg);
    switch (c) {
        case BPF_ALU64:
            if (o == BPF_END) return i.imm == 64 ? dst : 0;  // bswap16/32 read the low half only
            if (o == BPF_MOV) return x ? src : 0;
            if (o == BPF_NEG) return dst;
            return static_cast<uint16_t>(dst | (x ? src : 0));
        case BPF_ALU: return o == BPF_END && i.imm == 64 ? dst : 0;
        case BPF_JMP:
            if (o == BPF_EXIT) return 1;  // R0
            if (o == BPF_CALL) {
                if (i.src_reg != 0) return 0;
                uint16_t m = 0;  // a helper's arguments; an unknown helper all five
                for (int r = 1; r <= helper_arg_count(i.imm).value_or(5); ++r) m = static_cast<uint16_t>(m | 1u << r);
                return m;
            }
            if (o == BPF_JA) return x ? dst : 0;  // gotox
            if (o == BPF_JCOND || is_tail_call(i)) return 0;
            return static_cast<uint16_t>(dst | (x ? src : 0));
        case BPF_JMP32: return 0;
        case BPF_LDX: return src;
        case BPF_ST: return dst;
        case BPF_STX: {
            if (mode(i) == BPF_ATOMIC && i.imm == BPF_LOAD_ACQ) return src;
            uint16_t m = dst;
            if (size(i) == BPF_DW) {
                m = static_cast<uint16_t>(m | src);
                if (mode(i) == BPF_ATOMIC && i.imm == BPF_CMPXCHG) m |= 1;
            }
            return m;
        }
        default:  // BPF_LD
            if (mode(i) == BPF_IMM) return 0;
            return static_cast<uint16_t>(1u << 6 | (mode(i) == BPF_IND ? src : 0));
    }
}

TEST(ZextMarks, SixtyFourBitReadsAsIsReg64ForEveryOpcode) {
    static constexpr int32_t kImms[] = {0, 16, 32, 64, BPF_ADD, BPF_ADD | BPF_FETCH, BPF_XCHG, BPF_CMPXCHG,
                                        BPF_LOAD_ACQ, BPF_STORE_REL, BPF_FUNC_map_lookup_elem, BPF_FUNC_ktime_get_ns,
                                        BPF_FUNC_loop, 9999};
    for (unsigned code = 0; code < 256; ++code)
        for (uint8_t dst = 0; dst < 16; dst = static_cast<uint8_t>(dst + 3))
            for (uint8_t src = 0; src < 16; src = static_cast<uint8_t>(src + 2))
                for (const int32_t imm : kImms) {
                    const Insn insn = make(static_cast<uint8_t>(code), dst, src, 0, imm);
                    uint16_t read = 0;
                    for (int r = 0; r < 16; ++r)
                        if (reads_reg64(insn, r)) read = static_cast<uint16_t>(read | (1u << r));
                    ASSERT_EQ(read, reference_read64(insn)) << "code " << code << " dst " << +dst << " src " << +src << " imm " << imm;
                }
}

TEST(ZextMarks, TheOpcodeTableAgreesWithTheFunctionsForEveryOpcode) {
    static constexpr uint8_t kRegs[] = {0, 1, 5, 6, 9, 10, 11, 15};
    static constexpr int32_t kImms[] = {0, 1, 3, -1, -3, 16, 32, 64, 40000, BPF_ADD, BPF_ADD | BPF_FETCH,
                                        BPF_OR | BPF_FETCH, BPF_XCHG, BPF_CMPXCHG, BPF_LOAD_ACQ, BPF_STORE_REL,
                                        BPF_FUNC_map_lookup_elem, BPF_FUNC_ktime_get_ns, BPF_FUNC_tail_call,
                                        BPF_FUNC_loop, 9999};
    static constexpr int16_t kOffs[] = {-5, -4, -1, 0, 2, 4, 40};
    constexpr uint32_t kPc = 3;
    Program p = make_program(std::vector<Insn>(8, mov64_imm(0, 0)));
    for (unsigned code = 0; code < 256; ++code)
        for (const uint8_t dst : kRegs)
            for (const uint8_t src : kRegs)
                for (const int32_t imm : kImms)
                    for (const int16_t off : kOffs) {
                        const Insn insn = make(static_cast<uint8_t>(code), dst, src, off, imm);
                        p.insns[kPc] = insn;
                        const LivenessInsn li = liveness_insn(p, kPc);
                        uint16_t read = 0;
                        for (int r = 0; r < 16; ++r)
                            if (reads_reg64(insn, r)) read = static_cast<uint16_t>(read | (1u << r));
                        const int def = def_regno(insn);
                        uint16_t end = def >= 0 ? static_cast<uint16_t>(1u << def) : 0;
                        if (is_jmp_class(insn) && op(insn) == BPF_CALL) end |= 0x3f;
                        const InsnSuccessors s = insn_successors(p, kPc);
                        const auto what = [&] {
                            return "code " + std::to_string(code) + " dst " + std::to_string(dst) + " src " +
                                   std::to_string(src) + " off " + std::to_string(off) + " imm " + std::to_string(imm);
                        };
                        ASSERT_EQ(li.read, read) << what();
                        ASSERT_EQ(li.def_reg, def) << what();
                        ASSERT_EQ(li.def32, has_def32(insn)) << what();
                        ASSERT_EQ(li.end, end) << what();
                        ASSERT_EQ(li.succ.count, s.count) << what();
                        ASSERT_EQ(li.succ.through_tables, s.through_tables) << what();
                        for (uint32_t k = 0; k < s.count; ++k) ASSERT_EQ(li.succ.pcs[k], s.pcs[k]) << what();
                    }
    // Past the end: nothing.
    const LivenessInsn none = liveness_insn(p, p.len());
    EXPECT_EQ(none.read, 0);
    EXPECT_EQ(none.end, 0);
    EXPECT_EQ(none.def_reg, -1);
    EXPECT_EQ(none.succ.count, 0u);
}

// The straightforward reading of the marking rule, with nothing shared with zext_gaps()'s
// fixpoint: every seen, unmarked 32-bit def (ld_imm64's second slot is none) whose own
// depth-first walk (zext_gap_read) meets a 64-bit read of its register.
std::vector<uint32_t> reference_gap_defs(const Program& p) {
    std::vector<uint32_t> out;
    for (uint32_t pc = 0; pc < p.len(); ++pc) {
        if (is_ldimm64(p.insns[pc])) {
            ++pc;
            continue;
        }
        const int reg = def_regno(p.insns[pc]);
        if (reg < 0 || !has_def32(p.insns[pc]) || !p.aux[pc].seen || p.aux[pc].zext_dst) continue;
        if (zext_gap_read(p, ZextGap{pc, reg})) out.push_back(pc);
    }
    return out;
}

// Random programs with every kind of edge the liveness follows: forward and backward jumps (loops
// nested or overlapping, self loops), fall-throughs, exits, calls, the tail call, ld_imm64, gotox
// through tables with deleted entries, and 32-bit defs of every width rule, some unseen or marked.
Program random_program(Rng& rng) {
    const auto n = static_cast<uint32_t>(rng.range(2, 120));
    const auto reg = [&rng] { return static_cast<uint8_t>(rng.range(0, 9)); };
    const auto target_off = [&](uint32_t pc) {  // anywhere in the program, sometimes just outside
        const int64_t t = static_cast<int64_t>(rng.range(0, n + 1)) - (rng.chance(1, 16) ? 1 : 0);
        return static_cast<int16_t>(t - static_cast<int64_t>(pc) - 1);
    };
    static constexpr uint8_t kAlu[] = {BPF_ADD, BPF_SUB, BPF_MOV, BPF_XOR, BPF_LSH, BPF_NEG, BPF_END, BPF_DIV};
    static constexpr uint8_t kSizes[] = {BPF_B, BPF_H, BPF_W, BPF_DW};
    static constexpr int32_t kAtomics[] = {BPF_ADD, BPF_ADD | BPF_FETCH, BPF_XCHG, BPF_CMPXCHG, BPF_LOAD_ACQ, BPF_STORE_REL};
    static constexpr int32_t kHelpers[] = {BPF_FUNC_map_lookup_elem, BPF_FUNC_ktime_get_ns, BPF_FUNC_trace_printk,
                                           BPF_FUNC_loop, BPF_FUNC_tail_call, 9999};
    std::vector<Insn> insns;
    while (insns.size() < n) {
        const auto pc = static_cast<uint32_t>(insns.size());
        const uint8_t op = kAlu[rng.range(0, 7)];
        const int32_t width = rng.chance(1, 2) ? 64 : 32;
        switch (rng.range(0, 13)) {
            case 0: case 1: case 2:
                insns.push_back(make(BPF_ALU | op | (rng.chance(1, 2) ? BPF_X : BPF_K), reg(), reg(), 0, width));
                break;
            case 3: case 4:
                insns.push_back(make(BPF_ALU64 | op | (rng.chance(1, 2) ? BPF_X : BPF_K), reg(), reg(), 0, width));
                break;
            case 5: insns.push_back(make(BPF_LDX | kSizes[rng.range(0, 3)] | BPF_MEM, reg(), reg(), 0, 0)); break;
            case 6:
                insns.push_back(rng.chance(1, 2) ? make(BPF_STX | kSizes[rng.range(0, 3)] | BPF_MEM, reg(), reg(), 0, 0)
                                                 : make(BPF_STX | kSizes[rng.range(2, 3)] | BPF_ATOMIC, reg(), reg(), 0,
                                                        kAtomics[rng.range(0, 5)]));
                break;
            case 7:
                insns.push_back(make((rng.chance(1, 2) ? BPF_JMP : BPF_JMP32) | BPF_JGT | (rng.chance(1, 2) ? BPF_X : BPF_K),
                                     reg(), reg(), target_off(pc), 0));
                break;
            case 8: insns.push_back(rng.chance(1, 2) ? ja(target_off(pc)) : may_goto(target_off(pc))); break;
            case 9:
                switch (rng.range(0, 3)) {
                    case 0: insns.push_back(call_helper(kHelpers[rng.range(0, 5)])); break;
                    case 1: insns.push_back(call_kfunc(1)); break;
                    case 2: insns.push_back(call_pseudo(rng.chance(1, 2) ? 0 : target_off(pc))); break;
                    default: insns.push_back(make(BPF_JMP | kOpTailCall, 0, 0, 0, 0)); break;
                }
                break;
            case 10: insns.push_back(rng.chance(1, 3) ? exit_insn() : make(BPF_JMP | BPF_JA | BPF_X, reg(), 0, 0, 0)); break;
            case 11:
                insns.push_back(ldimm64_lo(reg(), 0, 1));
                insns.push_back(ldimm64_hi(0));
                break;
            default: insns.push_back(make(BPF_LD | BPF_ABS | BPF_W, 0, 0, 0, 0)); break;
        }
    }
    insns.push_back(exit_insn());
    Program p = make_program(std::move(insns));
    for (auto& a : p.aux) {
        a.seen = !rng.chance(1, 10);
        a.zext_dst = rng.chance(1, 10);
    }
    for (uint64_t t = rng.range(0, 2); t > 0; --t) {
        InsnArray ia;
        for (uint64_t e = rng.range(1, 4); e > 0; --e) {
            const auto off = static_cast<uint32_t>(rng.range(0, p.len()));
            ia.entries.push_back(InsnArrayEntry{.orig_off = off, .xlated_off = rng.chance(1, 5) ? kInsnDeleted : off});
        }
        p.insn_arrays.push_back(std::move(ia));
    }
    return p;
}

TEST(ZextMarks, TheFixpointMarksWhatEveryDefsOwnWalkFinds) {
    Rng rng(20240601);
    for (int i = 0; i < 3000; ++i) {
        const Program p = random_program(rng);
        ASSERT_EQ(gap_defs(p), reference_gap_defs(p)) << "program " << i;
        // Every gap names its def's register, and marking them all leaves none.
        for (const ZextGap& g : zext_gaps(p)) ASSERT_EQ(g.reg, def_regno(p.insns[g.def_pc]));
        ASSERT_TRUE(zext_gaps(with_zext_facts(p)).empty()) << "program " << i;
        // add_zext_marks() adds exactly the gaps' marks: in place, and with an aux shorter than
        // the program (the insns past it count as seen and unmarked).
        for (const size_t aux_len : {p.aux.size(), p.aux.size() / 2}) {
            Program q = p;
            q.aux.resize(aux_len);
            std::vector<bool> want(q.len(), false);
            for (uint32_t pc = 0; pc < aux_len; ++pc) want[pc] = q.aux[pc].zext_dst;
            for (const ZextGap& g : zext_gaps(q)) want[g.def_pc] = true;
            add_zext_marks(q);
            ASSERT_EQ(q.aux.size(), q.len());
            for (uint32_t pc = 0; pc < q.len(); ++pc) ASSERT_EQ(q.aux[pc].zext_dst, want[pc]) << "program " << i << " pc " << pc;
        }
    }
}

}  // namespace
}  // namespace patchfuzz::passes
