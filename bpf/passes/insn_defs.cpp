#include "bpf/passes/insn_defs.hpp"

#include "bpf/isa/insn_def32.hpp"

namespace patchfuzz::passes {

using namespace isa;

// One definition of "which register, how wide" for the whole tree: the patchers recompute
// aux.zext_dst with isa::insn_has_def32(), and the zext pass must agree with them exactly.

bool is_cmpxchg(const Insn& i) { return cls(i) == BPF_STX && mode(i) == BPF_ATOMIC && i.imm == BPF_CMPXCHG; }

int def_regno(const Insn& i) { return isa::insn_def_regno(i); }

bool def_is_reg64(const Insn& i) { return !isa::insn_has_def32(i); }

bool has_def32(const Insn& i) { return isa::insn_has_def32(i); }

}  // namespace patchfuzz::passes
