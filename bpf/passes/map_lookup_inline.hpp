#pragma once
// The map_gen_lookup() inlines of bpf_map_lookup_elem (kernel/bpf/hashtab.c, arraymap.c;
// docs/patching.md §5.3.2), as used by bpf_do_misc_fixups() row p.
#include <vector>

#include "bpf/arch/arch_profile.hpp"
#include "bpf/isa/insn.hpp"
#include "bpf/program/program.hpp"

namespace patchfuzz::passes {

// The sequence that replaces `call bpf_map_lookup_elem` for `map` (R1 = map, R2 = key pointer, R0 =
// result), patch-local encoding. Empty = -EOPNOTSUPP or no map_gen_lookup for this map type (the
// call then stays a call). Shapes: hash 3 (htab_map_gen_lookup), LRU hash 6, hash of maps 4,
// per-CPU hash 5 (needs supports_percpu_insn), array 8 / 7 (bypass_spec_v1), per-CPU array 10 / 9
// (needs percpu insn, not BPF_F_INNER_MAP), array of maps 10 / 9. Array shapes index with a shift
// when round_up(value_size, 8) is a power of two, else with a multiply. Internal calls and layout
// constants: bpf/isa/internal_calls.hpp.
std::vector<isa::Insn> emit_map_lookup_inline(const MapDef& map, const ArchProfile& arch);

}  // namespace patchfuzz::passes
