#pragma once
// Structural oracle: the two patchers' outputs compared field by field — insns, aux, subprogs,
// line/func info, insn arrays, pokes, kfunc descs, maps, and the outcome (error codes, log line).
// No solver: this is the cheap, exact check every case gets.
#include <string>

#include "bpf/patch/patch.hpp"
#include "bpf/program/program.hpp"
#include "oracles/verdict.hpp"

namespace patchfuzz::oracles {

struct PatcherRun {
    std::string name;         // "incremental", "batched", or a plugin's name
    const Program* program;   // its output
    patch::PatchOutcome outcome;
};

// Pass when both runs agree on everything the kernel would expose; on failure the divergence
// class names the first differing field ("insn-mismatch", "length-mismatch", "aux-slot",
// "subprog-start", "linfo", "finfo", "insn-array", "poke", "kfunc-desc", "erange-mismatch",
// "error-mismatch") and the counterexample shows both sides at that place. When both failed with
// the same error the programs are not compared (the kernel discards them).
Verdict compare_patcher_outputs(const PatcherRun& expected, const PatcherRun& actual);

// The pass compare_patcher_outputs() gives two runs already known to be the same (equal outcome
// and Program ==, the program `insns` long): what the runner reports without comparing again.
Verdict identical_outputs_verdict(const patch::PatchOutcome& outcome, size_t insns);

}  // namespace patchfuzz::oracles
