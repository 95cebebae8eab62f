#pragma once
// Runs that a JIT may legitimately answer differently: a shift by a register amount of at least
// the operand width (64 for ALU64, 32 for ALU32). The ISA masks the amount (our interpreter, the
// kernel's interpreter, x86-64 and arm64 do), but the verifier treats such a shift as undefined
// (adjust_scalar_min_max_vals() makes the result unknown) and the 32-bit ARM JIT uses the ARM
// register shift, whose amounts past the width give 0 (measured on Debian's armhf 6.12). On a
// profile with wide_shift_undefined the kernel oracle therefore does not compare a run that
// executes one.
//
// Found by running a probe copy of the program: every shift by a register becomes
// [if amount <= width-1 goto +1; call <trap helper>; the shift] (applied with the incremental
// patcher, so every jump still lands where it did), and a run that reaches the trap helper is one
// that executed a wide shift.
#include <optional>
#include <string>

#include "bpf/arch/arch_profile.hpp"
#include "bpf/interp/exec_input.hpp"
#include "bpf/program/program.hpp"

namespace patchfuzz::kernel {

// Where the run of `prog` on `in` first shifts by a register amount past the width ("pc 7: w6 <<=
// w4 by 33"-style text with the pc of `prog`); nullopt when it never does (or has no register
// shift at all, the common case, answered without running anything).
std::optional<std::string> wide_register_shift(const Program& prog, const interp::ExecInput& in, const ArchProfile& arch);

}  // namespace patchfuzz::kernel
