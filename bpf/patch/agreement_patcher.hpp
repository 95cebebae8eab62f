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
#include "bpf/patch/side_by_side.hpp"

namespace patchfuzz::patch {

class AgreementPatcher final : public Patcher {
public:
    // `agreed`: each other patcher's agreement on the batches before these (default: all true),
    // e.g. those of the passes another arch profile shares.
    AgreementPatcher(Patcher& reference, std::vector<Patcher*> others, std::vector<bool> agreed = {})
        : reference_(reference),
          agreed_(agreed.empty() ? std::vector<bool>(others.size(), true) : std::move(agreed)),
          side_(std::move(others)) {}
    [[nodiscard]] std::string_view name() const override { return reference_.name(); }
    PatchOutcome apply(Program& prog, const PatchBatch& batch) override {
        // One that disagreed once is not applied again: its rewrite is made apart anyway.
        PatchOutcome outcome = side_.apply(reference_, prog, batch, agreed_);
        for (size_t i = 0; i < side_.size(); ++i) agreed_[i] = agreed_[i] && side_.same(i);
        return outcome;
    }
    // Whether others[i] agreed with the reference on every batch so far.
    [[nodiscard]] bool agreed(size_t i) const { return agreed_[i]; }
    [[nodiscard]] const std::vector<bool>& agreement() const { return agreed_; }

private:
    Patcher& reference_;
    std::vector<bool> agreed_;
    SideBySide side_;
};

}  // namespace patchfuzz::patch
