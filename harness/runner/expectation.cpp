#include "harness/runner/expectation.hpp"

namespace patchfuzz::harness {

ExpectationResult check_expectation(const Case& c, const CaseReport& r) {
    ExpectationResult res;
    const OracleVerdict* f = r.first_failure();
    res.actual = f ? "fail " + signature_of(*f) : "pass";
    if (c.expect == "pass") {
        res.met = f == nullptr;
        return res;
    }
    const std::string want = c.expect.substr(c.expect.find(' ') + 1);
    for (const auto& v : r.verdicts)
        if (v.verdict.outcome == oracles::Outcome::Fail && signature_of(v) == want) res.met = true;
    if (res.met) res.actual = "fail " + want;
    return res;
}

RunConfig replay_config(const Case& c, const RunConfig& base) {
    RunConfig cfg = base;
    cfg.arches = {c.arch};
    return cfg;
}

}  // namespace patchfuzz::harness
