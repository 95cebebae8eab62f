#include "harness/kernel/kernel_minimize.hpp"

#include <chrono>
#include <optional>
#include <utility>

#include "bpf/passes/zext_marks.hpp"
#include "gen/shape_check.hpp"
#include "gen/shrink.hpp"

namespace patchfuzz::kernel {
namespace {

// The insns `cand` turned into nops when everything else about it is `base`'s (a nop-out
// candidate); nullopt for any other kind of candidate.
std::optional<std::vector<uint32_t>> nopped_insns(const Program& base, const Program& cand) {
    if (cand.len() != base.len() || cand.subprogs.size() != base.subprogs.size() || cand.maps.size() != base.maps.size() ||
        cand.linfo.size() != base.linfo.size() || cand.insn_arrays.size() != base.insn_arrays.size() ||
        cand.kfuncs.size() != base.kfuncs.size())
        return std::nullopt;
    std::vector<uint32_t> nopped;
    for (uint32_t i = 0; i < base.len(); ++i) {
        if (isa::same(base.insns[i], cand.insns[i])) continue;
        if (!isa::is_ja0(cand.insns[i])) return std::nullopt;
        nopped.push_back(i);
    }
    return nopped;
}

// Nop-outs that each still disagreed, applied together: most candidates that still disagree turn
// one insn into a nop, so taking only the best of a round would cost a VM boot per insn. Their
// union, its halves, its quarters, ... are judged in the next round, which so removes many insns
// at once when they are independent (ddmin's idea, one level per round).
struct NopOut {
    std::vector<uint32_t> insns;
    const Program* from;  // the candidate that nopped them (its insns and aux are copied); lives in the round
};

void offer_merged(const Program& base, const std::vector<NopOut>& outs, std::vector<Program>& into) {
    if (outs.size() < 2) return;
    for (size_t parts = 1; parts < outs.size(); parts *= 2) {
        const size_t per = (outs.size() + parts - 1) / parts;
        for (size_t first = 0; first < outs.size(); first += per) {
            const size_t last = std::min(outs.size(), first + per);
            if (last - first < 2) continue;  // a single one was judged already
            Program merged = base;
            for (size_t k = first; k < last; ++k)
                for (uint32_t i : outs[k].insns) {
                    merged.insns[i] = outs[k].from->insns[i];
                    merged.aux[i] = outs[k].from->aux[i];
                }
            if (!gen::check_shape(merged).ok()) continue;
            // With its nops deleted too: otherwise the next round would spend its best on that alone.
            if (std::optional<Program> compact = gen::without_nops(merged); compact && gen::check_shape(*compact).ok())
                into.push_back(std::move(*compact));
            into.push_back(std::move(merged));
        }
    }
}

// Smaller first: the program (gen::shrink_measure), then fewer inputs.
bool smaller(const KernelCase& a, const KernelCase& b) {
    const auto ma = gen::shrink_measure(a.program), mb = gen::shrink_measure(b.program);
    return ma != mb ? ma < mb : a.inputs.size() < b.inputs.size();
}

}  // namespace

KernelMinimizeResult minimize_kernel_finding(const KernelCase& failing, const CaseOutcome& outcome, const BatchChecker& check,
                                             const KernelMinimizeOptions& opts) {
    using Clock = std::chrono::steady_clock;
    const auto t0 = Clock::now();
    KernelMinimizeResult res{failing, outcome, 0, 0, 0, ""};
    const char* const divergence = divergence_of(outcome);
    if (divergence == nullptr) {
        res.ended = "fixpoint";  // nothing disagrees: nothing to keep
        return res;
    }
    std::vector<Program> merged;  // the last round's nop-outs, together
    for (;;) {
        if (opts.stop && opts.stop()) {
            res.ended = "stopped";
            break;
        }
        if (res.rounds >= opts.max_rounds) {
            res.ended = "rounds";
            break;
        }
        if (std::chrono::duration<double>(Clock::now() - t0).count() >= opts.max_seconds) {
            res.ended = "seconds";
            break;
        }
        std::vector<KernelCase> round;
        auto add = [&](Program&& p, std::vector<interp::ExecInput> inputs) {
            KernelCase& kc = round.emplace_back(
                KernelCase{res.minimized.name + "-shrink" + std::to_string(round.size()), std::move(p), std::move(inputs)});
            kc.test_rnd_hi32 = res.minimized.test_rnd_hi32;
            // Poisoned by the kernel wherever its verifier sets no mark: the candidate's marks are
            // the ones the verifier would set on it, not the ones its code had before the shrink.
            if (kc.test_rnd_hi32) {
                for (InsnAux& a : kc.program.aux) a.zext_dst = false;
                passes::add_zext_marks(kc.program);
            }
        };
        for (Program& p : merged) add(std::move(p), res.minimized.inputs);
        merged.clear();
        for (Program& p : gen::shrink_candidates(res.minimized.program, opts.per_round)) add(std::move(p), res.minimized.inputs);
        for (size_t k = 0; k < res.minimized.inputs.size(); ++k) {
            std::vector<interp::ExecInput> fewer = res.minimized.inputs;
            fewer.erase(fewer.begin() + static_cast<std::ptrdiff_t>(k));
            add(Program(res.minimized.program), std::move(fewer));
        }
        if (round.empty()) {
            res.ended = "fixpoint";
            break;
        }
        auto report = check(round);
        ++res.rounds;
        if (!report) {
            res.ended = "checker: " + report.error().to_string();
            break;
        }
        if (report->cases.size() != round.size()) {
            res.ended = "checker: " + std::to_string(report->cases.size()) + " outcomes for " + std::to_string(round.size()) + " cases";
            break;
        }
        res.tried += round.size();
        std::optional<size_t> best;
        std::vector<NopOut> nop_outs;
        for (size_t i = 0; i < round.size(); ++i) {
            const CaseOutcome& o = report->cases[i];
            const char* d = divergence_of(o);
            if (d == nullptr || std::string_view(d) != divergence || o.key != res.outcome.key) continue;
            if (!best || smaller(round[i], round[*best])) best = i;
            if (round[i].inputs.size() == res.minimized.inputs.size())
                if (auto nopped = nopped_insns(res.minimized.program, round[i].program); nopped && !nopped->empty())
                    nop_outs.push_back({std::move(*nopped), &round[i].program});
        }
        if (!best) {
            res.ended = "fixpoint";
            break;
        }
        // The nop-outs are merged onto the best candidate when it is one of them (it then has the
        // same insns but for its nops); after any other kind of shrink their positions mean nothing.
        if (round[*best].inputs.size() == res.minimized.inputs.size() && nopped_insns(res.minimized.program, round[*best].program))
            offer_merged(round[*best].program, nop_outs, merged);
        std::string name = res.minimized.name;
        res.minimized = std::move(round[*best]);
        res.minimized.name = std::move(name);
        res.outcome = report->cases[*best];
        res.outcome.name = res.minimized.name;
        ++res.steps;
    }
    return res;
}

}  // namespace patchfuzz::kernel
