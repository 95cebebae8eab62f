// Hand-checked single rules of docs/patching.md §3.7 (prologue redirect) and §4 (removal), for both
// patchers. Expected values are worked out by hand from the spec text (comments show the steps).
#include <gtest/gtest.h>

#include "bpf/isa/insn_def32.hpp"
#include "bpf/patch/patch.hpp"
#include "bpf/patch/patch_rules.hpp"

namespace patchfuzz::patch {
namespace {

using namespace isa;

std::vector<uint32_t> starts(const Program& p) {
    std::vector<uint32_t> v;
    for (const auto& s : p.subprogs) v.push_back(s.start);
    return v;
}

class BothPatchers : public ::testing::TestWithParam<std::string_view> {
protected:
    PatchOutcome apply(Program& p, PatchBatch b) { return make_patcher(GetParam())->apply(p, b); }
};

// The walkers' first test (may_adjust()) never skips an insn adj_field() would adjust, whatever
// its registers; and it lets through no class but ld_imm64 and the jumps.
TEST(AdjFieldFilter, NeverSkipsAnAdjustedInsn) {
    for (unsigned code = 0; code < 256; ++code)
        for (uint8_t src = 0; src < 16; ++src) {
            Insn i{};
            i.code = static_cast<uint8_t>(code);
            i.src_reg = src & 0xf;
            if (adj_field(i) != Field::None) {
                EXPECT_TRUE(may_adjust(i)) << "code 0x" << std::hex << code;
            }
        }
    EXPECT_TRUE(may_adjust(make(BPF_JMP | BPF_JA, 0, 0, 0, 0)));
    EXPECT_TRUE(may_adjust(make(BPF_LD | BPF_IMM | BPF_DW, 0, 0, 0, 0)));
    EXPECT_FALSE(may_adjust(make(BPF_JMP | BPF_EXIT, 0, 0, 0, 0)));
    EXPECT_FALSE(may_adjust(make(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0)));
    EXPECT_FALSE(may_adjust(make(BPF_LDX | BPF_MEM | BPF_DW, 0, 0, 0, 0)));
}

// §4.1-4.5 on one removal of [2, 4) from
//   0 r0=0 | 1 if r0==0 goto +3 (->5) | 2 r1=1 | 3 r1=2 | 4 r1=3 | 5 exit | 6 r0=1 (subprog) | 7 exit
TEST_P(BothPatchers, RemovalRules) {
    Program p = make_program({mov64_imm(0, 0), jmp_imm(BPF_JEQ, 0, 0, 3), mov64_imm(1, 1), mov64_imm(1, 2),
                              mov64_imm(1, 3), exit_insn(), mov64_imm(0, 1), exit_insn()});
    p.subprogs = {SubprogInfo{.start = 0, .linfo_idx = 0}, SubprogInfo{.start = 6, .linfo_idx = 3},
                  SubprogInfo{.start = 8, .linfo_idx = 4}};
    p.linfo = {{.insn_off = 0, .line_col = 100}, {.insn_off = 2, .line_col = 200}, {.insn_off = 3, .line_col = 300},
               {.insn_off = 6, .line_col = 600}};
    p.insn_arrays = {InsnArray{.entries = {{.orig_off = 2, .xlated_off = 2}, {.orig_off = 4, .xlated_off = 4}}}};
    ASSERT_TRUE(apply(p, PatchBatch{{Patch{.kind = PatchKind::Remove, .pos = 2, .count = 2}}}).ok());
    ASSERT_EQ(p.len(), 6u);
    EXPECT_EQ(p.insns[1].off, 1);  // from before, target 5 >= off+cnt: -= 2
    // subprogs: i = 1, j = 1, start 6 != 4 -> j-- ; start[1] != 2 -> from i: -= 2
    EXPECT_EQ(starts(p), (std::vector<uint32_t>{0, 4, 6}));
    // linfo: l_off 1, l_cnt 2; next (6) != 4 -> line of insn 3 retargeted to 4, l_cnt 1; then -= 2
    ASSERT_EQ(p.linfo.size(), 3u);
    EXPECT_EQ(p.linfo[1].insn_off, 2u);
    EXPECT_EQ(p.linfo[1].line_col, 300u);
    EXPECT_EQ(p.linfo[2].insn_off, 4u);
    // linfo_idx > l_off (1): 3 -> 2, fake 4 -> 3
    EXPECT_EQ(p.subprogs[1].linfo_idx, 2u);
    EXPECT_EQ(p.subprogs[2].linfo_idx, 3u);
    EXPECT_EQ(p.insn_arrays[0].entries[0].xlated_off, kInsnDeleted);
    EXPECT_EQ(p.insn_arrays[0].entries[1].xlated_off, 2u);
    EXPECT_EQ(p.aux[2].orig_idx, 4u);
}

// §4.3: a whole subprog [3, 5) goes, with its func_info entry.
TEST_P(BothPatchers, RemovalDeletesWholeSubprog) {
    Program p = make_program({mov64_imm(0, 0), mov64_imm(0, 0), exit_insn(), mov64_imm(0, 1), exit_insn(),
                              mov64_imm(0, 2), exit_insn()});
    p.subprogs = {SubprogInfo{.start = 0}, SubprogInfo{.start = 3}, SubprogInfo{.start = 5}, SubprogInfo{.start = 7}};
    p.finfo = {{.insn_off = 0, .type_id = 10}, {.insn_off = 3, .type_id = 11}, {.insn_off = 5, .type_id = 12}};
    ASSERT_TRUE(apply(p, PatchBatch{{Patch{.kind = PatchKind::Remove, .pos = 3, .count = 2}}}).ok());
    EXPECT_EQ(starts(p), (std::vector<uint32_t>{0, 3, 5}));
    ASSERT_EQ(p.finfo.size(), 2u);
    EXPECT_EQ(p.finfo[1].type_id, 12u);
    EXPECT_EQ(p.finfo[1].insn_off, 5u);  // func_info offsets are rewritten later (adjust_btf_func)
}

// §4.3: removing a subprog's head keeps start == off (i++), only later entries move.
TEST_P(BothPatchers, RemovalOfSubprogHead) {
    Program p = make_program({mov64_imm(0, 0), mov64_imm(0, 0), exit_insn(), mov64_imm(0, 1), mov64_imm(0, 1),
                              mov64_imm(0, 2), exit_insn()});
    p.subprogs = {SubprogInfo{.start = 0}, SubprogInfo{.start = 3}, SubprogInfo{.start = 7}};
    ASSERT_TRUE(apply(p, PatchBatch{{Patch{.kind = PatchKind::Remove, .pos = 3, .count = 2}}}).ok());
    EXPECT_EQ(starts(p), (std::vector<uint32_t>{0, 3, 5}));
}

// §3.7: prologue at 0 (convert_ctx_accesses style): [st, st, copy of insn 0]; the backward jump to
// 0 first moves with the patch (adj_branches: -2 -> -4, naming the prologue start), then
// adjust_jmp_off(0, 2) adds 2 so it skips the prologue; line info, insn arrays, subprog start and
// calls keep pointing at the prologue start.
TEST_P(BothPatchers, PrologueRedirect) {
    Program p = make_program({mov64_imm(1, 1), jmp_imm(BPF_JEQ, 1, 0, -2), call_pseudo(-3), exit_insn()});
    p.linfo = {{.insn_off = 0}, {.insn_off = 1}};
    p.insn_arrays = {InsnArray{.entries = {{.orig_off = 0, .xlated_off = 0}}}};
    p.pokes = {PokeDesc{.insn_idx = 0}};
    ASSERT_TRUE(apply(p, PatchBatch{{Patch{.kind = PatchKind::InsertBefore, .pos = 0,
                                           .insns = {st(BPF_DW, 10, -8, 0), st(BPF_DW, 10, -16, 0)}}}})
                    .ok());
    ASSERT_EQ(p.len(), 6u);
    EXPECT_TRUE(same(p.insns[2], mov64_imm(1, 1)));
    EXPECT_EQ(p.insns[3].off, -2);  // -> 2, the copied insn
    EXPECT_EQ(p.insns[4].imm, -5);  // call -> 0, the prologue start (calls are not redirected)
    EXPECT_EQ(p.linfo[0].insn_off, 0u);
    EXPECT_EQ(p.linfo[1].insn_off, 3u);
    EXPECT_EQ(p.insn_arrays[0].entries[0].xlated_off, 0u);
    EXPECT_EQ(p.pokes[0].insn_idx, 0u);
    EXPECT_EQ(starts(p), (std::vector<uint32_t>{0, 6}));
    EXPECT_EQ(p.aux[2].orig_idx, 0u);
    EXPECT_TRUE(p.aux[2].seen);
}

// §8: the copied insn of a prologue keeps its displacement verbatim; a backward copy that then
// names the prologue start is redirected by the same adjust_jmp_off() (target-only matching).
//   0 call +2 (->3) | 1 r0=0 | 2 exit | 3 ja -2 (->2; subprog start) | 4 exit ; prologue k=1 at 3:
//   copy at 4 keeps off -2 -> 3 = prologue start -> +1 -> off -1.
TEST_P(BothPatchers, PrologueCopyVerbatimThenRedirected) {
    Program p = make_program({call_pseudo(2), mov64_imm(0, 0), exit_insn(), ja(-2), exit_insn()});
    ASSERT_EQ(starts(p), (std::vector<uint32_t>{0, 3, 5}));
    ASSERT_TRUE(apply(p, PatchBatch{{Patch{.kind = PatchKind::InsertBefore, .pos = 3, .insns = {st(BPF_DW, 10, -8, 0)}}}}).ok());
    EXPECT_EQ(p.insns[4].off, -1);
    EXPECT_EQ(p.insns[0].imm, 2);  // call still names the prologue start
    EXPECT_EQ(starts(p), (std::vector<uint32_t>{0, 3, 6}));
}

// §3.1 / §8: len-1 patch: fast path, but zext_dst is recomputed syntactically.
TEST_P(BothPatchers, Len1RecomputesZext) {
    Program p = make_program({mov64_imm(1, 1), exit_insn()});
    p.aux[0].zext_dst = false;
    p.aux[0].alu_state = 2;
    ASSERT_TRUE(apply(p, PatchBatch{{Patch{.pos = 0, .insns = {mov32_imm(1, 5)}}}}).ok());
    EXPECT_TRUE(p.aux[0].zext_dst);
    EXPECT_EQ(p.aux[0].alu_state, 2);
    EXPECT_EQ(p.aux[0].orig_idx, 0u);
}

INSTANTIATE_TEST_SUITE_P(Patchers, BothPatchers, ::testing::Values("incremental", "batched"));

TEST(InsnDef32, SyntacticTable) {
    EXPECT_TRUE(insn_has_def32(mov32_imm(1, 1)));
    EXPECT_FALSE(insn_has_def32(mov64_imm(1, 1)));
    EXPECT_TRUE(insn_has_def32(ldx(BPF_W, 1, 2, 0)));
    EXPECT_FALSE(insn_has_def32(ldx(BPF_DW, 1, 2, 0)));
    EXPECT_FALSE(insn_has_def32(make(BPF_LDX | BPF_MEMSX | BPF_W, 1, 2, 0, 0)));
    EXPECT_FALSE(insn_has_def32(stx(BPF_W, 1, 2, 0)));
    EXPECT_TRUE(insn_has_def32(make(BPF_STX | BPF_ATOMIC | BPF_W, 1, 2, 0, BPF_ADD | BPF_FETCH)));
    EXPECT_FALSE(insn_has_def32(make(BPF_STX | BPF_ATOMIC | BPF_W, 1, 2, 0, BPF_ADD)));
    EXPECT_TRUE(insn_has_def32(make(BPF_STX | BPF_ATOMIC | BPF_W, 1, 2, 0, BPF_CMPXCHG)));
    EXPECT_FALSE(insn_has_def32(make(BPF_STX | BPF_ATOMIC | BPF_DW, 1, 2, 0, BPF_CMPXCHG)));
    EXPECT_FALSE(insn_has_def32(ldimm64_lo(1, 0, 5)));
    EXPECT_FALSE(insn_has_def32(ldimm64_hi(5)));
    EXPECT_TRUE(insn_has_def32(make(BPF_LD | BPF_ABS | BPF_W, 0, 0, 0, 4)));
    EXPECT_TRUE(insn_has_def32(make(BPF_ALU64 | BPF_END, 1, 0, 0, 16)));   // bswap16
    EXPECT_FALSE(insn_has_def32(make(BPF_ALU64 | BPF_END, 1, 0, 0, 64)));  // bswap64
    EXPECT_FALSE(insn_has_def32(make(BPF_ALU | BPF_END, 1, 0, 0, 64)));    // to_le64
    EXPECT_TRUE(insn_has_def32(make(BPF_ALU | BPF_END, 1, 0, 0, 32)));
    EXPECT_FALSE(insn_has_def32(call_helper(1)));
    EXPECT_FALSE(insn_has_def32(jmp32_imm(BPF_JEQ, 1, 0, 1)));
    EXPECT_FALSE(insn_has_def32(st(BPF_W, 10, -4, 0)));
}

}  // namespace
}  // namespace patchfuzz::patch
