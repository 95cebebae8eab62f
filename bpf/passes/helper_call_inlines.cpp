// Shapes of the helper-call rows n, o, t-y of bpf_do_misc_fixups() (kernel/bpf/fixups.c), written
// from docs/patching.md §5.3. Where 6.1 / 6.12 differ from bpf-next: the tracing context word at
// ctx[-8] held only nr_args before bpf-next packed more into it (hence no `&= 0xff` there), and
// tp_btf (RAW_TP) programs gained constant-folded get_func_arg / get_func_arg_cnt in bpf-next.
#include "bpf/passes/helper_call_inlines.hpp"

#include <cerrno>

#include "bpf/isa/internal_calls.hpp"

namespace patchfuzz::passes {

using namespace isa;

namespace {

// [r0 = nr_args] at the head of get_func_arg / get_func_arg_cnt.
std::vector<Insn> load_nr_args(TraceAttach attach, uint8_t vlen, KernelProfile k) {
    if (!is_7x_or_next(k)) return {ldx(BPF_DW, BPF_REG_0, BPF_REG_1, -8)};
    if (attach == TraceAttach::RawTp) return {mov64_imm(BPF_REG_0, static_cast<int32_t>(vlen) - 1)};
    return {ldx(BPF_DW, BPF_REG_0, BPF_REG_1, -8), alu64_imm(BPF_AND, BPF_REG_0, 0xff)};
}

}  // namespace

std::vector<Insn> emit_prog_aux_arg(uint8_t reg, const Insn& call) {
    return {ldimm64_lo(reg, 0, static_cast<int32_t>(kProgAuxAddr & 0xffffffffu)),
            ldimm64_hi(static_cast<int32_t>(kProgAuxAddr >> 32)), call};
}

std::vector<Insn> emit_percpu_alloc_ptr_arg(const Insn& call) { return {ldx(BPF_DW, BPF_REG_1, BPF_REG_1, 0), call}; }

std::vector<Insn> emit_get_func_arg(TraceAttach attach, uint8_t attach_btf_vlen, KernelProfile k, InlineFix fix) {
    std::vector<Insn> p = load_nr_args(attach, attach_btf_vlen, k);
    // The kernel bounds the low half of n and then addresses with all 64 bits of R2 (finding
    // 0008); the helper's n is a u32. The fix drops the upper half before addressing.
    const bool fixed = fix == InlineFix::Fixed;
    p.push_back(jmp32_reg(BPF_JGE, BPF_REG_2, BPF_REG_0, fixed ? 7 : 6));  // n >= nr_args -> r0 = -EINVAL
    if (fixed) p.push_back(mov32_reg(BPF_REG_2, BPF_REG_2));
    const std::vector<Insn> tail{
        alu64_imm(BPF_LSH, BPF_REG_2, 3),
        alu64_reg(BPF_ADD, BPF_REG_2, BPF_REG_1),
        ldx(BPF_DW, BPF_REG_0, BPF_REG_2, 0),
        stx(BPF_DW, BPF_REG_3, BPF_REG_0, 0),
        mov64_imm(BPF_REG_0, 0),
        ja(1),  // -> end
        mov64_imm(BPF_REG_0, -EINVAL),
    };
    p.insert(p.end(), tail.begin(), tail.end());
    return p;
}

std::vector<Insn> emit_get_func_ret(TraceAttach attach, KernelProfile k) {
    const bool next = is_7x_or_next(k);
    const bool has_ret = attach == TraceAttach::Fexit || attach == TraceAttach::ModifyReturn ||
                         (next && (attach == TraceAttach::Fsession || attach == TraceAttach::FexitMulti ||
                                   attach == TraceAttach::FsessionMulti));
    if (!has_ret) return {mov64_imm(BPF_REG_0, -EOPNOTSUPP)};
    std::vector<Insn> p{ldx(BPF_DW, BPF_REG_0, BPF_REG_1, -8)};
    if (next) p.push_back(alu64_imm(BPF_AND, BPF_REG_0, 0xff));
    // the return value sits right after the nr_args argument words
    p.push_back(alu64_imm(BPF_LSH, BPF_REG_0, 3));
    p.push_back(alu64_reg(BPF_ADD, BPF_REG_0, BPF_REG_1));
    p.push_back(ldx(BPF_DW, BPF_REG_3, BPF_REG_0, 0));
    p.push_back(stx(BPF_DW, BPF_REG_2, BPF_REG_3, 0));
    p.push_back(mov64_imm(BPF_REG_0, 0));
    return p;
}

std::vector<Insn> emit_get_func_arg_cnt(TraceAttach attach, uint8_t attach_btf_vlen, KernelProfile k) {
    return load_nr_args(attach, attach_btf_vlen, k);
}

std::vector<Insn> emit_get_func_ip() { return {ldx(BPF_DW, BPF_REG_0, BPF_REG_1, -16)}; }

std::vector<Insn> emit_get_branch_snapshot() {
    // sizeof(struct perf_branch_entry) == 24; size / 24 == (size * 0xaaaaaaab) >> 36 for u32 size
    return {
        jmp_imm(BPF_JNE, BPF_REG_3, 0, 7),  // flags != 0 -> [8] r0 = -EINVAL
        mov32_imm(BPF_REG_0, static_cast<int32_t>(0xaaaaaaabu)),
        alu64_reg(BPF_MUL, BPF_REG_2, BPF_REG_0),
        alu64_imm(BPF_RSH, BPF_REG_2, 36),
        call_helper(kInternalPerfSnapshotBranchStack),
        jmp_imm(BPF_JEQ, BPF_REG_0, 0, 4),  // no entries -> [10] r0 = -ENOENT
        alu32_imm(BPF_MUL, BPF_REG_0, 24),
        ja(3),  // -> end
        mov64_imm(BPF_REG_0, -EINVAL),
        ja(1),  // -> end
        mov64_imm(BPF_REG_0, -ENOENT),
    };
}

std::vector<Insn> emit_kptr_xchg() {
    return {mov64_reg(BPF_REG_0, BPF_REG_2), make(BPF_STX | BPF_DW | BPF_ATOMIC, BPF_REG_1, BPF_REG_0, 0, BPF_XCHG)};
}

}  // namespace patchfuzz::passes
