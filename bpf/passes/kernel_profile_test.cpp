// RewriteOptions::kernel: the rows where bpf-next, 6.12 and 6.1 rewrite differently (issue 9
// findings measured under qemu, harness/kernel/README.md; kernel-vm notes §4). Every expected shape
// is written by hand from those observations.
#include <cerrno>

#include "bpf/passes/internal_calls.hpp"
#include "bpf/passes/passes_test_util.hpp"

namespace patchfuzz::passes::testing {
namespace {

using namespace isa;
constexpr uint8_t AX = kRegAx;

RewriteOptions x86(KernelProfile k) {
    RewriteOptions o = opts_for(arch_x86_64(), {"misc_fixups"});
    o.kernel = k;
    return o;
}

Insn percpu0() { return make(BPF_ALU64 | BPF_MOV | BPF_X, 0, 0, -1, 0); }

Program helpers() {
    return make_program({call_helper(BPF_FUNC_get_smp_processor_id), call_helper(BPF_FUNC_get_current_task),
                         call_helper(BPF_FUNC_jiffies64), exit_insn()});
}

TEST(KernelProfile, HelperInlinesPerProfile) {
    const Insn jif_lo = ldimm64_lo(0, 0, static_cast<int32_t>(kJiffiesAddr & 0xffffffffu));
    const Insn jif_hi = ldimm64_hi(static_cast<int32_t>(kJiffiesAddr >> 32));
    {  // bpf-next: BPF_MOV64_IMM of &cpu_number, current task inlined too
        Program p = helpers();
        ASSERT_TRUE(run(p, x86(KernelProfile::BpfNext)).outcome.ok());
        EXPECT_TRUE(same_insns(p.insns, {mov64_imm(0, kPcpuCpuNumber), percpu0(), ldx(BPF_W, 0, 0, 0),
                                         mov64_imm(0, kPcpuCurrentTask), percpu0(), ldx(BPF_DW, 0, 0, 0),
                                         jif_lo, jif_hi, ldx(BPF_DW, 0, 0, 0), exit_insn()}));
    }
    {  // 6.12: `w0 = &cpu_number` (code 0xb4), get_current_task stays a helper call
        Program p = helpers();
        ASSERT_TRUE(run(p, x86(KernelProfile::K6_12)).outcome.ok());
        EXPECT_EQ(p.insns[0].code, 0xb4);
        EXPECT_TRUE(same_insns(p.insns, {mov32_imm(0, kPcpuCpuNumber), percpu0(), ldx(BPF_W, 0, 0, 0),
                                         call_helper(BPF_FUNC_get_current_task), jif_lo, jif_hi, ldx(BPF_DW, 0, 0, 0),
                                         exit_insn()}));
    }
    {  // 6.1: no per-CPU insn, both helpers stay; jiffies64 is inlined as on every 64-bit JIT
        Program p = helpers();
        ASSERT_TRUE(run(p, x86(KernelProfile::K6_1)).outcome.ok());
        EXPECT_TRUE(same_insns(p.insns, {call_helper(BPF_FUNC_get_smp_processor_id), call_helper(BPF_FUNC_get_current_task),
                                         jif_lo, jif_hi, ldx(BPF_DW, 0, 0, 0), exit_insn()}));
    }
}

// 6.12 on x86-64 takes the untimed path although the arch profile can do timed may_goto: one
// 8-byte counter at -(depth + 8) = 8388608 (BPF_MAX_LOOPS) and the 4-insn expansion.
TEST(KernelProfile, MayGotoOn612IsUntimedOnX86) {
    // 0: r0 = 0; 1: may_goto +2 (-> 4); 2: r0 += 1; 3: goto -3 (-> 1); 4: exit
    Program p = make_program({mov64_imm(0, 0), may_goto(2), alu64_imm(BPF_ADD, 0, 1), ja(-3), exit_insn()});
    p.subprogs[0].stack_depth = 64;
    ASSERT_TRUE(arch_x86_64().timed_may_goto);
    ASSERT_TRUE(run(p, x86(KernelProfile::K6_12)).outcome.ok());
    EXPECT_TRUE(same_insns(p.insns, {
                                        st(BPF_DW, 10, -72, 8388608),
                                        mov64_imm(0, 0),
                                        ldx(BPF_DW, AX, 10, -72),
                                        jmp_imm(BPF_JEQ, AX, 0, 4),  // -> 8 exit
                                        alu64_imm(BPF_SUB, AX, 1),
                                        stx(BPF_DW, 10, AX, -72),
                                        alu64_imm(BPF_ADD, 0, 1),
                                        ja(-6),  // -> 2, the first insn of the expansion
                                        exit_insn(),
                                    }));
    EXPECT_EQ(p.subprogs[0].stack_depth, 72u);
    EXPECT_EQ(p.subprogs[0].stack_extra, 8u);

    // bpf-next on the same program: the timed form (16-byte slot at -80)
    Program q = make_program({mov64_imm(0, 0), may_goto(2), alu64_imm(BPF_ADD, 0, 1), ja(-3), exit_insn()});
    q.subprogs[0].stack_depth = 64;
    ASSERT_TRUE(run(q, x86(KernelProfile::BpfNext)).outcome.ok());
    EXPECT_EQ(q.subprogs[0].stack_extra, 16u);
    EXPECT_TRUE(same(q.insns[0], st(BPF_DW, 10, -80, 0xffff)));
}

// 6.1 knows neither may_goto (6.9) nor cpu v4 sdiv/smod (6.6): the load fails with -EINVAL.
TEST(KernelProfile, V4OnlyInsnsAreRejectedBy61) {
    {
        Program p = make_program({may_goto(0), exit_insn()});
        auto r = run(p, x86(KernelProfile::K6_1));
        EXPECT_EQ(r.outcome.err, -EINVAL);
        EXPECT_EQ(r.failed_pass, "misc_fixups");
        EXPECT_NE(r.outcome.log.find("may_goto"), std::string::npos) << r.outcome.log;
    }
    {
        Program p = make_program({make(BPF_ALU64 | BPF_DIV | BPF_X, 1, 2, 1, 0), exit_insn()});  // r1 s/= r2
        auto r = run(p, x86(KernelProfile::K6_1));
        EXPECT_EQ(r.outcome.err, -EINVAL);
        EXPECT_NE(r.outcome.log.find("insn 0"), std::string::npos) << r.outcome.log;
    }
    {  // unsigned div is fine on 6.1: the same zero guard as everywhere
        Program p = make_program({alu64_reg(BPF_DIV, 1, 2), exit_insn()});
        ASSERT_TRUE(run(p, x86(KernelProfile::K6_1)).outcome.ok());
        EXPECT_TRUE(same_insns(p.insns, {jmp_imm(BPF_JNE, 2, 0, 2), alu32_reg(BPF_XOR, 1, 1), ja(1), alu64_reg(BPF_DIV, 1, 2), exit_insn()}));
    }
    {  // 6.12 guards sdiv as bpf-next does
        Program a = make_program({make(BPF_ALU64 | BPF_DIV | BPF_X, 1, 2, 1, 0), exit_insn()});
        Program b = a;
        ASSERT_TRUE(run(a, x86(KernelProfile::K6_12)).outcome.ok());
        ASSERT_TRUE(run(b, x86(KernelProfile::BpfNext)).outcome.ok());
        EXPECT_EQ(a.len(), 9u);
        EXPECT_TRUE(same_insns(a.insns, b.insns));
    }
}

// Per-CPU map lookups are inlined with the per-CPU address mov: 6.12 has it, 6.1 does not (the
// lookup stays a call there); the plain array inline is the same on every profile.
TEST(KernelProfile, PercpuLookupInlineNeedsThePercpuInsn) {
    auto prog = [](uint32_t type) {
        Program p = make_program({call_helper(BPF_FUNC_map_lookup_elem), exit_insn()});
        p.maps = {MapDef{.name = "m", .type = type, .key_size = 4, .value_size = 8, .max_entries = 4}};
        p.aux[0].map_index = 0;
        return p;
    };
    for (uint32_t type : {uint32_t{BPF_MAP_TYPE_PERCPU_ARRAY}, uint32_t{BPF_MAP_TYPE_PERCPU_HASH}}) {
        Program a = prog(type), b = prog(type);
        ASSERT_TRUE(run(a, x86(KernelProfile::K6_12)).outcome.ok());
        ASSERT_TRUE(run(b, x86(KernelProfile::K6_1)).outcome.ok());
        bool has_percpu = false;
        for (const Insn& in : a.insns) has_percpu |= same(in, percpu0());
        EXPECT_TRUE(has_percpu) << "type " << type;
        EXPECT_GT(a.len(), 2u);
        EXPECT_TRUE(same_insns(b.insns, {call_helper(BPF_FUNC_map_lookup_elem), exit_insn()})) << "type " << type;
    }
    Program a = prog(BPF_MAP_TYPE_ARRAY), b = prog(BPF_MAP_TYPE_ARRAY);
    ASSERT_TRUE(run(a, x86(KernelProfile::K6_12)).outcome.ok());
    ASSERT_TRUE(run(b, x86(KernelProfile::K6_1)).outcome.ok());
    EXPECT_GT(a.len(), 2u);
    EXPECT_TRUE(same_insns(a.insns, b.insns));
}

}  // namespace
}  // namespace patchfuzz::passes::testing
