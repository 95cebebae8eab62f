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

// ---- the same facts by opcode ---------------------------------------------------------------------
// zext_gaps() decodes every insn of every generated program, and read64(), def_regno() and
// insn_successors() each branch through the class and op again. For nearly every opcode byte the
// answers follow from the byte alone plus the register fields, so they are looked up in a table
// built at compile time; only the opcodes whose answer depends on imm or src_reg (END: the width;
// helper calls: the prototype; atomics: the operation) take the functions above. The table is
// tested against those functions and insn_successors() for every opcode byte
// (zext_marks_test.cpp).

// Where execution goes on, the cases of insn_successors().
enum class Flow : uint8_t { Next, SkipSlot, Stop, Tables, Jump, JumpImm, Branch };

constexpr RegMask kAny = 0xffff;

struct OpFacts {
    RegMask fixed_read = 0;  // read whatever the fields say: R0 at exit, R6 at LD_ABS/IND
    RegMask dst_read = 0;    // kAny: dst is read as 64 bits (masks bit(dst))
    RegMask src_read = 0;    // kAny: src is read as 64 bits
    RegMask clobbered = 0;   // calls: R0-R5
    bool defs_dst = false;   // def_regno() is dst (else -1)
    bool def32 = false;      // has_def32()
    bool by_fields = false;  // read64() and def_regno() decide (END, helper calls, atomics)
    Flow flow = Flow::Next;
};

constexpr OpFacts op_facts(uint8_t code) {
    const uint8_t c = BPF_CLASS(code), o = BPF_OP(code), m = BPF_MODE(code);
    const RegMask x = BPF_SRC(code) == BPF_X ? kAny : 0;  // the source operand is a register
    OpFacts f;
    switch (c) {
        case BPF_ALU64:
            f.defs_dst = true;
            if (o == BPF_END) {
                f.by_fields = true;
            } else if (o == BPF_MOV) {
                f.src_read = x;
            } else {
                f.dst_read = kAny;
                f.src_read = o == BPF_NEG ? 0 : x;
            }
            return f;
        case BPF_ALU:
            f.defs_dst = true;
            f.by_fields = o == BPF_END;
            f.def32 = true;
            return f;
        case BPF_JMP:
            if (code == (BPF_JMP | isa::kOpTailCall)) return f;
            if (o == BPF_EXIT) {
                f.fixed_read = bit(0);
                f.flow = Flow::Stop;
            } else if (o == BPF_CALL) {
                f.by_fields = true;
                f.clobbered = kCallClobbered;
            } else if (o == BPF_JA) {
                f.dst_read = x;  // gotox
                f.flow = x ? Flow::Tables : Flow::Jump;
            } else {
                if (o != BPF_JCOND) {
                    f.dst_read = kAny;
                    f.src_read = x;
                }
                f.flow = Flow::Branch;
            }
            return f;
        case BPF_JMP32:  // no 64-bit reads at all
            if (o == BPF_EXIT) f.flow = Flow::Stop;
            else if (o == BPF_CALL) f.clobbered = kCallClobbered;
            else if (o == BPF_JA) f.flow = x ? Flow::Jump : Flow::JumpImm;  // gotol: JMP32 | JA | K
            else f.flow = Flow::Branch;
            return f;
        case BPF_LDX:
            f.src_read = kAny;
            f.defs_dst = true;
            f.def32 = BPF_SIZE(code) != BPF_DW && m != BPF_MEMSX;
            return f;
        case BPF_ST:
            f.dst_read = kAny;
            return f;
        case BPF_STX:
            if (m == BPF_ATOMIC || m == isa::kModeProbeAtomic) {
                f.by_fields = true;
            } else {
                f.dst_read = kAny;
                f.src_read = BPF_SIZE(code) == BPF_DW ? kAny : 0;
            }
            return f;
        default:  // BPF_LD
            f.defs_dst = true;
            if (m != BPF_IMM) {
                f.def32 = true;  // LD_ABS / LD_IND load into the low half of R0
                f.fixed_read = bit(6);
                f.src_read = m == BPF_IND ? kAny : 0;
            } else if (code == (BPF_LD | BPF_IMM | BPF_DW)) {
                f.flow = Flow::SkipSlot;
            }
            return f;
    }
}

constexpr std::array<OpFacts, 256> kOpFacts = [] {
    std::array<OpFacts, 256> t{};
    for (unsigned code = 0; code < t.size(); ++code) t[code] = op_facts(static_cast<uint8_t>(code));
    return t;
}();

// One insn as zext_gaps() keeps it: read64(), ends(), def_regno(), and the successors of
// insn_successors() as nodes of the liveness: a pc below n, `n` for the jump-table node that every
// gotox leads to, `n + 1` for "no successor" (an edge leaving the program is none either).
struct Decoded {
    RegMask read = 0, end = 0;
    int8_t def_reg = -1;
    bool def32 = false;  // has_def32()
    std::array<uint32_t, 2> succ{};
};

