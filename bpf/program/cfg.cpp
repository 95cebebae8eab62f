#include "bpf/program/cfg.hpp"

namespace patchfuzz {

InsnSuccessors insn_successors(const Program& prog, uint32_t pc) {
    InsnSuccessors out;
    const uint32_t n = prog.len();
    if (pc >= n) return out;
    const auto add = [&](int64_t t) {
        if (t >= 0 && t < static_cast<int64_t>(n)) out.pcs[out.count++] = static_cast<uint32_t>(t);
    };
    const isa::Insn& i = prog.insns[pc];
    if (isa::is_ldimm64(i)) {
        add(static_cast<int64_t>(pc) + 2);
        return out;
    }
    if (!isa::is_jmp_class(i)) {
        add(static_cast<int64_t>(pc) + 1);
        return out;
    }
    const uint8_t o = isa::op(i);
    if (o == BPF_EXIT) return out;
    if (o == BPF_CALL || isa::is_tail_call(i)) {
        add(static_cast<int64_t>(pc) + 1);
        return out;
    }
    if (jumps_through_tables(i)) {
        out.through_tables = true;
        return out;
    }
    add(static_cast<int64_t>(pc) + 1 + (isa::is_gotol(i) ? i.imm : i.off));
    if (o != BPF_JA) add(static_cast<int64_t>(pc) + 1);  // conditional jumps and may_goto fall through too
    return out;
}

void append_successors(const Program& prog, uint32_t pc, std::vector<uint32_t>& out) {
    const InsnSuccessors s = insn_successors(prog, pc);
    if (s.through_tables) return append_jump_table_targets(prog, out);
    out.insert(out.end(), s.pcs.begin(), s.pcs.begin() + s.count);
}

bool jumps_through_tables(const isa::Insn& i) {
    // BPF_JMP | BPF_JA | BPF_X; the JMP32 class has no such opcode (gotol is JMP32 | JA | K)
    return isa::is_gotox(i);
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
