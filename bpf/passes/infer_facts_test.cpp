// infer_facts(): the facts a .bpf.o or .s lacks, inferred syntactically.
#include "bpf/kfunc/kfunc_table.hpp"
#include "bpf/passes/infer_facts.hpp"
#include "bpf/passes/passes_test_util.hpp"

namespace patchfuzz::passes::testing {
namespace {

using namespace isa;

Program raw(std::vector<Insn> insns) {
    Program p;
    p.insns = std::move(insns);
    return p;
}

TEST(InferFacts, MapLookupsBpfLoopZextAndStack) {
    Program p = raw({
        mov64_reg(2, 10), alu64_imm(BPF_ADD, 2, -16),                       // 0-1 key at fp-16
        ldimm64_lo(1, BPF_PSEUDO_MAP_FD, 1), ldimm64_hi(0),                  // 2-3 map 1
        call_helper(BPF_FUNC_map_lookup_elem),                               // 4 -> map 1
        ldimm64_lo(6, BPF_PSEUDO_MAP_FD, 0), ldimm64_hi(0),                  // 5-6
        mov64_reg(1, 6),                                                     // 7 copy
        call_helper(BPF_FUNC_map_lookup_elem),                               // 8 -> map 0 via r6
        call_helper(BPF_FUNC_map_lookup_elem),                               // 9 R1 clobbered: unknown
        mov32_imm(1, 4),                                                     // 10
        ldimm64_lo(2, BPF_PSEUDO_FUNC, 8), ldimm64_hi(0),                    // 11-12 -> 20
        mov64_imm(3, 0), mov64_imm(4, 0),                                    // 13-14
        call_helper(BPF_FUNC_loop),                                          // 15 fit
        mov64_imm(4, 1), call_helper(BPF_FUNC_loop),                         // 16-17 flags 1: unfit
        stx(BPF_DW, 10, 0, -24),                                             // 18
        exit_insn(),                                                         // 19
        st(BPF_W, 10, -4, 0), mov64_imm(0, 0), exit_insn(),                  // 20-22 callback
    });
    p.maps = {MapDef{.name = "a", .type = BPF_MAP_TYPE_HASH}, MapDef{.name = "b", .type = BPF_MAP_TYPE_ARRAY}};
    infer_facts(p);
    ASSERT_EQ(p.aux.size(), p.insns.size());
    EXPECT_EQ(starts(p), (std::vector<uint32_t>{0, 20, 23}));
    EXPECT_EQ(p.aux[4].map_index, 1);
    EXPECT_EQ(p.aux[8].map_index, 0);
    EXPECT_EQ(p.aux[9].map_index, -1);
    EXPECT_TRUE(p.aux[15].loop_fit_for_inline);
    EXPECT_EQ(p.aux[15].loop_callback_subprogno, 1u);
    EXPECT_FALSE(p.aux[17].loop_fit_for_inline);
    EXPECT_TRUE(p.subprogs[1].is_cb);
    EXPECT_TRUE(p.aux[10].zext_dst);
    EXPECT_FALSE(p.aux[13].zext_dst);
    EXPECT_EQ(p.subprogs[0].stack_depth, 24u);
    EXPECT_EQ(p.subprogs[1].stack_depth, 4u);
    for (uint32_t i = 0; i < p.len(); ++i) {
        EXPECT_TRUE(p.aux[i].seen);
        EXPECT_EQ(p.aux[i].orig_idx, i);
    }
}

TEST(InferFacts, JumpTargetEndsTheBackwardSearchAndTailCallKey) {
    Program p = raw({
        ldimm64_lo(2, BPF_PSEUDO_MAP_FD, 0), ldimm64_hi(0),  // 0-1
        jmp_imm(BPF_JEQ, 3, 0, 0),                            // 2 -> 3 (a block boundary)
        mov64_imm(3, 2),                                      // 3 (target)
        call_helper(BPF_FUNC_tail_call),                      // 4: R2 def lies before the block start
        ldimm64_lo(2, BPF_PSEUDO_MAP_FD, 0), ldimm64_hi(0),   // 5-6
        mov64_imm(3, 2),                                      // 7
        call_helper(BPF_FUNC_tail_call),                      // 8
        call_kfunc(kfunc::by_kind(kfunc::Kind::IterNumDestroy)->btf_id),  // 9
        exit_insn(),
    });
    p.maps = {MapDef{.name = "jt", .type = BPF_MAP_TYPE_PROG_ARRAY, .max_entries = 4}};
    infer_facts(p);
    EXPECT_EQ(p.aux[4].map_index, -1);
    EXPECT_TRUE(p.aux[4].map_key_known);
    EXPECT_EQ(p.aux[8].map_index, 0);
    EXPECT_TRUE(p.aux[8].map_key_known);
    EXPECT_EQ(p.aux[8].map_key, 2u);
    ASSERT_EQ(p.kfuncs.size(), 1u);
    EXPECT_EQ(p.kfuncs[0].name, "bpf_iter_num_destroy");
}

}  // namespace
}  // namespace patchfuzz::passes::testing
