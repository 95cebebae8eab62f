#pragma once
// The value sets several verbs' flags share, named once: what a flag table checks a choice or list
// value against, and what its error message lists.
#include <string>
#include <vector>

#include "bpf/arch/arch_profile.hpp"
#include "harness/cli/flags.hpp"

namespace patchfuzz::cli {

Choices arch_choices();            // x86_64, arm64, jit32, arm32 (bpf/arch/arch_profile.hpp)
// The profiles of names arch_choices() (or a .case reader) checked, in order.
std::vector<ArchProfile> profiles_named(const std::vector<std::string>& names);
Choices privilege_choices();       // root, bpf, unpriv (bpf/passes/privilege.hpp)
Choices kernel_profile_choices();  // 6.1, 6.12, 7.2, 7.3, bpf-next (passes::KernelProfile)
Choices inline_fix_choices();      // buggy, fixed (passes::InlineFix)
Choices case_oracle_choices();     // the per-case oracles: every oracle but the kernel's (campaigns batch it)
Choices gen_profile_choices();     // the generator's workload profiles (gen/profiles.hpp)

}  // namespace patchfuzz::cli
