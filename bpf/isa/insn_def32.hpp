#pragma once
// insn_has_def32() of kernel/bpf/verifier.c: does the insn write a 32-bit subregister (so a JIT
// that needs explicit zero-extension must add it)? A purely syntactic test; the patchers use it to
// set aux.zext_dst of every slot they write (docs/patching.md §3.1), discarding liveness, and the
// interpreter to apply zext_dst marks (interp::ZextMarks).
//
// Both questions are answered by the opcode facts (InsnFacts::def, InsnFacts::def32); only the
// codes whose answer depends on imm (STX atomics: the operation; END: the swap width) are worked
// out here. Inline: the patchers, the zext passes and the interpreter ask it of nearly every insn.
#include "bpf/isa/insn.hpp"

namespace patchfuzz::isa {

namespace detail {
// insn_def_regno() of an STX atomic (Def::ByImm): CMPXCHG defines R0, load-acquire dst, any other
// FETCH op src; the rest (plain adds, store-release, ...) nothing.
constexpr int atomic_def_regno(const Insn& insn) {
    if (insn.imm == BPF_CMPXCHG) return BPF_REG_0;
    if (insn.imm == BPF_LOAD_ACQ) return insn.dst_reg;
    if (insn.imm & BPF_FETCH) return insn.src_reg;
    return -1;
}
// insn_has_def32() where Def32::ByImm: is_reg64(insn, def, NULL, DST_OP) is false.
constexpr bool def32_by_imm(const Insn& insn) {
    if (cls(insn) == BPF_STX)  // an atomic: 32 bits unless it is a DW one
        return atomic_def_regno(insn) != -1 && size(insn) != BPF_DW;
    // END: ALU | END writes 16 or 32 bits (a 64-bit swap all of them); ALU64 | END (cpu v4
    // bswap) zero-extends a 16/32-bit result.
    if (cls(insn) == BPF_ALU) return insn.imm != 64;
    return insn.imm == 16 || insn.imm == 32;
}
}  // namespace detail

// insn_def_regno() (verifier.c): the register the insn defines, or -1. Jumps and ST define
// nothing; STX defines only through atomics (CMPXCHG -> R0, load-acquire -> dst, any FETCH op ->
// src); everything else its dst.
constexpr int insn_def_regno(const Insn& insn) {
    switch (kInsnFacts[insn.code].def) {
        case Def::None: return -1;
        case Def::Dst: return insn.dst_reg;
        case Def::ByImm: return detail::atomic_def_regno(insn);
    }
    return -1;
}

// !is_reg64(insn, insn_def_regno(insn), DST_OP) for insns that define a register.
constexpr bool insn_has_def32(const Insn& insn) {
    switch (kInsnFacts[insn.code].def32) {
        case Def32::No: return false;
        case Def32::Yes: return true;
        case Def32::ByImm: return detail::def32_by_imm(insn);
    }
    return false;
}

}  // namespace patchfuzz::isa
