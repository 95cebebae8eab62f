// Pass "dead_code": hard-wired branches, removal of unseen runs with every side table, nop removal
// with the may_goto rescan rule, and sanitize_dead_code for unprivileged loads (docs/patching.md §4).
#include "bpf/passes/passes_test_util.hpp"

namespace patchfuzz::passes::testing {
namespace {

using namespace isa;

Program cascade() {
    Program p = make_program({
        mov64_imm(0, 0),               // 0 seen
        jmp_imm(BPF_JEQ, 1, 1, 2),     // 1 seen, fall-through 2 unseen -> ja +2
        mov64_imm(0, 1),               // 2 unseen
        mov64_imm(0, 2),               // 3 unseen
        jmp_imm(BPF_JGT, 2, 3, 2),     // 4 seen, target 7 unseen -> ja +0
        mov64_imm(0, 3),               // 5 seen
        exit_insn(),                   // 6 seen
        mov64_imm(0, 5),               // 7 unseen
        exit_insn(),                   // 8 unseen
    });
    for (uint32_t i : {2u, 3u, 7u, 8u}) p.aux[i].seen = false;
    p.linfo = {{.insn_off = 0, .line_off = 10}, {.insn_off = 2, .line_off = 12}, {.insn_off = 4, .line_off = 14},
               {.insn_off = 5, .line_off = 15}, {.insn_off = 7, .line_off = 17}};
    p.insn_arrays = {{.map_index = 0, .entries = {{.orig_off = 0, .xlated_off = 0}, {.orig_off = 3, .xlated_off = 3},
                                                 {.orig_off = 5, .xlated_off = 5}}}};
    return p;
}

TEST(DeadCodePass, HardWireRemoveAndNopCascade) {
    Program p = cascade();
    std::vector<patch::PatchBatch> rec;
    auto r = run(p, opts_for(arch_x86_64(), {"dead_code"}), &rec);
    ASSERT_TRUE(r.outcome.ok());
    // 1 -> ja +2, 4 -> ja +0; runs [2,4) and [7,9) removed; then 1 became ja +0 (target 4 moved to
    // 2), removed; then the old 4 (ja +0) is at 1 and removed too.
    EXPECT_TRUE(same_insns(p.insns, {mov64_imm(0, 0), mov64_imm(0, 3), exit_insn()}));
    EXPECT_EQ(starts(p), (std::vector<uint32_t>{0, 3}));
    ASSERT_EQ(p.linfo.size(), 2u);
    EXPECT_EQ(p.linfo[0].insn_off, 0u);
    EXPECT_EQ(p.linfo[0].line_off, 10u);
    EXPECT_EQ(p.linfo[1].insn_off, 1u);
    EXPECT_EQ(p.linfo[1].line_off, 15u);
    ASSERT_EQ(p.insn_arrays[0].entries.size(), 3u);
    EXPECT_EQ(p.insn_arrays[0].entries[0].xlated_off, 0u);
    EXPECT_EQ(p.insn_arrays[0].entries[1].xlated_off, kInsnDeleted);
    EXPECT_EQ(p.insn_arrays[0].entries[2].xlated_off, 1u);
    EXPECT_EQ(p.aux[1].orig_idx, 5u);
    EXPECT_EQ(p.aux[2].orig_idx, 6u);
    // batches: one removal batch {2 x2, 7 x2}, one nop batch {1, 2} (input coordinates)
    ASSERT_EQ(rec.size(), 2u);
    ASSERT_EQ(rec[0].patches.size(), 2u);
    EXPECT_EQ(rec[0].patches[0].pos, 2u);
    EXPECT_EQ(rec[0].patches[0].count, 2u);
    EXPECT_EQ(rec[0].patches[1].pos, 7u);
    EXPECT_EQ(rec[0].patches[1].count, 2u);
    ASSERT_EQ(rec[1].patches.size(), 2u);
    EXPECT_EQ(rec[1].patches[0].pos, 1u);
    EXPECT_EQ(rec[1].patches[1].pos, 2u);
    EXPECT_EQ(r.patch_counts.at(0).second, 4u);
}

TEST(DeadCodePass, Jmp32BecomesPlainGotoWithSameOff) {
    Program p = make_program({jmp32_imm(BPF_JNE, 1, 0, 1), mov64_imm(0, 1), mov64_imm(0, 2), exit_insn()});
    p.aux[1].seen = false;
    // only hard-wiring matters here: remove nothing else by checking the in-place result through
    // the removal of insn 1: `ja +1` at 0 then targets 2 -> after removal `ja +0` -> removed.
    auto r = run(p, opts_for(arch_x86_64(), {"dead_code"}));
    ASSERT_TRUE(r.outcome.ok());
    EXPECT_TRUE(same_insns(p.insns, {mov64_imm(0, 2), exit_insn()}));
}

TEST(DeadCodePass, MayGotoRescanRemovesTheShortenedPredecessor) {
    Program p = make_program({may_goto(1), may_goto(0), mov64_imm(0, 0), exit_insn()});
    std::vector<patch::PatchBatch> rec;
    auto r = run(p, opts_for(arch_x86_64(), {"dead_code"}), &rec);
    ASSERT_TRUE(r.outcome.ok());
    EXPECT_TRUE(same_insns(p.insns, {mov64_imm(0, 0), exit_insn()}));
    // kernel order: remove 1, then step back to 0: two batches, each in its own input coordinates
    ASSERT_EQ(rec.size(), 2u);
    EXPECT_EQ(rec[0].patches.at(0).pos, 1u);
    EXPECT_EQ(rec[1].patches.at(0).pos, 0u);
}

TEST(DeadCodePass, ShortenedJaIsNotRescanned) {
    // The step back happens only after a may_goto: `ja +1; ja +0` leaves the shortened `ja +0`.
    Program p = make_program({ja(1), ja(0), mov64_imm(0, 0), exit_insn()});
    auto r = run(p, opts_for(arch_x86_64(), {"dead_code"}));
    ASSERT_TRUE(r.outcome.ok());
    EXPECT_TRUE(same_insns(p.insns, {ja(0), mov64_imm(0, 0), exit_insn()}));
}

// Finding 0003: a `goto +0` an instruction-array entry names. The kernel removes it and the entry
// is then deleted (its gotox would jump to address 0); the fix keeps the nop and the entry with it.
Program table_on_a_nop() {
    Program p = make_program({mov64_imm(0, 0), ja(0), mov64_imm(0, 1), ja(0), exit_insn()});
    p.maps.push_back(MapDef{.name = "jt", .type = kMapTypeInsnArray, .key_size = 4, .value_size = 8, .max_entries = 2});
    p.insn_arrays.push_back(InsnArray{.map_index = 0, .entries = {{.orig_off = 1, .xlated_off = 1}, {.orig_off = 2, .xlated_off = 2}}});
    return p;
}

TEST(DeadCodePass, KernelDeletesATableEntryOnANop) {
    Program p = table_on_a_nop();
    auto r = run(p, opts_for(arch_x86_64(), {"dead_code"}));
    ASSERT_TRUE(r.outcome.ok());
    EXPECT_TRUE(same_insns(p.insns, {mov64_imm(0, 0), mov64_imm(0, 1), exit_insn()}));
    EXPECT_EQ(p.insn_arrays[0].entries[0].xlated_off, kInsnDeleted);
    EXPECT_EQ(p.insn_arrays[0].entries[1].xlated_off, 1u);
}

TEST(DeadCodePass, FixedNopRemovalKeepsANopATableNames) {
    Program p = table_on_a_nop();
    RewriteOptions o = opts_for(arch_x86_64(), {"dead_code"});
    o.nop_removal = InlineFix::Fixed;
    auto r = run(p, o);
    ASSERT_TRUE(r.outcome.ok());
    // the named nop stays, the other one goes
    EXPECT_TRUE(same_insns(p.insns, {mov64_imm(0, 0), ja(0), mov64_imm(0, 1), exit_insn()}));
    EXPECT_EQ(p.insn_arrays[0].entries[0].xlated_off, 1u);
    EXPECT_EQ(p.insn_arrays[0].entries[1].xlated_off, 2u);
}

TEST(DeadCodePass, GotolZeroIsNotANop) {
    Program p = make_program({gotol(0), mov64_imm(0, 0), exit_insn()});
    auto r = run(p, opts_for(arch_x86_64(), {"dead_code"}));
    ASSERT_TRUE(r.outcome.ok());
    EXPECT_EQ(p.len(), 3u);
}

TEST(DeadCodePass, RemovedSubprogTakesItsFuncInfo) {
    Program p = make_program({call_pseudo(2), exit_insn(), exit_insn(), mov64_imm(0, 1), exit_insn()});
    // subprogs {0, 3, 5}: make subprog 1 (3..4) unseen, pretending the call was dead-but-seen
    ASSERT_EQ(starts(p), (std::vector<uint32_t>{0, 3, 5}));
    p.aux[2].seen = false;
    p.aux[3].seen = false;
    p.aux[4].seen = false;
    p.finfo = {{.insn_off = 0, .type_id = 1}, {.insn_off = 3, .type_id = 2}};
    auto r = run(p, opts_for(arch_x86_64(), {"dead_code"}));
    ASSERT_TRUE(r.outcome.ok());
    EXPECT_EQ(p.len(), 2u);
    EXPECT_EQ(starts(p), (std::vector<uint32_t>{0, 2}));
    ASSERT_EQ(p.finfo.size(), 1u);
    EXPECT_EQ(p.finfo[0].type_id, 1u);
}

TEST(DeadCodePass, UnprivilegedSanitizesInPlace) {
    Program p = cascade();
    p.aux[2].zext_dst = true;
    auto o = opts_for(arch_x86_64(), {"dead_code"});
    o.privileged = false;
    std::vector<patch::PatchBatch> rec;
    auto r = run(p, o, &rec);
    ASSERT_TRUE(r.outcome.ok());
    EXPECT_TRUE(rec.empty());
    EXPECT_TRUE(same_insns(p.insns, {mov64_imm(0, 0), jmp_imm(BPF_JEQ, 1, 1, 2), ja(-1), ja(-1), jmp_imm(BPF_JGT, 2, 3, 2),
                                     mov64_imm(0, 3), exit_insn(), ja(-1), ja(-1)}));
    EXPECT_FALSE(p.aux[2].zext_dst);
}

}  // namespace
}  // namespace patchfuzz::passes::testing
