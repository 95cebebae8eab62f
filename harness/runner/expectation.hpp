#pragma once
// A case's expected verdict ("pass", or "fail <signature>") checked against a report: what
// `patchfuzz replay` and the regression corpus use.
#include <string>

#include "harness/case/case_file.hpp"
#include "harness/runner/runner.hpp"

namespace patchfuzz::harness {

struct ExpectationResult {
    bool met = false;
    std::string actual;  // "pass", or "fail <signature of the first failure>"
};

ExpectationResult check_expectation(const Case& c, const CaseReport& r);

// The run configuration a stored case replays under: its own arch, its own patchers.
RunConfig replay_config(const Case& c, const RunConfig& base);

}  // namespace patchfuzz::harness
