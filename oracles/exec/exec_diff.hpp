#pragma once
// Execution differential oracle (issue 6): runs the original program and every patcher's rewritten
// program under each arch profile on generated inputs, and compares what they do: r0 (low 32 bits
// by default: program return values are ints), the bytes of the main frame's stack that the
// original program owns (its stack depth), ctx and packet bytes, map contents, and the sequence of
// helper/kfunc effects. The first divergence becomes a Fail verdict with both traces around it.
//
// The reference under a profile is the original program as that JIT would run it: unchanged on
// 64-bit JITs, and where the JIT needs explicit zero extension (jit32) with the verifier's
// zext_dst marks applied by the interpreter (interp::ZextMarks::Apply), so that a divergence is
// caused by the rewrite, not by the missing zexts — and the zext pass is judged like any other.
// A rewrite is first held to the program's meaning itself, when a profile with BPF's own
// semantics (x86_64, arm64: the original unchanged, nothing left to the JIT) already ran the
// original on the input: a jit32 rewrite that behaves exactly as that run did keeps the meaning
// whatever jit32 leaves in upper halves, and its reference (the original as jit32 runs it) is then
// not run. Only a rewrite that departs from the meaning is compared with that reference, and a
// divergence from it is what fails; the verdict is the same unless the JIT's reference departs
// from the meaning too while the rewrite does not (the rewrite then keeps the meaning: a pass).
// A profile where every rewrite is that reference itself (no pass changed the program, and no
// marks are applied) compares nothing and runs nothing; when that holds for every profile the
// verdict is Skip ("nothing to compare"), never a Pass of runs that compared nothing.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bpf/arch/arch_profile.hpp"
#include "bpf/interp/interp.hpp"
#include "bpf/passes/pass.hpp"
#include "bpf/program/program.hpp"
#include "oracles/exec/input_gen.hpp"
#include "oracles/verdict.hpp"

namespace patchfuzz::oracles::exec {

// A rewrite the caller already made (the runner runs every patcher's pipeline for its own
// oracles): exactly what passes::run_pipeline(copy of prog, patcher, rewrite with arch) gives.
// exec_diff uses it instead of running the pipeline again; the caller keeps it (the program and
// the patcher's name) alive.
struct GivenRewrite {
    std::string_view arch;     // ArchProfile::name
    std::string_view patcher;  // a name in ExecDiffOptions::patchers
    const Program* prog = nullptr;
};

struct ExecDiffOptions {
    std::vector<ArchProfile> archs;          // empty: x86_64, arm64, jit32
    std::vector<std::string> patchers;       // empty: every patch::patcher_names()
    passes::RewriteOptions rewrite;          // `arch` is replaced by each profile
    uint32_t inputs = 16;                    // generated inputs per case (after `given`)
    uint64_t seed = 1;
    InputGenOptions input_gen;
    // Run first (e.g. a .case's own inputs). Not owned (a case's inputs are not copied for every
    // call): they outlive the exec_diff() call.
    std::span<const interp::ExecInput> given;
    std::vector<GivenRewrite> rewrites;      // of this very program; the rest are computed
    bool r0_full = false;                    // compare all 64 bits of r0
    uint32_t trace_context = 12;             // steps of each trace shown around a divergence
    // false: a Fail verdict keeps what signatures and known findings read (divergence, arch,
    // reason with its cause) and a one-line counterexample, without the traces around the
    // divergence (two more runs and their disassembly). Campaigns judge that way and re-run a new
    // finding in full before triage; a failure they already know is never shown.
    bool failure_details = true;
};

struct ExecDiffStats {
    uint64_t executions = 0;
    uint32_t inputs_run = 0;
    uint32_t skipped_inputs = 0;  // the reference itself faulted or ran out of steps
    // (profile, input) judgements settled by the rewrites behaving as the meaning run did, without
    // running that profile's own reference (see the top of this file).
    uint32_t settled_by_meaning = 0;
};

Verdict exec_diff(const Program& prog, const ExecDiffOptions& opts, ExecDiffStats* stats = nullptr);

// First difference between a reference and a candidate run: {divergence class, description}.
// `stack_depth`: how many bytes below fp the original program owns (compared); deeper bytes are
// the rewrite's own (spill slots, may_goto counters).
struct Divergence {
    std::string kind;    // "status-mismatch", "r0-mismatch", "state-bytes-mismatch", "map-mismatch", "effects-mismatch"
    std::string detail;
};
// `maps` (the program's map definitions, optional): INSN_ARRAY maps are not compared. Their values
// are code addresses of the program that runs (bpf_prog_update_insn_ptrs in
// kernel/bpf/bpf_insn_array.c), which a rewrite moves by design; what a gotox through them does is
// compared through its effects instead.
std::optional<Divergence> compare_runs(const interp::ExecResult& ref, const interp::ExecResult& cand, uint32_t stack_depth,
                                       bool r0_full, const std::vector<MapDef>* maps = nullptr);

// Which single rewrite pass reproduces a divergence: the program rewritten by `patcher` with only
// that pass (plus zext on a zext JIT, whose reference applies the marks) is run on `in` and compared with
// `ref`; the first pass (kernel order) giving a divergence of the same kind is the cause. When
// none does alone (an interaction), the cause is the '+'-joined passes the divergence needs (those
// whose removal makes it go away), or empty. Only passes in `ro.only` (when set) are tried.
// misc_fixups, which hosts many unrelated rows, is narrowed to the one patch that alone gives the
// divergence, named by the insn it replaced ("misc_fixups:call bpf_get_func_arg"); any other single
// pass is followed by the place in its emitted template where the runs part, when a width repair
// finds one ("bpf_loop@1": divergence_place.hpp).
// A fail verdict's reason ends with "[cause: PASS]" (PASS possibly empty); triage buckets are
// per signature, and the campaign's known findings match on signature and cause.
inline constexpr std::string_view kCausePrefix = "[cause: ";
std::string divergence_cause(const Program& prog, const ArchProfile& arch, const std::string& patcher,
                             const passes::RewriteOptions& ro, const interp::ExecInput& in, const interp::ExecResult& ref,
                             uint32_t depth, bool r0_full, const std::string& kind);
// The cause recorded in an exec Fail verdict's reason ("" for other verdicts or no single pass).
std::string exec_cause(const Verdict& v);

// Stack bytes the program addresses below fp: subprogs[0].stack_depth when set, else the deepest
// fp-relative offset the main subprog uses directly or through `rX = r10; rX += K` (rounded to 8).
uint32_t main_stack_depth(const Program& prog);

}  // namespace patchfuzz::oracles::exec
