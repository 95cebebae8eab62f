#pragma once
// BPF-aware shrinking for the triage minimizer (RapidCheck shrinks the generator's choices
// instead: see choice_source.hpp). Every candidate passes check_shape() and is strictly smaller
// than its input under shrink_measure(), a lexicographic order on naturals (well-founded, so
// repeated shrinking terminates). Order of candidates, cheapest wins first:
//   drop a subprog (its callers' calls become `ja +0`), delete all nops at once (jump repair),
//   replace runs of insns, then single insns, by `ja +0` (offsets stay valid), delete single
//   nops, drop side-table entries and aux facts, shrink immediates and jump offsets.
#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "bpf/program/program.hpp"

namespace patchfuzz::gen {

// (insns, insns that are not `ja +0`, side-table entries + aux facts, sum of |imm| + |off|)
using ShrinkMeasure = std::array<uint64_t, 4>;
ShrinkMeasure shrink_measure(const Program& p);

// `p` with every `ja +0` deleted (jumps repaired), or nullopt when it has none.
std::optional<Program> without_nops(const Program& p);

// At most `max_candidates` candidates (0 = no limit), in the order above.
std::vector<Program> shrink_candidates(const Program& p, size_t max_candidates = 512);

}  // namespace patchfuzz::gen
