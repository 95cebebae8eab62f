#include "harness/triage/triage.hpp"

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "bpf/interp/interp.hpp"
#include "bpf/util/atomic_file.hpp"
#include "bpf/util/check.hpp"
#include "harness/triage/minimize.hpp"
#include "harness/triage/reproducer.hpp"
#include "harness/version/build_version.hpp"
#include "harness/triage/root_cause.hpp"

namespace patchfuzz::harness {

namespace fs = std::filesystem;

std::string bucket_slug(const std::string& signature) {
    std::string s;
    for (char ch : signature) {
        if (ch == '/')
            s += '.';
        else if (std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' || ch == '.')
            s += ch;
        else
            s += '_';
    }
    return s;
}

namespace {

uint64_t read_hits(const fs::path& p) {
    std::ifstream f(p);
    uint64_t n = 0;
    f >> n;
    return n;
}

// The kernel model's rewrite of the case under `arch` (for __xlated lines).
Program model_rewrite(const Case& c, const std::string& arch_name) {
    Program p = c.program;
    auto patcher = patch::make_patcher("incremental");
    if (!c.patches.empty()) {
        for (const auto& b : c.patches)
            if (!patcher->apply(p, b).ok()) break;
        return p;
    }
    passes::RewriteOptions o = c.options;
    if (auto a = arch_by_name(arch_name)) o.arch = *a;
    (void)passes::run_pipeline(p, *patcher, o);
    return p;
}

// The bucket's `symptoms` file: one "<count> <signature>" line per symptom seen, sorted. Updated
// in place by one writer at a time in practice (a campaign's workers rarely hit one bucket in the
// same millisecond; a lost count there costs a figure, never the reproducer).
void add_symptom(const fs::path& bucket, const std::string& signature) {
    std::map<std::string, uint64_t> seen;
    {
        std::ifstream f(bucket / "symptoms");
        uint64_t n;
        std::string sig;
        while (f >> n >> sig) seen[sig] += n;
    }
    ++seen[signature];
    std::string text;
    for (const auto& [sig, n] : seen) text += std::to_string(n) + " " + sig + "\n";
    (void)write_file_atomic((bucket / "symptoms").string(), text);
}

}  // namespace

BucketClaim claim_bucket(const std::string& out_dir, const std::string& signature) {
    const fs::path bucket = fs::path(out_dir) / "findings" / bucket_slug(signature);
    std::error_code ec;
    fs::create_directories(bucket.parent_path(), ec);
    // mkdir is atomic: exactly one worker (or run) creates the bucket and writes its reproducer.
    const bool created = fs::create_directory(bucket, ec);
    const fs::path hits = bucket / "hits";
    (void)write_file_atomic(hits.string(), std::to_string(read_hits(hits) + 1) + "\n");
    // A bucket without its reproducer was left by a campaign killed while writing it: redo it.
    return BucketClaim{bucket.string(), created || !fs::exists(bucket / "repro.case")};
}

TriageResult triage_failure(const Case& failing, const CaseReport& report, const RunConfig& cfg,
                            const std::string& out_dir, const MinimizeOptions& minimize_opts) {
    TriageResult tr;
    const OracleVerdict* first = report.first_failure();
    PATCHFUZZ_CHECK(first != nullptr, "triage_failure called on a case that did not fail");
    tr.signature = signature_of(*first);
    tr.bucket = root_cause_key(*first);
    const BucketClaim claim = claim_bucket(out_dir, tr.bucket);
    add_symptom(claim.dir, tr.signature);
    const fs::path bucket = claim.dir;
    tr.bucket_dir = claim.dir;
    tr.original_insns = failing.program.len();
    const fs::path case_path = bucket / "repro.case";
    tr.new_bucket = claim.new_bucket;
    tr.replay_command = "patchfuzz replay " + case_path.string();
    if (!tr.new_bucket) return tr;

    // The case as found, before minimization (the minimized one is what a developer reads first,
    // the original is the evidence if a shrink step changed the story).
    {
        Case orig = failing;
        orig.arch = first->arch.empty() ? orig.arch : first->arch;
        orig.expect = "fail " + tr.signature;
        (void)write_case_file_atomic(orig, (bucket / "original.case").string());
    }
    const RunConfig narrow = narrowed(cfg, *first);
    MinimizeResult m = minimize(failing, narrow, tr.signature, minimize_opts);
    Case& min = m.minimized;
    tr.minimized_insns = min.program.len();
    // Determinism guard: two more replays must reproduce the signature.
    tr.deterministic = fails_with(min, narrow, tr.signature) && fails_with(min, narrow, tr.signature);

    min.arch = first->arch.empty() ? min.arch : first->arch;
    min.expect = "fail " + tr.signature;
    min.comments.push_back("signature: " + tr.signature);
    min.comments.push_back("verdict: " + first->verdict.reason);
    min.comments.push_back("minimized: " + std::to_string(tr.original_insns) + " -> " +
                           std::to_string(tr.minimized_insns) + " insns in " + std::to_string(m.steps) + " steps, " +
                           std::to_string(m.runs) + " runs" + (tr.deterministic ? "" : " (NOT deterministic)"));
    min.comments.push_back("replay: " + tr.replay_command);
    (void)write_case_file_atomic(min, case_path.string());
    {
        // A campaign judges without the exec oracle's traces (RunConfig::failure_details): the
        // case is run again in full for its report (the runs are deterministic: the same failure).
        const OracleVerdict* shown = first;
        CaseReport detailed;
        if (!cfg.failure_details) {
            RunConfig full = cfg;
            full.failure_details = true;
            detailed = run_case(failing, full);
            for (const OracleVerdict& v : detailed.verdicts)
                if (v.verdict.outcome == oracles::Outcome::Fail && signature_of(v) == tr.signature) {
                    shown = &v;
                    break;
                }
        }
        std::ostringstream detail;
        detail << "version: " << build::version_string() << "\nbucket: " << tr.bucket << "\nsignature: " << tr.signature << "\nreason: " << shown->verdict.reason << "\ncounterexample:\n"
               << shown->verdict.counterexample << "\n";
        (void)write_file_atomic((bucket / "verdict.txt").string(), detail.str());
    }
    const Program rewritten = model_rewrite(min, min.arch);
    const std::string fn = "patchfuzz_" + bucket_slug(tr.signature);
    std::string fname = fn;
    for (char& ch : fname)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
    (void)write_file_atomic((bucket / "repro_selftest.c").string(),
                            to_selftest_snippet(min, rewritten, tr.signature, fname));
    if (first->verdict.oracle == "exec" && !min.inputs.empty()) {
        auto arch = arch_by_name(min.arch);
        const auto ref = interp::execute(min.program, min.inputs[0], arch ? *arch : arch_x86_64());
        (void)write_file_atomic((bucket / "repro.data").string(), to_conformance_data(min, ref.r0, tr.signature));
    }
    return tr;
}

}  // namespace patchfuzz::harness
