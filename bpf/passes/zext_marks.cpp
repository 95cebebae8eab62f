#include "bpf/passes/zext_marks.hpp"

#include <linux/bpf.h>

#include "bpf/isa/helper_protos.hpp"
#include "bpf/passes/insn_defs.hpp"
#include "bpf/program/cfg.hpp"

namespace patchfuzz::passes {
namespace {

using isa::Insn;
using RegMask = uint16_t;  // bit r: register r (dst/src fields are 4 bits wide)

constexpr RegMask bit(int r) { return r >= 0 && r < 16 ? static_cast<RegMask>(1u << r) : 0; }
constexpr RegMask kCallClobbered = bit(0) | bit(1) | bit(2) | bit(3) | bit(4) | bit(5);

// Unknown helpers: all five argument registers, so that no 64-bit read goes unseen (a read too
// many only costs a zero extension).
constexpr int kUnknownHelperArgs = 5;

// The registers `i` reads as 64-bit values (is_reg64() for SRC_OP).
RegMask read64(const Insn& i) {
    const uint8_t c = isa::cls(i), o = isa::op(i);
    const bool x = isa::src_bit(i) != 0;
    const RegMask dst = bit(i.dst_reg), src = bit(i.src_reg);
    switch (c) {
        case BPF_ALU64:
            if (o == BPF_END) return i.imm == 64 ? dst : 0;  // bswap16/32 read the low half only
            if (o == BPF_MOV) return x ? src : 0;
            if (o == BPF_NEG) return dst;
            return static_cast<RegMask>(dst | (x ? src : 0));
        case BPF_ALU:
            return o == BPF_END && i.imm == 64 ? dst : 0;
        case BPF_JMP:
            if (o == BPF_EXIT) return bit(0);
            if (o == BPF_CALL) {
                if (i.src_reg != 0) return 0;  // bpf-to-bpf and kfunc calls (see the header)
                const int args = isa::helper_arg_count(i.imm).value_or(kUnknownHelperArgs);
                RegMask m = 0;
                for (int r = 1; r <= args; ++r) m |= bit(r);
                return m;
            }
            if (o == BPF_JA) return x ? dst : 0;  // gotox: a PTR_TO_INSN
            if (o == BPF_JCOND || isa::is_tail_call(i)) return 0;
            return static_cast<RegMask>(dst | (x ? src : 0));
        case BPF_JMP32:
            return 0;
        case BPF_LDX:
            return src;  // the address
        case BPF_ST:
            return dst;  // the address
        case BPF_STX: {
            if (isa::mode(i) == BPF_ATOMIC && i.imm == BPF_LOAD_ACQ) return src;  // dst = *(src + off)
            RegMask m = dst;  // the address
            if (isa::size(i) == BPF_DW) {
                m |= src;  // the stored (or exchanged, or added) value
                // cmpxchg compares R0 with the old value: all of it for a 64-bit cmpxchg
                if (isa::mode(i) == BPF_ATOMIC && i.imm == BPF_CMPXCHG) m |= bit(0);
            }
            return m;
        }
        case BPF_LD:
            if (isa::mode(i) == BPF_IMM) return 0;  // ld_imm64 (and its second slot) reads nothing
            return static_cast<RegMask>(bit(6) | (isa::mode(i) == BPF_IND ? src : 0));  // LD_ABS/IND: ctx in r6
        default:
            return 0;
    }
}

// The registers whose paths end at `i`: the one it redefines, and R0-R5 at any call.
RegMask ends(const Insn& i) {
    RegMask m = bit(def_regno(i));
    if (isa::is_jmp_class(i) && isa::op(i) == BPF_CALL) m |= kCallClobbered;
    return m;
}

bool is_unmarked_def32(const Program& prog, uint32_t pc) {
    const bool seen = pc >= prog.aux.size() || prog.aux[pc].seen;
    const bool marked = pc < prog.aux.size() && prog.aux[pc].zext_dst;
    return seen && !marked && has_def32(prog.insns[pc]) && def_regno(prog.insns[pc]) >= 0;
}

}  // namespace

bool reads_reg64(const Insn& insn, int reg) { return (read64(insn) & bit(reg)) != 0; }

std::vector<ZextGap> zext_gaps(const Program& prog) {
    const uint32_t n = prog.len();
    // Successor and predecessor lists (CSR), then a backward worklist to the fixpoint of
    //   live64_in(pc) = read64(pc) | (OR over successors s of live64_in(s)) & ~ends(pc),
    // the registers some path from pc reads as 64 bits before redefining them. Node n stands for
    // the jump tables: every gotox has it as its one successor and it has every table entry, so
    // G gotox insns and E entries cost G + E edges rather than G x E.
    const uint32_t tables = n, nodes = n + 1;
    std::vector<uint32_t> succ_at(nodes + 1, 0), succ;
    succ.reserve(n + n / 4);
    for (uint32_t pc = 0; pc < n; ++pc) {
        succ_at[pc] = static_cast<uint32_t>(succ.size());
        if (jumps_through_tables(prog.insns[pc]))
            succ.push_back(tables);
        else
            append_successors(prog, pc, succ);
    }
    succ_at[tables] = static_cast<uint32_t>(succ.size());
    append_jump_table_targets(prog, succ);
    succ_at[nodes] = static_cast<uint32_t>(succ.size());
    std::vector<uint32_t> pred_at(nodes + 1, 0), pred(succ.size());
    for (uint32_t s : succ) ++pred_at[s + 1];
    for (uint32_t v = 0; v < nodes; ++v) pred_at[v + 1] += pred_at[v];
    {
        std::vector<uint32_t> fill(pred_at.begin(), pred_at.end() - 1);
        for (uint32_t v = 0; v < nodes; ++v)
            for (uint32_t k = succ_at[v]; k < succ_at[v + 1]; ++k) pred[fill[succ[k]]++] = v;
    }
    std::vector<RegMask> read(nodes, 0), end(nodes, 0), live_in(nodes, 0);  // the tables node: a join
    for (uint32_t pc = 0; pc < n; ++pc) {
        read[pc] = read64(prog.insns[pc]);
        end[pc] = ends(prog.insns[pc]);
    }
    const auto live_out = [&](uint32_t v) {
        RegMask m = 0;
        for (uint32_t k = succ_at[v]; k < succ_at[v + 1]; ++k) m |= live_in[succ[k]];
        return m;
    };
    // Every node once, last insn first (most edges point forward), then whatever a change reaches.
    std::vector<uint32_t> work(nodes);
    std::vector<bool> queued(nodes, true);
    for (uint32_t v = 0; v < nodes; ++v) work[v] = v;
    while (!work.empty()) {
        const uint32_t v = work.back();
        work.pop_back();
        queued[v] = false;
        const auto in = static_cast<RegMask>(read[v] | (live_out(v) & ~end[v]));
        if (in == live_in[v]) continue;
        live_in[v] = in;
        for (uint32_t k = pred_at[v]; k < pred_at[v + 1]; ++k)
            if (!queued[pred[k]]) {
                queued[pred[k]] = true;
                work.push_back(pred[k]);
            }
    }
    std::vector<ZextGap> gaps;
    for (uint32_t pc = 0; pc < n; ++pc) {
        if (isa::is_ldimm64(prog.insns[pc])) {
            ++pc;  // its second slot is no def of its own
            continue;
        }
        if (!is_unmarked_def32(prog, pc)) continue;
        const int reg = def_regno(prog.insns[pc]);
        if (live_out(pc) & bit(reg)) gaps.push_back(ZextGap{pc, reg});
    }
    return gaps;
}

std::optional<uint32_t> zext_gap_read(const Program& prog, const ZextGap& gap) {
    // Depth-first from the def, each insn once, with the path rules of the liveness above.
    const uint32_t n = prog.len();
    std::vector<bool> visited(n, false);
    std::vector<uint32_t> work;
    append_successors(prog, gap.def_pc, work);
    while (!work.empty()) {
        const uint32_t p = work.back();
        work.pop_back();
        if (visited[p]) continue;
        visited[p] = true;
        const Insn& u = prog.insns[p];
        if (read64(u) & bit(gap.reg)) return p;
        if (ends(u) & bit(gap.reg)) continue;
        append_successors(prog, p, work);
    }
    return std::nullopt;
}

void add_zext_marks(Program& prog) {
    const std::vector<ZextGap> gaps = zext_gaps(prog);
    if (prog.aux.size() < prog.insns.size()) prog.aux.resize(prog.insns.size());
    for (const ZextGap& g : gaps) prog.aux[g.def_pc].zext_dst = true;
}

Program with_zext_facts(const Program& prog) {
    Program p = prog;
    add_zext_marks(p);
    return p;
}

}  // namespace patchfuzz::passes
