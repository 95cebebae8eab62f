#pragma once
// Seeds from real objects: a Program loaded by bpf/loader (load_object) becomes a case. The
// verifier's facts are inferred as bpf/passes/infer_facts does (every lookup on a hash map is an
// inline site, ...); execution inputs are generated for its maps and context. mutate_program()
// is the structured mutator for such programs (they have no choice trace): insert / delete /
// replace an insn with jump repair, retarget a jump, add a rewrite site.
#include <cstdint>

#include "gen/program_gen.hpp"

namespace patchfuzz::gen {

// Fills missing aux facts (infer_facts), generates `inputs` execution inputs from `seed`.
GeneratedCase case_from_program(Program prog, uint64_t seed, uint32_t inputs = 2);

// One structural mutation that passes check_shape (tries up to 32 edits; returns the input
// unchanged if none is valid). Deterministic in (prog, seed).
Program mutate_program(const Program& prog, uint64_t seed);

}  // namespace patchfuzz::gen
