#include "bpf/program/cfg.hpp"

namespace patchfuzz {

void append_successors(const Program& prog, uint32_t pc, std::vector<uint32_t>& out) {
    const InsnSuccessors s = insn_successors(prog, pc);
    if (s.through_tables) return append_jump_table_targets(prog, out);
    out.insert(out.end(), s.pcs.begin(), s.pcs.begin() + s.count);
}

void append_jump_table_targets(const Program& prog, std::vector<uint32_t>& out) {
    for (const auto& ia : prog.insn_arrays)
        for (const auto& e : ia.entries)
            if (e.xlated_off != isa::kInsnDeleted && e.xlated_off < prog.len()) out.push_back(e.xlated_off);
}

std::vector<uint32_t> successors(const Program& prog, uint32_t pc) {
    std::vector<uint32_t> out;
    append_successors(prog, pc, out);
    return out;
}

}  // namespace patchfuzz
