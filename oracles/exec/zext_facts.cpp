#include "oracles/exec/zext_facts.hpp"

#include <linux/bpf.h>

#include <vector>

#include "bpf/isa/insn.hpp"
#include "bpf/patch/insn_def32.hpp"

namespace patchfuzz::oracles::exec {

int helper_arg_count(int32_t id) {
    // Argument counts of the helper prototypes (include/uapi/linux/bpf.h helper descriptions).
    switch (id) {
        case BPF_FUNC_ktime_get_ns:
        case BPF_FUNC_get_prandom_u32:
        case BPF_FUNC_get_smp_processor_id:
        case BPF_FUNC_get_current_pid_tgid:
        case BPF_FUNC_get_current_task:
        case BPF_FUNC_get_current_task_btf:
        case BPF_FUNC_jiffies64:
        case BPF_FUNC_ktime_get_boot_ns:
            return 0;
        case BPF_FUNC_map_lookup_elem:
        case BPF_FUNC_map_delete_elem:
            return 2;
        case BPF_FUNC_tail_call:
        case BPF_FUNC_map_lookup_percpu_elem:
            return 3;
        case BPF_FUNC_map_update_elem:
        case BPF_FUNC_loop:
            return 4;
        default:
            return 5;
    }
}

bool reads_reg64(const isa::Insn& i, int reg) {
    const uint8_t c = isa::cls(i);
    const uint8_t o = isa::op(i);
    const bool x = isa::src_bit(i) != 0;
    const bool dst = i.dst_reg == reg, src = i.src_reg == reg;
    switch (c) {
        case BPF_ALU64:
            if (o == BPF_END) return dst && i.imm == 64;  // bswap16/32 read the low half only
            if (o == BPF_MOV) return x && src;
            if (o == BPF_NEG) return dst;
            return dst || (x && src);
        case BPF_ALU:
            return o == BPF_END && i.imm == 64 && dst;
        case BPF_JMP:
            if (o == BPF_EXIT) return reg == 0;
            if (o == BPF_CALL) return i.src_reg == 0 && reg >= 1 && reg <= helper_arg_count(i.imm);
            if (o == BPF_JA) return x && dst;  // gotox: a PTR_TO_INSN
            if (o == BPF_JCOND || isa::is_tail_call(i)) return false;
            return dst || (x && src);
        case BPF_JMP32:
            return false;
        case BPF_LDX:
            return src;  // the address
        case BPF_ST:
            return dst;
        case BPF_STX:
            if (isa::mode(i) == BPF_ATOMIC && i.imm == BPF_LOAD_ACQ) return src;  // dst = *(src + off)
            if (dst) return true;  // the address
            return src && isa::size(i) == BPF_DW;
        case BPF_LD:
            if (isa::is_ldimm64(i)) return false;
            return reg == 6 || (isa::mode(i) == BPF_IND && src);  // LD_ABS/IND: ctx in r6
        default:
            return false;
    }
}

namespace {

struct Gap {
    uint32_t def_pc;
    uint32_t use_pc;
    int reg;
};

std::vector<Gap> zext_gaps(const Program& prog) {
    std::vector<Gap> gaps;
    const uint32_t n = prog.len();
    for (uint32_t q = 0; q < n; ++q) {
        const isa::Insn& d = prog.insns[q];
        if (isa::is_ldimm64(d)) {
            ++q;
            continue;
        }
        const bool seen = q >= prog.aux.size() || prog.aux[q].seen;
        if (!seen || (q < prog.aux.size() && prog.aux[q].zext_dst) || !patch::insn_has_def32(d)) continue;
        const int reg = patch::insn_def_regno(d);
        if (reg < 0) continue;
        // Depth-first over the paths from the def (both edges of conditional jumps, `goto`
        // targets), each insn visited once: the first 64-bit read found is the gap.
        std::vector<bool> visited(n, false);
        std::vector<uint32_t> work{q + 1};
        bool found = false;
        while (!work.empty() && !found) {
            const uint32_t p = work.back();
            work.pop_back();
            if (p >= n || visited[p]) continue;
            visited[p] = true;
            const isa::Insn& u = prog.insns[p];
            if (reads_reg64(u, reg)) {
                gaps.push_back(Gap{q, p, reg});
                found = true;
                break;
            }
            if (isa::is_ldimm64(u)) {
                if (u.dst_reg != reg) work.push_back(p + 2);
                continue;
            }
            if (patch::insn_def_regno(u) == reg) continue;  // redefined: this path ends
            const uint8_t c = isa::cls(u);
            if (c != BPF_JMP && c != BPF_JMP32) {
                work.push_back(p + 1);
                continue;
            }
            const uint8_t o = isa::op(u);
            if (o == BPF_CALL) {
                // Every call (helper, kfunc, bpf-to-bpf) clobbers r0-r5 and preserves r6-r9.
                if (reg > 5) work.push_back(p + 1);
                continue;
            }
            if (o == BPF_JA && isa::src_bit(u)) {
                // gotox: the verifier follows it to every entry of the program's insn arrays
                // (the jump tables it may read), so the path does too.
                for (const auto& ia : prog.insn_arrays)
                    for (const auto& e : ia.entries)
                        if (e.xlated_off != isa::kInsnDeleted && e.xlated_off < n) work.push_back(e.xlated_off);
                continue;
            }
            if (o == BPF_EXIT || isa::is_tail_call(u)) continue;
            const int64_t t = static_cast<int64_t>(p) + 1 + (isa::is_gotol(u) ? u.imm : u.off);
            if (t >= 0 && t < static_cast<int64_t>(n)) work.push_back(static_cast<uint32_t>(t));
            if (o != BPF_JA) work.push_back(p + 1);  // conditional jumps and may_goto fall through too
        }
    }
    return gaps;
}

}  // namespace

std::optional<std::string> missing_zext_fact(const Program& prog) {
    const auto gaps = zext_gaps(prog);
    if (gaps.empty()) return std::nullopt;
    const Gap& g = gaps.front();
    return "case facts: insn " + std::to_string(g.def_pc) + " defines w" + std::to_string(g.reg) +
           " without zext_dst, but insn " + std::to_string(g.use_pc) + " reads r" + std::to_string(g.reg) +
           " as 64 bits (the verifier would mark the def)" +
           (gaps.size() > 1 ? " and " + std::to_string(gaps.size() - 1) + " more" : std::string());
}

std::optional<std::string> zext_jit_fact_issue(const Program& prog) {
    std::optional<std::string> issue = missing_zext_fact(prog);
    for (size_t i = 0; i < prog.aux.size(); ++i)
        if (prog.aux[i].needs_zext && prog.aux[i].seen) {
            const std::string n = "case facts: insn " + std::to_string(i) +
                                  " has needs_zext (an arena-pointer narrowing a 32-bit JIT never loads)";
            issue = issue ? *issue + "; " + n : n;
            break;
        }
    return issue;
}

Program zext_jit_facts(const Program& prog) {
    Program p = with_zext_facts(prog);
    for (auto& a : p.aux) a.needs_zext = false;
    return p;
}

Program with_zext_facts(const Program& prog) {
    Program p = prog;
    if (p.aux.size() < p.insns.size()) p.aux.resize(p.insns.size());
    for (const Gap& g : zext_gaps(prog)) p.aux[g.def_pc].zext_dst = true;
    return p;
}

}  // namespace patchfuzz::oracles::exec
