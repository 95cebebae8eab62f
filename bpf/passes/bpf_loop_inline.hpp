#pragma once
// inline_bpf_loop (kernel/bpf/fixups.c): the 19-insn loop that replaces a bpf_loop helper call.
#include <cstdint>
#include <vector>

#include "bpf/isa/insn.hpp"
#include "bpf/passes/pass.hpp"

namespace patchfuzz::passes {

inline constexpr uint32_t kBpfLoopInlineLen = 19;
inline constexpr uint32_t kBpfLoopCallSlot = 12;  // the pseudo call to the callback

// The sequence for a call at `pos` (patch coordinates). `stack_base` is the fp offset of the r6
// spill slot (r7 at +8, r8 at +16). `callback_imm` is written into slot 12 verbatim; per the
// generator contract (docs/patching.md §7.2) it is start' - (pos + 12) - 1 where start' is the
// callback's start as if this were the only patch (start + 18 when start > pos).
// `fix` Fixed: the u32 nr_loops and the 64-bit -E2BIG of the helper (pass.hpp InlineFix).
std::vector<isa::Insn> emit_bpf_loop_inline(int16_t stack_base, int32_t callback_imm, InlineFix fix = InlineFix::Kernel);

}  // namespace patchfuzz::passes
