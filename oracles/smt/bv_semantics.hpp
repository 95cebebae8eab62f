#pragma once
// BPF instruction -> bit-vector transfer function (docs/iterator-isa-arch.md §3), for straight-line and
// branching code with forward jumps only (what an inline sequence is). Paths are merged at join
// points with if-then-else, so one symbolic run covers every input.
//
// Per-arch execution (ArchProfile):
//  * x86_64 / arm64: ISA semantics (ALU32 zero-extends, MOVSX sign-extends).
//  * jit32 (movsx_as_mov, alu32_no_implicit_zext): MOVSX is decoded as a plain move, and every
//    32-bit def (ALU32 op, LDX B/H/W) leaves an unconstrained ("garbage") upper half unless it is
//    the zext marker `w = w` with imm 1 (BPF_ZEXT_REG), which clears it.
// Machine division: DIV/MOD/SDIV/SMOD X and K compute through uninterpreted functions (Z3 4.8
// cannot prove generic udiv/urem identities) and set `trap` on a zero divisor or signed MIN / -1
// (x86 div/idiv), which is exactly what the verifier's guards must make impossible.
// Calls (helper / internal ids): R0 = uninterpreted function "call_<imm>"(R1..R5), R1-R5 become
// fresh values; the called functions are modelled as not writing memory (lookups). The per-CPU address move (ALU64 MOV X off -1) is the uninterpreted "this_cpu_ptr".
// Backward jumps, exits, pseudo calls, atomics and unknown opcodes are reported as unsupported.
#include <array>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "bpf/arch/arch_profile.hpp"
#include "bpf/isa/insn.hpp"
#include "bpf/util/error.hpp"
#include "oracles/smt/expr.hpp"

namespace patchfuzz::oracles::smt {

inline constexpr int kNumRegs = 12;  // R0-R10 and AX (isa::kRegAx)

// Memory as a free byte array plus a log of guarded byte writes in program order. Reads become
// if-then-else chains over the log, so proofs stay in bit-vectors (Z3 4.8 is slow on if-then-else
// of stored arrays); paths merged at a join share their common prefix of writes.
struct MemWrite {
    Term cond;  // bool: the write happened (path condition)
    Term addr;  // 64-bit
    Term byte;  // 8-bit
};
struct Mem {
    Term base;  // array 64 -> 8: contents before the sequence
    std::vector<std::shared_ptr<const MemWrite>> writes;
};

struct BvState {
    std::array<Term, kNumRegs> regs;  // 64-bit each
    Mem mem;
    Term trap;                         // bool: a machine division trapped on some path
};

// A state with free registers named r0..r10, ax, a free memory "mem" and no trap.
BvState initial_state(TermContext& ctx, const std::string& prefix = "");

// The sequence as bpf_opt_subreg_zext_lo32_rnd_hi32 leaves it on a JIT that needs explicit zext:
// every patched slot gets zext_dst = insn_has_def32 (docs/patching.md §3.1), so a zext marker follows each
// 32-bit def; in-sequence displacements are re-encoded around the inserted markers.
std::vector<isa::Insn> with_zext_markers(std::span<const isa::Insn> code);

// Runs `code` (forward jumps only; a jump to code.size() leaves the sequence) from `in`; on an arch
// with needs_zext, runs with_zext_markers(code).
Expected<BvState> run_sequence(TermContext& ctx, std::span<const isa::Insn> code, const BvState& in, const ArchProfile& arch);

// Memory helpers: byte read, little-endian loads and (conditional) stores of width 8/16/32/64.
Term mem_read(const Mem& mem, const Term& addr);
Term load_le(const Mem& mem, const Term& addr, unsigned width, TermContext& ctx);
Mem store_le(const Mem& mem, const Term& addr, const Term& value, TermContext& ctx, const Term* cond = nullptr);

// ISA reference values of the division family (x / 0 = 0, x % 0 = x, MIN / -1 = MIN, MIN % -1 = 0),
// built on the same uninterpreted quotient/remainder functions as the machine semantics.
Term isa_div(TermContext& ctx, const Term& x, const Term& y, bool is_signed);
Term isa_mod(TermContext& ctx, const Term& x, const Term& y, bool is_signed);

}  // namespace patchfuzz::oracles::smt
