#pragma once
// One batch applied side by side: each other patcher to a copy of the program, then the reference
// patcher to the program itself; which others gave the reference's very outcome and program. The
// core of AgreementPatcher (agreement over a whole pipeline) and of the campaign runner's
// recording patcher (a structural verdict per batch).
#include <cstddef>
#include <utility>
#include <vector>

#include "bpf/patch/patch.hpp"

namespace patchfuzz::patch {

class SideBySide {
public:
    explicit SideBySide(std::vector<Patcher*> others)
        : others_(std::move(others)), results_(others_.size()), outcomes_(others_.size()), same_(others_.size(), false) {}

    // Applies `batch`: others[i] to a copy of `prog` (only where `run` is empty or run[i]; the
    // others count as not the same), then `reference` to `prog`. Returns the reference's outcome.
    PatchOutcome apply(Patcher& reference, Program& prog, const PatchBatch& batch, const std::vector<bool>& run = {}) {
        for (size_t i = 0; i < others_.size(); ++i) {
            if (!runs(run, i)) continue;
            // The storage of the last batch's result is reused.
            outcomes_[i] = others_[i]->apply_to(prog, results_[i], batch);
        }
        PatchOutcome outcome = reference.apply(prog, batch);
        for (size_t i = 0; i < others_.size(); ++i)
            same_[i] = runs(run, i) && outcomes_[i] == outcome && results_[i] == prog;
        return outcome;
    }

    [[nodiscard]] size_t size() const { return others_.size(); }
    // Whether others[i] gave the reference's very outcome and program on the last batch.
    [[nodiscard]] bool same(size_t i) const { return same_[i]; }
    [[nodiscard]] const PatchOutcome& outcome(size_t i) const { return outcomes_[i]; }
    // others[i]'s program after the last batch, moved out (the next copy then starts afresh).
    Program take_result(size_t i) {
        Program p = std::move(results_[i]);
        results_[i] = Program{};
        return p;
    }

private:
    static bool runs(const std::vector<bool>& run, size_t i) { return run.empty() || run[i]; }

    std::vector<Patcher*> others_;
    std::vector<Program> results_;        // each other patcher's result of the last batch
    std::vector<PatchOutcome> outcomes_;  // and its outcome
    std::vector<bool> same_;
};

}  // namespace patchfuzz::patch
