#include "bpf/program/cfg.hpp"

namespace patchfuzz {

void append_successors(const Program& prog, uint32_t pc, std::vector<uint32_t>& out) {
    const uint32_t n = prog.len();
    if (pc >= n) return;
    const auto add = [&](int64_t t) {
        if (t >= 0 && t < static_cast<int64_t>(n)) out.push_back(static_cast<uint32_t>(t));
    };
    const isa::Insn& i = prog.insns[pc];
    if (isa::is_ldimm64(i)) return add(static_cast<int64_t>(pc) + 2);
    if (!isa::is_jmp_class(i)) return add(static_cast<int64_t>(pc) + 1);
    const uint8_t o = isa::op(i);
    if (o == BPF_EXIT) return;
    if (o == BPF_CALL || isa::is_tail_call(i)) return add(static_cast<int64_t>(pc) + 1);
    if (jumps_through_tables(i)) return append_jump_table_targets(prog, out);
    add(static_cast<int64_t>(pc) + 1 + (isa::is_gotol(i) ? i.imm : i.off));
    if (o != BPF_JA) add(static_cast<int64_t>(pc) + 1);  // conditional jumps and may_goto fall through too
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
