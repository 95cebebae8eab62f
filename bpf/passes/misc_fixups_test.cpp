// Pass "misc_fixups": the do_misc_fixups rows of docs/patching.md §5.3, each shape written by hand
// from the spec table, jump targets after patching computed by hand, arch differences.
#include <cerrno>

#include "bpf/kfunc/kfunc_table.hpp"
#include "bpf/passes/div_mod_guard.hpp"
#include "bpf/isa/internal_calls.hpp"
#include "bpf/passes/map_lookup_inline.hpp"
#include "bpf/passes/passes_test_util.hpp"

namespace patchfuzz::passes::testing {
namespace {

using namespace isa;
constexpr uint8_t AX = kRegAx;

MapDef map(uint32_t type, uint32_t key, uint32_t value, uint32_t max, uint32_t flags = 0) {
    return MapDef{.name = "m", .type = type, .key_size = key, .value_size = value, .max_entries = max, .map_flags = flags};
}

// docs/patching.md §6: the worked example, through the pass (A = udiv guard, B = hash lookup inline).
Program worked_example() {
    Program p = make_program({
        mov64_imm(1, 0),                          // 0
        jmp_imm(BPF_JEQ, 1, 0, 3),                // 1 -> 5
        alu64_reg(BPF_DIV, 2, 3),                 // 2  patch A
        call_pseudo(3),                           // 3 -> 7
        call_helper(BPF_FUNC_map_lookup_elem),    // 4  patch B
        jmp_imm(BPF_JNE, 0, 0, -4),               // 5 -> 2
        exit_insn(),                              // 6
        mov64_imm(0, 1),                          // 7 subprog 1
        alu64_imm(BPF_ADD, 0, 1),                 // 8
        exit_insn(),                              // 9
    });
    p.maps = {map(BPF_MAP_TYPE_HASH, 4, 8, 16)};
    p.aux[4].map_index = 0;
    p.linfo = {{.insn_off = 0}, {.insn_off = 2}, {.insn_off = 4}, {.insn_off = 7}};
    p.insn_arrays = {{.map_index = -1, .entries = {{.orig_off = 4, .xlated_off = 4}}}};
    return p;
}

TEST(MiscFixupsPass, WorkedExampleOfSpecSection6) {
    Program p = worked_example();
    std::vector<patch::PatchBatch> rec;
    auto r = run(p, opts_for(arch_x86_64(), {"misc_fixups"}), &rec);
    ASSERT_TRUE(r.outcome.ok());
    // §6.2 final table; B2 adds offsetof(htab_elem, key) + round_up(4, 8) = 48 + 8.
    EXPECT_TRUE(same_insns(p.insns, {
                                        mov64_imm(1, 0),
                                        jmp_imm(BPF_JEQ, 1, 0, 8),   // -> 10 = o5
                                        jmp_imm(BPF_JNE, 3, 0, 2),   // A0 -> A3
                                        alu32_reg(BPF_XOR, 2, 2),    // A1
                                        ja(1),                       // A2 -> o3
                                        alu64_reg(BPF_DIV, 2, 3),    // A3
                                        call_pseudo(5),              // -> 12 = o7
                                        call_helper(kInternalHtabLookup),
                                        jmp_imm(BPF_JEQ, 0, 0, 1),   // B1 -> o5
                                        alu64_imm(BPF_ADD, 0, 56),   // B2
                                        jmp_imm(BPF_JNE, 0, 0, -9),  // -> 2 = A0
                                        exit_insn(),
                                        mov64_imm(0, 1),
                                        alu64_imm(BPF_ADD, 0, 1),
                                        exit_insn(),
                                    }));
    EXPECT_EQ(starts(p), (std::vector<uint32_t>{0, 12, 15}));
    ASSERT_EQ(p.linfo.size(), 4u);
    EXPECT_EQ(p.linfo[2].insn_off, 7u);
    EXPECT_EQ(p.linfo[3].insn_off, 12u);
    EXPECT_EQ(p.insn_arrays[0].entries[0].xlated_off, 7u);
    EXPECT_EQ(p.aux[5].orig_idx, 2u);
    EXPECT_EQ(p.aux[9].orig_idx, 4u);
    EXPECT_TRUE(p.aux[3].zext_dst);
    EXPECT_FALSE(p.aux[2].zext_dst);
    ASSERT_EQ(rec.size(), 1u);
    EXPECT_EQ(rec[0].patches.size(), 2u);
}

TEST(MiscFixupsPass, WorkedExampleOnJit32KeepsTheLookupCall) {
    Program p = worked_example();
    auto r = run(p, opts_for(arch_jit32(), {"misc_fixups"}));  // BITS_PER_LONG == 32: no row p
    ASSERT_TRUE(r.outcome.ok());
    EXPECT_EQ(p.len(), 13u);
    EXPECT_TRUE(same(p.insns[7], call_helper(BPF_FUNC_map_lookup_elem)));
}

TEST(DivModGuard, EveryShapeByHand) {
    // udiv 64 / 32: 4
    EXPECT_TRUE(same_insns(emit_div_mod_guard(alu64_reg(BPF_DIV, 1, 2)),
                           {jmp_imm(BPF_JNE, 2, 0, 2), alu32_reg(BPF_XOR, 1, 1), ja(1), alu64_reg(BPF_DIV, 1, 2)}));
    EXPECT_TRUE(same_insns(emit_div_mod_guard(alu32_reg(BPF_DIV, 1, 2)),
                           {jmp32_imm(BPF_JNE, 2, 0, 2), alu32_reg(BPF_XOR, 1, 1), ja(1), alu32_reg(BPF_DIV, 1, 2)}));
    // umod 64: 2; umod 32: 4
    EXPECT_TRUE(same_insns(emit_div_mod_guard(alu64_reg(BPF_MOD, 1, 2)), {jmp_imm(BPF_JEQ, 2, 0, 1), alu64_reg(BPF_MOD, 1, 2)}));
    EXPECT_TRUE(same_insns(emit_div_mod_guard(alu32_reg(BPF_MOD, 1, 2)),
                           {jmp32_imm(BPF_JEQ, 2, 0, 2), alu32_reg(BPF_MOD, 1, 2), ja(1), mov32_reg(1, 1)}));
    // sdiv 64: 8
    const Insn sdiv64 = make(BPF_ALU64 | BPF_DIV | BPF_X, 1, 2, 1, 0);
    EXPECT_TRUE(same_insns(emit_div_mod_guard(sdiv64),
                           {mov64_reg(AX, 2), alu64_imm(BPF_ADD, AX, 1), jmp_imm(BPF_JGT, AX, 1, 4), jmp_imm(BPF_JEQ, AX, 0, 1),
                            mov64_imm(1, 0), make(BPF_ALU64 | BPF_NEG, 1, 0, 0, 0), ja(1), sdiv64}));
    const Insn sdiv32 = make(BPF_ALU | BPF_DIV | BPF_X, 1, 2, 1, 0);
    EXPECT_TRUE(same_insns(emit_div_mod_guard(sdiv32),
                           {mov64_reg(AX, 2), alu32_imm(BPF_ADD, AX, 1), jmp32_imm(BPF_JGT, AX, 1, 4), jmp32_imm(BPF_JEQ, AX, 0, 1),
                            mov32_imm(1, 0), make(BPF_ALU | BPF_NEG, 1, 0, 0, 0), ja(1), sdiv32}));
    // smod 64: 7 (AX == 1 -> end), smod 32: 9 (AX == 1 -> final zero-extending move)
    const Insn smod64 = make(BPF_ALU64 | BPF_MOD | BPF_X, 1, 2, 1, 0);
    EXPECT_TRUE(same_insns(emit_div_mod_guard(smod64),
                           {mov64_reg(AX, 2), alu64_imm(BPF_ADD, AX, 1), jmp_imm(BPF_JGT, AX, 1, 3), jmp_imm(BPF_JEQ, AX, 1, 3),
                            mov32_imm(1, 0), ja(1), smod64}));
    const Insn smod32 = make(BPF_ALU | BPF_MOD | BPF_X, 1, 2, 1, 0);
    EXPECT_TRUE(same_insns(emit_div_mod_guard(smod32),
                           {mov64_reg(AX, 2), alu32_imm(BPF_ADD, AX, 1), jmp32_imm(BPF_JGT, AX, 1, 3), jmp32_imm(BPF_JEQ, AX, 1, 4),
                            mov32_imm(1, 0), ja(1), smod32, ja(1), mov32_reg(1, 1)}));
    // K forms: only signed by -1
    EXPECT_TRUE(same_insns(emit_div_mod_guard(make(BPF_ALU64 | BPF_DIV | BPF_K, 3, 0, 1, -1)), {make(BPF_ALU64 | BPF_NEG, 3, 0, 0, 0)}));
    EXPECT_TRUE(same_insns(emit_div_mod_guard(make(BPF_ALU | BPF_DIV | BPF_K, 3, 0, 1, -1)), {make(BPF_ALU | BPF_NEG, 3, 0, 0, 0)}));
    EXPECT_TRUE(same_insns(emit_div_mod_guard(make(BPF_ALU64 | BPF_MOD | BPF_K, 3, 0, 1, -1)), {mov32_imm(3, 0)}));
    EXPECT_TRUE(emit_div_mod_guard(make(BPF_ALU64 | BPF_DIV | BPF_K, 3, 0, 1, 7)).empty());
    EXPECT_TRUE(emit_div_mod_guard(make(BPF_ALU64 | BPF_DIV | BPF_K, 3, 0, 0, -1)).empty());
    EXPECT_TRUE(emit_div_mod_guard(alu64_reg(BPF_ADD, 1, 2)).empty());
}

TEST(DivModGuard, Smod32JumpTargetsAfterPatching) {
    // 0: r0 = 0; 1: if r1 == 0 goto +2 (-> 4); 2: w3 s%= w4; 3: r0 = 1; 4: exit
    const Insn smod32 = make(BPF_ALU | BPF_MOD | BPF_X, 3, 4, 1, 0);
    Program p = make_program({mov64_imm(0, 0), jmp_imm(BPF_JEQ, 1, 0, 2), smod32, mov64_imm(0, 1), exit_insn()});
    auto r = run(p, opts_for(arch_arm64(), {"misc_fixups"}));
    ASSERT_TRUE(r.outcome.ok());
    ASSERT_EQ(p.len(), 13u);
    EXPECT_TRUE(same(p.insns[1], jmp_imm(BPF_JEQ, 1, 0, 10)));  // exit moved from 4 to 12
    // original aux lands on the LAST slot (the zero-extending move), not on the copied insn
    EXPECT_EQ(p.aux[10].orig_idx, 2u);
    EXPECT_EQ(p.aux[8].orig_idx, 0u);
    EXPECT_TRUE(same(p.insns[8], smod32));
}

TEST(MapLookupInline, HashFamilyShapes) {
    const auto& x = arch_x86_64();
    EXPECT_TRUE(same_insns(emit_map_lookup_inline(map(BPF_MAP_TYPE_HASH, 12, 8, 4), x),
                           {call_helper(kInternalHtabLookup), jmp_imm(BPF_JEQ, 0, 0, 1), alu64_imm(BPF_ADD, 0, 48 + 16)}));
    EXPECT_TRUE(same_insns(emit_map_lookup_inline(map(BPF_MAP_TYPE_LRU_HASH, 4, 8, 4), x),
                           {call_helper(kInternalHtabLookup), jmp_imm(BPF_JEQ, 0, 0, 4), ldx(BPF_B, 1, 0, 35),
                            jmp_imm(BPF_JNE, 1, 0, 1), st(BPF_B, 0, 35, 1), alu64_imm(BPF_ADD, 0, 56)}));
    EXPECT_TRUE(same_insns(emit_map_lookup_inline(map(BPF_MAP_TYPE_HASH_OF_MAPS, 4, 4, 4), x),
                           {call_helper(kInternalHtabLookup), jmp_imm(BPF_JEQ, 0, 0, 2), alu64_imm(BPF_ADD, 0, 56), ldx(BPF_DW, 0, 0, 0)}));
    EXPECT_TRUE(same_insns(emit_map_lookup_inline(map(BPF_MAP_TYPE_PERCPU_HASH, 8, 8, 4), x),
                           {call_helper(kInternalHtabLookup), jmp_imm(BPF_JEQ, 0, 0, 3), alu64_imm(BPF_ADD, 0, 56), ldx(BPF_DW, 0, 0, 0),
                            make(BPF_ALU64 | BPF_MOV | BPF_X, 0, 0, -1, 0)}));
    ArchProfile no_percpu = x;
    no_percpu.supports_percpu_insn = false;
    EXPECT_TRUE(emit_map_lookup_inline(map(BPF_MAP_TYPE_PERCPU_HASH, 8, 8, 4), no_percpu).empty());  // -EOPNOTSUPP
    EXPECT_TRUE(emit_map_lookup_inline(map(BPF_MAP_TYPE_LRU_PERCPU_HASH, 8, 8, 4), x).empty());
    EXPECT_TRUE(emit_map_lookup_inline(map(BPF_MAP_TYPE_RINGBUF, 0, 0, 4096), x).empty());
}

TEST(MapLookupInline, ArrayFamilyShapes) {
    const auto& x = arch_x86_64();
    // max 5 -> index_mask 7; value 12 -> elem 16 -> shift 4
    EXPECT_TRUE(same_insns(emit_map_lookup_inline(map(BPF_MAP_TYPE_ARRAY, 4, 12, 5), x),
                           {alu64_imm(BPF_ADD, 1, kArrayValueOffset), ldx(BPF_W, 0, 2, 0), jmp_imm(BPF_JGE, 0, 5, 4),
                            alu32_imm(BPF_AND, 0, 7), alu64_imm(BPF_LSH, 0, 4), alu64_reg(BPF_ADD, 0, 1), ja(1), mov64_imm(0, 0)}));
    // value 20 -> elem 24 (not a power of two) -> multiply; bypass_spec_v1 drops the mask: 7
    MapDef a = map(BPF_MAP_TYPE_ARRAY, 4, 20, 8);
    a.bypass_spec_v1 = true;
    EXPECT_TRUE(same_insns(emit_map_lookup_inline(a, x),
                           {alu64_imm(BPF_ADD, 1, kArrayValueOffset), ldx(BPF_W, 0, 2, 0), jmp_imm(BPF_JGE, 0, 8, 3),
                            alu64_imm(BPF_MUL, 0, 24), alu64_reg(BPF_ADD, 0, 1), ja(1), mov64_imm(0, 0)}));
    EXPECT_TRUE(emit_map_lookup_inline(map(BPF_MAP_TYPE_ARRAY, 4, 8, 4, BPF_F_INNER_MAP), x).empty());
    // per-CPU array 10 / 9
    EXPECT_TRUE(same_insns(emit_map_lookup_inline(map(BPF_MAP_TYPE_PERCPU_ARRAY, 4, 8, 4), x),
                           {alu64_imm(BPF_ADD, 1, kArrayValueOffset), ldx(BPF_W, 0, 2, 0), jmp_imm(BPF_JGE, 0, 4, 6),
                            alu32_imm(BPF_AND, 0, 3), alu64_imm(BPF_LSH, 0, 3), alu64_reg(BPF_ADD, 0, 1), ldx(BPF_DW, 0, 0, 0),
                            make(BPF_ALU64 | BPF_MOV | BPF_X, 0, 0, -1, 0), ja(1), mov64_imm(0, 0)}));
    MapDef pa = map(BPF_MAP_TYPE_PERCPU_ARRAY, 4, 8, 4);
    pa.bypass_spec_v1 = true;
    EXPECT_EQ(emit_map_lookup_inline(pa, x).size(), 9u);
    EXPECT_TRUE(same(emit_map_lookup_inline(pa, x)[2], jmp_imm(BPF_JGE, 0, 4, 5)));
    EXPECT_TRUE(emit_map_lookup_inline(map(BPF_MAP_TYPE_PERCPU_ARRAY, 4, 8, 4, BPF_F_INNER_MAP), x).empty());
    ArchProfile no_percpu = x;
    no_percpu.supports_percpu_insn = false;
    EXPECT_TRUE(emit_map_lookup_inline(map(BPF_MAP_TYPE_PERCPU_ARRAY, 4, 8, 4), no_percpu).empty());
    // array of maps 10 (inner-map flag does not matter there)
    EXPECT_TRUE(same_insns(emit_map_lookup_inline(map(BPF_MAP_TYPE_ARRAY_OF_MAPS, 4, 4, 3, BPF_F_INNER_MAP), x),
                           {alu64_imm(BPF_ADD, 1, kArrayValueOffset), ldx(BPF_W, 0, 2, 0), jmp_imm(BPF_JGE, 0, 3, 6),
                            alu32_imm(BPF_AND, 0, 3), alu64_imm(BPF_LSH, 0, 3), alu64_reg(BPF_ADD, 0, 1), ldx(BPF_DW, 0, 0, 0),
                            jmp_imm(BPF_JEQ, 0, 0, 1), ja(1), mov64_imm(0, 0)}));
}

TEST(MiscFixupsPass, PoisonedOrUnknownMapKeepsTheCall) {
    Program p = make_program({call_helper(BPF_FUNC_map_lookup_elem), call_helper(BPF_FUNC_map_lookup_elem), exit_insn()});
    p.maps = {map(BPF_MAP_TYPE_HASH, 4, 4, 4)};
    p.aux[0].map_index = 0;
    p.aux[0].map_ptr_poisoned = true;
    auto r = run(p, opts_for(arch_x86_64(), {"misc_fixups"}));
    ASSERT_TRUE(r.outcome.ok());
    EXPECT_EQ(p.len(), 3u);
}

TEST(MiscFixupsPass, TimedMayGotoWithPrologue) {
    Program p = make_program({mov64_imm(0, 0), may_goto(2), alu64_imm(BPF_ADD, 0, 1), ja(-3), exit_insn()});
    p.subprogs[0].stack_depth = 8;
    std::vector<patch::PatchBatch> rec;
    auto r = run(p, opts_for(arch_x86_64(), {"misc_fixups"}), &rec);
    ASSERT_TRUE(r.outcome.ok());
    EXPECT_TRUE(same_insns(p.insns, {
                                        st(BPF_DW, 10, -24, 0xffff),
                                        st(BPF_DW, 10, -16, 0),
                                        mov64_imm(0, 0),
                                        ldx(BPF_DW, AX, 10, -24),
                                        jmp_imm(BPF_JEQ, AX, 0, 7),  // -> 12 exit
                                        alu64_imm(BPF_SUB, AX, 1),
                                        jmp_imm(BPF_JNE, AX, 0, 2),  // -> 9
                                        mov64_imm(AX, -24),
                                        call_helper(kInternalTimedMayGoto),
                                        stx(BPF_DW, 10, AX, -24),
                                        alu64_imm(BPF_ADD, 0, 1),
                                        ja(-9),  // -> 3, the first insn of the expansion
                                        exit_insn(),
                                    }));
    EXPECT_EQ(p.subprogs[0].stack_depth, 24u);
    EXPECT_EQ(p.subprogs[0].stack_extra, 16u);
    ASSERT_EQ(rec.size(), 2u);
    // the main batch carries the expansion with the patch-local outgoing jump: slot 1, off 2+5 = 7,
    // local 9 = n + 2 -> original 1 + 1 + 2 = 4
    EXPECT_TRUE(same(rec[0].patches.at(0).insns.at(1), jmp_imm(BPF_JEQ, AX, 0, 7)));
    EXPECT_EQ(rec[1].patches.at(0).kind, patch::PatchKind::InsertBefore);
    EXPECT_EQ(rec[1].patches.at(0).pos, 0u);
    EXPECT_EQ(rec[1].patches.at(0).insns.size(), 2u);
}

TEST(MiscFixupsPass, UntimedMayGotoPrologueRedirectsPlainJumps) {
    // 0: r0 += 1; 1: may_goto +1 (-> 3); 2: goto -3 (-> 0, the subprog start); 3: exit
    Program p = make_program({alu64_imm(BPF_ADD, 0, 1), may_goto(1), ja(-3), exit_insn()});
    auto r = run(p, opts_for(arch_jit32(), {"misc_fixups"}));
    ASSERT_TRUE(r.outcome.ok());
    EXPECT_TRUE(same_insns(p.insns, {
                                        st(BPF_DW, 10, -8, 8388608),
                                        alu64_imm(BPF_ADD, 0, 1),
                                        ldx(BPF_DW, AX, 10, -8),
                                        jmp_imm(BPF_JEQ, AX, 0, 3),  // -> 7 exit
                                        alu64_imm(BPF_SUB, AX, 1),
                                        stx(BPF_DW, 10, AX, -8),
                                        ja(-6),  // -> 1: skips the prologue (adjust_jmp_off)
                                        exit_insn(),
                                    }));
    EXPECT_EQ(p.subprogs[0].stack_depth, 8u);
    EXPECT_EQ(p.subprogs[0].stack_extra, 8u);
}

TEST(MiscFixupsPass, MayGotoCounterPerSubprog) {
    // subprog 1 has a may_goto, subprog 0 does not: only subprog 1 gets a prologue and extra.
    Program p = make_program({call_pseudo(1), exit_insn(), may_goto(0), exit_insn()});
    p.subprogs[1].stack_depth = 16;
    auto r = run(p, opts_for(arch_jit32(), {"misc_fixups"}));
    ASSERT_TRUE(r.outcome.ok());
    // main batch: may_goto +0 at 2 -> [AX = *(fp-24); if AX == 0 goto +2 (-> 3+...); AX -= 1; store]
    // prologue at subprog 1 start (2): [*(u64 *)(fp - 24) = BPF_MAX_LOOPS]; calls keep pointing at it
    EXPECT_TRUE(same_insns(p.insns, {call_pseudo(1), exit_insn(), st(BPF_DW, 10, -24, 8388608), ldx(BPF_DW, AX, 10, -24),
                                     jmp_imm(BPF_JEQ, AX, 0, 2), alu64_imm(BPF_SUB, AX, 1), stx(BPF_DW, 10, AX, -24), exit_insn()}));
    EXPECT_EQ(starts(p), (std::vector<uint32_t>{0, 2, 8}));
    EXPECT_EQ(p.subprogs[0].stack_extra, 0u);
    EXPECT_EQ(p.subprogs[1].stack_depth, 24u);
}

TEST(MiscFixupsPass, TailCallPokeAndUnprivSequence) {
    auto prog = [] {
        Program p = make_program({mov64_imm(0, 0), alu64_reg(BPF_DIV, 2, 3), call_helper(BPF_FUNC_tail_call), exit_insn()});
        p.maps = {map(BPF_MAP_TYPE_PROG_ARRAY, 4, 4, 5)};
        p.aux[2].map_index = 0;
        p.aux[2].map_key = 3;
        p.aux[2].map_key_known = true;
        return p;
    };
    const Insn tc = make(BPF_JMP | kOpTailCall, 0, 0, 0, 0);
    {
        Program p = prog();
        auto r = run(p, opts_for(arch_x86_64(), {"misc_fixups"}));
        ASSERT_TRUE(r.outcome.ok());
        ASSERT_EQ(p.len(), 7u);
        EXPECT_TRUE(same(p.insns[5], make(BPF_JMP | kOpTailCall, 0, 0, 0, 1)));  // poke slot 0 + 1
        ASSERT_EQ(p.pokes.size(), 1u);
        EXPECT_EQ(p.pokes[0].insn_idx, 5u);  // 2 + 3 (the udiv guard before it grew by 3)
        EXPECT_EQ(p.pokes[0].key, 3u);
        EXPECT_EQ(p.pokes[0].map_index, 0);
    }
    {
        Program p = prog();
        auto o = opts_for(arch_x86_64(), {"misc_fixups"});
        o.privileged = false;
        auto r = run(p, o);
        ASSERT_TRUE(r.outcome.ok());
        EXPECT_TRUE(p.pokes.empty());
        ASSERT_EQ(p.len(), 9u);
        // max 5 -> index_mask 7
        EXPECT_TRUE(same_insns({p.insns[5], p.insns[6], p.insns[7]}, {jmp_imm(BPF_JGE, 3, 5, 2), alu32_imm(BPF_AND, 3, 7), tc}));
    }
    {
        Program p = prog();
        p.aux[2].map_key_known = false;  // privileged but unknown key: no poke, no patch
        auto r = run(p, opts_for(arch_x86_64(), {"misc_fixups"}));
        ASSERT_TRUE(r.outcome.ok());
        EXPECT_TRUE(p.pokes.empty());
        EXPECT_TRUE(same(p.insns[5], tc));
    }
    {
        Program p = prog();
        p.aux[2].map_ptr_poisoned = true;
        auto o = opts_for(arch_x86_64(), {"misc_fixups"});
        o.privileged = false;
        auto r = run(p, o);
        EXPECT_EQ(r.outcome.err, -EINVAL);
        EXPECT_EQ(r.failed_pass, "misc_fixups");
    }
}

TEST(MiscFixupsPass, ArchDifferences) {
    auto prog = [] {
        Program p = make_program({call_helper(BPF_FUNC_get_smp_processor_id), call_helper(BPF_FUNC_get_current_task_btf),
                                  make(BPF_LDX | kModeProbeMem | BPF_DW, 1, 2, 8, 0), make(BPF_LDX | kModeProbeMem | BPF_W, 3, 4, 0, 0),
                                  call_helper(BPF_FUNC_jiffies64), exit_insn()});
        return p;
    };
    const Insn pm8 = make(BPF_LDX | kModeProbeMem | BPF_DW, 1, 2, 8, 0), pm0 = make(BPF_LDX | kModeProbeMem | BPF_W, 3, 4, 0, 0);
    const Insn jif_lo = ldimm64_lo(0, 0, static_cast<int32_t>(kJiffiesAddr & 0xffffffffu));
    const Insn jif_hi = ldimm64_hi(static_cast<int32_t>(kJiffiesAddr >> 32));
    {
        Program p = prog();
        ASSERT_TRUE(run(p, opts_for(arch_x86_64(), {"misc_fixups"})).outcome.ok());
        EXPECT_TRUE(same_insns(p.insns, {mov64_imm(0, kPcpuCpuNumber), make(BPF_ALU64 | BPF_MOV | BPF_X, 0, 0, -1, 0), ldx(BPF_W, 0, 0, 0),
                                         mov64_imm(0, kPcpuCurrentTask), make(BPF_ALU64 | BPF_MOV | BPF_X, 0, 0, -1, 0), ldx(BPF_DW, 0, 0, 0),
                                         pm8, pm0, jif_lo, jif_hi, ldx(BPF_DW, 0, 0, 0), exit_insn()}));
    }
    {
        Program p = prog();
        ASSERT_TRUE(run(p, opts_for(arch_arm64(), {"misc_fixups"})).outcome.ok());
        // helpers left for the JIT; PROBE_MEM guarded against user addresses (limit 1 << 48 -> 0x10000)
        EXPECT_TRUE(same_insns(p.insns, {call_helper(BPF_FUNC_get_smp_processor_id), call_helper(BPF_FUNC_get_current_task_btf),
                                         mov64_reg(AX, 2), alu64_imm(BPF_ADD, AX, 8), alu64_imm(BPF_RSH, AX, 32),
                                         jmp_imm(BPF_JLE, AX, 0x10000, 2), pm8, ja(1), mov64_imm(1, 0),
                                         mov64_reg(AX, 4), alu64_imm(BPF_RSH, AX, 32), jmp_imm(BPF_JLE, AX, 0x10000, 2), pm0, ja(1),
                                         mov64_imm(3, 0), jif_lo, jif_hi, ldx(BPF_DW, 0, 0, 0), exit_insn()}));
    }
    {
        Program p = prog();
        ASSERT_TRUE(run(p, opts_for(arch_jit32(), {"misc_fixups"})).outcome.ok());
        EXPECT_EQ(p.len(), 6u);  // nothing: no x86-64 inlines, no guard, no 64-bit-only rows
    }
}

TEST(MiscFixupsPass, InPlaceRows) {
    Program p = make_program({
        make(BPF_ALU64 | BPF_MOV | BPF_X, 1, 2, 1, 1),   // as(1) -> as(0) cast: w1 = w2
        make(BPF_ALU64 | BPF_MOV | BPF_X, 3, 4, 1, 0x10000),  // as(0) -> as(1): left for the JIT
        alu64_reg(BPF_ADD, 5, 6),                        // needs_zext: narrowed to ALU
        call_kfunc(kfunc::by_kind(kfunc::Kind::CastToKernCtx)->btf_id),
        exit_insn(),
    });
    p.aux[2].needs_zext = true;
    std::vector<patch::PatchBatch> rec;
    ASSERT_TRUE(run(p, opts_for(arch_x86_64(), {"misc_fixups"}), &rec).outcome.ok());
    EXPECT_TRUE(same_insns(p.insns, {mov32_reg(1, 2), make(BPF_ALU64 | BPF_MOV | BPF_X, 3, 4, 1, 0x10000), alu32_reg(BPF_ADD, 5, 6),
                                     mov64_reg(0, 1), exit_insn()}));
    ASSERT_EQ(rec.size(), 1u);  // only the kfunc (len 1) is a patch
    EXPECT_EQ(rec[0].patches.size(), 1u);
}

TEST(MiscFixupsPass, NeedsZextNarrowsBeforeTheDivGuardCopiesTheInsn) {
    Program p = make_program({alu64_reg(BPF_DIV, 1, 2), exit_insn()});
    p.aux[0].needs_zext = true;
    ASSERT_TRUE(run(p, opts_for(arch_x86_64(), {"misc_fixups"})).outcome.ok());
    EXPECT_TRUE(same_insns(p.insns, {jmp32_imm(BPF_JNE, 2, 0, 2), alu32_reg(BPF_XOR, 1, 1), ja(1), alu32_reg(BPF_DIV, 1, 2), exit_insn()}));
}

}  // namespace
}  // namespace patchfuzz::passes::testing
