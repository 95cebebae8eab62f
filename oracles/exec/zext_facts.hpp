#pragma once
// Are a case's zext_dst facts what the verifier would compute, where the execution oracle depends
// on them? On a JIT that needs explicit zero extension (jit32) a 32-bit def without zext_dst keeps
// a stale upper half. The verifier sets zext_dst on every 32-bit def whose register is later read
// as 64 bits (is_reg64() for SRC_OP reads in kernel/bpf/verifier.c: ALU64 operands, JMP compares,
// exit's r0, helper-call arguments, pointer operands; mark_insn_zext() then marks the def). A case
// that lacks such a mark describes a program the kernel would never produce, and the rewrite
// passes legitimately disagree with it: every 32-bit def a patch writes gets zext_dst
// (adjust_insn_aux_data uses insn_has_def32 on the patched slots), and an inline reads all 64
// bits of an argument the helper's reference model reads as u32 (bpf_loop's nr_loops). The oracle
// therefore re-checks a divergence found on such a JIT with the marks completed: if the completed
// program agrees, the divergence came from the facts and the case is not judged (skip); if it
// still diverges, the failure stands.
#include <optional>
#include <string>

#include "bpf/isa/insn.hpp"
#include "bpf/program/program.hpp"

namespace patchfuzz::oracles::exec {

// The first seen 32-bit def without zext_dst whose register a later insn reads as 64 bits on some
// path of the intra-subprog CFG (both edges of conditional jumps, `goto` targets, every insn-array
// entry after a gotox; a path ends at a redefinition, exit, a tail call, or a call for R0-R5: every call clobbers them and
// preserves R6-R9, whose paths continue after it; reads inside callees are not followed), described for a skip reason; nullopt when there is none.
// Kfunc calls end the path without a read: the inlined kfuncs' arguments are int/u32 values that
// their inlines read as 32-bit subregisters.
std::optional<std::string> missing_zext_fact(const Program& prog);

// `prog` with zext_dst set on every def missing_zext_fact() finds (the marks the verifier would add
// on those paths).
Program with_zext_facts(const Program& prog);

// Facts a zext JIT can never see, with the reason: missing_zext_fact(), and needs_zext marks. The
// verifier sets needs_zext only on ALU64 ops on arena pointers (adjust_reg_min_max_vals), and
// do_misc_fixups narrows those to ALU32 without a zext_dst mark, relying on the JIT's implicit
// zero extension; arena programs need bpf_jit_supports_arena(), which the 32-bit JITs do not
// provide, so on jit32 such a program never loads.
std::optional<std::string> zext_jit_fact_issue(const Program& prog);
// with_zext_facts(prog) with every needs_zext mark cleared: the nearest program a zext JIT loads.
Program zext_jit_facts(const Program& prog);

// Does `insn` read register `reg` as a 64-bit value (is_reg64() of verifier.c for SRC_OP)?
bool reads_reg64(const isa::Insn& insn, int reg);

// Number of argument registers (R1..) the helper's prototype declares; 5 when unknown.
int helper_arg_count(int32_t helper_id);

}  // namespace patchfuzz::oracles::exec
