#pragma once
// Minimizing a kernel-oracle finding (a program the real verifier accepts and whose xlated code,
// model run or test runs disagree with ours). Only a real verifier can say whether a smaller
// program is still accepted and still disagrees, and each VM boot costs seconds, so candidates are
// judged in rounds: one boot (one call of the checker) judges a whole round, every shrink
// candidate of the current program (gen::shrink_candidates: dropped subprogs, runs of insns
// replaced by `ja +0`, deleted nops, dropped side-table entries and facts, smaller immediates)
// plus the current program with one test-run input dropped. The smallest candidate that still
// disagrees the same way (the same divergence_of() class and CaseOutcome::key) starts the next
// round; minimization ends at a fixpoint (no candidate does) or at a budget.
//
// Facts the model reads from aux (map_index, seen, ...) are not re-derived for a candidate: a
// candidate whose facts no longer match what the verifier concludes disagrees in another way
// (another key), and is not taken.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "bpf/util/error.hpp"
#include "harness/kernel/kernel_check.hpp"

namespace patchfuzz::kernel {

// Judges a batch of cases in one VM boot: check_cases(cases, options) in real use.
using BatchChecker = std::function<Expected<CheckReport>(const std::vector<KernelCase>&)>;

struct KernelMinimizeOptions {
    uint32_t max_rounds = 16;     // VM boots
    size_t per_round = 512;       // shrink candidates judged per boot
    double max_seconds = 300;     // no round starts after this
    std::function<bool()> stop;   // asked before each round: true ends minimization (a campaign that ends)
};

struct KernelMinimizeResult {
    KernelCase minimized;    // the original when no candidate disagreed the same way
    CaseOutcome outcome;     // the minimized case's outcome (the original's when nothing shrank)
    uint32_t rounds = 0;     // checker calls (VM boots)
    uint32_t steps = 0;      // rounds that shrank the case
    uint64_t tried = 0;      // candidates judged
    std::string ended;       // "fixpoint", "rounds", "seconds", "stopped", or "checker: <error>"
};

// `failing` disagrees with `outcome` (divergence_of(outcome) is not null).
KernelMinimizeResult minimize_kernel_finding(const KernelCase& failing, const CaseOutcome& outcome, const BatchChecker& check,
                                             const KernelMinimizeOptions& opts = {});

}  // namespace patchfuzz::kernel
