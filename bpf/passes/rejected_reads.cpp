#include "bpf/passes/rejected_reads.hpp"

#include <linux/bpf.h>

#include "bpf/isa/helper_protos.hpp"
#include "bpf/passes/insn_defs.hpp"
#include "bpf/program/cfg.hpp"

namespace patchfuzz::passes {
namespace {

using isa::Insn;
using RegMask = uint16_t;  // bit r: register r written (r0..r10)

constexpr RegMask bit(int r) { return static_cast<RegMask>(1u << r); }
constexpr RegMask kArgRegs = bit(1) | bit(2) | bit(3) | bit(4) | bit(5);

// Per program point: registers written on every path, and registers that may hold a pointer.
struct RegState {
    RegMask written;
    RegMask pointer;
    bool operator==(const RegState&) const = default;
};

// Helpers without a modelled prototype (bpf/isa/helper_protos.hpp): no argument is checked, since
// an over-approximation of their arguments would reject valid programs.
constexpr int kUnknownHelperArgs = 0;

// Arguments those helpers take as scalars (ARG_ANYTHING / ARG_CONST_*).
RegMask scalar_args(const Insn& i) { return isa::is_helper_call(i) ? isa::helper_scalar_args(i.imm) : 0; }

RegMask reads_of(const Insn& i) {
    const uint8_t c = isa::cls(i), o = isa::op(i);
    const bool x = isa::src_bit(i) != 0;
    const RegMask dst = i.dst_reg <= 10 ? bit(i.dst_reg) : 0, src = i.src_reg <= 10 ? bit(i.src_reg) : 0;
    switch (c) {
        case BPF_ALU:
        case BPF_ALU64:
            if (o == BPF_MOV) return x ? src : 0;
            return static_cast<RegMask>(dst | (x ? src : 0));
        case BPF_JMP:
        case BPF_JMP32:
            if (o == BPF_EXIT) return bit(0);
            if (o == BPF_CALL) {
                if (x) return dst;  // callx
                if (!isa::is_helper_call(i)) return 0;
                RegMask m = 0;
                const int args = isa::helper_arg_count(i.imm).value_or(kUnknownHelperArgs);
                for (int r = 1; r <= args; ++r) m |= bit(r);
                return m;
            }
            if (o == BPF_JA) return c == BPF_JMP && x ? dst : 0;  // gotox reads its register
            if (o == BPF_JCOND || isa::is_tail_call(i)) return 0;
            return static_cast<RegMask>(dst | (x ? src : 0));
        case BPF_LDX: return src;
        case BPF_ST: return dst;
        case BPF_STX: {
            RegMask m = static_cast<RegMask>(dst | src);
            if (isa::mode(i) == BPF_ATOMIC && i.imm == BPF_CMPXCHG) m |= bit(0);
            return m;
        }
        case BPF_LD:
            if (isa::is_ldimm64(i)) return 0;
            return static_cast<RegMask>(bit(6) | (isa::mode(i) == BPF_IND ? src : 0));  // LD_ABS/IND: skb in r6
        default: return 0;
    }
}

// The state after `i` executes, from the state before it.
RegState after(const Insn& i, RegState s) {
    const bool call = isa::cls(i) == BPF_JMP && isa::op(i) == BPF_CALL;
    const bool ld_abs = isa::cls(i) == BPF_LD && !isa::is_ldimm64(i);
    if (call || ld_abs) {
        s.written = static_cast<RegMask>((s.written & ~kArgRegs) | bit(0));
        s.pointer = static_cast<RegMask>(s.pointer & ~kArgRegs & ~bit(0));
        return s;
    }
    const int d = def_regno(i);
    if (d < 0 || d > 10) return s;
    bool ptr = false;
    if (isa::is_ldimm64(i)) {
        ptr = i.src_reg != 0;  // a map, a map value, a function, a BTF object: not a plain number
    } else if (i.code == (BPF_ALU64 | BPF_MOV | BPF_X) && i.off == 0) {
        ptr = (s.pointer & bit(i.src_reg)) != 0;
    } else if ((i.code == (BPF_ALU64 | BPF_ADD | BPF_K) || i.code == (BPF_ALU64 | BPF_SUB | BPF_K)) && i.dst_reg == d) {
        ptr = (s.pointer & bit(d)) != 0;
    }
    s.written = static_cast<RegMask>(s.written | bit(d));
    s.pointer = ptr ? static_cast<RegMask>(s.pointer | bit(d)) : static_cast<RegMask>(s.pointer & ~bit(d));
    return s;
}

}  // namespace

std::vector<uint32_t> rejected_reads(const Program& prog) {
    const uint32_t n = prog.len();
    // Must-be-written (meet: intersection) and may-be-pointer (meet: union).
    std::vector<RegState> in(n);
    std::vector<bool> reached(n, false);
    std::vector<uint32_t> work, next;
    auto flow = [&](uint32_t to, RegState s) {
        if (to >= n) return;
        if (reached[to]) {
            const RegState meet{static_cast<RegMask>(in[to].written & s.written), static_cast<RegMask>(in[to].pointer | s.pointer)};
            if (meet == in[to]) return;
            s = meet;
        }
        reached[to] = true;
        in[to] = s;
        work.push_back(to);
    };
    const uint32_t funcs = prog.subprogs.empty() ? 1 : prog.subprog_cnt();
    // bpf_loop's callback is verified with its two arguments (index, ctx) alone: r3-r5 there are
    // unreadable, whatever other call reaches the function.
    std::vector<bool> loop_callback(funcs, false);
    for (uint32_t pc = 0; pc < n && pc < prog.aux.size(); ++pc)
        if (prog.aux[pc].loop_fit_for_inline && prog.aux[pc].loop_callback_subprogno < funcs)
            loop_callback[prog.aux[pc].loop_callback_subprogno] = true;
    for (uint32_t f = 0; f < funcs; ++f) {
        const uint32_t start = prog.subprogs.empty() ? 0 : prog.subprogs[f].start;
        if (f == 0) flow(start, RegState{static_cast<RegMask>(bit(1) | bit(10)), static_cast<RegMask>(bit(1) | bit(10))});
        else if (loop_callback[f]) flow(start, RegState{static_cast<RegMask>(bit(1) | bit(2) | bit(10)), bit(10)});
        else flow(start, RegState{static_cast<RegMask>(kArgRegs | bit(10)), bit(10)});
    }
    while (!work.empty()) {
        const uint32_t pc = work.back();
        work.pop_back();
        const RegState out = after(prog.insns[pc], in[pc]);
        next.clear();
        append_successors(prog, pc, next);
        for (uint32_t to : next) flow(to, out);
    }
    std::vector<uint32_t> bad;
    for (uint32_t pc = 0; pc < n; ++pc) {
        if (!reached[pc]) continue;
        const Insn& i = prog.insns[pc];
        if ((reads_of(i) & ~in[pc].written) != 0 || (scalar_args(i) & in[pc].pointer) != 0) bad.push_back(pc);
    }
    return bad;
}

}  // namespace patchfuzz::passes
