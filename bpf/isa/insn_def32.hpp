#pragma once
// insn_has_def32() of kernel/bpf/verifier.c: does the insn write a 32-bit subregister (so a JIT
// that needs explicit zero-extension must add it)? A purely syntactic test; the patchers use it to
// set aux.zext_dst of every slot they write (docs/patching.md §3.1), discarding liveness, and the
// interpreter to apply zext_dst marks (interp::ZextMarks).
#include "bpf/isa/insn.hpp"

namespace patchfuzz::isa {

// Inline: the patchers, the zext passes and the interpreter ask it of nearly every insn they touch.

// insn_def_regno() (verifier.c): the register the insn defines, or -1. Jumps and ST define
// nothing; STX defines only through atomics (CMPXCHG -> R0, load-acquire -> dst, any FETCH op ->
// src); everything else its dst.
inline int insn_def_regno(const isa::Insn& insn) {
    switch (isa::cls(insn)) {
        case BPF_JMP:
        case BPF_JMP32:
        case BPF_ST:
            return -1;
        case BPF_STX:
            if (isa::mode(insn) == BPF_ATOMIC || isa::mode(insn) == isa::kModeProbeAtomic) {
                if (insn.imm == BPF_CMPXCHG) return BPF_REG_0;
                if (insn.imm == BPF_LOAD_ACQ) return insn.dst_reg;
                if (insn.imm & BPF_FETCH) return insn.src_reg;
            }
            return -1;
        default:
            return insn.dst_reg;
    }
}

namespace detail {
// is_reg64(insn, regno, NULL, DST_OP) (verifier.c), restricted to the destination-operand question.
inline bool is_reg64_dst(const isa::Insn& insn) {
    const uint8_t c = isa::cls(insn);
    const uint8_t o = isa::op(insn);
    if (c == BPF_JMP) {
        if (o == BPF_EXIT) return true;
        if (o == BPF_CALL) return false;  // pseudo call: false; helper call with DST_OP: false
    }
    // cpu v4 bswap16/32 (ALU64|END) zero-extends a 16/32-bit result.
    if (c == BPF_ALU64 && o == BPF_END && (insn.imm == 16 || insn.imm == 32)) return false;
    if (c == BPF_ALU64 || c == BPF_JMP || (c == BPF_ALU && o == BPF_END && insn.imm == 64)) return true;
    if (c == BPF_ALU || c == BPF_JMP32) return false;
    if (c == BPF_LDX) return isa::size(insn) == BPF_DW || isa::mode(insn) == BPF_MEMSX;
    if (c == BPF_STX) return isa::size(insn) == BPF_DW;
    if (c == BPF_LD) return isa::mode(insn) == BPF_IMM;  // ld_imm64 (and its code-0 2nd slot); LD_ABS/IND are 32-bit
    if (c == BPF_ST) return true;
    return true;
}
}  // namespace detail

// !is_reg64(insn, insn_def_regno(insn), DST_OP) for insns that define a register.
inline bool insn_has_def32(const isa::Insn& insn) {
    if (insn_def_regno(insn) == -1) return false;
    return !detail::is_reg64_dst(insn);
}

}  // namespace patchfuzz::isa
