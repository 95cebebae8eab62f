#pragma once
// The kernel oracle as an oracles::Oracle (Case scope): a case's program loaded into a real kernel
// under qemu (check_cases: one VM boot per judgement), its xlated program held to the model's
// rewrite and, with test runs, the kernel's runs to the interpreter's. What `patchfuzz check
// --oracle kernel` asks through the runner (RunConfig::extra_oracles); campaigns batch many
// programs per boot instead (harness/campaign).
//
// One verdict per case: pass (accepted and agreeing), skip (the real verifier rejected it: nothing
// to compare), fail (a disagreement, its class from divergence_of() as the divergence and the
// case's report as the counterexample), unknown (the VM could not be run).
#include <functional>
#include <memory>
#include <vector>

#include "bpf/util/error.hpp"
#include "harness/kernel/kernel_check.hpp"
#include "oracles/oracle.hpp"

namespace patchfuzz::kernel {

// What judges a batch of kernel cases: check_cases() with fixed options, or a test's stand-in.
using KernelChecker = std::function<Expected<CheckReport>(const std::vector<KernelCase>&)>;

std::unique_ptr<oracles::Oracle> make_kernel_oracle(const CheckOptions& opts);
std::unique_ptr<oracles::Oracle> make_kernel_oracle(KernelChecker checker, const ArchProfile& model_arch);

// The verdict on one case's outcome in `report` (exposed for tests).
oracles::Verdict kernel_verdict(const CheckReport& report, const CaseOutcome& outcome, const ArchProfile& model_arch);

}  // namespace patchfuzz::kernel
