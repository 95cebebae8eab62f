#pragma once
// Are a case's zext_dst facts what the verifier would compute, where the execution oracle depends
// on them? On a JIT that needs explicit zero extension (jit32) a 32-bit def without zext_dst keeps
// a stale upper half. The verifier sets zext_dst on every 32-bit def whose register is later read
// as 64 bits (bpf/passes/zext_marks.hpp models that marking). A case that lacks such a mark
// describes a program the kernel would never produce, and the rewrite passes legitimately disagree
// with it: every 32-bit def a patch writes gets zext_dst (adjust_insn_aux_data uses
// insn_has_def32 on the patched slots), and an inline reads all 64 bits of an argument the
// helper's reference model reads as u32 (bpf_loop's nr_loops). The oracle therefore re-checks a
// divergence found on such a JIT with the marks completed: if the completed program agrees, the
// divergence came from the facts and the case is not judged (skip); if it still diverges, the
// failure stands.
#include <optional>
#include <string>

#include "bpf/passes/zext_marks.hpp"
#include "bpf/program/program.hpp"

namespace patchfuzz::oracles::exec {

// The first (lowest) 32-bit def without zext_dst that the verifier would mark
// (passes::zext_gaps()), with a 64-bit read of its register, described for a skip reason;
// nullopt when there is none.
std::optional<std::string> missing_zext_fact(const Program& prog);

// `prog` with zext_dst set on every def missing_zext_fact() would report (the marks the verifier
// would add); the model itself lives in bpf/passes/zext_marks.hpp.
using passes::with_zext_facts;

// Facts a zext JIT can never see, with the reason: missing_zext_fact(), and needs_zext marks. The
// verifier sets needs_zext only on ALU64 ops on arena pointers (adjust_reg_min_max_vals), and
// do_misc_fixups narrows those to ALU32 without a zext_dst mark, relying on the JIT's implicit
// zero extension; arena programs need bpf_jit_supports_arena(), which the 32-bit JITs do not
// provide, so on jit32 such a program never loads.
std::optional<std::string> zext_jit_fact_issue(const Program& prog);
// with_zext_facts(prog) with every needs_zext mark cleared: the nearest program a zext JIT loads.
Program zext_jit_facts(const Program& prog);

}  // namespace patchfuzz::oracles::exec
