#pragma once
// Random explicit patch batches for any valid program: the patcher-only cases of a campaign (a
// .case "-- patches" section, run by the runner without the passes) and the patcher properties.
//
// Why: the rewrite passes only ever patch the insns they rewrite, so the side-table boundary rules
// of docs/patching.md (an entry AT the patched insn stays: subprog starts §3.2, line info §2.2,
// pokes §3.3, insn arrays §3.5; removals §4) are reached only where a pass happens to patch such an
// insn — never for pokes, whose insn (a tail call) no pass patches after the poke exists. These
// batches patch exactly those positions often.
//
// Every batch satisfies the preconditions of bpf/patch/patch.hpp (validate_batch() accepts it, and
// the semantic ones: outgoing transfers of a patch stay in their subprog and name neither a second
// ld_imm64 slot nor a removed insn; backward ones fit their field), so the incremental and the
// batched patcher must agree on it exactly: any difference is a patcher bug.
//
// The optional oversized patch (> 32767 insns, placed inside the span of an existing jump) drives
// the -ERANGE paths (bpf_patch_insn_data() failing with "cannot be patched due to 16-bit range",
// adjust_jmp_off() overflow) that small generated programs can never reach.
#include <cstdint>
#include <vector>

#include "bpf/patch/patch.hpp"
#include "bpf/program/program.hpp"
#include "gen/choice_source.hpp"

namespace patchfuzz::gen {

struct BatchGenOptions {
    uint32_t density_pct = 12;    // chance (%) that an ordinary insn is patched
    uint32_t boundary_pct = 50;   // chance (%) that a side-table boundary insn is patched
    uint32_t remove_pct = 20;     // chance (%) that a chosen position becomes a removal (0 = none)
    bool insert_before = true;    // prologues at subprog starts (adjust_jmp_off)
    uint32_t max_n = 6;           // longest replacement
    uint32_t overflow_pct = 0;    // chance (%) of one oversized replacement (-ERANGE paths)
    // The oversized replacement sized so that the jump it crosses lands exactly on +32767
    // (forward) or -32768 (backward) once the whole batch is applied, or one past that limit
    // (-ERANGE), half the time each: the S16 boundary itself, which a fixed oversize never hits.
    bool aim_limit = false;
    // Outgoing transfers of patch buffers reach at most this far from their patch (0: anywhere in
    // its subprog). For programs past 32767 insns: a buffer's own displacement near the S16 limit
    // is where the kernel's generator and a deferred one may truncate differently (docs/patching.md §7.3), a
    // precondition the patchers' contract leaves out.
    uint32_t max_reach = 0;
    // Chance (%) that a prologue (InsertBefore) begins with a call to a later subprog: a batch
    // drawn on the result then puts its own prologue in front of a call (the copied call keeps its
    // imm, right for a forward target).
    uint32_t prologue_call_pct = 0;
};

// Positions where the kernel's "entry at off stays" rules decide something: subprog starts, line
// info records, insn-array entries, poke descriptors, position 0, the last insn. 1 = boundary.
std::vector<char> boundary_positions(const Program& prog);

// A valid batch for `prog` (see above). Deterministic in the choices `src` makes.
patch::PatchBatch generate_patch_batch(ChoiceSource& src, const Program& prog, const BatchGenOptions& opts);

// `count` batches, each drawn for the program the batches before it made (applied with the
// incremental patcher, the kernel model): `first` for the first, `rest` for the others. Stops
// early when a batch fails (a later one would patch a discarded program). A later batch patches
// insns whose load-time index (aux orig_idx) is no longer their index.
std::vector<patch::PatchBatch> generate_patch_batches(ChoiceSource& src, const Program& prog, const BatchGenOptions& first,
                                                      const BatchGenOptions& rest, uint32_t count);

// Adds up to `max` poke descriptors (kernel: bpf_jit_poke_descriptor of a constant-key tail call)
// at tail calls first, then at other first slots, so that batches can patch a poke's own insn;
// generated programs have none before the passes run.
void add_poke_descriptors(ChoiceSource& src, Program& prog, uint32_t max);

}  // namespace patchfuzz::gen
