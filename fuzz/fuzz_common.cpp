#include "fuzz/fuzz_common.hpp"

#include <cstdio>
#include <cstdlib>

#include "bpf/util/atomic_file.hpp"
#include "gen/mutator.hpp"
#include "harness/triage/triage.hpp"

namespace patchfuzz::fuzz {
namespace {

// One counter per relocation-coverage cell (bpf/patch/reloc_coverage.hpp) in the section libFuzzer
// reads as extra coverage: an input that hits a cell no earlier input hit (or hits it in a new
// count bucket) is new coverage to libFuzzer's own guidance, like a new edge. Other engines and
// the replay builds ignore the section.
__attribute__((section("__libfuzzer_extra_counters"), used)) uint8_t g_reloc_counters[patch::kCoverageCellsMax];

}  // namespace

harness::Case case_from_bytes(const uint8_t* data, size_t size) {
    gen::GeneratedCase g = gen::decode_bytes(data, size);
    harness::Case c;
    c.program = std::move(g.program);
    c.inputs = std::move(g.inputs);
    c.comments = {"found-by: a libFuzzer target (bytes decoded with gen/byte_source)"};
    return c;
}

void report_failure(const harness::Case& c, const harness::CaseReport& report) {
    const harness::OracleVerdict* f = report.first_failure();
    const std::string sig = f ? harness::signature_of(*f) : "unknown";
    const char* dir = std::getenv("PATCHFUZZ_FUZZ_OUT");
    const std::string path = std::string(dir ? dir : ".") + "/crash-" + harness::bucket_slug(sig) + ".case";
    harness::Case out = c;
    out.expect = "fail " + sig;
    if (f) out.comments.push_back("verdict: " + f->verdict.reason);
    (void)harness::write_case_file_atomic(out, path);
    std::fprintf(stderr, "patchfuzz: property failed: %s\n  %s\n  %s\n  replay: patchfuzz replay %s\n", sig.c_str(),
                 f ? f->verdict.reason.c_str() : "", f ? f->verdict.counterexample.c_str() : "", path.c_str());
    std::abort();
}

harness::CaseReport run_counted(const harness::Case& c, const harness::RunConfig& cfg) {
    thread_local patch::CoverageSet cov;
    cov.clear();
    harness::RunConfig counted = cfg;
    counted.coverage = &cov;
    harness::CaseReport r = harness::run_case(c, counted);
    const std::vector<uint8_t>& bits = cov.bits();
    for (size_t i = 0; i < bits.size(); ++i)
        if (bits[i] && g_reloc_counters[i] != UINT8_MAX) ++g_reloc_counters[i];
    return r;
}

void check_case(const harness::Case& c, const harness::RunConfig& cfg) {
    const harness::CaseReport r = run_counted(c, cfg);
    if (r.failed()) report_failure(c, r);
}

}  // namespace patchfuzz::fuzz
