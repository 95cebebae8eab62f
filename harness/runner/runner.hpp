#pragma once
// The one runner: a case -> both patchers x the passes x the arch profiles -> every oracle -> a
// report of verdicts. Tests, fuzz targets, the CLI (check, replay, fuzz) and triage all call it.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bpf/arch/arch_profile.hpp"
#include "bpf/passes/pass.hpp"
#include "bpf/patch/reloc_coverage.hpp"
#include "bpf/program/program.hpp"
#include "harness/case/case_file.hpp"
#include "oracles/oracle.hpp"
#include "oracles/verdict.hpp"

namespace patchfuzz::harness {

struct RunConfig {
    // The built-in oracles the runner asks, parsed from names where they were read (the CLI, a
    // .case file). The kernel oracle is never among them: it comes as an extra oracle.
    oracles::OracleSet oracles{oracles::OracleId::Structural, oracles::OracleId::SmtJump, oracles::OracleId::SmtInline,
                               oracles::OracleId::Exec};
    // The arch profiles every case is rewritten and judged under, in this order.
    std::vector<ArchProfile> arches{arch_x86_64(), arch_arm64(), arch_jit32()};
    // The first patcher is the reference (the kernel model); every other one is compared with it.
    std::vector<patch::PatcherId> patchers{patch::PatcherId::Incremental, patch::PatcherId::Batched};
    // An external batched patcher loaded with --patcher-lib (owned elsewhere), compared too.
    patch::Patcher* external = nullptr;
    std::string external_name;
    // The ABI makes apply a function of its input (include/patchfuzz/patcher.h): an external
    // patcher's answers are then reused where the built-in patchers' are (alike arch profiles, a
    // shared pass prefix, per-batch SMT verdicts). false calls it for every profile and pass.
    bool external_pure = true;
    // Reuse of work (memo_runner.hpp): a profile whose rewrite is another's takes its verdicts, a
    // profile alike but for the arch starts after the other's arch-independent passes, a batch
    // given again on the same program takes its SMT verdicts. false: run_case_plain(), the plain
    // loop the reuse must judge exactly as (runner_test).
    bool memoise = true;
    uint32_t exec_inputs = 4;      // generated inputs per case for the execution oracle, after the case's own
    uint32_t smt_timeout_ms = 2000;
    // false: failures without the exec oracle's traces (oracles::exec::ExecDiffOptions): what a
    // campaign judges with, re-running a new finding in full.
    bool failure_details = true;
    // false: a Pass verdict is only counted (CaseReport::counted_passes), not kept. What a
    // campaign judges with: it reads no more of a pass than that it passed, and most verdicts pass.
    bool keep_passes = true;
    // Case-scope oracles the runner cannot make itself (the kernel oracle needs a VM:
    // harness/kernel/kernel_oracle.hpp), not owned: each judges every case without explicit
    // batches, after the built-in oracles.
    std::vector<oracles::Oracle*> extra_oracles;
    // When set, every batch a patcher is given adds its relocation-coverage cells here (computed
    // from the program and the batch alone, bpf/patch/reloc_coverage.hpp). Not owned.
    patch::CoverageSet* coverage = nullptr;
};

struct OracleVerdict {
    OracleVerdict() = default;
    OracleVerdict(oracles::Verdict&& v, const std::string& arch_name, std::string_view pass_name, std::string_view patcher_name)
        : verdict(std::move(v)), arch(arch_name), pass(pass_name), patcher(patcher_name) {}

    oracles::Verdict verdict;
    std::string arch;
    std::string pass;     // the pass whose batch was being checked (if any)
    std::string patcher;  // the patcher under test (if any)
};

// Patches one pass (or "explicit": a case's own batches) emitted over a case's profiles.
struct PassTrigger {
    std::string_view pass;  // a static name: passes::pass_names_view() or "explicit"
    uint32_t patches = 0;
};

struct CaseReport {
    // Every verdict, in the order made; without the Pass ones when RunConfig::keep_passes is false.
    std::vector<OracleVerdict> verdicts;
    // The Pass verdicts counted instead of kept (RunConfig::keep_passes false; 0 otherwise).
    uint32_t counted_passes = 0;
    // Coverage: an entry per pass that ran (kernel order, then "explicit"), even when it patched
    // nothing.
    std::vector<PassTrigger> pass_triggers;
    uint32_t batches = 0;

    [[nodiscard]] bool failed() const;
    [[nodiscard]] uint32_t unknown_count() const;
    // The first failing verdict (nullptr when none).
    [[nodiscard]] const OracleVerdict* first_failure() const;
};

// The case judged by the memoised loop (memo_runner.hpp), or by run_case_plain() when
// cfg.memoise is false.
CaseReport run_case(const Case& c, const RunConfig& cfg);
// The reference loop: every profile rewritten and every batch judged on its own, each oracle
// called through oracles::Oracle, fresh patchers, nothing kept between cases.
CaseReport run_case_plain(const Case& c, const RunConfig& cfg);

// Semantic signature of a failure (issue 7): oracle/pass/patch-kind/divergence/arch.
std::string signature_of(const OracleVerdict& v);

}  // namespace patchfuzz::harness
