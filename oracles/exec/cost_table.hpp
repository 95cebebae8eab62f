#pragma once
// The seed's loop-shape table reproduced by the per-arch cost model (docs/iterator-isa-arch.md §5):
// the three shapes are built (bpf/interp/loop_programs.hpp), the inlined one by running the real
// iter_inline pass (V4) over the kfunc-call one, then interpreted with the scoreboard
// (bpf/interp/cost_model.hpp). Cycles per iteration = difference of two runs (2000 and 1000
// iterations), so setup code cancels out. Throughput is calibrated on the inlined column
// (K = seed M/s x model cycles), as §5.2 does; only ratios are meaningful.
#include <array>
#include <string>
#include <vector>

#include "bpf/util/error.hpp"

namespace patchfuzz::oracles::exec {

enum Shape : int { kBpfLoop = 0, kBpfForCall = 1, kBpfForInlined = 2 };
inline constexpr const char* kShapeNames[3] = {"bpf_loop", "bpf_for (call)", "bpf_for (inlined)"};

struct CostRow {
    std::string arch;
    std::array<double, 3> cycles{};     // model cycles per iteration
    std::array<double, 3> predicted{};  // M iterations/s after calibration
    std::array<double, 3> seed{};       // the seed's measured M/s
    std::array<double, 3> insns{};      // BPF insns per iteration (interpreted steps)
    double k = 0;                       // calibration constant (M cycles/s)
    [[nodiscard]] double model_inl_call() const { return cycles[kBpfForCall] / cycles[kBpfForInlined]; }
    [[nodiscard]] double seed_inl_call() const { return seed[kBpfForInlined] / seed[kBpfForCall]; }
    [[nodiscard]] double model_inl_loop() const { return cycles[kBpfLoop] / cycles[kBpfForInlined]; }
    [[nodiscard]] double seed_inl_loop() const { return seed[kBpfForInlined] / seed[kBpfLoop]; }
};

// One row per arch: x86_64, arm64.
Expected<std::vector<CostRow>> cost_table();

}  // namespace patchfuzz::oracles::exec
