#pragma once
// The division/modulo guards of bpf_do_misc_fixups() (kernel/bpf/fixups.c, rows c and d of
// docs/patching.md §5.3): X-form DIV/MOD/SDIV/SMOD become guarded sequences that never divide by 0
// or compute MIN / -1; K-form SDIV/SMOD by -1 become NEG / `w_dst = 0`.
#include <vector>

#include "bpf/isa/insn.hpp"

namespace patchfuzz::passes {

// The replacement for `div_or_mod` (which is copied inside the guard), in patch-local encoding;
// empty when the insn is not a guarded division. Lengths: udiv 4, umod 2 (64) / 4 (32), sdiv 8,
// smod 7 (64) / 9 (32), K-form sdiv/smod by -1: 1. Uses AX (R11) in the signed shapes.
std::vector<isa::Insn> emit_div_mod_guard(const isa::Insn& div_or_mod);

}  // namespace patchfuzz::passes
