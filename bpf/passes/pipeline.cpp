// run_pipeline(): the rewrite passes in the order bpf_check() runs them (docs/patching.md §5.1):
// the 7.x constant-branch folding before the main walk (const_branches.cpp), bpf_optimize_bpf_loop, dead code (privileged removal or sanitize), do_misc_fixups (whose kfunc
// fixup hosts the iterator inline; a separate pass here so it can be selected), zext.
#include <algorithm>
#include <array>
#include <functional>
#include <iterator>

#include "bpf/passes/pass_util.hpp"
#include "bpf/util/check.hpp"

namespace patchfuzz::passes {
namespace {

struct Entry {
    std::string_view name;
    std::unique_ptr<Pass> (*make)();
    bool reads_arch;  // whether any decision of the pass reads RewriteOptions::arch
};

constexpr Entry kPasses[] = {
    {"const_branches", make_const_branches_pass, false},
    {"bpf_loop", make_bpf_loop_pass, false},       {"dead_code", make_dead_code_pass, false},
    {"ctx_access", make_ctx_access_pass, true},
    {"misc_fixups", make_misc_fixups_pass, true},  {"iter_inline", make_iter_inline_pass, false},
    {"zext", make_zext_pass, true},
};

// Counts the patches a pass emits without changing what the inner patcher does.
class CountingPatcher final : public patch::Patcher {
public:
    explicit CountingPatcher(patch::Patcher& inner) : inner_(inner) {}
    std::string_view name() const override { return inner_.name(); }
    PatchOutcome apply(Program& prog, const patch::PatchBatch& batch) override {
        count += static_cast<uint32_t>(batch.patches.size());
        return inner_.apply(prog, batch);
    }
    uint32_t count = 0;

private:
    patch::Patcher& inner_;
};

constexpr std::array<std::string_view, std::size(kPasses)> kPassNames = [] {
    std::array<std::string_view, std::size(kPasses)> names{};
    for (size_t i = 0; i < names.size(); ++i) names[i] = kPasses[i].name;
    return names;
}();

// The passes keep no state between runs (pass.hpp): one instance of each serves every call, on
// every thread, instead of one allocated per run.
const Pass& pass_instance(size_t index) {
    static const auto instances = [] {
        std::array<std::unique_ptr<Pass>, std::size(kPasses)> a;
        for (size_t i = 0; i < a.size(); ++i) a[i] = kPasses[i].make();
        return a;
    }();
    return *instances[index];
}

}  // namespace

std::vector<std::string_view> pass_names() { return {kPassNames.begin(), kPassNames.end()}; }

std::span<const std::string_view> pass_names_view() { return kPassNames; }

PassRun run_pass(size_t index, Program& prog, patch::Patcher& patcher, const RewriteOptions& opts) {
    PATCHFUZZ_CHECK(index < std::size(kPasses), "run_pass: no such pass");
    const Pass& pass = pass_instance(index);
    CountingPatcher counting(patcher);
    PassRun run;
    run.outcome = pass.run(prog, counting, opts);
    run.patches = counting.count;
    return run;
}

PipelineResult run_pipeline(Program& prog, patch::Patcher& patcher, const RewriteOptions& opts) {
    PipelineResult res;
    for (size_t i = 0; i < std::size(kPasses); ++i) {
        const std::string_view name = kPasses[i].name;
        if (!opts.only.empty() && std::find(opts.only.begin(), opts.only.end(), name) == opts.only.end()) continue;
        PassRun run = run_pass(i, prog, patcher, opts);
        res.passes_run.emplace_back(name);
        res.patch_counts.emplace_back(std::string(name), run.patches);
        if (!run.outcome.ok()) {
            res.outcome = std::move(run.outcome);
            res.failed_pass = std::string(name);
            return res;
        }
    }
    return res;
}

size_t arch_independent_prefix() {
    size_t n = 0;
    while (n < std::size(kPasses) && !kPasses[n].reads_arch) ++n;
    return n;
}

bool options_alike_but_arch(const RewriteOptions& a, const RewriteOptions& b) {
    return a.iter_inline == b.iter_inline && a.kernel == b.kernel && a.loop_inline == b.loop_inline &&
           a.func_arg_inline == b.func_arg_inline && a.nop_removal == b.nop_removal && a.privileged == b.privileged &&
           a.test_rnd_hi32 == b.test_rnd_hi32 && a.rnd_hi32_seed == b.rnd_hi32_seed && a.patch_call_imm == b.patch_call_imm &&
           a.only == b.only;
}

bool rewrites_alike(const Program& prog, const RewriteOptions& a, const RewriteOptions& b) {
    if (!options_alike_but_arch(a, b)) return false;
    // zext reads needs_zext (compared by misc_fixups_arch_sensitive), ctx_access the arch's
    // MIN_NAPI_ID; the other passes read no arch fact (map_lookup_inline, called from
    // do_misc_fixups, reads supports_percpu_insn).
    return !misc_fixups_arch_sensitive(prog, a, b) && !ctx_access_arch_sensitive(prog, a, b);
}

}  // namespace patchfuzz::passes
