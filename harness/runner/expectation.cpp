#include "harness/runner/expectation.hpp"

#include "bpf/arch/arch_profile.hpp"
#include "bpf/util/check.hpp"

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
    const auto arch = arch_by_name(c.arch);
    PATCHFUZZ_CHECK(arch.has_value(), "a case's arch is checked where it is read");
    cfg.arches = {*arch};
    return cfg;
}

}  // namespace patchfuzz::harness
