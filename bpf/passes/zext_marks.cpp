#include "bpf/passes/zext_marks.hpp"

#include <linux/bpf.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstring>
#include <memory>

#include "bpf/isa/helper_protos.hpp"
#include "bpf/isa/jump_condition.hpp"
#include "bpf/passes/insn_defs.hpp"
#include "bpf/program/cfg.hpp"

namespace patchfuzz::passes {
namespace {

using isa::Insn;
using RegMask = uint16_t;  // bit r: register r (dst/src fields are 4 bits wide)

constexpr RegMask bit(int r) { return r >= 0 && r < 16 ? static_cast<RegMask>(1u << r) : 0; }
constexpr RegMask kCallClobbered = bit(0) | bit(1) | bit(2) | bit(3) | bit(4) | bit(5);
constexpr RegMask kArgRegs = bit(1) | bit(2) | bit(3) | bit(4) | bit(5);

// Unknown helpers: all five argument registers, so that no 64-bit read goes unseen (a read too
// many only costs a zero extension).
constexpr int kUnknownHelperArgs = 5;

// The argument registers R1..R<count>.
constexpr RegMask arg_regs(int count) {
    RegMask m = 0;
    for (int r = 1; r <= count; ++r) m |= bit(r);
    return m;
}

// The registers `i` reads as 64-bit values (is_reg64() for SRC_OP): the opcode facts' 64-bit
// reads, and where they say the fields decide (InsnFacts::regs_by), the fields.
RegMask read64(const Insn& i) {
    const isa::InsnFacts& k = isa::kInsnFacts[i.code];
    const RegMask dst = bit(i.dst_reg), src = bit(i.src_reg);
    const auto roles = static_cast<RegMask>((k.read64_roles & isa::kRoleDst ? dst : 0) | (k.read64_roles & isa::kRoleSrc ? src : 0));
    switch (k.regs_by) {
        case isa::RegsBy::Code:
            return static_cast<RegMask>(k.read64_fixed | roles);
        case isa::RegsBy::SrcImm:  // a call: a helper's arguments; bpf-to-bpf and kfunc calls: see the header
            if (i.src_reg != 0) return 0;
            return arg_regs(isa::helper_arg_count(i.imm).value_or(kUnknownHelperArgs));
        case isa::RegsBy::Imm:
            break;
    }
    if (k.op == BPF_END) return i.imm == 64 ? dst : 0;  // bswap16/32 read the low half only
    // an atomic
    if (k.mode == BPF_ATOMIC && i.imm == BPF_LOAD_ACQ) return src;  // dst = *(src + off)
    RegMask m = dst;  // the address
    if (k.bytes == 8) {
        m |= src;  // the stored (or exchanged, or added) value
        // cmpxchg compares R0 with the old value: all of it for a 64-bit cmpxchg
        if (k.mode == BPF_ATOMIC && i.imm == BPF_CMPXCHG) m |= bit(0);
    }
    return m;
}

// The registers whose paths end at `i`: the one it redefines (`def_reg`, def_regno(i)), and R0-R5
// at any call.
RegMask ends(const Insn& i, int def_reg) {
    RegMask m = bit(def_reg);
    if (isa::kInsnFacts[i.code].clobbers_caller_saved) m |= kCallClobbered;
    return m;
}
RegMask ends(const Insn& i) { return ends(i, def_regno(i)); }

// ---- the same facts by opcode, packed ---------------------------------------------------------------
// zext_gaps() decodes every insn of every generated program. For nearly every opcode byte the
// answers follow from the opcode facts plus the register fields, so the decode reads a packed
// view of the facts (kOpFacts below, computed from isa::kInsnFacts at compile time); only the
// opcodes whose answer depends on imm or src_reg take the functions above (END: the width;
// atomics: the operation), or for calls, a table of the helpers' arguments (decode_call()). The
// view is tested against those functions and insn_successors() for every opcode byte
// (zext_marks_test.cpp).

// Where a jump goes, the jump cases of insn_successors(): nowhere (not a jump), pc + 1 + off,
// pc + 1 + imm (gotol), or through the jump tables (gotox).
enum class Jump : uint8_t { None, Off, Imm, Tables };

constexpr RegMask kAny = 0xffff;

// How the decode loop of for_each_gap() takes an opcode: Plain, the table's masks and the
// fall-through alone (most insns: no jump, no by-field answer); Branch, the table with a jump by
// `off` or no fall-through (exit); Call (BPF_JMP | BPF_CALL), decode_call(); Other, decode_any()
// (END, atomics, gotol, gotox). Only the last three can be entered insns' sources or conditional
// jumps, so only they take the loop's bookkeeping of those.
enum class Kind : uint8_t { Plain, Branch, Call, Other };

// Decoded's masks as one word of four lanes: read in bits 0-15, then end, def32 and end again,
// which by_table() turns into keep, def32 and keep_jump with one XOR (kFlipEnds). A register's
// bit times kLanes stands in all four, so that one AND with OpFacts::dst_lanes gives what dst is
// in each.
constexpr uint64_t kLanes = 0x0001'0001'0001'0001;
constexpr uint64_t kFlipEnds = 0xffff'0000'ffff'0000;
constexpr uint64_t lanes(RegMask read, RegMask end, RegMask def32) {
    return read | static_cast<uint64_t>(end) << 16 | static_cast<uint64_t>(def32) << 32 | static_cast<uint64_t>(end) << 48;
}

// What the opcode says, as op_rules() works it out.
struct OpRules {
    RegMask fixed_read = 0;  // read whatever the fields say: R0 at exit, R6 at LD_ABS/IND
    RegMask dst_read = 0;    // kAny: dst is read as 64 bits (masks bit(dst))
    RegMask src_read = 0;    // kAny: src is read as 64 bits
    RegMask clobbered = 0;   // calls: R0-R5
    RegMask def_dst = 0;     // kAny: def_regno() is dst (else -1)
    RegMask def32_dst = 0;   // kAny: has_def32() (of dst)
    bool by_fields = false;  // read64() and def_regno() decide (END, helper calls, atomics)
    // Where execution goes on: pc + fall (0: not past this insn; 2: over ld_imm64's second slot),
    // and where it jumps.
    uint8_t fall = 1;
    Jump jump = Jump::None;
    bool cond = false;  // a conditional jump by `off` (not may_goto): one the verifier may decide
};

// The opcode facts (isa/insn_facts.hpp) as masks: a role's kAny masks the register of its field.
constexpr OpRules op_rules(uint8_t code) {
    const isa::InsnFacts& k = isa::kInsnFacts[code];
    const auto role = [&k](uint8_t r) { return k.read64_roles & r ? kAny : RegMask{0}; };
    OpRules f;
    f.fixed_read = k.read64_fixed;
    f.dst_read = role(isa::kRoleDst);
    f.src_read = role(isa::kRoleSrc);
    f.clobbered = k.clobbers_caller_saved ? kCallClobbered : RegMask{0};
    f.def_dst = k.def == isa::Def::Dst ? kAny : RegMask{0};
    f.def32_dst = k.def32 == isa::Def32::Yes ? kAny : RegMask{0};
    f.by_fields = k.regs_by != isa::RegsBy::Code || k.def == isa::Def::ByImm || k.def32 == isa::Def32::ByImm;
    f.fall = k.fall;
    switch (k.target) {
        case isa::Target::Off: f.jump = Jump::Off; break;
        case isa::Target::Imm: f.jump = Jump::Imm; break;
        case isa::Target::Tables: f.jump = Jump::Tables; break;
        default: f.jump = Jump::None; break;  // (a bpf-to-bpf call's callee: decode_call(), add_callee_edge())
    }
    f.cond = k.compares;
    return f;
}

// The rules as the decode reads them: the masks packed into lanes for by_table(), and the
// opcode's Kind. (A table entry fills half a cache line.)
struct OpFacts {
    uint64_t dst_lanes = 0;    // dst's bit in lanes: dst_read, def_dst, def32_dst
    uint64_t src_lanes = 0;    // src's bit in lanes: src_read
    uint64_t fixed_lanes = 0;  // lanes whatever the fields say: fixed_read, clobbered
    uint8_t fall = 1;
    Jump jump = Jump::None;
    Kind kind = Kind::Plain;
    bool by_fields = false;
    bool cond = false;
    bool may_def32 = false;  // def32_dst != 0: a Plain insn of this opcode is a 32-bit def
};
static_assert(sizeof(OpFacts) == 32);

constexpr std::array<OpFacts, 256> kOpFacts = [] {
    std::array<OpFacts, 256> t{};
    for (unsigned code = 0; code < t.size(); ++code) {
        const OpRules r = op_rules(static_cast<uint8_t>(code));
        OpFacts& f = t[code];
        f.dst_lanes = lanes(r.dst_read, r.def_dst, r.def32_dst);
        f.src_lanes = lanes(r.src_read, 0, 0);
        f.fixed_lanes = lanes(r.fixed_read, r.clobbered, 0);
        f.fall = r.fall;
        f.jump = r.jump;
        f.by_fields = r.by_fields;
        f.cond = r.cond;
        f.may_def32 = r.def32_dst != 0;
        if (code == (BPF_JMP | BPF_CALL))
            f.kind = Kind::Call;
        else if (r.by_fields || r.jump == Jump::Imm || r.jump == Jump::Tables)
            f.kind = Kind::Other;
        else if (r.jump == Jump::Off || r.fall == 0)
            f.kind = Kind::Branch;
    }
    return t;
}();

// A lane of a word of lanes.
constexpr RegMask lane(uint64_t word, int k) { return static_cast<RegMask>(word >> (16 * k)); }

// The byte of the register fields, dst_reg in its low half: an index for the tables below.
constexpr uint8_t regs_byte(const Insn& i) { return static_cast<uint8_t>(i.dst_reg | i.src_reg << 4); }
// By regs_byte(): kRegBits[kDst] dst's bit in every lane, kRegBits[kSrc] src's bit in lane 0.
// (One array: the decode loop then keeps one address for both.)
constexpr size_t kDst = 0, kSrc = 1;
constexpr std::array<std::array<uint64_t, 256>, 2> kRegBits = [] {
    std::array<std::array<uint64_t, 256>, 2> t{};
    for (unsigned regs = 0; regs < 256; ++regs) {
        t[kDst][regs] = (uint64_t{1} << (regs & 0xf)) * kLanes;
        t[kSrc][regs] = uint64_t{1} << (regs >> 4);
    }
    return t;
}();

// The nodes of the liveness: pc < n for the insns; n and n + 1 for no insn, never live (the
// successor an insn does not have, and an edge that leaves the program: an insn's pc + 1 or
// pc + 2 lands on one of them past the last insn, so fall-throughs need no range check); n + 2
// for the jump tables, the one successor of every gotox.
constexpr uint32_t no_node(uint32_t n) { return n; }
constexpr uint32_t tables_node(uint32_t n) { return n + 2; }

// One insn as zext_gaps() keeps it: read64(), what of the successors' live registers is live
// here (the complement of ends()), has_def32() as the bit of the def (so that "a 32-bit def whose
// register is live" is one AND), and the successors of insn_successors() as nodes: the jump target
// first, then the fall-through, as insn_successors() orders them. So the sweep's step is
//   live_in = read | (live_in(succ[0]) & keep_jump) | (live_in(succ[1]) & keep).
struct Decoded {
    RegMask read;
    RegMask keep;   // ~ends()
    RegMask def32;  // bit(def_regno()) for a 32-bit def (has_def32()), else 0
    // keep, but R1-R5 for a bpf-to-bpf call whose succ[0] is the callee's entry: the callee's
    // 64-bit reads of its arguments are the call's (add_callee_edge())
    RegMask keep_jump;
    std::array<uint32_t, 2> succ;

