#pragma once
// Structural validation of instructions and of a Program's side tables: the checks the kernel does
// before (or independently of) abstract interpretation. Every error is located ("pc N") and worded
// exactly (tests compare the text):
//   pc 2: unknown opcode 0x8e
//   pc 3: reserved field src_reg is 2, must be 0
//   pc 3: off is 5, must be one of 0, 8, 16, 32
//   pc 3: dst_reg r12 out of range (r0..r10)
//   pc 3: dst_reg r11 (BPF_REG_AX) only allowed in kernel-internal code
//   pc 3: kernel-internal insn 'nospec' not allowed
//   pc 7: r10 is read-only
//   pc 4: jump to pc 13 lands in the second half of ldimm64 at pc 12
//   pc 4: jump to pc 40 out of range (13 insns)
//   pc 9: ldimm64 truncated
//   pc 12: last insn falls through off the end
//   pc 5: call to pc 9 which is not a subprog start
// Models: kernel/bpf/verifier.c resolve_pseudo_ldimm64 (ldimm64 shape), check_subprogs (targets,
// last insn of each subprog), do_check's "reserved fields" checks (via the opcode table).
#include <span>

#include "bpf/isa/insn.hpp"
#include "bpf/program/program.hpp"
#include "bpf/util/error.hpp"

namespace patchfuzz::isa {

struct ValidateOptions {
    bool allow_internal = true;       // accept kernel-internal encodings and r11 (BPF_REG_AX)
    bool require_exit_at_end = true;  // the last insn must not fall through off the end
};

// One insn against the opcode table (no ldimm64 second slot, no targets). Errors are "pc <pc>: ...".
Status validate_encoding(const Insn& insn, size_t pc, bool allow_internal = true);

// Encodings (opcode table), registers, ldimm64 pairs, jump/call targets, fall-through at the end.
Status validate_insns(std::span<const Insn> insns, const ValidateOptions& opts = {});

// validate_insns plus the side tables: aux size, subprog table (ascending, first 0, fake exit ==
// len, every pseudo call / PSEUDO_FUNC target is a subprog start, no subprog falls through into the
// next, no jump leaves its subprog), line info (strictly increasing, in range, never on an ldimm64
// second slot), insn-array entries (in range or INSN_DELETED), poke descriptors (in range).
Status validate_program(const Program& prog, const ValidateOptions& opts = {});

}  // namespace patchfuzz::isa
