// The original program (kfunc and helper calls run by reference models) against its rewrite under
// x86-64, arm64 and 32-bit-JIT semantics, on the generated inputs.
//
// Failures that match a filed finding (corpus/regression/findings, harness/campaign/
// known_findings.hpp: same signature and, for exec, the same causing pass) are genuine kernel
// behaviour already reported, not crashes of this target; everything else aborts as usual.
// $PATCHFUZZ_KNOWN_FINDINGS names another directory ("" for none); the default is the source
// tree's corpus/regression/findings, found from this file's path.
#include <cstdlib>
#include <string>

#include "fuzz/fuzz_common.hpp"
#include "gen/mutator.hpp"
#include "harness/campaign/known_findings.hpp"

PATCHFUZZ_GENERATOR_MUTATOR()

namespace {

std::string known_findings_dir() {
    if (const char* e = std::getenv("PATCHFUZZ_KNOWN_FINDINGS")) return e;
    return PATCHFUZZ_KNOWN_FINDINGS_DIR;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const patchfuzz::harness::RunConfig cfg = [] {
        patchfuzz::harness::RunConfig c;
        c.oracles = {patchfuzz::oracles::OracleId::Exec};
        c.exec_inputs = 2;
        return c;
    }();
    static const patchfuzz::harness::KnownFindings known = patchfuzz::harness::KnownFindings::load(known_findings_dir(), cfg);
    const patchfuzz::harness::Case c = patchfuzz::fuzz::case_from_bytes(data, size);
    const patchfuzz::harness::CaseReport report = known.without_known(patchfuzz::fuzz::run_counted(c, cfg));
    if (report.failed()) patchfuzz::fuzz::report_failure(c, report);
    return 0;
}
