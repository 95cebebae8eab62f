#pragma once
// The instruction as the kernel stores it: the uapi `struct bpf_insn` (linux/bpf.h), used as is.
// This header adds (a) the encoding constants of encoding.hpp and the per-opcode facts of
// insn_facts.hpp (both included), (b) small queries that name the shapes the patcher cares about
// (docs/patching.md §1.2-1.3), and (c) builders that read like assembly, for tests and passes.
#include <linux/bpf.h>

#include <cstdint>

#include "bpf/isa/encoding.hpp"
#include "bpf/isa/insn_facts.hpp"

namespace patchfuzz::isa {

using Insn = ::bpf_insn;

// ---- field access -------------------------------------------------------------------------------
constexpr uint8_t cls(const Insn& i) { return i.code & 0x07; }
constexpr uint8_t op(const Insn& i) { return i.code & 0xf0; }
constexpr uint8_t src_bit(const Insn& i) { return i.code & 0x08; }
constexpr uint8_t mode(const Insn& i) { return i.code & 0xe0; }
constexpr uint8_t size(const Insn& i) { return i.code & 0x18; }

constexpr bool is_jmp_class(const Insn& i) { return cls(i) == BPF_JMP || cls(i) == BPF_JMP32; }
constexpr bool is_alu_class(const Insn& i) { return cls(i) == BPF_ALU || cls(i) == BPF_ALU64; }
constexpr bool is_ldimm64(const Insn& i) { return i.code == (BPF_LD | BPF_IMM | BPF_DW); }
constexpr bool is_exit(const Insn& i) { return i.code == (BPF_JMP | BPF_EXIT); }
constexpr bool is_call(const Insn& i) { return i.code == (BPF_JMP | BPF_CALL); }
constexpr bool is_helper_call(const Insn& i) { return is_call(i) && i.src_reg == 0; }
constexpr bool is_pseudo_call(const Insn& i) { return is_call(i) && i.src_reg == BPF_PSEUDO_CALL; }
constexpr bool is_kfunc_call(const Insn& i) { return is_call(i) && i.src_reg == BPF_PSEUDO_KFUNC_CALL; }
constexpr bool is_pseudo_func(const Insn& i) { return is_ldimm64(i) && i.src_reg == BPF_PSEUDO_FUNC; }
constexpr bool is_may_goto(const Insn& i) { return i.code == (BPF_JMP | BPF_JCOND) && i.src_reg == BPF_MAY_GOTO; }
constexpr bool is_gotol(const Insn& i) { return i.code == (BPF_JMP32 | BPF_JA); }
constexpr bool is_ja(const Insn& i) { return i.code == (BPF_JMP | BPF_JA); }
constexpr bool is_gotox(const Insn& i) { return i.code == (BPF_JMP | BPF_JA | BPF_X); }
constexpr bool is_tail_call(const Insn& i) { return i.code == (BPF_JMP | kOpTailCall); }
// The zero-extension marker the zext pass inserts: `w_dst = w_dst` encoded as MOV32 X with imm 1.
constexpr bool is_zext_marker(const Insn& i) {
    return i.code == (BPF_ALU | BPF_MOV | BPF_X) && i.imm == 1 && i.off == 0 && i.dst_reg == i.src_reg;
}
// bpf_insn_is_cond_jump (fixups.c): any JMP32 op except JA; any JMP op except JA/EXIT/CALL
// (includes JCOND and the internal tail call).
constexpr bool is_cond_jump(const Insn& i) { return kInsnFacts[i.code].cond_jump; }

// What a relative transfer stores its displacement in (docs/patching.md §1.2).
enum class RelField { None, Off16, Imm32 };
// Which displacement field bpf_adj_branches() would adjust for this insn (None: not relative), as
// the opcode facts say it (InsnFacts::disp, with src_reg for a call or an ld_imm64).
constexpr RelField relative_field(const Insn& i) {
    switch (disp_field(i.code, i.src_reg)) {
        case DispField::Off: return RelField::Off16;
        case DispField::Imm: return RelField::Imm32;
        default: return RelField::None;
    }
}
constexpr int64_t displacement(const Insn& i) {
    switch (relative_field(i)) {
        case RelField::Off16: return i.off;
        case RelField::Imm32: return i.imm;
        case RelField::None: return 0;
    }
    return 0;
}

// ---- builders (read like assembly; used by passes and tests) --------------------------------------
constexpr Insn make(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm) {
    Insn i{};
    i.code = code;
    i.dst_reg = dst & 0xf;
    i.src_reg = src & 0xf;
    i.off = off;
    i.imm = imm;
    return i;
}
constexpr Insn alu64_imm(uint8_t aluop, uint8_t dst, int32_t imm) { return make(BPF_ALU64 | aluop | BPF_K, dst, 0, 0, imm); }
constexpr Insn alu64_reg(uint8_t aluop, uint8_t dst, uint8_t src) { return make(BPF_ALU64 | aluop | BPF_X, dst, src, 0, 0); }
constexpr Insn alu32_imm(uint8_t aluop, uint8_t dst, int32_t imm) { return make(BPF_ALU | aluop | BPF_K, dst, 0, 0, imm); }
constexpr Insn alu32_reg(uint8_t aluop, uint8_t dst, uint8_t src) { return make(BPF_ALU | aluop | BPF_X, dst, src, 0, 0); }
constexpr Insn mov64_imm(uint8_t dst, int32_t imm) { return alu64_imm(BPF_MOV, dst, imm); }
constexpr Insn mov64_reg(uint8_t dst, uint8_t src) { return alu64_reg(BPF_MOV, dst, src); }
constexpr Insn mov32_imm(uint8_t dst, int32_t imm) { return alu32_imm(BPF_MOV, dst, imm); }
constexpr Insn mov32_reg(uint8_t dst, uint8_t src) { return alu32_reg(BPF_MOV, dst, src); }
constexpr Insn zext_marker(uint8_t reg) { return make(BPF_ALU | BPF_MOV | BPF_X, reg, reg, 0, 1); }
constexpr Insn jmp_imm(uint8_t jop, uint8_t dst, int32_t imm, int16_t off) { return make(BPF_JMP | jop | BPF_K, dst, 0, off, imm); }
constexpr Insn jmp_reg(uint8_t jop, uint8_t dst, uint8_t src, int16_t off) { return make(BPF_JMP | jop | BPF_X, dst, src, off, 0); }
constexpr Insn jmp32_imm(uint8_t jop, uint8_t dst, int32_t imm, int16_t off) { return make(BPF_JMP32 | jop | BPF_K, dst, 0, off, imm); }
constexpr Insn jmp32_reg(uint8_t jop, uint8_t dst, uint8_t src, int16_t off) { return make(BPF_JMP32 | jop | BPF_X, dst, src, off, 0); }
constexpr Insn ja(int16_t off) { return make(BPF_JMP | BPF_JA, 0, 0, off, 0); }
constexpr Insn gotol(int32_t imm) { return make(BPF_JMP32 | BPF_JA, 0, 0, 0, imm); }
constexpr Insn may_goto(int16_t off) { return make(BPF_JMP | BPF_JCOND, 0, BPF_MAY_GOTO, off, 0); }
constexpr Insn call_helper(int32_t id) { return make(BPF_JMP | BPF_CALL, 0, 0, 0, id); }
constexpr Insn call_pseudo(int32_t rel) { return make(BPF_JMP | BPF_CALL, 0, BPF_PSEUDO_CALL, 0, rel); }
constexpr Insn call_kfunc(int32_t btf_id, int16_t off = 0) { return make(BPF_JMP | BPF_CALL, 0, BPF_PSEUDO_KFUNC_CALL, off, btf_id); }
constexpr Insn exit_insn() { return make(BPF_JMP | BPF_EXIT, 0, 0, 0, 0); }
constexpr Insn ldx(uint8_t sz, uint8_t dst, uint8_t src, int16_t off) { return make(BPF_LDX | sz | BPF_MEM, dst, src, off, 0); }
constexpr Insn stx(uint8_t sz, uint8_t dst, uint8_t src, int16_t off) { return make(BPF_STX | sz | BPF_MEM, dst, src, off, 0); }
constexpr Insn st(uint8_t sz, uint8_t dst, int16_t off, int32_t imm) { return make(BPF_ST | sz | BPF_MEM, dst, 0, off, imm); }
constexpr Insn nospec() { return make(BPF_ST | kModeNospec, 0, 0, 0, 0); }
// ld_imm64: two slots. `lo` is the first slot, `hi` the second (code 0).
constexpr Insn ldimm64_lo(uint8_t dst, uint8_t src_pseudo, int32_t imm) { return make(BPF_LD | BPF_IMM | BPF_DW, dst, src_pseudo, 0, imm); }
constexpr Insn ldimm64_hi(int32_t imm) { return make(0, 0, 0, 0, imm); }

constexpr bool same(const Insn& a, const Insn& b) {
    return a.code == b.code && a.dst_reg == b.dst_reg && a.src_reg == b.src_reg && a.off == b.off && a.imm == b.imm;
}

// `ja +0` with every other field zero: the nop the verifier's dead-code passes leave and remove.
constexpr bool is_ja0(const Insn& i) { return same(i, ja(0)); }

}  // namespace patchfuzz::isa
