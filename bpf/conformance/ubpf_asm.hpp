#pragma once
// Assembler for the ubpf / bpf_conformance mnemonic syntax used in `.data` files:
//   mov %r0, 1        add32 %r1, %r2      lddw %r0, 0x123456789abcdef0
//   ldxw %r0, [%r1+4] stxdw [%r10-8], %r1 stw [%r1], 5
//   jeq %r1, 3, +2    jne32 %r0, %r1, label   ja label   ja32 label (gotol)
//   call 5 / call helper 5 / call local label / call runtime 7 / call %r2 (callx: JMP|CALL|X, dst)
//   lock [fetch] add|and|or|xor[32] [%r10-8], %r1   lock xchg[32] / cmpxchg[32] [..], %r1
//   le16/be32/swap64 (= bswap64) %r0    movsx832/movsx1664/... %r0, %r1    ldxsb/ldxsh/ldxsw
//   label:            # comment (also after an insn)
// The label `exit` names the first exit insn unless defined explicitly (as the suite's assembler).
// Immediates: decimal must fit in s32 (lddw: 64 bits); hex in 32 bits (lddw: 64 bits).
// Errors are "path:line:col: message".
#include <string_view>
#include <vector>

#include "bpf/isa/insn.hpp"
#include "bpf/util/error.hpp"

namespace patchfuzz::conformance {

// `first_line` is the file line of the first line of `text` (for located errors).
Expected<std::vector<isa::Insn>> ubpf_assemble(std::string_view text, std::string_view path, int first_line = 1);

}  // namespace patchfuzz::conformance
