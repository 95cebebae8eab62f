// docs/patching.md §6: the worked example, step by step, for both patchers. Every expected value
// below is copied from the tables of §6.1, §6.2 and §6.3, not computed by the code under test.
#include <gtest/gtest.h>

#include "bpf/patch/index_map.hpp"
#include "bpf/patch/patch.hpp"

namespace patchfuzz::patch {
namespace {

using namespace isa;

constexpr int32_t kHtabLookup = 0x1234;  // stands for __htab_map_lookup_elem (not relative)

Program example_program() {
    Program p = make_program({
        mov64_imm(1, 0),                      // 0
        jmp_imm(BPF_JEQ, 1, 0, 3),            // 1 -> 5
        alu64_reg(BPF_DIV, 2, 3),             // 2 patch A
        call_pseudo(3),                       // 3 -> 7
        call_helper(BPF_FUNC_map_lookup_elem),// 4 patch B
        jmp_imm(BPF_JNE, 0, 0, -4),           // 5 -> 2
        exit_insn(),                          // 6
        mov64_imm(0, 1),                      // 7 subprog 1
        alu64_imm(BPF_ADD, 0, 1),             // 8
        exit_insn(),                          // 9
    });
    p.linfo = {{.insn_off = 0, .line_col = 10 << 10}, {.insn_off = 2, .line_col = 20 << 10},
               {.insn_off = 4, .line_col = 30 << 10}, {.insn_off = 7, .line_col = 40 << 10}};
    p.insn_arrays = {InsnArray{.map_index = 0, .entries = {{.orig_off = 4, .xlated_off = 4}}}};
    p.pokes = {PokeDesc{.insn_idx = 4, .map_index = 0, .key = 0}};
    // Distinguishable aux on the two patched insns: it must travel to the LAST slot of each patch.
    p.aux[2].alu_state = 3;
    p.aux[2].zext_dst = true;  // liveness said yes; def32(A3 = 64-bit div) must override it
    p.aux[4].map_index = 0;
    p.aux[4].seen = false;     // new slots of B must copy this seen value
    return p;
}

std::vector<Insn> patch_a() {
    return {jmp_imm(BPF_JNE, 3, 0, 2), alu32_reg(BPF_XOR, 2, 2), ja(1), alu64_reg(BPF_DIV, 2, 3)};
}
std::vector<Insn> patch_b() { return {call_helper(kHtabLookup), jmp_imm(BPF_JEQ, 0, 0, 1), alu64_imm(BPF_ADD, 0, 8)}; }

std::vector<uint32_t> starts(const Program& p) {
    std::vector<uint32_t> v;
    for (const auto& s : p.subprogs) v.push_back(s.start);
    return v;
}
std::vector<uint32_t> linfo_offs(const Program& p) {
    std::vector<uint32_t> v;
    for (const auto& l : p.linfo) v.push_back(l.insn_off);
    return v;
}

// §6.1 tables.
void expect_step1(const Program& p) {
    ASSERT_EQ(p.len(), 13u);
    EXPECT_EQ(p.insns[1].off, 6);   // o1 JEQ +3 -> +6
    EXPECT_EQ(p.insns[2].off, 2);   // A0 inside patch
    EXPECT_EQ(p.insns[4].off, 1);   // A2 inside patch
    EXPECT_TRUE(same(p.insns[5], alu64_reg(BPF_DIV, 2, 3)));
    EXPECT_EQ(p.insns[6].imm, 3);   // o3 call: none
    EXPECT_EQ(p.insns[8].off, -7);  // o5 JNE -4 -> -7
    EXPECT_TRUE(same(p.insns[7], call_helper(BPF_FUNC_map_lookup_elem)));
    EXPECT_EQ(starts(p), (std::vector<uint32_t>{0, 10, 13}));
    EXPECT_EQ(linfo_offs(p), (std::vector<uint32_t>{0, 2, 7, 10}));
    EXPECT_EQ(p.insn_arrays[0].entries[0].xlated_off, 7u);
    EXPECT_EQ(p.pokes[0].insn_idx, 7u);
    for (uint32_t s = 2; s <= 4; ++s) {
        EXPECT_EQ(p.aux[s].orig_idx, 0u) << s;
        EXPECT_TRUE(p.aux[s].seen) << s;
        EXPECT_EQ(p.aux[s].alu_state, 0) << s;
    }
    EXPECT_FALSE(p.aux[2].zext_dst);
    EXPECT_TRUE(p.aux[3].zext_dst);  // A1 w2 ^= w2 defines a 32-bit subreg
    EXPECT_FALSE(p.aux[4].zext_dst);
    EXPECT_EQ(p.aux[5].orig_idx, 2u);
    EXPECT_EQ(p.aux[5].alu_state, 3);
    EXPECT_FALSE(p.aux[5].zext_dst);
    EXPECT_EQ(p.aux[7].orig_idx, 4u);
    EXPECT_EQ(p.aux[8].orig_idx, 5u);
}

// §6.2 tables (= §6.3).
void expect_step2(const Program& p) {
    ASSERT_EQ(p.len(), 15u);
    EXPECT_EQ(p.insns[1].off, 8);
    EXPECT_EQ(p.insns[2].off, 2);
    EXPECT_EQ(p.insns[4].off, 1);
    EXPECT_EQ(p.insns[6].imm, 5);
    EXPECT_TRUE(same(p.insns[7], call_helper(kHtabLookup)));
    EXPECT_EQ(p.insns[8].off, 1);
    EXPECT_TRUE(same(p.insns[9], alu64_imm(BPF_ADD, 0, 8)));
    EXPECT_EQ(p.insns[10].off, -9);
    EXPECT_TRUE(is_exit(p.insns[11]));
    EXPECT_TRUE(same(p.insns[12], mov64_imm(0, 1)));
    EXPECT_TRUE(is_exit(p.insns[14]));
    EXPECT_EQ(starts(p), (std::vector<uint32_t>{0, 12, 15}));
    EXPECT_EQ(linfo_offs(p), (std::vector<uint32_t>{0, 2, 7, 12}));
    EXPECT_EQ(p.insn_arrays[0].entries[0].xlated_off, 7u);
    EXPECT_EQ(p.pokes[0].insn_idx, 7u);
    for (uint32_t s = 7; s <= 8; ++s) {
        EXPECT_EQ(p.aux[s].orig_idx, 0u) << s;
        EXPECT_FALSE(p.aux[s].seen) << s;
        EXPECT_FALSE(p.aux[s].zext_dst) << s;
        EXPECT_EQ(p.aux[s].map_index, -1) << s;
    }
    EXPECT_EQ(p.aux[9].orig_idx, 4u);
    EXPECT_EQ(p.aux[9].map_index, 0);
    EXPECT_FALSE(p.aux[9].zext_dst);
    EXPECT_EQ(p.aux[5].orig_idx, 2u);
    EXPECT_EQ(p.aux[10].orig_idx, 5u);
    EXPECT_EQ(p.aux[12].orig_idx, 7u);
}

PatchBatch both() {
    return PatchBatch{{Patch{.pos = 2, .insns = patch_a()}, Patch{.pos = 4, .insns = patch_b()}}};
}

TEST(WorkedExample, IncrementalStepByStep) {
    Program p = example_program();
    auto inc = make_patcher("incremental");
    ASSERT_TRUE(inc->apply(p, PatchBatch{{Patch{.pos = 2, .insns = patch_a()}}}).ok());
    expect_step1(p);
    // Step 2: B at i + delta = 4 + 3 = 7 in current coordinates.
    ASSERT_TRUE(inc->apply(p, PatchBatch{{Patch{.pos = 7, .insns = patch_b()}}}).ok());
    expect_step2(p);
}

TEST(WorkedExample, IncrementalOneBatch) {
    Program p = example_program();
    auto out = make_patcher("incremental")->apply(p, both());
    ASSERT_TRUE(out.ok()) << out.log;
    expect_step2(p);
}

TEST(WorkedExample, BatchedStep1AndWhole) {
    Program p1 = example_program();
    ASSERT_TRUE(make_patcher("batched")->apply(p1, PatchBatch{{Patch{.pos = 2, .insns = patch_a()}}}).ok());
    expect_step1(p1);
    Program p = example_program();
    auto out = make_patcher("batched")->apply(p, both());
    ASSERT_TRUE(out.ok()) << out.log;
    expect_step2(p);
}

TEST(WorkedExample, IndexMapOfSection63) {
    EXPECT_EQ(index_map(10, both()), (std::vector<uint32_t>{0, 1, 2, 6, 7, 10, 11, 12, 13, 14, 15}));
}

// The map's runs between patches (written four entries a step) against the formula of
// index_map.hpp, S[k] = k + growth of the patches before k, at every length and position
// around the step boundaries; the one removal aliases its slots to the insn after it.
TEST(IndexMap, RunsMatchTheFormula) {
    for (uint32_t len = 1; len <= 13; ++len)
        for (uint32_t pos = 0; pos < len; ++pos)
            for (uint32_t n : {1u, 2u, 6u}) {
                PatchBatch b{{Patch{.pos = pos, .insns = std::vector<Insn>(n, exit_insn())}}};
                std::vector<uint32_t> want;
                for (uint32_t k = 0; k <= len; ++k) want.push_back(k > pos ? k + n - 1 : k);
                EXPECT_EQ(index_map(len, b), want) << "len " << len << " pos " << pos << " n " << n;
                if (pos + 1 < len) {  // then a removal of the insn after it
                    b.patches.push_back(Patch{.kind = PatchKind::Remove, .pos = pos + 1, .count = 1});
                    for (uint32_t k = pos + 2; k <= len; ++k) want[k] -= 1;
                    want[pos + 1] = want[pos + 2];
                    EXPECT_EQ(index_map(len, b), want) << "len " << len << " pos " << pos << " n " << n << " +remove";
                }
            }
}

TEST(WorkedExample, BothPatchersAgree) {
    Program a = example_program(), b = example_program();
    auto oa = make_patcher("incremental")->apply(a, both());
    auto ob = make_patcher("batched")->apply(b, both());
    EXPECT_EQ(oa, ob);
    EXPECT_TRUE(a == b);
}

TEST(PatcherFactory, NamesAndUnknown) {
    for (auto n : patcher_names()) {
        auto p = make_patcher(n);
        ASSERT_NE(p, nullptr);
        EXPECT_EQ(p->name(), n);
    }
    EXPECT_EQ(make_patcher("nope"), nullptr);
}

TEST(PatcherValidation, UnsortedBatchIsEinvalAndUntouched) {
    for (auto n : patcher_names()) {
        Program p = example_program();
        const Program before = p;
        PatchBatch bad{{Patch{.pos = 4, .insns = patch_b()}, Patch{.pos = 2, .insns = patch_a()}}};
        auto out = make_patcher(n)->apply(p, bad);
        EXPECT_EQ(out.err, -EINVAL) << n;
        EXPECT_NE(out.log.find("patch 1 (pos 2)"), std::string::npos) << out.log;
        EXPECT_TRUE(p == before);
    }
}

}  // namespace
}  // namespace patchfuzz::patch
