// Pass "zext": zext markers where the arch needs them (and for CMPXCHG everywhere), none after kfunc
// calls, and the BPF_F_TEST_RND_HI32 poisoning with a deterministic seed (docs/patching.md §5.5).
#include <cerrno>

#include "bpf/kfunc/kfunc_table.hpp"
#include "bpf/passes/passes_test_util.hpp"

namespace patchfuzz::passes::testing {
namespace {

using namespace isa;
constexpr uint8_t AX = kRegAx;

Insn cmpxchg32(uint8_t dst, uint8_t src) { return make(BPF_STX | BPF_ATOMIC | BPF_W, dst, src, 0, BPF_CMPXCHG); }

Program sample() {
    Program p = make_program({
        mov32_imm(1, 5),                     // 0 zext_dst
        alu64_imm(BPF_ADD, 1, 1),            // 1 64-bit
        ldx(BPF_W, 2, 10, -8),               // 2 zext_dst
        cmpxchg32(10, 3),                    // 3 zext_dst (R0)
        call_kfunc(kfunc::by_kind(kfunc::Kind::IterNumNew)->btf_id),  // 4 zext_dst but kfunc
        exit_insn(),                         // 5
    });
    for (uint32_t i : {0u, 2u, 3u, 4u}) p.aux[i].zext_dst = true;
    return p;
}

TEST(ZextPass, Jit32GetsAMarkerAfterEveryZextDst) {
    Program p = sample();
    auto r = run(p, opts_for(arch_jit32(), {"zext"}));
    ASSERT_TRUE(r.outcome.ok());
    EXPECT_TRUE(same_insns(p.insns, {mov32_imm(1, 5), zext_marker(1), alu64_imm(BPF_ADD, 1, 1), ldx(BPF_W, 2, 10, -8), zext_marker(2),
                                     cmpxchg32(10, 3), zext_marker(0), p.insns[7], exit_insn()}));
    EXPECT_TRUE(is_kfunc_call(p.insns[7]));
}

TEST(ZextPass, X86OnlyForCmpxchg) {
    Program p = sample();
    ASSERT_TRUE(run(p, opts_for(arch_x86_64(), {"zext"})).outcome.ok());
    EXPECT_EQ(p.len(), 7u);
    EXPECT_TRUE(same_insns({p.insns[3], p.insns[4]}, {cmpxchg32(10, 3), zext_marker(0)}));
    Program q = sample();
    ASSERT_TRUE(run(q, opts_for(arch_arm64(), {"zext"})).outcome.ok());
    EXPECT_TRUE(same_insns(q.insns, p.insns));
}

TEST(ZextPass, ZextDstOnANonDefIsAVerifierBug) {
    Program p = make_program({jmp_imm(BPF_JEQ, 1, 0, 0), exit_insn()});
    p.aux[0].zext_dst = true;
    auto r = run(p, opts_for(arch_jit32(), {"zext"}));
    EXPECT_EQ(r.outcome.err, -EFAULT);
}

TEST(ZextPass, RndHi32PoisonsOnly32BitDefsWithoutZextDst) {
    auto prog = [] {
        Program p = make_program({
            mov32_imm(1, 5),              // 0 poisoned
            ldimm64_lo(2, 0, 7), ldimm64_hi(0),  // 1-2 64-bit: skipped (both slots)
            ldx(BPF_W, 3, 1, 0),          // 3 ctx load: skipped
            ldx(BPF_B, 4, 10, -1),        // 4 poisoned
            alu64_imm(BPF_ADD, 4, 1),     // 5 64-bit
            mov32_imm(0, 0),              // 6 zext_dst set: not poisoned (and x86 adds no marker)
            exit_insn(),
        });
        p.aux[3].ptr_type = PtrType::Ctx;
        p.aux[6].zext_dst = true;
        return p;
    };
    auto o = opts_for(arch_x86_64(), {"zext"});
    o.test_rnd_hi32 = true;
    o.rnd_hi32_seed = 42;
    Program p = prog();
    ASSERT_TRUE(run(p, o).outcome.ok());
    ASSERT_EQ(p.len(), 8u + 6);
    const int32_t r1 = p.insns[1].imm, r2 = p.insns[8].imm;
    EXPECT_TRUE(same_insns(p.insns, {mov32_imm(1, 5), mov64_imm(AX, r1), alu64_imm(BPF_LSH, AX, 32), alu64_reg(BPF_OR, 1, AX),
                                     ldimm64_lo(2, 0, 7), ldimm64_hi(0), ldx(BPF_W, 3, 1, 0), ldx(BPF_B, 4, 10, -1), mov64_imm(AX, r2),
                                     alu64_imm(BPF_LSH, AX, 32), alu64_reg(BPF_OR, 4, AX), alu64_imm(BPF_ADD, 4, 1), mov32_imm(0, 0), exit_insn()}));
    // deterministic: same seed, same constants; another seed, others
    Program q = prog();
    ASSERT_TRUE(run(q, o).outcome.ok());
    EXPECT_TRUE(same_insns(q.insns, p.insns));
    o.rnd_hi32_seed = 43;
    Program s = prog();
    ASSERT_TRUE(run(s, o).outcome.ok());
    EXPECT_FALSE(s.insns[1].imm == r1 && s.insns[8].imm == r2);
}

}  // namespace
}  // namespace patchfuzz::passes::testing
