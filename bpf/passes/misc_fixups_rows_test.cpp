// Pass "misc_fixups", rows f, g, i, n, o, t-y, z and the hidden exception callback of
// docs/patching.md §5.3: every expected sequence is written by hand from the spec table, jump
// displacements after patching computed by hand. run() (passes_test_util.hpp) also checks that the
// incremental patcher, the batched patcher and the test double agree on every program; each program
// mixes the row with a jump across it and usually another rewrite.
#include <cerrno>

#include "bpf/kfunc/kfunc_table.hpp"
#include "bpf/isa/internal_calls.hpp"
#include "bpf/passes/passes_test_util.hpp"

namespace patchfuzz::passes::testing {
namespace {

using namespace isa;
constexpr uint8_t AX = kRegAx;

RewriteOptions opts(const ArchProfile& a, KernelProfile k = KernelProfile::BpfNext) {
    RewriteOptions o = opts_for(a, {"misc_fixups"});
    o.kernel = k;
    return o;
}

// udiv guard of `r0 /= r<src>` (row d, 4 insns), as in misc_fixups_test.cpp
std::vector<Insn> udiv_guard(uint8_t src) {
    return {jmp_imm(BPF_JNE, src, 0, 2), alu32_reg(BPF_XOR, 0, 0), ja(1), alu64_reg(BPF_DIV, 0, src)};
}

std::vector<Insn> cat(std::initializer_list<std::vector<Insn>> parts) {
    std::vector<Insn> v;
    for (const auto& p : parts) v.insert(v.end(), p.begin(), p.end());
    return v;
}

Insn ld_abs(uint8_t sz, int32_t imm) { return make(BPF_LD | BPF_ABS | sz, 0, 0, 0, imm); }
Insn ld_ind(uint8_t sz, uint8_t src, int32_t imm) { return make(BPF_LD | BPF_IND | sz, 0, src, 0, imm); }

// ---- row f: LD_ABS / LD_IND -------------------------------------------------------------------

Program ld_abs_prog(uint32_t type) {
    Program p = make_program({
        mov64_reg(6, 1),             // 0
        jmp_imm(BPF_JEQ, 6, 0, 2),   // 1 -> 4
        ld_abs(BPF_B, 14),           // 2  (6)
        alu64_reg(BPF_DIV, 0, 7),    // 3  (4)
        ld_ind(BPF_H, 7, 2),         // 4  (7)
        ld_ind(BPF_W, 7, 0),         // 5  (6)
        exit_insn(),                 // 6
    });
    p.prog_type = type;
    return p;
}

TEST(MiscFixupsRows, LdAbsIndGenLdAbsShapes) {
    const std::vector<Insn> want = cat({
        {mov64_reg(6, 1), jmp_imm(BPF_JEQ, 6, 0, 10)},  // o4 is at 12
        {mov64_imm(2, 14), mov64_reg(1, 6), call_helper(kInternalSkbLoad8), jmp_imm(BPF_JSGE, 0, 0, 2),
         alu32_reg(BPF_XOR, 0, 0), exit_insn()},
        udiv_guard(7),
        {mov64_reg(2, 7), alu64_imm(BPF_ADD, 2, 2), mov64_reg(1, 6), call_helper(kInternalSkbLoad16),
         jmp_imm(BPF_JSGE, 0, 0, 2), alu32_reg(BPF_XOR, 0, 0), exit_insn()},
        {mov64_reg(2, 7), mov64_reg(1, 6), call_helper(kInternalSkbLoad32), jmp_imm(BPF_JSGE, 0, 0, 2),
         alu32_reg(BPF_XOR, 0, 0), exit_insn()},
        {exit_insn()},
    });
    for (uint32_t type : {BPF_PROG_TYPE_SOCKET_FILTER, BPF_PROG_TYPE_SCHED_CLS, BPF_PROG_TYPE_SCHED_ACT}) {
        for (const ArchProfile* a : {&arch_x86_64(), &arch_arm64(), &arch_jit32()}) {
            for (auto k : {KernelProfile::BpfNext, KernelProfile::K6_12, KernelProfile::K6_1}) {
                Program p = ld_abs_prog(type);
                ASSERT_TRUE(run(p, opts(*a, k)).outcome.ok()) << a->name;
                EXPECT_TRUE(same_insns(p.insns, want)) << a->name << " type " << type;
                // the original insn's aux goes to the last slot (the EXIT) of its patch
                EXPECT_EQ(p.aux[7].orig_idx, 2u);
                EXPECT_EQ(p.aux[18].orig_idx, 4u);
            }
        }
    }
}

TEST(MiscFixupsRows, LdAbsRejectedWithoutGenLdAbsAndForDw) {
    Program p = ld_abs_prog(BPF_PROG_TYPE_XDP);
    auto r = run(p, opts(arch_x86_64()));
    EXPECT_EQ(r.outcome.err, -EINVAL);
    EXPECT_EQ(r.outcome.log, "insn 2: BPF_LD_[ABS|IND] instructions not allowed for this program type");
    Program q = make_program({mov64_reg(6, 1), ld_abs(BPF_DW, 0), exit_insn()});
    q.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
    EXPECT_EQ(run(q, opts(arch_x86_64())).outcome.err, -EFAULT);
}

// ---- row g: Spectre v1 pointer-arithmetic masking ---------------------------------------------

TEST(MiscFixupsRows, PtrArithMaskingEveryForm) {
    auto prog = [] {
        Program p = make_program({
            jmp_imm(BPF_JEQ, 1, 0, 6),   // 0 -> 7
            alu64_reg(BPF_ADD, 1, 2),    // 1 A: SRC, limit 8             -> 7
            alu64_reg(BPF_SUB, 3, 4),    // 2 B: SRC|NEG, limit 16        -> 9
            alu64_reg(BPF_ADD, 5, 6),    // 3 C: DST, limit 32            -> 8
            alu64_reg(BPF_ADD, 7, 8),    // 4 D: SRC|IMM, limit 40        -> 2
            alu64_reg(BPF_SUB, 7, 8),    // 5 E: DST|IMM|NEG, limit 48    -> 3
            alu64_reg(BPF_ADD, 1, 2),    // 6 F: NON_POINTER              -> 1 (untouched)
            exit_insn(),                 // 7
        });
        p.aux[1].alu_state = 1, p.aux[1].alu_limit = 8;
        p.aux[2].alu_state = 1 | 4, p.aux[2].alu_limit = 16;
        p.aux[3].alu_state = 2, p.aux[3].alu_limit = 32;
        p.aux[4].alu_state = 1 | 16, p.aux[4].alu_limit = 40;
        p.aux[5].alu_state = 2 | 16 | 4, p.aux[5].alu_limit = 48;
        p.aux[6].alu_state = 8, p.aux[6].alu_limit = 99;
        return p;
    };
    const Insn neg_ax = make(BPF_ALU64 | BPF_NEG, AX, 0, 0, 0);
    const std::vector<Insn> want = cat({
        {jmp_imm(BPF_JEQ, 1, 0, 30)},  // o7 is at 31
        {mov32_imm(AX, 8), alu64_reg(BPF_SUB, AX, 2), alu64_reg(BPF_OR, AX, 2), neg_ax, alu64_imm(BPF_ARSH, AX, 63),
         alu64_reg(BPF_AND, AX, 2), alu64_reg(BPF_ADD, 1, AX)},
        {alu64_imm(BPF_MUL, 4, -1), mov32_imm(AX, 16), alu64_reg(BPF_SUB, AX, 4), alu64_reg(BPF_OR, AX, 4), neg_ax,
         alu64_imm(BPF_ARSH, AX, 63), alu64_reg(BPF_AND, AX, 4), alu64_reg(BPF_ADD, 3, AX), alu64_imm(BPF_MUL, 4, -1)},
        {mov32_imm(AX, 32), alu64_reg(BPF_SUB, AX, 5), alu64_reg(BPF_OR, AX, 5), neg_ax, alu64_imm(BPF_ARSH, AX, 63),
         alu64_reg(BPF_AND, AX, 5), mov64_reg(5, 6), alu64_reg(BPF_ADD, 5, AX)},
        {mov32_imm(AX, 40), alu64_reg(BPF_ADD, 7, AX)},
        {mov32_imm(AX, 48), mov64_reg(7, 8), alu64_reg(BPF_ADD, 7, AX)},
        {alu64_reg(BPF_ADD, 1, 2), exit_insn()},
    });
    for (const ArchProfile* a : {&arch_x86_64(), &arch_arm64(), &arch_jit32()}) {
        for (auto k : {KernelProfile::BpfNext, KernelProfile::K6_12, KernelProfile::K6_1}) {
            Program p = prog();
            ASSERT_TRUE(run(p, opts(*a, k)).outcome.ok());
            EXPECT_TRUE(same_insns(p.insns, want)) << a->name;
            EXPECT_EQ(p.aux[7].orig_idx, 1u);
            EXPECT_EQ(p.aux[7].alu_state, 1u);  // the original aux moved to the last slot
        }
    }
}

TEST(MiscFixupsRows, PtrArithMaskingNeedsAluStateAndAlu64X) {
    Program p = make_program({alu64_reg(BPF_ADD, 1, 2), alu64_imm(BPF_ADD, 1, 2), alu32_reg(BPF_ADD, 1, 2), exit_insn()});
    p.aux[1].alu_state = 1;
    p.aux[2].alu_state = 1;
    ASSERT_TRUE(run(p, opts(arch_x86_64())).outcome.ok());
    EXPECT_EQ(p.len(), 4u);
    // needs_zext (row b) narrows ALU64 to ALU first: the masking row no longer matches
    Program q = make_program({alu64_reg(BPF_ADD, 1, 2), exit_insn()});
    q.aux[0].alu_state = 1;
    q.aux[0].needs_zext = true;
    ASSERT_TRUE(run(q, opts(arch_x86_64())).outcome.ok());
    EXPECT_TRUE(same_insns(q.insns, {alu32_reg(BPF_ADD, 1, 2), exit_insn()}));
}

// ---- row i: bpf-next per-CPU ld_imm64 --------------------------------------------------------

Program percpu_ld_prog() {
    Program p = make_program({
        jmp_imm(BPF_JEQ, 1, 0, 6),                      // 0 -> 7
        ldimm64_lo(1, BPF_PSEUDO_MAP_VALUE, 0),         // 1 percpu array value + 8
        ldimm64_hi(8),                                  // 2  patched: [hi, r1 = percpu(r1)]
        ldimm64_lo(2, BPF_PSEUDO_MAP_VALUE, 1),         // 3 plain array: untouched
        ldimm64_hi(0),                                  // 4
        ldimm64_lo(3, BPF_PSEUDO_MAP_IDX_VALUE, 0),     // 5 percpu array via idx
        ldimm64_hi(4),                                  // 6  patched
        alu64_reg(BPF_DIV, 0, 3),                       // 7 udiv guard (4)
        exit_insn(),                                    // 8
    });
    p.maps = {MapDef{.name = "pc", .type = BPF_MAP_TYPE_PERCPU_ARRAY, .key_size = 4, .value_size = 16, .max_entries = 4},
              MapDef{.name = "a", .type = BPF_MAP_TYPE_ARRAY, .key_size = 4, .value_size = 16, .max_entries = 4}};
    return p;
}

TEST(MiscFixupsRows, PercpuLdImm64PatchesTheSecondSlot) {
    const Insn pc1 = make(BPF_ALU64 | BPF_MOV | BPF_X, 1, 1, -1, 0), pc3 = make(BPF_ALU64 | BPF_MOV | BPF_X, 3, 3, -1, 0);
    for (const ArchProfile* a : {&arch_x86_64(), &arch_arm64()}) {
        Program p = percpu_ld_prog();
        ASSERT_TRUE(run(p, opts(*a)).outcome.ok());
        EXPECT_TRUE(same_insns(p.insns, cat({{jmp_imm(BPF_JEQ, 1, 0, 8)},  // o7 is at 9
                                             {ldimm64_lo(1, BPF_PSEUDO_MAP_VALUE, 0), ldimm64_hi(8), pc1},
                                             {ldimm64_lo(2, BPF_PSEUDO_MAP_VALUE, 1), ldimm64_hi(0)},
                                             {ldimm64_lo(3, BPF_PSEUDO_MAP_IDX_VALUE, 0), ldimm64_hi(4), pc3},
                                             udiv_guard(3),
                                             {exit_insn()}})));
        // the second slot's aux moved to the per-CPU insn; the copied slot got a fresh one
        EXPECT_EQ(p.aux[3].orig_idx, 2u);
        EXPECT_EQ(p.aux[2].orig_idx, 0u);
        EXPECT_EQ(p.aux[8].orig_idx, 6u);
    }
    // no per-CPU insn (jit32) or an older kernel: only the div guard
    for (auto [a, k] : {std::pair{&arch_jit32(), KernelProfile::BpfNext}, std::pair{&arch_x86_64(), KernelProfile::K6_12},
                        std::pair{&arch_x86_64(), KernelProfile::K6_1}}) {
        Program p = percpu_ld_prog();
        ASSERT_TRUE(run(p, opts(*a, k)).outcome.ok());
        EXPECT_EQ(p.len(), 12u) << a->name;
        EXPECT_TRUE(same(p.insns[0], jmp_imm(BPF_JEQ, 1, 0, 6)));
    }
}

// ---- rows n, o: prog->aux argument, per-CPU allocation pointer -----------------------------------

Program aux_arg_prog(uint8_t arg_prog) {
    Program p = make_program({
        jmp_imm(BPF_JEQ, 1, 0, 2),                 // 0 -> 3
        call_helper(BPF_FUNC_timer_set_callback),  // 1 row n (3)
        call_helper(BPF_FUNC_per_cpu_ptr),         // 2 row o (2)
        alu64_reg(BPF_DIV, 0, 1),                  // 3 udiv guard (4)
        exit_insn(),                               // 4
    });
    p.aux[1].arg_prog = arg_prog;
    p.aux[2].call_with_percpu_alloc_ptr = true;
    return p;
}

const Insn kAuxLo = ldimm64_lo(3, 0, static_cast<int32_t>(0x04c3a000));
const Insn kAuxHi = ldimm64_hi(static_cast<int32_t>(0xffff8881u));

TEST(MiscFixupsRows, ProgAuxArgAndPercpuAllocPtr) {
    const std::vector<Insn> both = cat({{jmp_imm(BPF_JEQ, 1, 0, 5)},  // o3 is at 6
                                        {kAuxLo, kAuxHi, call_helper(BPF_FUNC_timer_set_callback)},
                                        {ldx(BPF_DW, 1, 1, 0), call_helper(BPF_FUNC_per_cpu_ptr)},
                                        udiv_guard(1),
                                        {exit_insn()}});
    {  // bpf-next keys row n on aux.arg_prog
        Program p = aux_arg_prog(3);
        ASSERT_TRUE(run(p, opts(arch_x86_64())).outcome.ok());
        EXPECT_TRUE(same_insns(p.insns, both));
        EXPECT_EQ(p.aux[3].orig_idx, 1u);
        Program q = aux_arg_prog(0);
        ASSERT_TRUE(run(q, opts(arch_arm64())).outcome.ok());
        EXPECT_TRUE(same_insns(q.insns, cat({{jmp_imm(BPF_JEQ, 1, 0, 3)},
                                             {call_helper(BPF_FUNC_timer_set_callback)},
                                             {ldx(BPF_DW, 1, 1, 0), call_helper(BPF_FUNC_per_cpu_ptr)},
                                             udiv_guard(1),
                                             {exit_insn()}})));
    }
    {  // 6.12 keys it on the helper id (R3), whatever arg_prog says
        Program p = aux_arg_prog(0);
        ASSERT_TRUE(run(p, opts(arch_jit32(), KernelProfile::K6_12)).outcome.ok());
        EXPECT_TRUE(same_insns(p.insns, both));
    }
    {  // 6.1 predates per-CPU allocations: row o does not fire
        Program p = aux_arg_prog(0);
        ASSERT_TRUE(run(p, opts(arch_x86_64(), KernelProfile::K6_1)).outcome.ok());
        EXPECT_TRUE(same_insns(p.insns, cat({{jmp_imm(BPF_JEQ, 1, 0, 4)},
                                             {kAuxLo, kAuxHi, call_helper(BPF_FUNC_timer_set_callback)},
                                             {call_helper(BPF_FUNC_per_cpu_ptr)},
                                             udiv_guard(1),
                                             {exit_insn()}})));
    }
    {  // bpf-next: arg_prog names the register; any helper
        Program p = make_program({call_helper(BPF_FUNC_get_prandom_u32), exit_insn()});
        p.aux[0].arg_prog = 2;
        ASSERT_TRUE(run(p, opts(arch_x86_64())).outcome.ok());
        EXPECT_TRUE(same_insns(p.insns, {ldimm64_lo(2, 0, 0x04c3a000), kAuxHi, call_helper(BPF_FUNC_get_prandom_u32), exit_insn()}));
        Program q = make_program({call_helper(BPF_FUNC_get_prandom_u32), exit_insn()});
        q.aux[0].arg_prog = 7;
        EXPECT_EQ(run(q, opts(arch_x86_64())).outcome.err, -EFAULT);
    }
    {  // with patch_call_imm the copies carry the address stand-in: 0x40000000 + id * 0x40
        Program p = aux_arg_prog(3);
        RewriteOptions o = opts(arch_x86_64());
        o.patch_call_imm = true;
        ASSERT_TRUE(run(p, o).outcome.ok());
        EXPECT_EQ(p.insns[3].imm, 0x40002a80);  // timer_set_callback = 170
        EXPECT_EQ(p.insns[5].imm, 0x40002640);  // per_cpu_ptr = 153
    }
}

// ---- rows t-w: tracing get_func_arg / get_func_ret / get_func_arg_cnt / get_func_ip ----------

Program tracing_prog(TraceAttach at, uint32_t type = BPF_PROG_TYPE_TRACING) {
    Program p = make_program({
        call_helper(BPF_FUNC_get_func_arg),      // 0 t
        jmp_imm(BPF_JNE, 0, 0, 2),               // 1 -> 4
        call_helper(BPF_FUNC_get_func_ret),      // 2 u
        call_helper(BPF_FUNC_get_func_arg_cnt),  // 3 v
        call_helper(BPF_FUNC_get_func_ip),       // 4 w
        exit_insn(),                             // 5
    });
    p.prog_type = type;
    p.attach = at;
    p.attach_btf_vlen = 3;
    return p;
}

std::vector<Insn> func_arg_tail() {
    return {jmp32_reg(BPF_JGE, 2, 0, 6), alu64_imm(BPF_LSH, 2, 3), alu64_reg(BPF_ADD, 2, 1), ldx(BPF_DW, 0, 2, 0),
            stx(BPF_DW, 3, 0, 0), mov64_imm(0, 0), ja(1), mov64_imm(0, -EINVAL)};
}

TEST(MiscFixupsRows, TracingFuncArgRetCntIp) {
    const Insn nr = ldx(BPF_DW, 0, 1, -8), mask = alu64_imm(BPF_AND, 0, 0xff), ip = ldx(BPF_DW, 0, 1, -16);
    for (const ArchProfile* a : {&arch_x86_64(), &arch_arm64(), &arch_jit32()}) {
        {  // bpf-next fexit: 10 + jump + 7 + 2 + 1 + exit
            Program p = tracing_prog(TraceAttach::Fexit);
            ASSERT_TRUE(run(p, opts(*a)).outcome.ok());
            EXPECT_TRUE(same_insns(p.insns, cat({{nr, mask},
                                                 func_arg_tail(),
                                                 {jmp_imm(BPF_JNE, 0, 0, 9)},  // o4 is at 20
                                                 {nr, mask, alu64_imm(BPF_LSH, 0, 3), alu64_reg(BPF_ADD, 0, 1), ldx(BPF_DW, 3, 0, 0),
                                                  stx(BPF_DW, 2, 3, 0), mov64_imm(0, 0)},
                                                 {nr, mask},
                                                 {ip, exit_insn()}})))
                << a->name;
        }
        {  // 6.12 fmod_ret: no mask anywhere: 9 + jump + 6 + 1 + 1 + exit
            Program p = tracing_prog(TraceAttach::ModifyReturn);
            ASSERT_TRUE(run(p, opts(*a, KernelProfile::K6_12)).outcome.ok());
            EXPECT_TRUE(same_insns(p.insns, cat({{nr},
                                                 func_arg_tail(),
                                                 {jmp_imm(BPF_JNE, 0, 0, 7)},  // o4 is at 17
                                                 {nr, alu64_imm(BPF_LSH, 0, 3), alu64_reg(BPF_ADD, 0, 1), ldx(BPF_DW, 3, 0, 0),
                                                  stx(BPF_DW, 2, 3, 0), mov64_imm(0, 0)},
                                                 {nr},
                                                 {ip, exit_insn()}})))
                << a->name;
        }
    }
    {  // bpf-next tp_btf: nr_args folded to vlen - 1; no return value
        Program p = tracing_prog(TraceAttach::RawTp);
        ASSERT_TRUE(run(p, opts(arch_x86_64())).outcome.ok());
        EXPECT_TRUE(same_insns(p.insns, cat({{mov64_imm(0, 2)},
                                             func_arg_tail(),
                                             {jmp_imm(BPF_JNE, 0, 0, 2)},  // o4 is at 13
                                             {mov64_imm(0, -EOPNOTSUPP)},
                                             {mov64_imm(0, 2)},
                                             {ip, exit_insn()}})));
    }
    {  // fentry everywhere, FSESSION only in bpf-next
        Program p = tracing_prog(TraceAttach::Fentry);
        ASSERT_TRUE(run(p, opts(arch_x86_64(), KernelProfile::K6_1)).outcome.ok());
        EXPECT_TRUE(same(p.insns[10], mov64_imm(0, -EOPNOTSUPP)));
        EXPECT_EQ(p.len(), 14u);
        Program q = tracing_prog(TraceAttach::Fsession);
        ASSERT_TRUE(run(q, opts(arch_x86_64(), KernelProfile::K6_12)).outcome.ok());
        EXPECT_TRUE(same(q.insns[10], mov64_imm(0, -EOPNOTSUPP)));
        Program r = tracing_prog(TraceAttach::FexitMulti);
        ASSERT_TRUE(run(r, opts(arch_x86_64())).outcome.ok());
        EXPECT_EQ(r.len(), 22u);  // 7-insn get_func_ret
    }
    {  // not a tracing program: the helper calls stay
        Program p = tracing_prog(TraceAttach::Fexit, BPF_PROG_TYPE_KPROBE);
        ASSERT_TRUE(run(p, opts(arch_x86_64())).outcome.ok());
        EXPECT_EQ(p.len(), 6u);
    }
}

// ---- rows x, y: get_branch_snapshot, kptr_xchg -----------------------------------------------

Program snapshot_xchg_prog() {
    return make_program({
        jmp_imm(BPF_JEQ, 1, 0, 2),                 // 0 -> 3
        call_helper(BPF_FUNC_get_branch_snapshot), // 1 x (11)
        call_helper(BPF_FUNC_kptr_xchg),           // 2 y (2)
        alu64_reg(BPF_DIV, 0, 2),                  // 3 udiv guard (4)
        exit_insn(),                               // 4
    });
}

std::vector<Insn> snapshot() {
    return {jmp_imm(BPF_JNE, 3, 0, 7),
            mov32_imm(0, static_cast<int32_t>(0xaaaaaaabu)),
            alu64_reg(BPF_MUL, 2, 0),
            alu64_imm(BPF_RSH, 2, 36),
            call_helper(kInternalPerfSnapshotBranchStack),
            jmp_imm(BPF_JEQ, 0, 0, 4),
            alu32_imm(BPF_MUL, 0, 24),
            ja(3),
            mov64_imm(0, -EINVAL),
            ja(1),
            mov64_imm(0, -ENOENT)};
}

TEST(MiscFixupsRows, BranchSnapshotAndKptrXchg) {
    const Insn xchg = make(BPF_STX | BPF_DW | BPF_ATOMIC, 1, 0, 0, BPF_XCHG);
    for (const ArchProfile* a : {&arch_x86_64(), &arch_arm64()}) {
        for (auto k : {KernelProfile::BpfNext, KernelProfile::K6_12}) {
            Program p = snapshot_xchg_prog();
            ASSERT_TRUE(run(p, opts(*a, k)).outcome.ok());
            EXPECT_TRUE(same_insns(p.insns, cat({{jmp_imm(BPF_JEQ, 1, 0, 13)},  // o3 is at 14
                                                 snapshot(),
                                                 {mov64_reg(0, 2), xchg},
                                                 udiv_guard(2),
                                                 {exit_insn()}})))
                << a->name;
            EXPECT_EQ(p.aux[11].orig_idx, 1u);
        }
    }
    {  // 64-bit JIT without ptr_xchg: only the snapshot
        ArchProfile a = arch_x86_64();
        a.supports_ptr_xchg = false;
        Program p = snapshot_xchg_prog();
        ASSERT_TRUE(run(p, opts(a)).outcome.ok());
        EXPECT_EQ(p.len(), 18u);
        EXPECT_TRUE(same(p.insns[12], call_helper(BPF_FUNC_kptr_xchg)));
    }
    // 32-bit, interpreter-only, or 6.1: neither
    ArchProfile interp = arch_x86_64();
    interp.jit_requested = false;
    for (auto [a, k] : {std::pair{arch_jit32(), KernelProfile::BpfNext}, std::pair{interp, KernelProfile::BpfNext},
                        std::pair{arch_x86_64(), KernelProfile::K6_1}}) {
        Program p = snapshot_xchg_prog();
        ASSERT_TRUE(run(p, opts(a, k)).outcome.ok());
        EXPECT_EQ(p.len(), 8u) << a.name;
    }
}

// ---- row z: patch_call_imm ------------------------------------------------------------------

TEST(MiscFixupsRows, PatchCallImmIsInPlaceAndReversible) {
    EXPECT_EQ(call_imm_of_helper(7), 0x400001c0);
    EXPECT_EQ(helper_of_call_imm(0x400001c0), 7);
    EXPECT_EQ(helper_of_call_imm(7), -1);
    EXPECT_EQ(helper_of_call_imm(0x400001c1), -1);
    EXPECT_EQ(helper_of_call_imm(kInternalHtabLookup), -1);
    auto prog = [] {
        Program p = make_program({
            jmp_imm(BPF_JEQ, 1, 0, 3),                     // 0 -> 4
            call_helper(BPF_FUNC_get_prandom_u32),         // 1 z
            call_helper(BPF_FUNC_map_lookup_elem),         // 2 poisoned map: generic helper, then z
            call_helper(BPF_FUNC_get_smp_processor_id),    // 3 arm64: JIT-inlined (row k), imm kept
            call_helper(BPF_FUNC_map_lookup_elem),         // 4 hash: inlined (3), internal call kept
            exit_insn(),                                   // 5
        });
        p.maps = {MapDef{.name = "h", .type = BPF_MAP_TYPE_HASH, .key_size = 4, .value_size = 8, .max_entries = 4}};
        p.aux[2].map_index = 0;
        p.aux[2].map_ptr_poisoned = true;
        p.aux[4].map_index = 0;
        return p;
    };
    RewriteOptions o = opts(arch_arm64());
    o.patch_call_imm = true;
    Program p = prog();
    ASSERT_TRUE(run(p, o).outcome.ok());
    EXPECT_TRUE(same_insns(p.insns, {jmp_imm(BPF_JEQ, 1, 0, 3), call_helper(0x400001c0), call_helper(0x40000040),
                                     call_helper(BPF_FUNC_get_smp_processor_id), call_helper(kInternalHtabLookup),
                                     jmp_imm(BPF_JEQ, 0, 0, 1), alu64_imm(BPF_ADD, 0, 56), exit_insn()}));
    // off by default: ids stay
    Program q = prog();
    ASSERT_TRUE(run(q, opts(arch_arm64())).outcome.ok());
    EXPECT_TRUE(same(q.insns[1], call_helper(BPF_FUNC_get_prandom_u32)));
    EXPECT_TRUE(same(q.insns[2], call_helper(BPF_FUNC_map_lookup_elem)));
}

// ---- pre-loop: add_hidden_subprog -----------------------------------------------------------

constexpr int32_t kThrowId = 80001;

Program throw_prog() {
    Program p = make_program({
        mov64_imm(1, 0),             // 0
        jmp_imm(BPF_JEQ, 0, 0, 2),   // 1 -> 4
        call_kfunc(kThrowId),        // 2 bpf_throw
        alu64_reg(BPF_DIV, 0, 1),    // 3 udiv guard (4)
        mov64_imm(0, 0),             // 4
        exit_insn(),                 // 5 patched with [exit, r0 = r1, exit]
    });
    p.kfuncs = {KfuncDesc{.btf_id = kThrowId, .name = "bpf_throw"}};
    return p;
}

TEST(MiscFixupsRows, HiddenExceptionCallback) {
    for (auto k : {KernelProfile::BpfNext, KernelProfile::K6_12}) {
        Program p = throw_prog();
        ASSERT_TRUE(run(p, opts(arch_x86_64(), k)).outcome.ok());
        EXPECT_TRUE(same_insns(p.insns, cat({{mov64_imm(1, 0), jmp_imm(BPF_JEQ, 0, 0, 5), call_kfunc(kThrowId)},  // o4 at 7
                                             udiv_guard(1),
                                             {mov64_imm(0, 0), exit_insn(), mov64_reg(0, 1), exit_insn()}})));
        ASSERT_EQ(p.subprogs.size(), 3u);
        EXPECT_EQ(starts(p), (std::vector<uint32_t>{0, 9, 11}));
        EXPECT_TRUE(p.subprogs[1].is_exception_cb);
        EXPECT_TRUE(p.subprogs[1].is_hidden);
        // the original last insn's aux moved to the appended exit; the copy got a fresh entry
        EXPECT_EQ(p.aux[10].orig_idx, 5u);
        EXPECT_EQ(p.aux[8].orig_idx, 0u);
        EXPECT_TRUE(p.aux[8].seen);
    }
    {  // 6.1 has no exceptions
        Program p = throw_prog();
        ASSERT_TRUE(run(p, opts(arch_x86_64(), KernelProfile::K6_1)).outcome.ok());
        EXPECT_EQ(p.len(), 9u);
        EXPECT_EQ(p.subprogs.size(), 2u);
    }
    {  // never reached: no exception seen
        Program p = throw_prog();
        p.aux[2].seen = false;
        ASSERT_TRUE(run(p, opts(arch_x86_64())).outcome.ok());
        EXPECT_EQ(p.len(), 9u);
    }
    {  // a declared exception callback (subprog 1): nothing hidden
        Program p = make_program({call_kfunc(kThrowId), call_pseudo(1), exit_insn(), mov64_imm(0, 0), exit_insn()});
        p.kfuncs = {KfuncDesc{.btf_id = kThrowId, .name = "bpf_throw"}};
        ASSERT_EQ(p.subprogs.size(), 3u);
        p.subprogs[1].is_exception_cb = true;
        ASSERT_TRUE(run(p, opts(arch_x86_64())).outcome.ok());
        EXPECT_EQ(p.len(), 5u);
    }
}

}  // namespace
}  // namespace patchfuzz::passes::testing
