#pragma once
// Which register an insn defines and whether that definition is 32 or 64 bits wide, as the
// verifier sees it (insn_def_regno() and is_reg64(..., DST_OP) in kernel/bpf/verifier.c). The zext
// pass and fact inference use these; they are purely syntactic.
#include "bpf/isa/insn.hpp"
#include "bpf/isa/insn_def32.hpp"

namespace patchfuzz::passes {

// insn_def_regno(): -1 for JMP/JMP32 (incl. calls), ST, non-fetching atomics and plain STX;
// R0 for CMPXCHG; dst for load-acquire; src for fetching atomics; dst for everything else.
// Inline: the liveness and the passes ask it of nearly every insn.
inline int def_regno(const isa::Insn& i) { return isa::insn_def_regno(i); }
// is_reg64(insn, def_regno, NULL, DST_OP): the definition writes all 64 bits (true when there is
// no definition). These delegate to bpf/isa/insn_def32.hpp so passes and patchers agree.
inline bool def_is_reg64(const isa::Insn& i) { return !isa::insn_has_def32(i); }
// insn_has_def32(): defines a register and only its low 32 bits.
inline bool has_def32(const isa::Insn& i) { return isa::insn_has_def32(i); }
// BPF_STX | BPF_ATOMIC with imm == BPF_CMPXCHG.
bool is_cmpxchg(const isa::Insn& i);

}  // namespace patchfuzz::passes
