#pragma once
// Intra-procedural control flow: where execution may continue after one insn of a function. The
// analyses that walk a program's paths (rejected_reads, the verifier's zext_dst marking) share
// these edges so that they cannot disagree about a transfer; what an insn does to registers on the
// way stays with each analysis.
//
// Edges, as the verifier's CFG walk (check_cfg()/visit_insn() in kernel/bpf/verifier.c) has them:
//  * ld_imm64: pc + 2 (its second slot is not an insn of its own);
//  * any other non-jump, and every call (helper, kfunc, bpf-to-bpf: the callee returns here):
//    pc + 1;
//  * the internal tail call (BPF_JMP | BPF_TAIL_CALL, put in by do_misc_fixups for
//    bpf_tail_call): pc + 1, because a tail call that fails (index out of range, empty slot, the
//    tail-call limit reached) continues with the next insn;
//  * exit: none;
//  * ja / gotol: the target only;
//  * gotox (BPF_JA | BPF_X): every live entry of the program's insn arrays (the jump tables it can
//    load its target from; which table a gotox reads is not part of the insn);
//  * conditional jumps and may_goto (JCOND): the target, then pc + 1.
// Targets outside the program are dropped: validation reports them, the walks need not.
#include <array>
#include <cstdint>
#include <vector>

#include "bpf/program/program.hpp"

namespace patchfuzz {

// The successors of one insn without the gotox fan-out, held in place so that an analysis that
// visits every insn allocates nothing per insn: up to two pcs inside the program, in the order
// append_successors() gives them (target first, then pc + 1), or `through_tables` with no pc.
struct InsnSuccessors {
    std::array<uint32_t, 2> pcs{};
    uint32_t count = 0;
    bool through_tables = false;
};
// Defined below, inline: the analyses ask for every insn of every generated program.
inline InsnSuccessors insn_successors(const Program& prog, uint32_t pc);

// Appends the successors of the insn at `pc` to `out` (nothing for pc >= prog.len()). Appending
// lets a worklist walk push them straight onto its stack.
void append_successors(const Program& prog, uint32_t pc, std::vector<uint32_t>& out);

// The same successors as a fresh vector.
std::vector<uint32_t> successors(const Program& prog, uint32_t pc);

// The parts of the gotox edges, for analyses that share one node among all gotox insns instead of
// G x E edges (a program with many jump tables has as many gotox insns): does `insn` jump through
// the jump tables, and the targets it may reach (the live insn-array entries inside the program).
inline bool jumps_through_tables(const isa::Insn& insn) {
    // BPF_JMP | BPF_JA | BPF_X; the JMP32 class has no such opcode (gotol is JMP32 | JA | K)
    return isa::is_gotox(insn);
}
void append_jump_table_targets(const Program& prog, std::vector<uint32_t>& out);

inline InsnSuccessors insn_successors(const Program& prog, uint32_t pc) {
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

}  // namespace patchfuzz
