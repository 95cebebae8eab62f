#include "harness/triage/minimize.hpp"

#include <algorithm>
#include <chrono>

#include "bpf/arch/arch_profile.hpp"
#include "bpf/passes/infer_facts.hpp"
#include "bpf/util/check.hpp"
#include "bpf/passes/rejected_reads.hpp"
#include "gen/shrink.hpp"

namespace patchfuzz::harness {
namespace {

// Verifier facts that hold only because of the code around a call: bpf_loop's inline fitness
// (flags a known 0, the callback a PSEUDO_FUNC load) and a map helper's map (R1 from an ld_imm64).
// A shrink that deletes that code leaves the fact claiming what no verifier would conclude, and the
// "reproducer" then shows a rewrite the kernel can never make. Counted by re-deriving the facts
// from the code alone (passes::infer_facts) and comparing.
uint32_t unjustified_facts(const Program& p) {
    uint32_t claimed = 0;
    for (const auto& a : p.aux) claimed += a.loop_fit_for_inline || a.map_index >= 0;
    if (claimed == 0) return 0;
    Program code;
    code.prog_type = p.prog_type;
    code.insns = p.insns;
    code.maps = p.maps;
    code.kfuncs = p.kfuncs;
    passes::infer_facts(code);
    uint32_t n = 0;
    for (uint32_t i = 0; i < p.len() && i < code.len(); ++i) {
        const InsnAux &a = p.aux[i], &d = code.aux[i];
        n += a.loop_fit_for_inline && !d.loop_fit_for_inline;
        n += a.map_index >= 0 && d.map_index != a.map_index;
    }
    return n;
}

}  // namespace

bool fails_with(const Case& c, const RunConfig& cfg, const std::string& signature) {
    const CaseReport r = run_case(c, cfg);
    for (const auto& v : r.verdicts)
        if (v.verdict.outcome == oracles::Outcome::Fail && signature_of(v) == signature) return true;
    return false;
}

RunConfig narrowed(const RunConfig& cfg, const OracleVerdict& v) {
    RunConfig n = cfg;
    const auto oracle = oracles::parse_oracle(v.verdict.oracle);
    PATCHFUZZ_CHECK(oracle.has_value(), "a failing verdict names one of the runner's oracles");
    n.oracles = {*oracle};
    // A failure names the profile it was seen on (one, or a case oracle's comma list).
    if (!v.arch.empty()) {
        n.arches.clear();
        for (size_t from = 0; from <= v.arch.size();) {
            const size_t comma = std::min(v.arch.find(',', from), v.arch.size());
            const auto arch = arch_by_name(v.arch.substr(from, comma - from));
            PATCHFUZZ_CHECK(arch.has_value(), "a verdict's profile is one of the runner's");
            n.arches.push_back(*arch);
            from = comma + 1;
        }
    }
    return n;
}

MinimizeResult minimize(const Case& failing, const RunConfig& cfg, const std::string& signature,
                        const MinimizeOptions& opts) {
    using Clock = std::chrono::steady_clock;
    const auto t0 = Clock::now();
    MinimizeResult res{failing, 0, 0};
    auto out_of_budget = [&] {
        return res.runs >= opts.max_runs ||
               std::chrono::duration<double>(Clock::now() - t0).count() >= opts.max_seconds;
    };
    // Facts the original already carried without the code to justify them (hand-written cases,
    // generator shortcuts) are tolerated; a shrink may not add more.
    uint32_t unjustified = unjustified_facts(failing.program);
    // Likewise register reads the verifier rejects (a deleted `r0 = 0` before a callback's exit,
    // bpf_loop left with the ctx pointer as nr_loops): no kernel would load the reproducer.
    size_t rejected = passes::rejected_reads(failing.program).size();
    auto try_case = [&](const Case& cand) {
        const uint32_t u = unjustified_facts(cand.program);
        if (u > unjustified) return false;
        const size_t r = passes::rejected_reads(cand.program).size();
        if (r > rejected) return false;
        ++res.runs;
        if (!fails_with(cand, cfg, signature)) return false;
        res.minimized = cand;
        unjustified = u;
        rejected = r;
        ++res.steps;
        return true;
    };

    bool progress = true;
    while (progress && !out_of_budget()) {
        progress = false;
        // Explicit patch lists first: fewer patches make every later run cheaper.
        for (size_t b = 0; b < res.minimized.patches.size() && !progress && !out_of_budget(); ++b) {
            for (size_t p = 0; p < res.minimized.patches[b].patches.size() && !out_of_budget(); ++p) {
                Case cand = res.minimized;
                cand.patches[b].patches.erase(cand.patches[b].patches.begin() + static_cast<std::ptrdiff_t>(p));
                if (cand.patches[b].patches.empty()) cand.patches.erase(cand.patches.begin() + static_cast<std::ptrdiff_t>(b));
                if (try_case(cand)) {
                    progress = true;
                    break;
                }
            }
        }
        if (progress) continue;
        // Explicit patches name positions: shrinking the program under them would move them.
        if (!res.minimized.patches.empty()) break;
        for (Program& p : gen::shrink_candidates(res.minimized.program)) {
            if (out_of_budget()) break;
            Case cand = res.minimized;
            cand.program = std::move(p);
            if (try_case(cand)) {
                progress = true;
                break;
            }
        }
        // Inputs: keep the fewest that still fail.
        for (size_t k = 0; !progress && k < res.minimized.inputs.size() && !out_of_budget(); ++k) {
            Case cand = res.minimized;
            cand.inputs.erase(cand.inputs.begin() + static_cast<std::ptrdiff_t>(k));
            if (try_case(cand)) progress = true;
        }
    }
    return res;
}

}  // namespace patchfuzz::harness
