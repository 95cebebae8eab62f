#pragma once
// A Patcher that applies every batch with a reference patcher and, first, with each of several
// other patchers on a copy of the same program, and remembers whether each other one gave the
// very outcome and program of the reference every time. The passes are deterministic functions
// of the program and the outcomes they see, so an other patcher that agreed on every batch of a
// pipeline would have made the reference's whole rewrite: a caller that needs every patcher's
// rewrite runs the passes once instead of once per patcher.
#include <cstddef>
#include <vector>

#include "bpf/patch/patch.hpp"

namespace patchfuzz::patch {

class AgreementPatcher final : public Patcher {
public:
    // `agreed`: each other patcher's agreement on the batches before these (default: all true),
    // e.g. those of the passes another arch profile shares.
    AgreementPatcher(Patcher& reference, std::vector<Patcher*> others, std::vector<bool> agreed = {})
        : reference_(reference),
          others_(std::move(others)),
          agreed_(agreed.empty() ? std::vector<bool>(others_.size(), true) : std::move(agreed)),
          scratch_(others_.size()),
          outcomes_(others_.size()) {}
    [[nodiscard]] std::string_view name() const override { return reference_.name(); }
    PatchOutcome apply(Program& prog, const PatchBatch& batch) override {
        for (size_t i = 0; i < others_.size(); ++i) {
            if (!agreed_[i]) continue;  // its rewrite is made apart anyway
            scratch_[i] = prog;         // copy-assigned: the storage of the last batch is reused
            outcomes_[i] = others_[i]->apply(scratch_[i], batch);
        }
        const PatchOutcome outcome = reference_.apply(prog, batch);
        for (size_t i = 0; i < others_.size(); ++i)
            agreed_[i] = agreed_[i] && outcomes_[i] == outcome && scratch_[i] == prog;
        return outcome;
    }
    // Whether others[i] agreed with the reference on every batch so far.
    [[nodiscard]] bool agreed(size_t i) const { return agreed_[i]; }
    [[nodiscard]] const std::vector<bool>& agreement() const { return agreed_; }

private:
    Patcher& reference_;
    std::vector<Patcher*> others_;
    std::vector<bool> agreed_;
    std::vector<Program> scratch_;          // each other patcher's result of the last batch
    std::vector<PatchOutcome> outcomes_;    // and its outcome (kept, like scratch_, for reuse)
};

}  // namespace patchfuzz::patch
