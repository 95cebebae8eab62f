#pragma once
// `patchfuzz kernel check`: one VM boot per batch, then per case (a) accepted by the real verifier
// or not (with the log tail), (b) the real xlated program vs our incremental patcher's rewrite
// under the matching kernel profile on the kernel's architecture (x86_64, arm64, or arm32 for armhf:
// xlated_compare.hpp), (c) with `run`, the real BPF_PROG_TEST_RUN results vs our interpreter on
// the same inputs under that architecture's execution semantics.
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bpf/arch/arch_profile.hpp"
#include "bpf/passes/pass.hpp"
#include "bpf/util/error.hpp"
#include "harness/kernel/kernel_case.hpp"
#include "harness/kernel/vm_runner.hpp"
#include "harness/kernel/xlated_exec.hpp"

namespace patchfuzz::kernel {

enum class Agreement : uint8_t {
    Agree,        // xlated == model after the mask
    Differ,       // a finding: model or kernel
    ModelFailed,  // the kernel accepted, our pipeline returned an error
    Rejected,     // the real verifier rejected the program (nothing to compare)
    Crashed,      // the VM died while loading it (kernel finding)
};
std::string_view to_string(Agreement a);

struct RunCompare {
    uint32_t input = 0;
    bool agree = true;
    std::string detail;  // "kernel retval 3, interp 4" / map differences
    bool compared = true;  // false: the run did what the arch leaves undefined (detail says what)
};

struct CaseOutcome {
    std::string name;
    Agreement agreement = Agreement::Rejected;
    int rc = 0;
    std::vector<std::string> log;
    uint32_t kernel_len = 0, model_len = 0, masked = 0;
    uint64_t load_us = 0;
    std::string diff;
    std::vector<RunCompare> runs;
    // What this disagreement is, beyond its class (divergence_of): for Differ the opcodes at the
    // first insn whose opcode differs ("kernel 0xb4 / model 0x85 call 8": the kernel inlined a
    // helper the model calls), for ModelFailed the model's error, for a run mismatch the first
    // disagreeing run's detail, the last two with numbers_as_n(). Two programs with the same class
    // and key show the same disagreement: what the minimizer keeps.
    std::string key;
    // The kernel's own rewrite, executed (issue 22 item 5): with test runs, the VM's results (the
    // kernel's xlated program, run for real) against the interpreter on the ORIGINAL program, no
    // model involved. A disagreement of the model is then a "model-gap" when the kernel kept the
    // meaning on every input, a "kernel-finding" when its rewrite changed it; "" when there is
    // nothing to tell (agreement, or no test run).
    std::vector<RunCompare> original_runs;
    std::string rewrite_class;
    // The kernel's xlated program itself, converted (xlated_program.hpp) and run in our interpreter
    // against the original on the case's inputs: "" not tried, "agree", "differ" (a kernel
    // finding, located in `xlated`), "conversion-failed" (xlated_failure: its class, xlated_detail).
    // With test runs, xlated_vm_runs hold the converted program against the VM's runs: that
    // validates the conversion.
    std::string xlated_exec, xlated_failure, xlated_detail;
    XlatedExecution xlated;
    std::vector<RunCompare> xlated_vm_runs;
    [[nodiscard]] bool original_runs_agree() const {
        for (const auto& r : original_runs)
            if (!r.agree) return false;
        return true;
    }
    [[nodiscard]] bool runs_agree() const {
        for (const auto& r : runs)
            if (!r.agree) return false;
        return true;
    }
};

// Loads `kc` with BPF_F_TEST_RND_HI32 (KernelCase::test_rnd_hi32), its program carrying the zext_dst
// marks the verifier would set (passes::add_zext_marks, which only adds marks), so that the model
// poisons exactly the defs without one.
void with_rnd_hi32(KernelCase& kc);

// The class of a case's disagreement, as kernel findings name it: "xlated-differ", "model-failed",
// "vm-crashed", (all else agreeing) "run-mismatch", or (the model agreeing with the kernel, whose
// test runs disagree with the interpreter on the original program) "kernel-changes-meaning";
// nullptr when it agrees or was rejected.
const char* divergence_of(const CaseOutcome& o);

struct CheckOptions {
    VmOptions vm;
    passes::KernelProfile profile = passes::KernelProfile::K6_12;
    ArchProfile arch = arch_x86_64();  // the model's architecture (rewrites and interpreter)
    bool run = false;               // BPF_PROG_TEST_RUN vs interpreter
    bool compare = true;            // run the model at all
    bool exec_xlated = true;        // run the kernel's xlated program in the interpreter
    size_t per_boot = 5000;
};

struct CheckReport {
    std::string release;
    int jit = -1;
    std::vector<CaseOutcome> cases;
    std::vector<std::string> alerts;
    uint32_t boots = 0;
    double wall_s = 0, boot_s = 0;  // all boots; guest clock at loader start (first boot)
    uint64_t guest_busy_us = 0;     // load + xlated dump time inside the guest
    std::map<std::string, int64_t> facts;  // the guest's @@FACT lines (struct offsets, priv_bpf, ...)
    uint32_t accepted = 0, agree = 0, differ = 0, model_failed = 0, crashed = 0, run_disagree = 0;
    // accepted cases whose test runs disagree with the interpreter on the original program (the
    // kernel's rewrite changed the meaning), and disagreements of the model classed by it
    uint32_t kernel_vs_original = 0, model_gap = 0, kernel_finding = 0;
    // kernel_vs_original is not in ok(): the corpus keeps known kernel findings (0007), which a
    // check of the corpus reports without failing; campaigns file them (divergence_of).
    // The xlated program executed (CaseOutcome::xlated_exec): cases run, agreeing with / differing
    // from the original, conversions that failed (per class), and its runs against the VM's.
    uint32_t xlated_executed = 0, xlated_agree = 0, xlated_differ = 0, xlated_conversion_failed = 0;
    std::map<std::string, uint32_t> xlated_failures;
    uint32_t xlated_vm_runs = 0, xlated_vm_disagree = 0;
    uint32_t interpreted = 0;       // accepted, but the JIT gave up: the kernel's interpreter runs it
    uint32_t runs_not_compared = 0; // test runs through behaviour the arch leaves undefined
    [[nodiscard]] bool ok() const { return differ == 0 && model_failed == 0 && crashed == 0 && run_disagree == 0; }
};

// Check options for Debian kernel `tag` (kernel_image.hpp kernel_specs): the cached vmlinux (an Error says how
// to fetch it), the guest loader, and the model profile of the same kernel. No network access.
// `debian_arch` (amd64, arm64, armhf) picks the build, the qemu, the loader and the model's arch.
Expected<CheckOptions> default_check_options(std::string_view tag, const std::string& cache_dir,
                                             const std::string& source_root, std::string_view debian_arch = "amd64");

Expected<CheckReport> check_cases(const std::vector<KernelCase>& cases, const CheckOptions& opts);

// The model for one case: our incremental patcher over the pipeline for `profile`, x86_64, with
// BPF_F_TEST_RND_HI32's poisoning when the case is loaded with it.
struct ModelResult {
    bool ok = false;
    std::string error;
    Program program;
};
// `privileged`: bpf_capable() of the loader (RewriteOptions::privileged).
ModelResult run_model(const Program& original, passes::KernelProfile profile, bool test_rnd_hi32 = false,
                      const ArchProfile& arch = arch_x86_64(), bool privileged = true);

// The model's instruction arrays against the kernel's after the load (bpf_insn_array_adjust and
// _after_remove moved each entry with every patch and removal): "" when every entry's xlated_off
// agrees, else the first that does not (or a table the guest did not report).
std::string insn_array_difference(const GuestCaseResult& g, const Program& model);

// One case: its agreement, the verifier log of a rejection or crash, the diff, the failing runs.
void print_case_outcome(std::ostream& out, const CaseOutcome& c);
void print_text_report(std::ostream& out, const CheckReport& r, bool verbose);
void print_json_report(std::ostream& out, const CheckReport& r);

}  // namespace patchfuzz::kernel
