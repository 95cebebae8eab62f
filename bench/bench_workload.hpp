#pragma once
// Workloads for `patchfuzz bench`: programs that really patch, and the patch batch a kernel pass
// would apply to them. The shape follows the seed series' measurements (pyperf180/600): many
// hash-map lookups that do_misc_fixups inlines into 3 insns with an internal jump, jumps of all
// lengths crossing the patch sites, ~0.45 line-info entries per insn, a few subprogs.
#include <cstddef>
#include <cstdint>
#include <string>

#include "bpf/patch/patch.hpp"
#include "bpf/program/program.hpp"

namespace patchfuzz::patch {

struct Workload {
    std::string name;
    Program prog;
    PatchBatch batch;
};

// A synthetic program of exactly `insns` insns with exactly `lookups` hash-map lookup sites.
// Precondition: insns >= 16 and lookups * 8 <= insns. Deterministic in (insns, lookups, seed).
Program synthetic_program(uint32_t insns, uint32_t lookups, uint64_t seed);

// The batch do_misc_fixups would apply for the map-lookup inlining of every hash-map lookup of
// `prog` (htab_map_gen_lookup shape: [call __htab_map_lookup_elem; if r0 == 0 goto +1;
// r0 += offsetof(key) + round_up(key_size, 8)]): helper calls to map_lookup_elem whose aux names a
// BPF_MAP_TYPE_HASH map (not poisoned); without map facts every lookup call counts.
PatchBatch hash_lookup_batch(const Program& prog);

Workload synthetic_workload(uint32_t insns, uint32_t lookups, uint64_t seed);

// Bytes of every array a patcher must write to produce the output (insns, aux, line info,
// subprogs, insn-array entries, pokes) — the physical floor the memcpy baseline copies.
size_t moved_bytes(const Program& prog, const PatchBatch& batch);

}  // namespace patchfuzz::patch
