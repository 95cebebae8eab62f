#include "bpf/passes/insn_defs.hpp"

namespace patchfuzz::passes {

using namespace isa;

// def_regno(), def_is_reg64() and has_def32() are inline in the header: one definition of
// "which register, how wide" for the whole tree (bpf/isa/insn_def32.hpp), since the patchers
// recompute aux.zext_dst with isa::insn_has_def32() and the zext pass must agree with them exactly.

bool is_cmpxchg(const Insn& i) { return cls(i) == BPF_STX && mode(i) == BPF_ATOMIC && i.imm == BPF_CMPXCHG; }

}  // namespace patchfuzz::passes
