#pragma once
// Conversion between patchfuzz's Program / PatchBatch and the C ABI structs of
// include/patchfuzz/patcher.h. Used by the host (PluginPatcher) and by plugins written in C++.
#include <vector>

#include <patchfuzz/patcher.h>

#include "bpf/patch/patch.hpp"
#include "bpf/program/program.hpp"

namespace patchfuzz::plugin {

// Owns the arrays a pf_program view points into.
struct PfProgramStorage {
    std::vector<isa::Insn> insns;
    std::vector<pf_insn_aux> aux;
    std::vector<pf_subprog> subprogs;
    std::vector<pf_line_info> linfo;
    std::vector<pf_func_info> finfo;
    std::vector<pf_insn_array_entry> entries;
    std::vector<pf_poke> pokes;
    pf_program view{};
};

// The C view of `p` (fields the ABI carries).
void to_pf(const Program& p, PfProgramStorage& s);
// Rebuilds a Program from a C view; fields the ABI does not carry (maps, kfuncs, name, type,
// insn-array map indexes) are taken from `like`.
Program from_pf(const pf_program& v, const Program& like);
// The same into `p` itself, reusing its arrays' storage: the fields the ABI carries are replaced,
// the others (maps, kfuncs, name, type, insn-array map indexes) stay.
void from_pf_into(const pf_program& v, Program& p);

struct PfBatchStorage {
    std::vector<pf_patch> patches;
};
void to_pf(const patch::PatchBatch& b, PfBatchStorage& s);
patch::PatchBatch from_pf(const pf_patch* patches, uint32_t n);

// Allocates (malloc) the arrays of `out` from `p`: what a plugin returns.
void to_pf_malloc(const Program& p, pf_program& out);
void free_pf_malloc(pf_program& out);

}  // namespace patchfuzz::plugin
