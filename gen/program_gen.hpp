#pragma once
// The program generator: one core written against ChoiceSource (choice_source.hpp), driven by
// RapidCheck, libFuzzer bytes or a seeded Rng. Programs are valid by construction and shaped like
// verified programs: a main function plus subprogs (pseudo calls, bpf_loop callbacks), structured
// control flow (forward conditional jumps over blocks, bounded loops: counted, may_goto, bpf_for),
// every instruction class, the facts the rewrite passes read (aux), and the side tables (line and
// func info, instruction arrays, kfunc descriptors, maps).
//
// Executability: every loop is bounded by a counter on the stack, every memory access goes to the
// frame's own slots, the context within its size, or a map value after a NULL check, so the
// interpreter oracle can run every generated case to completion.
#include <cstdint>
#include <vector>

#include "bpf/interp/exec_input.hpp"
#include "bpf/program/program.hpp"
#include "gen/choice_source.hpp"
#include "gen/gen_stats.hpp"
// Campaign cases pair a generated program with an optional explicit batch (harness make_case()).

namespace patchfuzz::gen {

struct GenOptions {
    uint32_t min_insns = 4;
    uint32_t max_insns = 128;
    uint32_t subprogs_max = 4;
    double subprog_share = 0.5;       // at most this share of max_insns goes to subprogs (together)
    double patch_site_density = 0.1;  // share of items that are rewrite sites
    bool cpu_v4 = true;               // sdiv/smod, movsx, bswap, ldsx, gotol, load-acquire/store-release
    // Jump distances: chance that an eligible conditional jump skips a block that brings its
    // displacement to within `far_jump_margin` insns of 32767 (needs max_insns > 32767); the
    // block ends with patch sites, so the displacement overflows once the program is patched.
    double far_jump_prob = 0.0;
    uint32_t far_jump_margin = 48;
    uint32_t far_jump_distance = 32767;
    uint32_t max_far_jumps = UINT32_MAX;  // what a "far" jump aims at (profiles: real programs' ~16k)
    uint32_t max_loop_depth = 2;
    uint32_t max_block_depth = 3;     // nesting of if/loop blocks
    uint32_t loop_iters_max = 4;      // every loop breaks after this many rounds
    uint32_t inputs = 2;              // execution inputs per case
    // Profiles: exactly this many hash-map lookups (spread evenly); no other lookup sites.
    uint32_t exact_hash_lookups = 0;
    bool exact_lookups = false;
    uint32_t prog_type = 0;           // 0 = choose among the modelled types
    double linfo_density = 0.45;      // line-info records per insn
    // Fill GeneratedCase::stats (analyze()); the campaign, which never reads them, turns it off.
    // No choice depends on it: the program and inputs are the same either way.
    bool compute_stats = true;
};

struct GeneratedCase {
    Program program;
    std::vector<interp::ExecInput> inputs;
    GenStats stats;  // all zero when GenOptions::compute_stats is off
};

GeneratedCase generate(ChoiceSource& src, const GenOptions& opts);

// Execution inputs for any program (also loaded objects): ctx/packet bytes, garbage registers,
// map contents with entries for small keys. Takes one draw from `src` whatever `count` (0 too), so
// that the choices made after it do not depend on how many inputs were asked for.
std::vector<interp::ExecInput> make_inputs(const Program& prog, ChoiceSource& src, uint32_t count);

}  // namespace patchfuzz::gen
