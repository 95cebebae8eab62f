#pragma once
// PluginPatcher: an external batched patcher loaded with dlopen through the stable C ABI of
// include/patchfuzz/patcher.h, wrapped as a patch::Patcher so the runner checks it against the
// incremental model on every case. A plugin that crashes, hangs or writes into its input is
// contained (plugin_patcher.cpp says how) and reported as a failed patch outcome naming it.
#include <memory>
#include <string>

#include "bpf/patch/patch.hpp"
#include "bpf/util/error.hpp"

namespace patchfuzz::harness {

class PluginPatcher : public patch::Patcher {
public:
    // Errors: missing file, not a shared object, missing symbols, wrong ABI version — each with the
    // path and what was expected. A call that takes longer than `timeout_seconds` counts as a hang.
    // The plugin runs in this process until it first misbehaves, then in a host process; with
    // `isolated`, in the host process from the first call (slower: a process switch per call).
    static constexpr double kDefaultTimeoutSeconds = 2;
    static Expected<std::unique_ptr<PluginPatcher>> open(const std::string& path,
                                                          double timeout_seconds = kDefaultTimeoutSeconds,
                                                          bool isolated = false);
    ~PluginPatcher() override;
    [[nodiscard]] std::string_view name() const override { return name_; }
    patch::PatchOutcome apply(Program& prog, const patch::PatchBatch& batch) override;

private:
    PluginPatcher() = default;
    struct Impl;
    std::unique_ptr<Impl> impl_;
    std::string name_;
};

}  // namespace patchfuzz::harness
