#pragma once
// The closed-form index map S of a batch (docs/patching.md §6.3, §7.1): where every original index
// ends up after the whole batch is applied the kernel's way (ascending, running delta).
//
//   S[k] = k + sum(growth of patches with pos < k)       for k in [0, old_len] not removed,
//   growth = n-1 (Replace), prologue size (InsertBefore), -count (Remove).
//
// So a target that was a patched insn lands on the FIRST insn of its patch (for InsertBefore: the
// prologue start; the adjust_jmp_off() redirect of plain jumps is applied by the patchers on top),
// and S[old_len] is the new length.
//
// Removed insns (k in [r, r+c) of a Remove patch) map the way the kernel's removal walk makes a
// jump into removed code behave: it keeps its numeric target, i.e. it now names the insn that slid
// into that slot, original k+c. Hence S[k] = S[k+c], recursively through adjacent removals; when
// k+c > old_len the slot is past the end and S[k] = S[old_len] + (k+c-old_len). (For a removal's
// first insn r that is "the first survivor", the only case dead-code/nop removal produces.) Side
// tables do NOT use this rule for removed insns: insn arrays turn them into INSN_DELETED, line info
// and subprogs follow bpf_adj_linfo_after_remove()/adjust_subprog_starts_after_remove().
//
// Precondition: `batch` passes validate_batch() for a program of old_len insns. O(old_len + M).
#include <cstdint>
#include <vector>

#include "bpf/patch/patch.hpp"

namespace patchfuzz::patch {

std::vector<uint32_t> index_map(uint32_t old_len, const PatchBatch& batch);
// The same map written into `s` (resized to old_len + 1), so a caller that maps batch after batch
// (the batched patcher) reuses one buffer instead of allocating and zero-filling a new one.
void index_map(uint32_t old_len, const PatchBatch& batch, std::vector<uint32_t>& s);

}  // namespace patchfuzz::patch
