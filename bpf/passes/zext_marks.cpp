#include "bpf/passes/zext_marks.hpp"

#include <linux/bpf.h>

#include <algorithm>
#include <array>

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

// The registers whose paths end at `i`: the one it redefines (`def_reg`, def_regno(i)), and R0-R5
// at any call.
RegMask ends(const Insn& i, int def_reg) {
    RegMask m = bit(def_reg);
    if (isa::is_jmp_class(i) && isa::op(i) == BPF_CALL) m |= kCallClobbered;
    return m;
}
RegMask ends(const Insn& i) { return ends(i, def_regno(i)); }

// A def of `def_reg` that zext_gaps() reports when some path reads the register as 64 bits: seen
// by the verifier, not marked yet, and writing only the low half of the register.
bool is_unmarked_def32(const Program& prog, uint32_t pc, int def_reg) {
    const bool seen = pc >= prog.aux.size() || prog.aux[pc].seen;
    const bool marked = pc < prog.aux.size() && prog.aux[pc].zext_dst;
    return seen && !marked && def_reg >= 0 && has_def32(prog.insns[pc]);
}

}  // namespace

bool reads_reg64(const Insn& insn, int reg) { return (read64(insn) & bit(reg)) != 0; }

std::vector<ZextGap> zext_gaps(const Program& prog) {
    const uint32_t n = prog.len();
    // The fixpoint of
    //   live64_in(pc) = read64(pc) | (OR over successors s of live64_in(s)) & ~ends(pc),
    // the registers some path from pc reads as 64 bits before redefining them, by sweeps from the
    // last insn to the first, starting from nothing live. Most edges point forward, so a sweep
    // reads values already final for this sweep; only a node that some node swept before it
    // reads (a back-edge target, or a jump-table entry) can have been read stale. Such a node
    // keeps the highest pc that reads it early (`resweep`, plus one), and a change at it asks for
    // one more sweep from there down: every insn above reads only values that did not change, so
    // a loop costs a second pass over the program up to its back edge, not over all of it.
    // Node n stands for the jump tables: every gotox has it as its one successor and it joins
    // every table entry, so G gotox insns and E entries cost G + E reads rather than G x E.
    // Node n + 1 is no insn and never live: the successor that an insn does not have.
    struct Node {
        RegMask read = 0, end = 0, live_in = 0;
        int8_t def_reg = -1;  // def_regno()
        std::array<uint32_t, 2> succ{};
        uint32_t resweep = 0;  // 1 + the highest pc that reads live_in before this node is swept
    };
    const uint32_t tables = n, none = n + 1;
    std::vector<Node> nodes(n + 2);
    uint32_t gotox_top = 0;  // 1 + the highest gotox pc
    for (uint32_t pc = 0; pc < n; ++pc) {
        Node& node = nodes[pc];
        const Insn& insn = prog.insns[pc];
        node.def_reg = static_cast<int8_t>(def_regno(insn));
        node.read = read64(insn);
        node.end = ends(insn, node.def_reg);
        const InsnSuccessors s = insn_successors(prog, pc);
        node.succ = {none, none};
        if (s.through_tables) {
            node.succ[0] = tables;
            gotox_top = pc + 1;
        }
        for (uint32_t k = 0; k < s.count; ++k) {
            const uint32_t t = s.pcs[k];
            node.succ[k] = t;
            if (t <= pc) nodes[t].resweep = std::max(nodes[t].resweep, pc + 1);
        }
    }
    std::vector<uint32_t> table_targets;
    if (gotox_top) append_jump_table_targets(prog, table_targets);
    // The tables node is joined before each sweep, so every gotox reads every entry early.
    for (const uint32_t t : table_targets) nodes[t].resweep = std::max(nodes[t].resweep, gotox_top);
    const auto live_out = [&nodes](const Node& node) {
        return static_cast<RegMask>(nodes[node.succ[0]].live_in | nodes[node.succ[1]].live_in);
    };
    for (uint32_t top = n; top > 0;) {  // one sweep: pcs top - 1 down to 0
        RegMask joined = 0;
        for (const uint32_t t : table_targets) joined |= nodes[t].live_in;
        nodes[tables].live_in = joined;
        uint32_t next_top = 0;
        for (uint32_t pc = top; pc-- > 0;) {
            Node& node = nodes[pc];
            const auto in = static_cast<RegMask>(node.read | (live_out(node) & ~node.end));
            if (in == node.live_in) continue;
            node.live_in = in;
            next_top = std::max(next_top, node.resweep);
        }
        top = next_top;
    }
    // Every live_in is final now, and so is every live_out. The liveness test first: it is
    // cheaper than has_def32(), and most defs are not read as 64 bits.
    std::vector<ZextGap> gaps;
    for (uint32_t pc = 0; pc < n; ++pc) {
        if (isa::is_ldimm64(prog.insns[pc])) {
            ++pc;  // its second slot is no def of its own
            continue;
        }
        const Node& node = nodes[pc];
        if ((live_out(node) & bit(node.def_reg)) && is_unmarked_def32(prog, pc, node.def_reg))
            gaps.push_back(ZextGap{pc, node.def_reg});
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
