#include "harness/campaign/reloc_feedback.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <sstream>

#include "bpf/arch/arch_profile.hpp"
#include "bpf/isa/insn.hpp"
#include "bpf/passes/pass.hpp"
#include "bpf/patch/reloc_coverage.hpp"
#include "bpf/util/json.hpp"
#include "bpf/util/rng.hpp"

namespace patchfuzz::harness {
namespace {

constexpr std::array<std::string_view, kKnobCount> kNames = {"passes", "explicit", "two-batches", "aimed-limit", "large", "seeds"};
// Weights (per mille) before any feedback: the passes are the main job; the costly knobs get a
// small share that feedback may raise.
constexpr std::array<uint32_t, kKnobCount> kBase = {700, 220, 40, 30, 3, 0};
// What a case of each knob costs, in cases of the passes knob (measured on 60 s default campaigns:
// an explicit batch costs about what the passes do, a patch of 32k insns some 30 times more, a
// program past 32767 insns some 800 times). The scheduler weighs by these, not by the clock, so
// that a seed gives the same cases on every machine and every run.
constexpr std::array<double, kKnobCount> kCost = {1.0, 0.8, 35.0, 30.0, 800.0, 1.0};
// Most of the campaign's time a costly knob may take; past it, it pauses (weight 0).
constexpr std::array<double, kKnobCount> kTimeCap = {1.0, 1.0, 0.04, 0.04, 0.02, 1.0};
constexpr uint64_t kReweighEvery = 128;
// The most a knob's weight is raised (times its base) when its cases hit rare cells best.
constexpr uint32_t kBoost = 4;

}  // namespace

std::string_view knob_name(CaseKnob k) { return kNames[static_cast<size_t>(k)]; }

RareCellScheduler::RareCellScheduler()
    : weight_(kBase), hits_(patch::coverage_cell_count(), 0), by_knob_(patch::coverage_cell_count()) {}

CaseKnob RareCellScheduler::pick(uint64_t case_seed) const {
    uint64_t sum = 0;
    for (uint32_t w : weight_) sum += w;
    uint64_t r = Rng(case_seed ^ 0x6b6e6f62ULL).next() % sum;
    for (size_t k = 0; k < kKnobCount; ++k) {
        if (r < weight_[k]) return static_cast<CaseKnob>(k);
        r -= weight_[k];
    }
    return CaseKnob::Passes;
}

void RareCellScheduler::record(CaseKnob k, const std::vector<uint32_t>& cells) {
    const auto ki = static_cast<size_t>(k);
    ++cases_[ki];
    seconds_[ki] += kCost[ki];
    for (uint32_t c : cells) {
        ++hits_[c];
        ++by_knob_[c][ki];
    }
    if (++total_ % kReweighEvery == 0) reweigh();
}

void RareCellScheduler::reweigh() {
    // Rare: reachable and hit by fewer than 1 % of the cases so far.
    const uint64_t rare_below = std::max<uint64_t>(1, total_ / 100);
    const auto cells = patch::coverage_cells();
    std::array<double, kKnobCount> score{};
    double best = 0, total_s = 0;
    for (double s : seconds_) total_s += s;
    for (size_t k = 0; k < kKnobCount; ++k) {
        if (cases_[k] == 0) continue;
        double rare_hits = 0;
        for (size_t c = 0; c < cells.size(); ++c)
            if (cells[c].reachable && hits_[c] < rare_below) rare_hits += by_knob_[c][k];
        score[k] = rare_hits / std::max(seconds_[k], 1e-6);
        best = std::max(best, score[k]);
    }
    for (size_t k = 0; k < kKnobCount; ++k) {
        // A knob not tried yet counts as the best one (it may reach what the others cannot).
        const double rel = best > 0 ? (cases_[k] == 0 ? 1.0 : score[k] / best) : 0.0;
        weight_[k] = static_cast<uint32_t>(kBase[k] * (1.0 + (kBoost - 1) * rel));
        // Past its cap a costly knob pauses until the others' time brings its share back under.
        if (total_s > 0 && seconds_[k] / total_s > kTimeCap[k]) weight_[k] = 0;
    }
}

RelocFigures::RelocFigures() : hits(patch::coverage_cell_count(), 0) {}

void RelocFigures::add_case(CaseKnob k, const std::vector<uint32_t>& cells, double seconds) {
    ++knob_cases[static_cast<size_t>(k)];
    knob_seconds[static_cast<size_t>(k)] += seconds;
    for (uint32_t c : cells)
        if (c < hits.size()) ++hits[c];
}

std::vector<std::string_view> RelocFigures::never_hit() const {
    std::vector<std::string_view> out;
    const auto cells = patch::coverage_cells();
    for (size_t c = 0; c < cells.size(); ++c)
        if (cells[c].reachable && hits[c] == 0) out.push_back(cells[c].id);
    return out;
}

size_t RelocFigures::reachable() const {
    size_t n = 0;
    for (const auto& c : patch::coverage_cells()) n += c.reachable;
    return n;
}

std::string RelocFigures::json_fields() const {
    std::ostringstream o;
    const auto cells = patch::coverage_cells();
    const auto missing = never_hit();
    o << "\"reloc_coverage\": {\"reachable\": " << reachable() << ", \"reachable_hit\": " << reachable() - missing.size()
      << ", \"never_hit\": [";
    for (size_t i = 0; i < missing.size(); ++i) o << (i ? ", " : "") << "\"" << json_escape(std::string(missing[i])) << "\"";
    o << "], \"unreachable_hit\": [";
    bool first = true;
    for (size_t c = 0; c < cells.size(); ++c)
        if (!cells[c].reachable && hits[c] > 0) {
            o << (first ? "" : ", ") << "\"" << json_escape(std::string(cells[c].id)) << "\"";
            first = false;
        }
    o << "], \"cells\": {";
    for (size_t c = 0; c < cells.size(); ++c)
        o << (c ? ", " : "") << "\"" << json_escape(std::string(cells[c].id)) << "\": " << hits[c];
    o << "}}, \"knobs\": {";
    double total = 0;
    for (double s : knob_seconds) total += s;
    for (size_t k = 0; k < kKnobCount; ++k)
        o << (k ? ", " : "") << "\"" << kNames[k] << "\": {\"cases\": " << knob_cases[k] << ", \"seconds\": " << knob_seconds[k]
          << ", \"time_share\": " << (total > 0 ? knob_seconds[k] / total : 0.0) << "}";
    o << "}";
    return o.str();
}

std::string RelocFigures::text() const {
    std::ostringstream o;
    const auto missing = never_hit();
    o << "  relocation   " << reachable() - missing.size() << "/" << reachable() << " reachable cells hit";
    if (missing.empty()) {
        o << "\n";
    } else {
        o << "; never hit:\n   ";
        for (auto id : missing) o << " " << id;
        o << "\n";
    }
    // A cell the table calls unreachable but a case hit: the table's reason is wrong, or a
    // generator made a case outside the contract's preconditions. Either deserves a look.
    const auto cells = patch::coverage_cells();
    bool any = false;
    for (size_t c = 0; c < cells.size(); ++c)
        if (!cells[c].reachable && hits[c] > 0) {
            o << (any ? " " : "  UNREACHABLE CELLS HIT: ") << cells[c].id << "=" << hits[c];
            any = true;
        }
    if (any) o << "\n";
    double total = 0;
    for (double s : knob_seconds) total += s;
    o << "  knobs (cases, share of time):";
    for (size_t k = 0; k < kKnobCount; ++k) {
        char share[32];
        std::snprintf(share, sizeof share, "%.1f%%", total > 0 ? 100.0 * knob_seconds[k] / total : 0.0);
        o << " " << kNames[k] << " " << knob_cases[k] << " " << share;
    }
    o << "\n";
    return o.str();
}

std::string RelocFigures::csv() const {
    std::string out = "id,family,reachable,hits\n";
    const auto cells = patch::coverage_cells();
    for (size_t c = 0; c < cells.size(); ++c)
        out += std::string(cells[c].id) + "," + std::string(cells[c].family) + "," + (cells[c].reachable ? "1" : "0") + "," +
               std::to_string(hits[c]) + "\n";
    return out;
}

std::string encode_reloc(CaseKnob k, double seconds, const std::vector<uint32_t>& cells) {
    char head[48];
    std::snprintf(head, sizeof head, "%u:%.6f", static_cast<unsigned>(k), seconds);
    std::string out = head;
    out += '\t';
    if (cells.empty()) return out + "-";
    for (size_t i = 0; i < cells.size(); ++i) {
        if (i) out += ',';
        out += std::to_string(cells[i]);
    }
    return out;
}

bool decode_reloc(std::string_view knob_field, std::string_view cells_field, CaseKnob& k, double& seconds,
                  std::vector<uint32_t>& cells) {
    const size_t colon = knob_field.find(':');
    if (colon == std::string_view::npos) return false;
    unsigned kv = 0;
    if (std::from_chars(knob_field.data(), knob_field.data() + colon, kv).ec != std::errc() || kv >= kKnobCount) return false;
    k = static_cast<CaseKnob>(kv);
    seconds = std::strtod(std::string(knob_field.substr(colon + 1)).c_str(), nullptr);
    cells.clear();
    if (cells_field == "-") return true;
    size_t start = 0;
    while (start < cells_field.size()) {
        const size_t end = std::min(cells_field.find(',', start), cells_field.size());
        uint32_t c = 0;
        if (std::from_chars(cells_field.data() + start, cells_field.data() + end, c).ec != std::errc() ||
            c >= patch::coverage_cell_count())
            return false;
        cells.push_back(c);
        start = end + 1;
    }
    return true;
}

patch::CoverageSet rewrite_coverage(const Program& prog, const std::vector<std::string>& arches) {
    patch::CoverageSet cov;
    const auto reference = patch::make_incremental_patcher();
    for (const auto& name : arches) {
        const auto arch = arch_by_name(name);
        if (!arch) continue;
        passes::RewriteOptions opts;
        opts.arch = *arch;
        Program copy = prog;
        patch::CoverageRecordingPatcher rec(*reference, cov);
        (void)passes::run_pipeline(copy, rec, opts);
    }
    return cov;
}

std::string coverage_cells_markdown() {
    std::string o = "| cell | what | rule (docs/patching.md) | reachable |\n|---|---|---|---|\n";
    for (const auto& c : patch::coverage_cells()) {
        o += "| `" + std::string(c.id) + "` | " + c.description + " | " + std::string(c.rule) + " | " +
             (c.reachable ? std::string("yes") : "no: " + std::string(c.unreachable_reason)) + " |\n";
    }
    return o;
}

RefDirections ref_directions(const Program& prog) {
    RefDirections d;
    const auto n = static_cast<int64_t>(prog.insns.size());
    for (int64_t i = 0; i < n; ++i) {
        const isa::Insn& in = prog.insns[static_cast<size_t>(i)];
        const bool wide = isa::is_ldimm64(in);
        if (isa::relative_field(in) != isa::RelField::None && !isa::is_gotox(in) && !isa::is_tail_call(in)) {
            const int64_t t = i + 1 + isa::displacement(in);
            if (isa::is_pseudo_call(in)) {
                ++d.calls;
                d.calls_backward += t <= i;
            } else if (isa::is_pseudo_func(in)) {
                ++d.callbacks;
                d.callbacks_backward += t <= i;
            } else if (t == 0) {
                ++d.jumps_to_insn0;
            }
        }
        if (wide) ++i;
    }
    for (uint32_t s = 0; s < prog.subprog_cnt(); ++s) {
        const uint32_t at = prog.subprogs[s].start;
        if (at < prog.insns.size() && isa::is_jmp_class(prog.insns[at]) && isa::relative_field(prog.insns[at]) == isa::RelField::Off16)
            ++d.subprogs_start_with_jump;
    }
    return d;
}

std::string coverage_json(const patch::CoverageSet& cov, const RefDirections& d) {
    std::string o = "{\"cells\":[";
    const auto cells = patch::coverage_cells();
    bool first = true;
    for (size_t c = 0; c < cells.size(); ++c)
        if (cov.has(c)) {
            o += first ? "\"" : ",\"";
            o += cells[c].id;
            o += "\"";
            first = false;
        }
    o += "],\"calls\":" + std::to_string(d.calls) + ",\"calls_backward\":" + std::to_string(d.calls_backward) +
         ",\"callbacks\":" + std::to_string(d.callbacks) + ",\"callbacks_backward\":" + std::to_string(d.callbacks_backward) +
         ",\"jumps_to_insn0\":" + std::to_string(d.jumps_to_insn0) +
         ",\"subprogs_start_with_jump\":" + std::to_string(d.subprogs_start_with_jump) + "}";
    return o;
}

}  // namespace patchfuzz::harness
