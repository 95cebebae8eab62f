#pragma once
// Triage: a failing case -> minimized, deduplicated, replayed twice, written as a reproducer in
// three forms (our .case, a bpf_conformance .data for execution findings, a kernel selftest
// snippet). Buckets are directories named after the failure's root cause (root_cause.hpp), so the
// same bug found twice (by any worker, in any run, through any symptom, on any arch) is one bucket;
// every symptom seen is listed in the bucket's `symptoms` file with its count.
#include <cstdint>
#include <string>

#include "harness/case/case_file.hpp"
#include "harness/triage/minimize.hpp"
#include "harness/runner/runner.hpp"

namespace patchfuzz::harness {

struct TriageResult {
    bool new_bucket = false;       // false: the bucket existed already (a duplicate)
    bool deterministic = true;     // the minimized case failed the same way on two replays
    std::string signature;         // oracle/pass/patch-kind/divergence/arch (the symptom)
    std::string bucket;            // the root cause (root_cause_key)
    std::string bucket_dir;        // <out>/findings/<slug>
    uint32_t original_insns = 0;
    uint32_t minimized_insns = 0;
    std::string replay_command;    // one line a developer can paste
};

// Directory-safe form of a signature ("structural/misc_fixups/replace/aux-slot/x86_64" ->
// "structural.misc_fixups.replace.aux-slot.x86_64").
std::string bucket_slug(const std::string& signature);

// The bucket of `signature` under out_dir/findings/, created if missing, with its `hits` count
// incremented. new_bucket: the caller writes the reproducer (repro.case last: its presence marks a
// complete bucket).
struct BucketClaim {
    std::string dir;
    bool new_bucket = false;
};
BucketClaim claim_bucket(const std::string& out_dir, const std::string& signature);

// `failing` must fail under `cfg` with `report.first_failure()`. Writes the bucket atomically
// (temp + fsync + rename per file) under out_dir/findings/. Duplicates are counted in the bucket's
// `hits` file and not minimized again. Under a `cfg` without failure details, a new bucket's
// verdict.txt comes from one more run of `failing` in full.
// `minimize_opts` bounds the minimization (a campaign passes what is left of its --seconds).
TriageResult triage_failure(const Case& failing, const CaseReport& report, const RunConfig& cfg,
                            const std::string& out_dir, const MinimizeOptions& minimize_opts = {});

}  // namespace patchfuzz::harness
