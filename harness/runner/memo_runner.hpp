#pragma once
// The runner with reuse (RunConfig::memoise): a profile whose rewrite is another's takes that
// profile's verdicts, a profile alike but for the arch starts after the other's arch-independent
// passes, a batch given again on the same program takes its SMT verdicts, the inline proofs are
// made once per process, and a thread's patchers and program storage serve case after case.
// It must judge every case exactly as run_case_plain() (runner_test holds it to that).
#include "harness/runner/runner.hpp"

namespace patchfuzz::harness {

CaseReport run_case_memoised(const Case& c, const RunConfig& cfg);

}  // namespace patchfuzz::harness
