#pragma once
// Measurement harness behind `patchfuzz bench`: per workload, a verification + warm-up run of every
// patcher (their outputs must be identical), then R timed repetitions on fresh copies of the
// program (the copy is outside the clock), reported as median and spread; and in the same run a
// memcpy baseline of every array the batched patcher must write (the physical floor).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "bench/bench_workload.hpp"

namespace patchfuzz::patch {

struct Timing {
    bool measured = false;
    std::string note;         // why it was skipped, or "reps reduced to fit the time budget"
    uint32_t reps = 0;
    double median_ns = 0, min_ns = 0, max_ns = 0;
    double mad_ns = 0;        // median absolute deviation
};

struct BenchOptions {
    std::vector<std::string> patchers{"incremental", "batched"};
    uint32_t reps = 5;
    uint32_t max_incremental_insns = 200000;  // the O(N*M) patcher is skipped above this
    double budget_s = 30;                     // per patcher and workload: fewer reps if one run is slow
    bool verify = true;                       // compare the patchers' outputs before timing
};

struct BenchResult {
    std::string workload;
    uint32_t insns = 0, patches = 0, new_insns = 0;
    size_t moved_bytes = 0;
    std::vector<std::pair<std::string, Timing>> patchers;
    Timing memcpy_baseline;
    bool verified = false;      // every measured patcher produced the same Program and outcome
    std::string verify_error;   // first difference, when not
    [[nodiscard]] const Timing* timing(const std::string& name) const;
};

BenchResult run_workload(const Workload& w, const BenchOptions& opt);

// Least-squares slope of log(y) over log(x): the growth exponent of a sweep.
double fit_exponent(const std::vector<std::pair<double, double>>& xy);

}  // namespace patchfuzz::patch
