#pragma once
// The oracles that need nothing but the evidence (structural, smt-jump, smt-inline) and exec,
// as Oracle objects. The kernel oracle needs a guest VM and lives in harness/kernel.
#include <memory>

#include "oracles/exec/exec_diff.hpp"
#include "oracles/oracle.hpp"
#include "oracles/smt/smt_options.hpp"

namespace patchfuzz::oracles {

// Batch scope: the candidate's result compared field by field with the reference's
// (compare_patcher_outputs). Judges every patcher but the reference.
std::unique_ptr<Oracle> make_structural_oracle();
// Batch scope: every jump of the candidate's result proved to reach its original target
// (smt::check_jump_targets). Judges every patcher, the reference included.
std::unique_ptr<Oracle> make_smt_jump_oracle(const smt::SmtOptions& so);
// Arch scope: the profile's inline sequences proved equivalent to what they replace
// (smt::prove_inlines). Judges cases whose options inline the iterator kfuncs; one verdict per
// sequence, its `patch_kind` naming the sequence.
std::unique_ptr<Oracle> make_smt_inline_oracle(const smt::SmtOptions& so);
// Case scope: the original program run next to each rewrite (exec::exec_diff) with `options`,
// whose `rewrite`, `archs` and `given` the evidence's options, profiles and inputs replace when set.
std::unique_ptr<Oracle> make_exec_oracle(exec::ExecDiffOptions options);

}  // namespace patchfuzz::oracles
