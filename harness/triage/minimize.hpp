#pragma once
// BPF-aware delta debugging of a failing case: repeatedly take the first shrink candidate
// (gen/shrink.hpp: ja +0 replacement, smaller offsets/immediates, no-op deletion with jump repair,
// dropped subprogs and side-table entries — every candidate valid and strictly smaller) and the
// first dropped explicit patch that still fail with the same semantic signature.
#include <cstdint>
#include <string>

#include "harness/case/case_file.hpp"
#include "harness/runner/runner.hpp"

namespace patchfuzz::harness {

struct MinimizeOptions {
    uint32_t max_runs = 4000;   // runner calls
    double max_seconds = 20;
};

struct MinimizeResult {
    Case minimized;
    uint32_t steps = 0;  // accepted shrinks
    uint32_t runs = 0;   // runner calls made
};

// True when some verdict of running `c` under `cfg` has this signature.
bool fails_with(const Case& c, const RunConfig& cfg, const std::string& signature);

MinimizeResult minimize(const Case& failing, const RunConfig& cfg, const std::string& signature,
                        const MinimizeOptions& opts = {});

// The runner configuration narrowed to what reproduces one verdict (its oracle and arch): what the
// minimizer and replays use, so they stay fast.
RunConfig narrowed(const RunConfig& cfg, const OracleVerdict& v);

}  // namespace patchfuzz::harness
