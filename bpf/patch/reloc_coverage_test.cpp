// Relocation coverage on hand-built programs and batches: every expected cell set below is written
// by hand from the program's drawing (source, target, patch span), not computed by the code.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "bpf/patch/reloc_coverage.hpp"

namespace patchfuzz::patch {
namespace {

using namespace isa;

std::set<std::string> cells_of(const Program& p, const PatchBatch& b, uint32_t batch_index = 0) {
    std::vector<uint32_t> out;
    batch_cells(p, b, BatchContext{.batch_index = batch_index}, out);
    std::set<std::string> ids;
    for (uint32_t c : out) ids.emplace(coverage_cells()[c].id);
    return ids;
}

Patch replace(uint32_t pos, std::vector<Insn> insns) { return Patch{.kind = PatchKind::Replace, .pos = pos, .insns = std::move(insns)}; }
Patch insert(uint32_t pos, std::vector<Insn> insns) { return Patch{.kind = PatchKind::InsertBefore, .pos = pos, .insns = std::move(insns)}; }
Patch remove(uint32_t pos, uint32_t count) { return Patch{.kind = PatchKind::Remove, .pos = pos, .count = count}; }

TEST(RelocCoverage, TableIsConsistent) {
    const auto cells = coverage_cells();
    ASSERT_EQ(cells.size(), coverage_cell_count());
    std::set<std::string_view> ids;
    for (size_t i = 0; i < cells.size(); ++i) {
        EXPECT_TRUE(ids.insert(cells[i].id).second) << "duplicate id " << cells[i].id;
        EXPECT_EQ(coverage_cell_index(cells[i].id), i);
        EXPECT_FALSE(cells[i].description.empty());
        EXPECT_FALSE(cells[i].rule.empty()) << cells[i].id;
        EXPECT_EQ(cells[i].reachable, cells[i].unreachable_reason.empty()) << cells[i].id;
    }
    EXPECT_EQ(coverage_cell_index("no/such/cell"), SIZE_MAX);
    // A few the issue names, by id.
    for (const char* id : {"ref/call/bwd-over/replace", "ref/func/bwd-at/insert", "patch/remove-whole-subprog",
                           "patch/insert-on-jump", "edge/disp-s16-max", "edge/disp-s16-min", "edge/err-orig-moved",
                           "idx/poke/at/replace", "idx/fake-exit/end/replace", "ref/may_goto/src-at/insert"})
        EXPECT_NE(coverage_cell_index(id), SIZE_MAX) << id;
}

TEST(RelocCoverage, ForwardJumpOverAReplace) {
    const Program p = make_program({
        mov64_imm(0, 0),              // 0
        jmp_imm(BPF_JEQ, 0, 0, 2),    // 1 -> 4
        mov64_imm(1, 1),              // 2 patched
        mov64_imm(2, 2),              // 3
        exit_insn(),                  // 4
    });
    const PatchBatch b{{replace(2, {mov64_imm(1, 1), mov64_imm(1, 2), mov64_imm(1, 3)})}};
    EXPECT_EQ(cells_of(p, b), (std::set<std::string>{"ref/jump/fwd-over/replace", "patch/replace-2-3", "edge/batch-1",
                                                      "idx/fake-exit/after/replace"}));
}

TEST(RelocCoverage, ProloguesAtInsnZeroAndAtASubprog) {
    const Program p = make_program({
        mov64_imm(0, 0),             // 0
        jmp_imm(BPF_JNE, 0, 0, -2),  // 1 -> 0 (backward to the first prologue's insn)
        call_pseudo(1),              // 2 -> 4 (forward to the second prologue's insn)
        exit_insn(),                 // 3
        mov64_imm(0, 1),             // 4 subprog 1
        exit_insn(),                 // 5
    });
    ASSERT_EQ(p.subprog_cnt(), 2u);
    const PatchBatch b{{insert(0, {mov64_imm(1, 0)}), insert(4, {mov64_imm(1, 0)})}};
    EXPECT_EQ(cells_of(p, b),
              (std::set<std::string>{"patch/insert-at-0", "patch/insert-at-subprog", "edge/batch-2-7", "ref/jump/bwd-at/insert",
                                     "ref/call/fwd-at/insert", "idx/subprog/at/insert", "idx/subprog/after/insert",
                                     "idx/fake-exit/after/insert"}));
}

TEST(RelocCoverage, InsertBeforeOnAMayGotoAndOutgoingTransfers) {
    const Program p = make_program({
        mov64_imm(0, 0),  // 0
        may_goto(1),      // 1 -> 3; the prologue goes in front of it
        mov64_imm(0, 2),  // 2
        exit_insn(),      // 3
    });
    // Replace at 0: slot 1 `ja +0` names local 2 == n (original 1: out-end, reaching the prologue's
    // patch: out-cross). The prologue's `ja +1` at slot 0 names local 2 == n (original 2: out-end).
    const PatchBatch b{{replace(0, {mov64_imm(0, 0), ja(0)}), insert(1, {ja(1)})}};
    EXPECT_EQ(cells_of(p, b),
              (std::set<std::string>{"patch/replace-2-3", "patch/insert-other", "patch/insert-on-jump", "patch/out-end",
                                     "patch/out-cross", "edge/batch-2-7", "edge/adjacent", "ref/may_goto/src-at/insert",
                                     "idx/subprog/at/replace", "idx/fake-exit/after/insert"}));
}

TEST(RelocCoverage, WholeSubprogRemovalWithItsSideTables) {
    Program p = make_program({mov64_imm(0, 0), exit_insn(), mov64_imm(0, 1), exit_insn(), mov64_imm(0, 2), exit_insn()});
    p.subprogs = {{.start = 0, .linfo_idx = 0}, {.start = 2, .linfo_idx = 1}, {.start = 4, .linfo_idx = 3}, {.start = 6, .linfo_idx = 4}};
    p.finfo = {{.insn_off = 0, .type_id = 1}, {.insn_off = 2, .type_id = 2}, {.insn_off = 4, .type_id = 3}};
    p.linfo = {{.insn_off = 0}, {.insn_off = 2}, {.insn_off = 3}, {.insn_off = 4}};
    const PatchBatch b{{remove(2, 2)}};
    // linfo 2 at, 3 inside, 4 end; finfo/subprog 2 at, 4 end; fake exit 6 after. Records [1, 3)
    // go (l_off 1, l_cnt 2): linfo_idx 1 at, 3 end, 4 after.
    EXPECT_EQ(cells_of(p, b),
              (std::set<std::string>{"patch/remove-whole-subprog", "edge/batch-1", "idx/linfo/at/remove",
                                     "idx/linfo/inside/remove", "idx/linfo/end/remove", "idx/finfo/at/remove",
                                     "idx/finfo/end/remove", "idx/subprog/at/remove", "idx/subprog/end/remove",
                                     "idx/fake-exit/after/remove", "idx/linfo-idx/at/remove", "idx/linfo-idx/end/remove",
                                     "idx/linfo-idx/after/remove"}));
}

TEST(RelocCoverage, RemovalClassesAndTransfersIntoARemovedRange) {
    Program p = make_program({
        mov64_imm(0, 0),             // 0
        jmp_imm(BPF_JEQ, 0, 0, 1),   // 1 -> 3 (inside the removal of [2, 4))
        mov64_imm(0, 1),             // 2 removed
        mov64_imm(0, 2),             // 3 removed
        jmp_imm(BPF_JEQ, 0, 0, -2),  // 4 -> 3 (backward into it)
        exit_insn(),                 // 5
    });
    const PatchBatch b{{remove(2, 2)}};
    EXPECT_EQ(cells_of(p, b), (std::set<std::string>{"patch/remove-partial", "edge/batch-1", "ref/jump/fwd-inside/remove",
                                                      "ref/jump/bwd-inside/remove", "idx/fake-exit/after/remove"}));
}

// A 3-insn program whose jump at 0 crosses insn 1, replaced by `n` insns.
std::set<std::string> forward_limit(uint32_t n, uint32_t batch_index, uint32_t orig_idx_of_1) {
    Program p = make_program({jmp_imm(BPF_JEQ, 0, 0, 1), mov64_imm(0, 0), exit_insn()});
    p.aux[1].orig_idx = orig_idx_of_1;
    return cells_of(p, PatchBatch{{replace(1, std::vector<Insn>(n, mov64_imm(0, 0)))}}, batch_index);
}

TEST(RelocCoverage, RelocatedDisplacementExactlyAtTheS16Limits) {
    const std::set<std::string> base = {"patch/replace-4plus", "edge/batch-1", "ref/jump/fwd-end/replace",
                                        "idx/fake-exit/after/replace", "edge/len-crosses-32767"};
    // Growth 32766: off 1 becomes exactly 32767.
    auto want = base;
    want.insert("edge/disp-s16-max");
    EXPECT_EQ(forward_limit(32767, 0, 1), want);
    // One more: -ERANGE; in a later batch; at an insn whose load-time index is no longer 1.
    want.erase("edge/disp-s16-max");
    want.insert("edge/disp-overflow");
    EXPECT_EQ(forward_limit(32768, 0, 1), want);
    want.insert("edge/err-after-batch");
    EXPECT_EQ(forward_limit(32768, 1, 1), want);
    want.insert("edge/err-orig-moved");
    EXPECT_EQ(forward_limit(32768, 1, 0), want);

    // Backward: insn 2 jumps to 0 across insn 1 (off -3); growth 32765 makes it -32768.
    const Program q = make_program({mov64_imm(0, 0), mov64_imm(1, 0), jmp_imm(BPF_JEQ, 0, 0, -3), exit_insn()});
    const auto got = cells_of(q, PatchBatch{{replace(1, std::vector<Insn>(32766, mov64_imm(0, 0)))}});
    EXPECT_EQ(got, (std::set<std::string>{"patch/replace-4plus", "edge/batch-1", "ref/jump/bwd-over/replace",
                                          "idx/fake-exit/after/replace", "edge/len-crosses-32767", "edge/disp-s16-min"}));
}

TEST(RelocCoverage, AnInvalidBatchHitsNothing) {
    const Program p = make_program({mov64_imm(0, 0), exit_insn()});
    EXPECT_TRUE(cells_of(p, PatchBatch{{replace(1, {exit_insn()}), replace(0, {exit_insn()})}}).empty());
    EXPECT_TRUE(cells_of(p, PatchBatch{}).empty());
}

}  // namespace
}  // namespace patchfuzz::patch
