#pragma once
// Where in a pass's emitted code the runs part (docs/oracles.md, "Root causes").
//
// divergence_cause() names the pass whose rewrite alone makes a divergence. One pass can carry
// several unrelated bugs (the bpf_loop inline's 64-bit nr_loops guard, finding 0007, and its 32-bit
// -E2BIG move, finding 0001), and a bucket per pass would file them as one. The place tells them
// apart without knowing either bug: the sequences the pass emitted are instances of one template,
// and the place is the template slot where a minimal repair of the kind these bugs take — a width
// change, an ALU insn between 32 and 64 bits or a conditional jump between JMP32 and JMP — makes
// the rewritten run agree with the reference again. One slot is tried at a time, then pairs (0007
// needs its guard and its loop bound widened together), then triples for templates of at most 16
// such slots (two sites, each with another bug on the input); the place is the first slot of the
// first repair found, in slot order. No width repair: no place ("" — the key is the pass alone).
//
// It is a blame heuristic, not a proof: a repair says "this slot's width decides the run", which
// is what a developer reading the bucket needs to look at first.
#include <string>

#include "bpf/arch/arch_profile.hpp"
#include "bpf/interp/interp.hpp"
#include "bpf/passes/pass.hpp"
#include "bpf/program/program.hpp"

namespace patchfuzz::oracles::exec {

// "@K" (K the template slot) or "". `one_pass` runs exactly the causing pass (its `only` names
// it); on a zext JIT the zext pass runs after it, as in divergence_cause. `ref` is the reference
// run on `in`; depth and r0_full as compare_runs takes them.
std::string divergence_place(const Program& prog, const ArchProfile& arch, const std::string& patcher,
                             const passes::RewriteOptions& one_pass, const interp::ExecInput& in,
                             const interp::ExecResult& ref, uint32_t depth, bool r0_full);

}  // namespace patchfuzz::oracles::exec
