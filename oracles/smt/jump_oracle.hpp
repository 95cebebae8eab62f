#pragma once
// Jump-target oracle (issue 5 §1): proves, per case, that a patcher's output honours the batched
// patching contract of docs/patching.md §7 (with the single-patch rules of §2-§3 it is derived
// from).
//
// Encoding: the index map S of §7.1 is a piecewise function of the original index over the patch
// positions, S(k) = k + D[seg(k)] with seg(k) = number of patches at positions < k and bit-vector
// unknowns D[0] = 0, D[i+1] = D[i] + (n_i - 1) for the patch lengths n_i. Every relative transfer of
// the output (conditional jumps and `ja` in off s16, gotol in imm s32, pseudo calls and
// PSEUDO_FUNC in imm s32), every subprog start (incl. the fake exit), line-info entry, insn-array
// entry and poke descriptor becomes an obligation over D; the negated conjunction goes to Z3 in one
// query (QF_BV). Neither patcher is run. Obligations:
//  * unpatched transfer from k to T lands on S(T) (so "named the patched insn" = first patch insn);
//  * patch-internal targets (0 <= L < n) keep their displacement; outgoing ones land on S(T) with T
//    from the local->original rule of §7.2;
//  * a plain jump to an InsertBefore (prologue) position lands after the prologue (adjust_jmp_off,
//    §3.7); calls, PSEUDO_FUNC and the side tables keep pointing at the prologue start;
//  * every relocated displacement fits its field, or the outcome is -ERANGE; -ERANGE is reported
//    only when one does not fit.
// Semantic intent (§8), checked after the contract: a relative jump that a pass copies verbatim
// into a non-first slot of its own patch keeps its displacement, so its target moves; reported as
// divergence "copied-relative-jump" even when both patchers agree.
// Removal patches are outside the §7 insertion contract: such batches get Skip.
#include <string>

#include "bpf/patch/patch.hpp"
#include "bpf/program/program.hpp"
#include "oracles/smt/smt_options.hpp"
#include "oracles/verdict.hpp"

namespace patchfuzz::oracles::smt {

inline constexpr const char* kJumpOracleName = "smt-jump";

Verdict check_jump_targets(const Program& before, const patch::PatchBatch& batch, const patch::PatchOutcome& outcome,
                           const Program& after, const SmtOptions& opts = {});

// Runs `batch` on copies of `before` through both patchers ("incremental", "batched") and compares
// outcome and, when both succeed, the whole Program (operator==). Fail names the first difference.
Verdict compare_patchers(const Program& before, const patch::PatchBatch& batch);

}  // namespace patchfuzz::oracles::smt