// Always inlined into the loop of zext_gaps(): out of line, the call and the returned struct cost
// as much as the decoding.
[[gnu::always_inline]] inline Decoded decode(const Insn& insn, uint32_t pc, uint32_t n) {
    const OpFacts& f = kOpFacts[insn.code];
    Decoded d;
    if (f.by_fields) {
        d.read = read64(insn);
        d.def_reg = static_cast<int8_t>(def_regno(insn));
        d.def32 = has_def32(insn);
    } else {
        // dst_reg and src_reg are 4-bit fields: both shifts stay inside RegMask
        d.read = static_cast<RegMask>(f.fixed_read | ((1u << insn.dst_reg) & f.dst_read) | ((1u << insn.src_reg) & f.src_read));
        d.def_reg = f.defs_dst ? static_cast<int8_t>(insn.dst_reg) : int8_t{-1};
        d.def32 = f.def32;
    }
    d.end = static_cast<RegMask>(bit(d.def_reg) | f.clobbered);
    const uint32_t none = n + 1;
    const int64_t next = static_cast<int64_t>(pc) + 1;
    const auto node = [n, none](int64_t t) { return t >= 0 && t < static_cast<int64_t>(n) ? static_cast<uint32_t>(t) : none; };
    d.succ = {none, none};
    switch (f.flow) {
        case Flow::Next: d.succ[0] = node(next); break;
        case Flow::SkipSlot: d.succ[0] = node(next + 1); break;
        case Flow::Stop: break;
        case Flow::Tables: d.succ[0] = n; break;
        case Flow::Jump: d.succ[0] = node(next + insn.off); break;
        case Flow::JumpImm: d.succ[0] = node(next + insn.imm); break;
        case Flow::Branch: d.succ = {node(next + insn.off), node(next)}; break;
    }
    return d;
}

// A 32-bit def that zext_gaps() reports when some path reads its register as 64 bits must also be
// seen by the verifier and not marked yet.
bool is_unmarked(const Program& prog, uint32_t pc) {
    const bool seen = pc >= prog.aux.size() || prog.aux[pc].seen;
    const bool marked = pc < prog.aux.size() && prog.aux[pc].zext_dst;
    return seen && !marked;
}

}  // namespace

bool reads_reg64(const Insn& insn, int reg) { return (read64(insn) & bit(reg)) != 0; }

LivenessInsn liveness_insn(const Program& prog, uint32_t pc) {
    LivenessInsn out;
    const uint32_t n = prog.len();
    if (pc >= n) return out;
    const Decoded d = decode(prog.insns[pc], pc, n);
    out.read = d.read;
    out.end = d.end;
    out.def_reg = d.def_reg;
    out.def32 = d.def32;
    for (const uint32_t t : d.succ) {
        if (t < n) out.succ.pcs[out.succ.count++] = t;
        out.succ.through_tables |= t == n;
    }
    return out;
}

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
        int8_t def32_reg = -1;  // def_regno() of a 32-bit def (has_def32()), else -1
        std::array<uint32_t, 2> succ{};
        uint32_t resweep = 0;  // 1 + the highest pc that reads live_in before this node is swept
    };
    const uint32_t tables = n;
    std::vector<Node> nodes(n + 2);
    const auto live_out = [&nodes](const Node& node) {
        return static_cast<RegMask>(nodes[node.succ[0]].live_in | nodes[node.succ[1]].live_in);
    };
    // The tables node is joined before each sweep, so every gotox reads every entry early: an
    // entry asks for a resweep from the highest gotox down. Only programs with insn arrays have
    // entries; for them the highest gotox is found first, since the first sweep needs it.
    std::vector<uint32_t> table_targets;
    if (!prog.insn_arrays.empty()) {
        uint32_t gotox_top = 0;  // 1 + the highest gotox pc
        for (uint32_t pc = n; pc-- > 0 && !gotox_top;)
            if (jumps_through_tables(prog.insns[pc])) gotox_top = pc + 1;
        if (gotox_top) append_jump_table_targets(prog, table_targets);
        for (const uint32_t t : table_targets) nodes[t].resweep = std::max(nodes[t].resweep, gotox_top);
    }
    // The first sweep decodes each insn as it reaches it. A back edge's target lies below it, so
    // it learns its `resweep` before it is swept; the tables node is still empty.
    uint32_t top = 0;
    for (uint32_t pc = n; pc-- > 0;) {
        Node& node = nodes[pc];
        const Decoded d = decode(prog.insns[pc], pc, n);
        node.read = d.read;
        node.end = d.end;
        node.def32_reg = d.def32 ? d.def_reg : int8_t{-1};
        node.succ = d.succ;
        // Only the first successor can be a back edge (at or below pc): the second is pc + 1.
        if (d.succ[0] <= pc) nodes[d.succ[0]].resweep = std::max(nodes[d.succ[0]].resweep, pc + 1);
        const auto in = static_cast<RegMask>(node.read | (live_out(node) & ~node.end));
        if (in == 0) continue;  // as it started
        node.live_in = in;
        top = std::max(top, node.resweep);
    }
    while (top > 0) {  // one more sweep: pcs top - 1 down to 0
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
    // Every live_in is final now, and so is every live_out. The liveness test first: most defs
    // are not read as 64 bits.
    std::vector<ZextGap> gaps;
    for (uint32_t pc = 0; pc < n; ++pc) {
        if (isa::is_ldimm64(prog.insns[pc])) {
            ++pc;  // its second slot is no def of its own
            continue;
        }
        const Node& node = nodes[pc];
        if ((live_out(node) & bit(node.def32_reg)) && is_unmarked(prog, pc)) gaps.push_back(ZextGap{pc, node.def32_reg});
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
