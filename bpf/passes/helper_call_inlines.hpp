#pragma once
// The helper-call rows of bpf_do_misc_fixups() (kernel/bpf/fixups.c; docs/patching.md §5.3) that
// are not map related: n (prog->aux argument), o (per-CPU allocation pointer), t-w (tracing
// get_func_arg / get_func_ret / get_func_arg_cnt / get_func_ip), x (get_branch_snapshot),
// y (kptr_xchg). Pure shape emitters in patch-local encoding; the pass decides when they fire.
#include <cstdint>
#include <vector>

#include "bpf/isa/insn.hpp"
#include "bpf/passes/pass.hpp"

namespace patchfuzz::passes {

// Row n: [ld_imm64 R`reg` = prog->aux (2 slots); call] (3). `call` is copied as given (the caller
// has already applied patch_call_imm to it when that is modelled).
std::vector<isa::Insn> emit_prog_aux_arg(uint8_t reg, const isa::Insn& call);
// Row o: [r1 = *(u64 *)(r1 + 0); call] (2): the per-CPU allocation's pointer is one load away.
std::vector<isa::Insn> emit_percpu_alloc_ptr_arg(const isa::Insn& call);

// Row t, get_func_arg(ctx, n, *value): bpf-next: RAW_TP [r0 = vlen - 1] else [r0 = ctx[-8];
// r0 &= 0xff]; 6.1 / 6.12: [r0 = ctx[-8]]; then [if w2 >= w0 goto +6; r2 <<= 3; r2 += r1;
// r0 = *(u64 *)(r2 + 0); *(u64 *)(r3 + 0) = r0; r0 = 0; goto +1; r0 = -EINVAL]. 9 or 10.
// `fix` Fixed: `w2 = w2` after the bound check, so only the u32 index addresses (finding 0008).
std::vector<isa::Insn> emit_get_func_arg(TraceAttach attach, uint8_t attach_btf_vlen, KernelProfile k,
                                         InlineFix fix = InlineFix::Kernel);
// Row u, get_func_ret(ctx, *value): FEXIT / MODIFY_RETURN (bpf-next also FSESSION and the *_MULTI
// exit kinds): [r0 = ctx[-8]; (r0 &= 0xff, bpf-next); r0 <<= 3; r0 += r1; r3 = *(u64 *)(r0 + 0);
// *(u64 *)(r2 + 0) = r3; r0 = 0] (7 bpf-next, 6 older); otherwise [r0 = -EOPNOTSUPP] (1).
std::vector<isa::Insn> emit_get_func_ret(TraceAttach attach, KernelProfile k);
// Row v, get_func_arg_cnt(ctx): bpf-next RAW_TP [r0 = vlen - 1], else [r0 = ctx[-8]; r0 &= 0xff];
// 6.1 / 6.12 [r0 = ctx[-8]].
std::vector<isa::Insn> emit_get_func_arg_cnt(TraceAttach attach, uint8_t attach_btf_vlen, KernelProfile k);
// Row w, get_func_ip(ctx): [r0 = ctx[-16]].
std::vector<isa::Insn> emit_get_func_ip();
// Row x, get_branch_snapshot(entries, size, flags): 11 insns, size / 24 by multiply-shift, a call
// of perf_snapshot_branch_stack and three exits to the end.
std::vector<isa::Insn> emit_get_branch_snapshot();
// Row y, kptr_xchg(dst, ptr): [r0 = r2; r0 = atomic64_xchg((u64 *)(r1 + 0), r0)] (2).
std::vector<isa::Insn> emit_kptr_xchg();

}  // namespace patchfuzz::passes
