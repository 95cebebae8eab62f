#pragma once
// Which `call bpf_map_lookup_elem` sites look up a known map: R1 traced backwards inside the basic
// block (through register moves) to an ld_imm64 MAP_FD / MAP_IDX. This is the inference a
// verifier-less input (a .bpf.o, a .s) needs to count inline sites per map type; the verifier
// knows it from its register state (insn_aux_data.map_ptr_state).
#include <cstdint>
#include <vector>

#include "bpf/program/program.hpp"

namespace patchfuzz::loader {

struct LookupSite {
    uint32_t pc = 0;         // the call insn
    int32_t map_index = -1;  // into Program::maps; -1 when R1 is not traced to one map
};

std::vector<LookupSite> find_map_lookups(const Program& p);

}  // namespace patchfuzz::loader
