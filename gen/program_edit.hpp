#pragma once
// Length-changing edits of a Program that keep every cross reference pointing at the same insn:
// relative jumps/calls/PSEUDO_FUNC, subprog starts, linfo/finfo, insn arrays, pokes. Used by the
// shrinker (deletions) and the Program-level mutator (insertions). The caller validates.
#include <cstdint>
#include <vector>

#include "bpf/program/program.hpp"

namespace patchfuzz::gen {

// Removes insns [s, e). Transfers into the range move to `s`; subprogs inside it disappear.
void remove_range(Program& p, uint32_t s, uint32_t e);

// Inserts `ins` before insn `pos` (fresh aux: seen). Transfers from before `pos` to `pos` land on
// the new insns, a subprog starting at `pos` starts with them.
void insert_range(Program& p, uint32_t pos, const std::vector<isa::Insn>& ins);

}  // namespace patchfuzz::gen