    RegMask end() const { return static_cast<RegMask>(~keep); }
    void set_end(RegMask end) { keep = keep_jump = static_cast<RegMask>(~end); }
    // The four masks from their lanes (kLanes) in one store (mask by mask, the decode loop took
    // a shift and a store for each): the masks' word is their lanes, in order, on a
    // little-endian machine.
    void set_masks(uint64_t lanes) {
        static_assert(std::endian::native == std::endian::little && offsetof(Decoded, keep_jump) == 6);
        std::memcpy(this, &lanes, sizeof lanes);
    }
};

// An insn's masks as the table says them, from the opcode and registers, with the successors
// given. Exactly decode_any()'s masks for Plain and Branch insns.
[[gnu::always_inline]] inline Decoded by_table(const Insn& insn, const OpFacts& f, uint32_t succ0, uint32_t succ1) {
    const uint8_t regs = regs_byte(insn);
    const uint64_t m = (kRegBits[kDst][regs] & f.dst_lanes) | (kRegBits[kSrc][regs] & f.src_lanes) | f.fixed_lanes;
    Decoded d;
    d.set_masks(m ^ kFlipEnds);
    d.succ = {succ0, succ1};
    return d;
}

// pc + 1 + delta as a node: no_node() when it leaves the program.
[[gnu::always_inline]] inline uint32_t jump_node(uint32_t pc, int64_t delta, uint32_t n) {
    const int64_t t = static_cast<int64_t>(pc) + 1 + delta;
    return t >= 0 && t < static_cast<int64_t>(n) ? static_cast<uint32_t>(t) : no_node(n);
}

// An insn as the table says it: by_table(), the fall-through pc + fall, and a jump by `off`.
// Exactly decode_any()'s answer for Plain and Branch insns; for the others decode_any()
// corrects what the table does not decide.
[[gnu::always_inline]] inline Decoded decode_by_table(const Insn& insn, const OpFacts& f, uint32_t pc, uint32_t n) {
    const uint32_t none = no_node(n);
    return by_table(insn, f, f.jump == Jump::Off ? jump_node(pc, insn.off, n) : none, f.fall ? pc + f.fall : none);
}

// Any insn: the table, and where it does not decide, the functions above (reads and defs by the
// fields) and the other jumps (gotol by `imm`, gotox through the tables).
[[gnu::noinline]] Decoded decode_any(const Insn& insn, uint32_t pc, uint32_t n) {
    const OpFacts& f = kOpFacts[insn.code];
    Decoded d = decode_by_table(insn, f, pc, n);
    if (f.by_fields) {
        d.read = read64(insn);
        const int def = def_regno(insn);
        d.set_end(static_cast<RegMask>(bit(def) | lane(f.fixed_lanes, 1)));  // clobbered
        d.def32 = has_def32(insn) ? bit(def) : RegMask{0};
    }
    if (f.jump == Jump::Imm)
        d.succ[0] = jump_node(pc, insn.imm, n);
    else if (f.jump == Jump::Tables)
        d.succ[0] = tables_node(n);
    return d;
}

// read64() of a helper call, by a table for the ids below kTabledHelperIds (the kernel numbers
// its helpers from 1 up, about 210 of them): isa::helper_arg_count() walks the prototypes at
// every call of every generated program (about 10 a program).
constexpr int32_t kTabledHelperIds = 256;
const std::array<RegMask, kTabledHelperIds> kHelperReads = [] {
    std::array<RegMask, kTabledHelperIds> t{};
    for (int32_t id = 0; id < kTabledHelperIds; ++id)
        t[static_cast<size_t>(id)] = arg_regs(isa::helper_arg_count(id).value_or(kUnknownHelperArgs));
    return t;
}();
RegMask helper_reads(int32_t id) {
    if (static_cast<uint32_t>(id) < kTabledHelperIds) return kHelperReads[static_cast<uint32_t>(id)];
    return arg_regs(isa::helper_arg_count(id).value_or(kUnknownHelperArgs));
}

// A call (Kind::Call): decode_any()'s answer without its switches. A helper call reads its
// arguments, any call ends the paths of R0-R5 and defines no register of its own (def_regno()
// is -1 for the JMP class), and execution goes on at pc + 1.
[[gnu::always_inline]] inline Decoded decode_call(const Insn& insn, uint32_t pc, uint32_t n) {
    constexpr auto keep = static_cast<RegMask>(~kCallClobbered);
    return Decoded{.read = insn.src_reg == 0 ? helper_reads(insn.imm) : RegMask{0}, .keep = keep, .def32 = 0,
                   .keep_jump = keep, .succ = {no_node(n), pc + 1}};
}

// For a bpf-to-bpf call, the callee's entry as the first successor of `d`: a call passes R1-R5
// to the callee as they are, 32-bit defs' subreg_def included (set_callee_state() copies the
// caller's registers), so the callee's 64-bit read of an argument before redefining it marks the
// caller's def (mark_insn_zext() at the read, in kernel/bpf/verifier.c): the call reads what the
// callee's entry reads of R1-R5, and those alone (Decoded::keep_jump).
[[gnu::always_inline]] inline void add_callee_edge(Decoded& d, const Insn& insn, uint32_t pc, uint32_t n) {
    if (!isa::is_pseudo_call(insn)) return;
    const uint32_t callee = jump_node(pc, insn.imm, n);
    if (callee == no_node(n)) return;
    d.succ[0] = callee;
    d.keep_jump = kArgRegs;
}

// Any insn by its Kind, with add_callee_edge() or without.
enum class CalleeEdge : bool { No, Yes };
[[gnu::always_inline]] inline Decoded decode(const Insn& insn, uint32_t pc, uint32_t n, CalleeEdge callee_edge) {
    const OpFacts& f = kOpFacts[insn.code];
    switch (f.kind) {
        case Kind::Call: {
            Decoded d = decode_call(insn, pc, n);
            if (callee_edge == CalleeEdge::Yes) add_callee_edge(d, insn, pc, n);
            return d;
        }
        case Kind::Other: return decode_any(insn, pc, n);
        default: return decode_by_table(insn, f, pc, n);
    }
}

// decode() with add_callee_edge(). Out of line: inline in the decode loop of for_each_gap(), its
// cases crowd the registers of the loop's path for Plain insns.
[[gnu::noinline]] Decoded decode_with_callee(const Insn& insn, uint32_t pc, uint32_t n) {
    return decode(insn, pc, n, CalleeEdge::Yes);
}

// Is the insn at `pc` the second slot of an ld_imm64, as a walk from pc 0 that steps over every
// ld_imm64's second slot sees it? A run of k ld_imm64 opcodes just before pc starts with one
// that is an insn of its own, so pc is a second slot exactly when k is odd (k is 0 in any valid
// program: a second slot's opcode is 0).
bool is_second_slot(const Program& prog, uint32_t pc) {
    uint32_t k = 0;
    while (k < pc && isa::is_ldimm64(prog.insns[pc - 1 - k])) ++k;
    return k % 2 == 1;
}

// ---- branches the verifier decides -------------------------------------------------------------
// check_cond_jmp_op() (kernel/bpf/verifier.c) asks is_branch_taken() whether the registers it knows
// decide a conditional jump; a privileged load (bypass_spec_v1) then follows only the side that is
// taken, so reads on the other side never mark a def (an unprivileged load explores it
// speculatively: not modelled, generated programs load privileged). Modelled for the registers
// whose value is a constant set by the straight-line code just before the jump (`r0 = 0; if r0 != 0
// goto ...`; at most kStraightLineSteps insns before it), which the verifier knows exactly: a
// subset of what it decides, so that no edge it explores is dropped.

// The value the insn at q gives its dst when the verifier knows it from the insn alone: a MOV K
// (64-bit: imm sign-extended; 32-bit: zero-extended) or an ld_imm64 of a plain value.
std::optional<uint64_t> known_value(const Program& prog, uint32_t q) {
    const Insn& i = prog.insns[q];
    if (i.code == (BPF_ALU64 | BPF_MOV | BPF_K) && i.off == 0) return static_cast<uint64_t>(static_cast<int64_t>(i.imm));
    if (i.code == (BPF_ALU | BPF_MOV | BPF_K) && i.off == 0) return static_cast<uint32_t>(i.imm);
    if (isa::is_ldimm64(i) && i.src_reg == 0 && q + 1 < prog.len())
        return static_cast<uint32_t>(i.imm) | static_cast<uint64_t>(static_cast<uint32_t>(prog.insns[q + 1].imm)) << 32;
    return std::nullopt;
}

// How far back straight_line_constant() looks: the constants the generators and real programs
// compare are set just before the jump; a longer walk would cost every generated case more than it
// decides.
constexpr uint32_t kStraightLineSteps = 8;

// The constant register `r` holds on entry to `pc` when the straight-line code just before it
// sets it: going back from pc while each insn is entered only from the one before (`entered(q)`),
// at most kStraightLineSteps insns, up to the first insn whose `ends(q)` has r (a def, or a call's
// clobber), which must be a known_value(); nullopt otherwise.
template <class Entered, class Ends>
std::optional<uint64_t> straight_line_constant(const Program& prog, const Entered& entered, const Ends& ends, uint32_t pc, int r) {
    const Insn* const insns = prog.insns.data();
    for (uint32_t q = pc, steps = 0; q > 0 && !entered(q) && steps < kStraightLineSteps; ++steps) {
        --q;
        if (is_second_slot(prog, q)) --q;  // the ld_imm64 whose second slot falls into q + 2
        if (kOpFacts[insns[q].code].fall == 0) return std::nullopt;  // ja, exit: q + 1 is entered otherwise, if at all
        if ((ends(q) & bit(r)) == 0) continue;
        return def_regno(insns[q]) == r ? known_value(prog, q) : std::nullopt;  // a call clobbers R0-R5
    }
    return std::nullopt;
}

// Which side of the conditional jump at `pc` the verifier never follows when straight-line constants
// decide it: Jump (not taken: only the fall-through is followed), FallThrough (taken), or None.
// `entered(q)` says whether insn q is entered other than from the one before (entered_insns()),
// `ends(q)` which registers' paths end at q (a def, a call's clobber).
enum class Untaken : uint8_t { None, Jump, FallThrough };
template <class Entered, class Ends>
Untaken untaken_side(const Program& prog, const Entered& entered, const Ends& ends, uint32_t pc) {
    const Insn& i = prog.insns[pc];
    if (!kOpFacts[i.code].cond) return Untaken::None;
    const uint8_t c = isa::cls(i), op = isa::op(i);
    const std::optional<uint64_t> a = straight_line_constant(prog, entered, ends, pc, i.dst_reg);
    if (!a) return Untaken::None;
    const bool is32 = c == BPF_JMP32;
    const std::optional<uint64_t> b = isa::src_bit(i) ? straight_line_constant(prog, entered, ends, pc, i.src_reg)
                                      : std::optional<uint64_t>(is32 ? static_cast<uint32_t>(i.imm)
                                                                     : static_cast<uint64_t>(static_cast<int64_t>(i.imm)));
    if (!b) return Untaken::None;
    // is_branch_taken() on two known values (a conditional jump: jump_taken answers)
    return isa::jump_taken(op, *a, *b, is32).value() ? Untaken::FallThrough : Untaken::Jump;
}

// The insns entered other than from the insn before: the entry, subprog starts, jump targets
// (a first successor: decode_with_callee()), callee entries and jump table entries. for_each_gap()
// marks the same while it decodes.
std::vector<bool> entered_insns(const Program& prog) {
    const uint32_t n = prog.len();
    std::vector<bool> entered(n + 3, false);
    entered[0] = true;
    for (const SubprogInfo& s : prog.subprogs)
        if (s.start < n) entered[s.start] = true;
    bool gotox = false;
    for (uint32_t pc = 0; pc < n; ++pc) {
        const uint32_t first = decode_with_callee(prog.insns[pc], pc, n).succ[0];
        entered[first] = true;
        gotox |= first == tables_node(n);
    }
    std::vector<uint32_t> table_targets;
    if (gotox) append_jump_table_targets(prog, table_targets);  // (entered only through a gotox)
    for (const uint32_t t : table_targets) entered[t] = true;
    return entered;
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
    const Decoded d = decode(prog.insns[pc], pc, n, CalleeEdge::No);
    out.read = d.read;
    out.end = d.end();
    const OpFacts& f = kOpFacts[prog.insns[pc].code];
    const bool def_dst = lane(f.dst_lanes, 1) != 0;  // def_dst in the end lane
    out.def_reg = static_cast<int8_t>(f.by_fields ? def_regno(prog.insns[pc]) : def_dst ? prog.insns[pc].dst_reg : -1);
    out.def32 = d.def32 != 0;
    for (const uint32_t t : d.succ) {
        if (t < n) out.succ.pcs[out.succ.count++] = t;
        out.succ.through_tables |= t == tables_node(n);
    }
    return out;
}

namespace {

// A node of for_each_gap()'s sweep.
struct Live {
    RegMask live_in;
    bool entered;      // entered other than from the insn before (for untaken_side())
    uint32_t resweep;  // 1 + the highest pc that reads live_in before this node is swept
};

// Room for the conditional jumps decode_all() lists; the last slot is a scratch one.
constexpr size_t kCondSlots = 128;

struct DecodeCounts {
    uint32_t conds;  // more than kCondSlots - 1: some are not listed
    uint32_t defs;
};

// for_each_gap()'s decode loop, in a function of its own so that its registers are its own: every
// insn decoded into `decoded`, the entered nodes and back-edge targets' resweep marked in `live`
// (cleared before), the conditional jumps listed in `conds` and the 32-bit defs in `defs`, both in
// program order. Every back edge marks its target's `resweep`: a back edge's source is at or
// above its target, so each mark is complete before the target's first change asks for it.
[[gnu::noinline]] DecodeCounts decode_all(const Program& prog, Live* live, Decoded* decoded, uint32_t* defs,
                                          std::array<uint32_t, kCondSlots>& conds) {
    const uint32_t n = prog.len();
    const Insn* const insns = prog.insns.data();
    // Live::entered: the entry, subprog starts, jump targets, callee entries and jump table
    // entries, as entered_insns() gives them (the last in for_each_gap()).
    live[0].entered = true;
    for (const SubprogInfo& s : prog.subprogs)
        if (s.start < n) live[s.start].entered = true;
    uint32_t cond_count = 0, def_count = 0;
    const uint32_t none = no_node(n);
    for (uint32_t pc = 0; pc < n; ++pc) {
        const Insn& insn = insns[pc];
        const OpFacts& f = kOpFacts[insn.code];
        // Without a branch on whether it is a def: the slot past the last one is overwritten by
        // the next.
        defs[def_count] = pc;
        if (f.kind == Kind::Plain) [[likely]] {  // no successor but the next insn(s)
            decoded[pc] = by_table(insn, f, none, pc + f.fall);
            def_count += f.may_def32;
            continue;
        }
        const Decoded d = decoded[pc] = decode_with_callee(insn, pc, n);
        def_count += d.def32 != 0;
        live[d.succ[0]].entered = true;
        // Without a branch on every jump: the slot past the last one is overwritten by the next.
        conds[std::min<size_t>(cond_count, conds.size() - 1)] = pc;
        cond_count += f.cond;
        // Only the first successor, a jump's or a callee's entry, can be read early (at or
        // below pc).
        if (d.succ[0] <= pc) live[d.succ[0]].resweep = std::max(live[d.succ[0]].resweep, pc + 1);
    }
    return {cond_count, def_count};
}

// for_each_gap()'s sweep over the decoded insns, in a function of its own so that its registers
// are its own. A table entry's change sends it back to at least the entry itself, so that the
// tables node is joined again before any gotox below reads it.
[[gnu::noinline]] void sweep(const Decoded* decoded, Live* live, uint32_t n, const std::vector<uint32_t>& table_targets) {
    for (int64_t pc = static_cast<int64_t>(n) - 1; pc >= 0; --pc) {
        const Decoded& d = decoded[pc];
        Live& l = live[pc];
        const auto in = static_cast<RegMask>(d.read | (live[d.succ[0]].live_in & d.keep_jump) | (live[d.succ[1]].live_in & d.keep));
        // Only a node read early looks at whether it changed (most visits are a node's first,
        // which changes it)
        if (l.resweep > pc && in != l.live_in) [[unlikely]] {
            l.live_in = in;
            RegMask joined = 0;
            for (const uint32_t t : table_targets) joined |= live[t].live_in;
            live[tables_node(n)].live_in = joined;
            pc = l.resweep;
            continue;
        }
        l.live_in = in;
    }
}

// The arrays for_each_gap() works in, kept per thread from one program to the next, for the
// largest program yet: for_each_gap() runs once per generated program, and allocating them
// afresh cost three new[] and three delete[] every time.
struct LivenessArrays {
    std::unique_ptr<Live[]> live;        // n + 3 nodes
    std::unique_ptr<Decoded[]> decoded;  // n insns
    std::unique_ptr<uint32_t[]> defs;    // up to n 32-bit defs
    uint32_t insns = 0;                  // n of the largest program yet (if live is allocated)
};
LivenessArrays& liveness_arrays(uint32_t n) {
    thread_local LivenessArrays arrays;  // (for_each_gap() calls nothing that could use them too)
    if (n > arrays.insns || !arrays.live) [[unlikely]] {
        arrays.live = std::make_unique_for_overwrite<Live[]>(size_t{n} + 3);
        arrays.decoded = std::make_unique_for_overwrite<Decoded[]>(n);
        arrays.defs = std::make_unique_for_overwrite<uint32_t[]>(n);
        arrays.insns = n;
    }
    return arrays;
}

// Calls on_gap(pc, reg) for every def zext_gaps() reports, in program order; whether a def is
// seen and unmarked is read from prog.aux as the call for it comes, so on_gap may mark the def.
template <class OnGap>
void for_each_gap(const Program& prog, OnGap&& on_gap) {
    const uint32_t n = prog.len();
    // The fixpoint of
    //   live64_in(pc) = read64(pc) | (OR over successors s of live64_in(s)) & ~ends(pc),
    // the registers some path from pc reads as 64 bits before redefining them, by one sweep from
    // the last insn to the first, starting from nothing live. Most edges point forward, so the
    // sweep reads values already final; only a node that some node above it reads (a back-edge
    // target, or a jump-table entry) can have been read stale. Such a node keeps the highest pc
    // that reads it early (`resweep`, plus one), and a change at it sends the sweep back up to
    // there: every insn above reads only values that did not change. So a loop is swept again
    // until its head is stable before the sweep goes on below it, and the insns below it are
    // visited once, with the loop's final values. (Sweeping on to pc 0 and then starting again
    // from the highest reader of a changed node visited every insn below a loop once more per
    // round: 1.7 visits per insn of a generated program against 1.25.)
    // The tables node (tables_node()) joins every table entry, so G gotox insns and E entries
    // cost G + E reads rather than G x E; it is joined again whenever the sweep goes back up.
    //
    // A gap is a 32-bit def whose register is live after it, read from the fixpoint once it is
    // reached (testing at every visit cost a store per visit).
    //
    // What the sweep updates (Live), all zero at the start (nothing live, no early reader), apart
    // from the decoded insns that it reads, so that only the former is cleared (one small memset).
    LivenessArrays& arrays = liveness_arrays(n);
    Live* const live = arrays.live.get();
    std::memset(live, 0, sizeof(Live) * (n + 3));
    Decoded* const decoded = arrays.decoded.get();
    // Every insn decoded first, in a loop of its own (decode_all()).
    // The conditional jumps, ones the verifier may decide (untaken_side()): a program has a few
    // dozen at most, kept in a small array; past that, every insn is looked at again.
    std::array<uint32_t, kCondSlots> conds;
    // The 32-bit defs, in program order, for the gaps at the end.
    uint32_t* const defs = arrays.defs.get();
    const auto [cond_count, def_count] = decode_all(prog, live, decoded, defs, conds);
    // Every gotox reads every table entry through the tables node, so an entry's early readers
    // reach up to the highest gotox. Only programs with insn arrays have entries.
    std::vector<uint32_t> table_targets;
    if (!prog.insn_arrays.empty()) {
        uint32_t gotox_top = 0;  // 1 + the highest gotox pc
        for (uint32_t pc = n; pc-- > 0 && !gotox_top;)
            if (decoded[pc].succ[0] == tables_node(n)) gotox_top = pc + 1;
        if (gotox_top) append_jump_table_targets(prog, table_targets);
        for (const uint32_t t : table_targets) {
            live[t].resweep = std::max({live[t].resweep, gotox_top, t + 1});
            live[t].entered = true;
        }
    }
    // The sides the verifier never follows are no edges (untaken_side()).
    const auto entered = [live](uint32_t q) { return live[q].entered; };
    const auto ends_at = [decoded](uint32_t q) { return decoded[q].end(); };
    auto drop_untaken = [&](uint32_t pc) {
        switch (untaken_side(prog, entered, ends_at, pc)) {
            case Untaken::None: break;
            case Untaken::Jump: decoded[pc].succ[0] = no_node(n); break;
            case Untaken::FallThrough: decoded[pc].succ[1] = no_node(n); break;
        }
    };
    if (cond_count < conds.size()) [[likely]]  // (the last slot is the scratch one past the jumps)
        for (uint32_t k = 0; k < cond_count; ++k) drop_untaken(conds[k]);
    else
        for (uint32_t pc = 0; pc < n; ++pc) drop_untaken(pc);  // (untaken_side() passes over the others)
    // The sweep (see above).
    sweep(decoded, live, n, table_targets);
    // The gaps that the verifier would mark: seen and unmarked defs (an ld_imm64's second slot is
    // no def of its own).
    for (uint32_t k = 0; k < def_count; ++k) {
        const uint32_t pc = defs[k];
        const Decoded& d = decoded[pc];
        const auto gap = static_cast<RegMask>((live[d.succ[0]].live_in | live[d.succ[1]].live_in) & d.def32);
        if (gap != 0 && is_unmarked(prog, pc) && !is_second_slot(prog, pc)) on_gap(pc, std::countr_zero(static_cast<unsigned>(gap)));
    }
}

}  // namespace

std::vector<ZextGap> zext_gaps(const Program& prog) {
    std::vector<ZextGap> gaps;
    for_each_gap(prog, [&gaps](uint32_t pc, int reg) { gaps.push_back(ZextGap{pc, reg}); });
    return gaps;
}

std::optional<uint32_t> zext_gap_read(const Program& prog, const ZextGap& gap) {
    // Depth-first from the def, each insn once, with the path rules of the liveness above.
    const uint32_t n = prog.len();
    std::vector<bool> visited(n, false);
    std::vector<uint32_t> work;
    const std::vector<bool> entered_bits = entered_insns(prog);
    const auto entered = [&entered_bits](uint32_t q) { return static_cast<bool>(entered_bits[q]); };
    const auto ends_at = [&prog](uint32_t q) { return ends(prog.insns[q]); };
    // The successors the verifier follows: a decided jump's untaken side is none (untaken_side()).
    auto append_followed = [&](uint32_t pc) {
        const size_t from = work.size();
        append_successors(prog, pc, work);
        const Untaken u = untaken_side(prog, entered, ends_at, pc);
        if (u == Untaken::None) return;
        const uint32_t dropped = u == Untaken::FallThrough ? pc + 1 : static_cast<uint32_t>(static_cast<int64_t>(pc) + 1 + prog.insns[pc].off);
        for (size_t k = from; k < work.size(); ++k)
            if (work[k] == dropped) {
                work.erase(work.begin() + static_cast<std::ptrdiff_t>(k));
                break;
            }
    };
    append_followed(gap.def_pc);
    while (!work.empty()) {
        const uint32_t p = work.back();
        work.pop_back();
        if (visited[p]) continue;
        visited[p] = true;
        const Insn& u = prog.insns[p];
        if (read64(u) & bit(gap.reg)) return p;
        // A bpf-to-bpf call hands R1-R5 to the callee: the read may be there (see for_each_gap()).
        if (isa::is_pseudo_call(u) && (kArgRegs & bit(gap.reg))) {
            const int64_t t = static_cast<int64_t>(p) + 1 + u.imm;
            if (t >= 0 && t < static_cast<int64_t>(n)) work.push_back(static_cast<uint32_t>(t));
        }
        if (ends(u) & bit(gap.reg)) continue;
        append_followed(p);
    }
    return std::nullopt;
}

void add_zext_marks(Program& prog) {
    if (prog.aux.size() >= prog.insns.size()) {  // as generated programs have it: mark in place
        for_each_gap(prog, [&prog](uint32_t pc, int) { prog.aux[pc].zext_dst = true; });
        return;
    }
    // A short aux: the insns past it count as seen, which the records resize() adds are not, so
    // the gaps are found first.
    const std::vector<ZextGap> gaps = zext_gaps(prog);
    prog.aux.resize(prog.insns.size());
    for (const ZextGap& g : gaps) prog.aux[g.def_pc].zext_dst = true;
}

Program with_zext_facts(const Program& prog) {
    Program p = prog;
    add_zext_marks(p);
    return p;
}

}  // namespace patchfuzz::passes
