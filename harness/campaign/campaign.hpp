#pragma once
// A fuzzing campaign (`patchfuzz fuzz`): in-process generation through the generator core, every
// case through the runner, failures through triage, a live status line and a summary. With
// jobs > 1, J worker processes run disjoint case indices and stream their figures to the parent,
// which merges them (a crashed worker is reported, not fatal).
#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/campaign/kernel_stream.hpp"
#include "harness/campaign/reloc_feedback.hpp"
#include "harness/runner/runner.hpp"

namespace patchfuzz::harness {

struct CampaignConfig {
    uint64_t seed = 1;             // case i uses a seed derived from (seed, i): replayable one by one
    double seconds = 0;            // 0 = no time limit
    uint64_t runs = 0;             // 0 = no case limit (one of seconds/runs must be set)
    uint32_t jobs = 1;
    RunConfig run;                 // oracles, arches, patchers
    std::string profile;           // gen profile name, empty = random small programs
    uint32_t max_insns = 96;
    std::string corpus_dir;        // .case files replayed first; new-coverage cases saved here
    // `--seeds`: programs (of .case files and BPF objects) whose structure-aware mutants make half
    // of the generated cases (gen/seed_case.hpp mutate_program; knob "seeds"). `seeds_from` is
    // what the user named, for the replay line of a finding.
    std::vector<Case> seeds;
    std::string seeds_from;
    std::string out_dir = "patchfuzz-out";
    bool status_line = true;       // live status on stderr
    std::string iter_inline = "v4";
    // the bpf_loop / get_func_arg inlines and the nop removal: the kernel's (default) or the fixed variants
    passes::InlineFix loop_inline = passes::InlineFix::Kernel, func_arg_inline = passes::InlineFix::Kernel,
                      nop_removal = passes::InlineFix::Kernel;
    std::optional<KernelStreamConfig> kernel;  // the `kernel` oracle: batches through a real kernel in qemu
    // Filed findings (harness/campaign/known_findings.hpp): failures matching them are counted as
    // known, not triaged into new buckets. Empty: none.
    std::string known_dir;
};

struct CampaignSummary {
    uint64_t seed = 0;
    double seconds = 0;
    uint64_t cases = 0;
    uint64_t corpus_cases = 0;     // of which replayed from --corpus
    uint64_t insns = 0;            // total program length over all cases
    std::map<std::string, uint64_t> verdicts;      // pass/fail/unknown/skip -> count
    std::map<std::string, uint64_t> unknown_reasons;
    std::map<std::string, uint64_t> pass_triggers; // cases in which each pass emitted patches
    uint64_t findings = 0;         // failing cases with a new (not known) failure
    uint64_t known = 0;            // failing cases whose every failure is a known finding
    std::map<std::string, uint64_t> known_hits;  // per known signature
    uint32_t known_files = 0;      // filed findings loaded from CampaignConfig::known_dir
    double first_finding_s = -1;   // seconds into the campaign of the first finding (-1: none)
    std::vector<std::string> buckets;  // distinct signatures
    uint64_t corpus_added = 0;
    uint32_t workers_crashed = 0;
    std::optional<KernelStreamFigures> kernel;  // with the `kernel` oracle
    RelocFigures reloc;  // relocation coverage per cell, and the time per case knob

    [[nodiscard]] double cases_per_sec() const { return seconds > 0 ? double(cases) / seconds : 0; }
    [[nodiscard]] double mean_insns() const { return cases > 0 ? double(insns) / double(cases) : 0; }
    [[nodiscard]] std::string to_json() const;
    [[nodiscard]] std::string to_text() const;
};

// Set by SIGINT/SIGTERM handlers; the campaign finishes its current case and summarises.
extern std::atomic<bool> g_stop_campaign;

CampaignSummary run_campaign(const CampaignConfig& cfg);

// Seed of case `index` in a campaign seeded with `seed` (SplitMix64 of both).
uint64_t case_seed(uint64_t seed, uint64_t index);

}  // namespace patchfuzz::harness
