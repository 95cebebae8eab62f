#pragma once
// Row g of bpf_do_misc_fixups() (docs/patching.md §5.3): Spectre v1 masking of pointer arithmetic.
// An ALU64 ADD/SUB X on which the verifier recorded an alu_state (sanitize_ptr_alu()) gets its
// offset register clamped to [0, alu_limit] through AX before the (rewritten) insn runs.
#include <cstdint>
#include <vector>

#include "bpf/isa/insn.hpp"

namespace patchfuzz::passes {

// bpf_insn_aux_data::alu_state bits (BPF_ALU_* in include/linux/bpf_verifier.h).
inline constexpr uint8_t kAluSanitizeSrc = 1U << 0;  // the offset is the src operand
inline constexpr uint8_t kAluSanitizeDst = 1U << 1;  // the offset is the dst operand
inline constexpr uint8_t kAluSanitize = kAluSanitizeSrc | kAluSanitizeDst;
inline constexpr uint8_t kAluNegValue = 1U << 2;     // the offset is negative: flip its sign
inline constexpr uint8_t kAluNonPointer = 1U << 3;   // scalar arithmetic seen: nothing to mask
inline constexpr uint8_t kAluImmediate = 1U << 4;    // the offset is a known constant

// The replacement for `insn` (ALU64 ADD/SUB X) in patch-local encoding, or empty when the row does
// not fire (alu_state 0 or exactly NON_POINTER, or another opcode). Immediate form: 2 or 3 insns;
// register form: 7, 8 or 9; never a jump.
std::vector<isa::Insn> emit_ptr_arith_mask(const isa::Insn& insn, uint8_t alu_state, uint32_t alu_limit);

}  // namespace patchfuzz::passes
