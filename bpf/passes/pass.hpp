#pragma once
// A rewrite pass: decides from the program and its aux data, as the kernel does, and hands
// PatchBatches to whichever Patcher it is given (it cannot tell which; it never reads patched
// code back within one batch). Passes run in the kernel's order (docs/patching.md §5.1).
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bpf/arch/arch_profile.hpp"
#include "bpf/patch/patch.hpp"
#include "bpf/program/program.hpp"

namespace patchfuzz::passes {

using patch::PatchBatch;
using patch::PatchOutcome;

// Which numeric-iterator inline to emit (docs/iterator-isa-arch.md §2). V4 is the correct one; V1 and
// V3 reconstruct the bug classes found in review; Off leaves the kfunc calls alone.
enum class IterInline : uint8_t { V4, V1, V3, Off };

// The bpf_loop and bpf_get_func_arg inlines and the nop removal as the kernel does them (Kernel) or
// with the fix a kernel patch would make for findings 0007, 0008 and 0003 (Fixed):
// corpus/regression/findings/.
//  bpf_loop (0007, 0001-0006): Fixed checks and copies nr_loops as the helper's u32 (`if w1 <= MAX`,
//    `w6 = w1`) and returns -E2BIG as the helper's 64-bit long (`r0 = -E2BIG`); same length.
//  get_func_arg (0008): Fixed drops bits 32-63 of the u32 index after the bound check (`w2 = w2`
//    before `r2 <<= 3`); one insn longer.
//  nop removal (0003): Fixed keeps a `goto +0` an instruction-array entry names,
//    which bpf_opt_remove_nops deletes and bpf_insn_array_adjust_after_remove then marks
//    INSN_DELETED: the gotox through that entry jumps to address 0 (an oops on 7.2 and 7.3).
enum class InlineFix : uint8_t { Kernel, Fixed };
// "buggy" (the kernel's, default) or "fixed"; nullopt for anything else.
inline std::optional<InlineFix> inline_fix_named(std::string_view name) {
    if (name == "buggy") return InlineFix::Kernel;
    if (name == "fixed") return InlineFix::Fixed;
    return std::nullopt;
}

// Which kernel's rewrite rules to follow where they differ (issues 9, 22): bpf-next (default), 6.1,
// 6.12, and the Debian 7.x builds 7.2 (7.2.13) and 7.3 (7.3.4), each pinned to the build it was
// measured on (harness/kernel/kernel_image.cpp kernel_specs).
enum class KernelProfile : uint8_t { BpfNext, K6_1, K6_12, K7_2, K7_3 };
// The profile a command line names: "6.1", "6.12", "7.2", "7.3" or "bpf-next"; nullopt for anything else.
inline std::optional<KernelProfile> kernel_profile_named(std::string_view name) {
    if (name == "6.1") return KernelProfile::K6_1;
    if (name == "6.12") return KernelProfile::K6_12;
    if (name == "7.2") return KernelProfile::K7_2;
    if (name == "7.3") return KernelProfile::K7_3;
    if (name == "bpf-next") return KernelProfile::BpfNext;
    return std::nullopt;
}
inline constexpr const char* kKernelProfileNames = "6.1, 6.12, 7.2, 7.3 or bpf-next";
// True for the profiles that have the rows bpf-next has and 6.x lack (the 7.x builds and bpf-next
// itself); rows where 7.x differs from bpf-next test the profile directly.
inline bool is_7x_or_next(KernelProfile k) {
    return k == KernelProfile::BpfNext || k == KernelProfile::K7_2 || k == KernelProfile::K7_3;
}

// The struct layout a profile's convert_ctx_accesses rewrites ctx accesses to
// (bpf/passes/ctx_fields.hpp): 6.1's own; 6.12, 7.2 and 7.3 share one, and bpf-next is taken to be
// the newest measured build.
inline CtxLayout ctx_layout_of(KernelProfile k) {
    return k == KernelProfile::K6_1 ? CtxLayout::Linux6_1 : CtxLayout::Linux6_12;
}

// A field added here must also be compared by options_alike_but_arch() (pipeline.cpp).
struct RewriteOptions {
    ArchProfile arch;                  // JIT capabilities (bpf/arch/arch_profile.hpp)
    IterInline iter_inline = IterInline::V4;
    KernelProfile kernel = KernelProfile::BpfNext;
    InlineFix loop_inline = InlineFix::Kernel;      // bpf_loop (findings 0001-0007)
    InlineFix func_arg_inline = InlineFix::Kernel;  // bpf_get_func_arg (finding 0008)
    InlineFix nop_removal = InlineFix::Kernel;      // bpf_opt_remove_nops (finding 0003)
    bool privileged = true;            // bpf_capable(): dead-code removal instead of sanitize
    bool test_rnd_hi32 = false;        // BPF_F_TEST_RND_HI32
    uint64_t rnd_hi32_seed = 0;        // deterministic stand-in for get_random_u32()
    // do_misc_fixups row z (patch_call_imm): rewrite every remaining helper call's imm to its
    // address-delta stand-in (internal_calls.hpp call_imm_of_helper). Off by default until the
    // interpreter decodes it (it executes helpers by id).
    bool patch_call_imm = false;
    std::vector<std::string> only;     // pass names to run; empty = all, in kernel order
};

// One batch as it was applied: the input a recording Patcher saw (for oracles and triage).
struct AppliedBatch {
    std::string pass;
    Program before;
    PatchBatch batch;
    PatchOutcome outcome;
};

struct PipelineResult {
    PatchOutcome outcome;               // first failure, or ok
    std::string failed_pass;            // empty when ok
    std::vector<std::string> passes_run;
    // per pass name: how many patches it emitted (pass-trigger coverage for campaigns)
    std::vector<std::pair<std::string, uint32_t>> patch_counts;
};

class Pass {
public:
    virtual ~Pass() = default;
    [[nodiscard]] virtual std::string_view name() const = 0;
    // Emits its batches through `patcher`; returns the first failing outcome, or ok. Const: a pass
    // keeps no state from one call to the next, as run_pass() runs one shared instance per pass,
    // on any thread.
    virtual PatchOutcome run(Program& prog, patch::Patcher& patcher, const RewriteOptions& opts) const = 0;
};

// All pass names in kernel order ("bpf_loop", "dead_code", "misc_fixups", "iter_inline", "zext", ...).
std::vector<std::string_view> pass_names();
// The same names without a fresh vector (for callers on the per-case path).
std::span<const std::string_view> pass_names_view();
// Runs the selected passes in kernel order on `prog`, every batch through `patcher`.
PipelineResult run_pipeline(Program& prog, patch::Patcher& patcher, const RewriteOptions& opts);
// The pass_names()[index] step of run_pipeline() alone (opts.only is not read): its outcome and
// how many patches it emitted. For callers that step through the passes themselves.
struct PassRun {
    PatchOutcome outcome;
    uint32_t patches = 0;
};
PassRun run_pass(size_t index, Program& prog, patch::Patcher& patcher, const RewriteOptions& opts);
// True when run_pipeline(prog, P, a) and run_pipeline(prog, P, b) hand any patcher P the same
// batches on the same programs: the options agree but for arch profile facts that no insn of
// `prog` makes a pass read. Lets callers rewrite once for x86_64 and arm64, which differ only at
// PROBE_MEM loads and a few helper calls. Conservative: false means "may differ".
bool rewrites_alike(const Program& prog, const RewriteOptions& a, const RewriteOptions& b);
// Every field of the options but the arch profile agrees.
bool options_alike_but_arch(const RewriteOptions& a, const RewriteOptions& b);
// How many leading passes of pass_names() read no arch profile fact (bpf_loop, dead_code): under
// options alike but for the arch they hand a patcher the same batches on the same programs, so a
// caller rewriting for several profiles may run them once.
size_t arch_independent_prefix();

}  // namespace patchfuzz::passes
