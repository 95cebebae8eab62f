// Pass "const_branches" (7.x profiles): the 7.x verifier decides, before its main walk, every
// conditional jump whose outcome follows from constants a register holds on every path to it, and
// rewrites it in place: never taken -> `goto +0` (bpf_opt_remove_nops later removes it), always
// taken -> `goto off`. 6.12 kept such a jump when both of its successors were reached (e.g.
// `r0 = 0; if r0 != 0 goto +2; <2 insns>; L:` where L follows the two insns), since its
// hard-wiring (dead_code.cpp) looks at reached insns only; 7.2.13 and 7.3.4 delete it (measured:
// harness/kernel/README.md). In place, no length change: no patch reaches the patcher.
//
// The constants: a forward data-flow over the CFG (bpf/program/cfg.hpp edges), each function
// entered with nothing known. A register is known after `rX = K` (64-bit or 32-bit MOV K, the latter
// zero-extended), `rX = K` as an ld_imm64 of a plain number, or a copy `rX = rY` of a known one; any
// other write makes it unknown, and a call makes r0-r5 unknown. Where paths meet, a register stays
// known only with the same value on all of them. A decided jump passes its facts along the taken
// edge only. Jumps compare 64 bits (JMP) or the low 32 (JMP32), with a K or a known X operand.
#include <array>
#include <optional>
#include <vector>

#include "bpf/isa/jump_condition.hpp"
#include "bpf/passes/pass_util.hpp"
#include "bpf/program/cfg.hpp"

namespace patchfuzz::passes {
namespace {

using namespace isa;

using Value = std::optional<uint64_t>;  // nullopt: unknown
using State = std::array<Value, 11>;    // r0-r10

// The outcome of `dst op src` in the jump's width, when decidable (not for JCOND, the tail call).
std::optional<bool> decide(const Insn& in, uint64_t a, uint64_t b) { return jump_taken(op(in), a, b, cls(in) == BPF_JMP32); }

std::optional<bool> decide(const Insn& in, const State& s) {
    if (in.dst_reg > 10 || !s[in.dst_reg]) return std::nullopt;
    if (src_bit(in) == BPF_K) return decide(in, *s[in.dst_reg], static_cast<uint64_t>(static_cast<int64_t>(in.imm)));
    if (in.src_reg > 10 || !s[in.src_reg]) return std::nullopt;
    return decide(in, *s[in.dst_reg], *s[in.src_reg]);
}

// The state after a non-jump insn (or a call).
State transfer(const Program& prog, uint32_t pc, State s) {
    const Insn& in = prog.insns[pc];
    if (is_call(in)) {
        for (int r = 0; r <= 5; ++r) s[r].reset();
        return s;
    }
    if (is_ldimm64(in)) {
        if (in.dst_reg <= 10) {
            s[in.dst_reg].reset();
            if (in.src_reg == 0 && pc + 1 < prog.len())
                s[in.dst_reg] = static_cast<uint32_t>(in.imm) | (static_cast<uint64_t>(static_cast<uint32_t>(prog.insns[pc + 1].imm)) << 32);
        }
        return s;
    }
    const uint8_t c = cls(in);
    if ((c == BPF_ALU64 || c == BPF_ALU) && op(in) == BPF_MOV && in.off == 0 && in.dst_reg <= 10) {
        Value v;
        if (src_bit(in) == BPF_K) v = static_cast<uint64_t>(static_cast<int64_t>(in.imm));
        else if (in.src_reg <= 10) v = s[in.src_reg];
        if (v && c == BPF_ALU) v = static_cast<uint32_t>(*v);
        s[in.dst_reg] = v;
        return s;
    }
    if (c == BPF_ALU64 || c == BPF_ALU || c == BPF_LDX || c == BPF_LD) {
        if (in.dst_reg <= 10) s[in.dst_reg].reset();
        return s;
    }
    if (c == BPF_STX && mode(in) == BPF_ATOMIC) {
        // fetching atomics write src (cmpxchg writes r0)
        if (in.imm == BPF_CMPXCHG) s[0].reset();
        else if (in.imm & BPF_FETCH && in.src_reg <= 10) s[in.src_reg].reset();
    }
    return s;
}

State meet(const State& a, const State& b) {
    State m;
    for (size_t r = 0; r < m.size(); ++r)
        if (a[r] && b[r] && *a[r] == *b[r]) m[r] = a[r];
    return m;
}

}  // namespace

// Exposed for the unit tests through the pass; the decisions per conditional jump.
void fold_constant_branches(Program& prog) {
    const uint32_t n = prog.len();
    if (n == 0) return;
    std::vector<std::optional<State>> in_state(n);
    std::vector<uint32_t> work;
    // every function starts knowing nothing
    for (const auto& sp : prog.subprogs)
        if (sp.start < n) {
            in_state[sp.start] = State{};
            work.push_back(sp.start);
        }
    std::vector<char> queued(n, 0);
    for (uint32_t w : work) queued[w] = 1;
    auto flow = [&](uint32_t to, const State& s) {
        if (to >= n) return;
        State next = in_state[to] ? meet(*in_state[to], s) : s;
        if (in_state[to] && next == *in_state[to]) return;
        in_state[to] = next;
        if (!queued[to]) {
            queued[to] = 1;
            work.push_back(to);
        }
    };
    while (!work.empty()) {
        const uint32_t pc = work.back();
        work.pop_back();
        queued[pc] = 0;
        const State s = *in_state[pc];
        const Insn& in = prog.insns[pc];
        if (is_cond_jump(in) && !is_tail_call(in)) {
            const auto d = decide(in, s);
            const int64_t target = static_cast<int64_t>(pc) + 1 + in.off;
            if (!d || *d) flow(static_cast<uint32_t>(target), s);
            if (!d || !*d) flow(pc + 1, s);
            continue;
        }
        const State out = transfer(prog, pc, s);
        const InsnSuccessors succ = insn_successors(prog, pc);
        for (uint32_t k = 0; k < succ.count; ++k) flow(succ.pcs[k], out);
        if (succ.through_tables) {
            std::vector<uint32_t> targets;
            append_jump_table_targets(prog, targets);
            for (uint32_t t : targets) flow(t, out);
        }
    }
    for (uint32_t pc = 0; pc < n; ++pc) {
        Insn& in = prog.insns[pc];
        if (!in_state[pc] || !is_cond_jump(in) || is_tail_call(in)) continue;
        if (const auto d = decide(in, *in_state[pc])) in = ja(*d ? in.off : 0);
    }
}

namespace {

class ConstBranchesPass final : public Pass {
public:
    std::string_view name() const override { return "const_branches"; }
    PatchOutcome run(Program& prog, patch::Patcher&, const RewriteOptions& opts) const override {
        if (opts.kernel == KernelProfile::K7_2 || opts.kernel == KernelProfile::K7_3) fold_constant_branches(prog);
        return {};
    }
};

}  // namespace

std::unique_ptr<Pass> make_const_branches_pass() { return std::make_unique<ConstBranchesPass>(); }

}  // namespace patchfuzz::passes
