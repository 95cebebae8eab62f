#pragma once
// Row f of bpf_do_misc_fixups() (docs/patching.md §5.3): classic-BPF packet loads LD|ABS and LD|IND
// are replaced by env->ops->gen_ld_abs(); for socket filters and tc programs that is
// bpf_gen_ld_abs() (net/core/filter.c), the only implementation.
#include <cstdint>
#include <vector>

#include "bpf/isa/insn.hpp"

namespace patchfuzz::passes {

// Whether the program type's verifier ops have gen_ld_abs (socket_filter, sched_cls, sched_act);
// every other type rejects LD_ABS/IND during verification.
bool prog_type_has_gen_ld_abs(uint32_t prog_type);

// [r2 = imm | (r2 = src; r2 += imm when imm != 0); r1 = r6; call skb load helper for the size;
//  if r0 s>= 0 goto +2 (-> end); w0 ^= w0; exit] in patch-local encoding: 6 insns, 7 for IND with a
// non-zero imm. Empty for a size without a load helper (DW) or a non-ABS/IND insn.
std::vector<isa::Insn> emit_gen_ld_abs(const isa::Insn& ld);

}  // namespace patchfuzz::passes
