#pragma once
// Relocation coverage in a campaign (bpf/patch/reloc_coverage.hpp): the knobs a case is made with,
// a rare-cell scheduler that weights them by feedback, and the figures a summary reports.
//
// Why a scheduler: some cells are reached by only one costly kind of case (a patch of 32k insns
// aimed at the S16 limit, a program longer than 32767 insns, a second batch after a first one).
// Running them at a fixed share either wastes the time budget or leaves the cells unhit. As AFL++
// favours inputs that reach rare branches, the scheduler raises the weight of the knob whose cases
// hit the rarely hit cells most per unit of cost, and caps the costly knobs' share of the time
// (costs are fixed estimates per knob, so that a seed picks the same knobs on any machine).
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "bpf/patch/reloc_coverage.hpp"
#include "bpf/program/program.hpp"

namespace patchfuzz::harness {

// What a generated campaign case is made of.
enum class CaseKnob : uint8_t {
    Passes,      // a generated program through every rewrite pass (the main job)
    Explicit,    // a generated program and one explicit random batch (side-table boundaries, removals)
    TwoBatches,  // two explicit batches, the second drawn on the first's result, with an oversized patch
    AimedLimit,  // one explicit batch whose oversized patch lands a jump on the S16 limit or one past it
    Large,       // a program longer than 32767 insns and one explicit batch
    Seeds,       // a mutant of a `--seeds` program through every rewrite pass (never picked by the
                 // scheduler: the campaign gives such seeds half the cases; campaign.hpp)
    Count
};
inline constexpr size_t kKnobCount = static_cast<size_t>(CaseKnob::Count);
std::string_view knob_name(CaseKnob k);

class RareCellScheduler {
public:
    RareCellScheduler();
    // The knob of a case, from its seed and the weights (deterministic in both).
    [[nodiscard]] CaseKnob pick(uint64_t case_seed) const;
    // A case made with `k` hit `cells`. Its cost is the knob's estimate, not the clock's: the
    // knobs a seed picks do not depend on the machine's speed.
    void record(CaseKnob k, const std::vector<uint32_t>& cells);
    [[nodiscard]] const std::array<uint32_t, kKnobCount>& weights() const { return weight_; }

private:
    void reweigh();

    std::array<uint32_t, kKnobCount> weight_{};
    std::array<uint64_t, kKnobCount> cases_{};
    std::array<double, kKnobCount> seconds_{};  // estimated cost (kCost), in passes-case units
    std::vector<uint64_t> hits_;                       // per cell: cases that hit it
    std::vector<std::array<uint32_t, kKnobCount>> by_knob_;  // per cell and knob
    uint64_t total_ = 0;
};

// Per-cell case counts and per-knob figures, summed over a campaign's workers.
struct RelocFigures {
    std::vector<uint64_t> hits;  // per cell (coverage_cells() order): cases that hit it
    std::array<uint64_t, kKnobCount> knob_cases{};
    std::array<double, kKnobCount> knob_seconds{};

    RelocFigures();
    void add_case(CaseKnob k, const std::vector<uint32_t>& cells, double seconds);
    // Reachable cells never hit, by id.
    [[nodiscard]] std::vector<std::string_view> never_hit() const;
    [[nodiscard]] size_t reachable() const;
    // "reloc_coverage": {...}, "knobs": {...} (no braces around: fields of the summary object).
    [[nodiscard]] std::string json_fields() const;
    // The summary's text lines.
    [[nodiscard]] std::string text() const;
    // id,family,reachable,hits rows (for `patchfuzz report`'s grid).
    [[nodiscard]] std::string csv() const;
};

// The worker protocol's fields for a case's knob, time and cells: "knob:seconds" and "c1,c2,..."
// ("-" for none), and their reading back (false: malformed).
std::string encode_reloc(CaseKnob k, double seconds, const std::vector<uint32_t>& cells);
bool decode_reloc(std::string_view knob_field, std::string_view cells_field, CaseKnob& k, double& seconds,
                  std::vector<uint32_t>& cells);

// The cells a program's rewrite hits: every pass in kernel order with the reference (incremental)
// patcher, under each of `arches` with default options otherwise (privileged, bpf-next).
patch::CoverageSet rewrite_coverage(const Program& prog, const std::vector<std::string>& arches);

// The cell table as a markdown table (id, what, rule, reachable or why not): what
// docs/relocation-coverage.md lists, printed by `patchfuzz gen --cells`.
std::string coverage_cells_markdown();

// Where a program's references point, from the program alone: the directions issue 28 measures.
struct RefDirections {
    uint32_t calls = 0, calls_backward = 0;          // bpf-to-bpf calls (target at or before the call)
    uint32_t callbacks = 0, callbacks_backward = 0;  // ld_imm64 PSEUDO_FUNC
    uint32_t jumps_to_insn0 = 0;                     // relative jumps whose target is insn 0
    uint32_t subprogs_start_with_jump = 0;           // subprogs whose first insn is a jump or may_goto
};
RefDirections ref_directions(const Program& prog);

// {"cells":["id",...],"calls":..,...}: one case's line of `patchfuzz gen --json` / load --coverage.
std::string coverage_json(const patch::CoverageSet& cov, const RefDirections& d);

}  // namespace patchfuzz::harness
