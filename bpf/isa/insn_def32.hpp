#pragma once
// insn_has_def32() of kernel/bpf/verifier.c: does the insn write a 32-bit subregister (so a JIT
// that needs explicit zero-extension must add it)? A purely syntactic test; the patchers use it to
// set aux.zext_dst of every slot they write (spec/patching.md §3.1), discarding liveness, and the
// interpreter to apply zext_dst marks (interp::ZextMarks).
#include "bpf/isa/insn.hpp"

namespace patchfuzz::isa {

// insn_def_regno(): the register the insn defines, or -1.
int insn_def_regno(const isa::Insn& insn);
// !is_reg64(insn, insn_def_regno(insn), DST_OP) for insns that define a register.
bool insn_has_def32(const isa::Insn& insn);

}  // namespace patchfuzz::isa
