#pragma once
// Kernel-syntax disassembler: the text of kernel/bpf/disasm.c print_bpf_insn() as it appears in the
// verifier log, `bpftool prog dump xlated` and selftest __xlated annotations, e.g.
//   r0 = *(u32 *)(r1 +0)      if w1 s> 0x5 goto pc+3      call pc+7      gotol pc+40000
//   r1 = map[id:3]            w0 = -w0                     lock *(u64 *)(r1 +8) += r2
// Where the kernel's text loses information, a minimal extension keeps assemble(disassemble(x)) == x
// exact for every legal encoding; each one is listed in bpf/asm/SYNTAX.md.
#include <cstddef>
#include <span>
#include <string>

#include "bpf/isa/insn.hpp"

namespace patchfuzz::assembly {

struct DisasmOptions {
    bool numbered = false;  // "   4: " prefix (bpftool style; the assembler skips it)
    bool opcodes = false;   // "(b7) " prefix (verifier-log style; the assembler checks it)
};

// One instruction (no newline). An ldimm64 reads insns[pc + 1] too. Anything that is not a legal
// encoding of the opcode table (or an ldimm64 whose second slot is missing or malformed) prints as
// the raw directive `.insn code=0x8e dst=1 src=0 off=0 imm=0`, which the assembler reads back, so
// disassembly is total and still exact for arbitrary bytes.
std::string disasm_insn(std::span<const isa::Insn> insns, size_t pc);

// Every instruction, one per line, each line ending in '\n'; ldimm64 takes one line for 2 slots.
std::string disassemble(std::span<const isa::Insn> insns, const DisasmOptions& opts = {});

}  // namespace patchfuzz::assembly
