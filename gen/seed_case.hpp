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

// A campaign's case from a seed program (`fuzz --seeds`): one to four mutate_program() edits,
// then the verifier facts rebuilt from nothing by infer_facts. An edit can invalidate any fact
// the seed carried (an ALU sanitation limit, a ctx access's field size, a map lookup's map), and a
// rewrite driven by a stale fact "diverges" on a program no verifier would have given it; the
// facts infer_facts derives are those it derives for every accepted program. A mutant whose
// register reads the verifier would reject (passes::rejected_reads) is drawn again (up to 8
// times); failing that, the seed itself with its facts rebuilt is the case. Deterministic in
// (prog, seed).
GeneratedCase seed_mutant(const Program& prog, uint64_t seed, uint32_t inputs = 2);

}  // namespace patchfuzz::gen
