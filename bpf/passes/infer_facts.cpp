#include "bpf/passes/infer_facts.hpp"

#include <algorithm>
#include <optional>
#include <set>

#include "bpf/kfunc/kfunc_table.hpp"
#include "bpf/passes/insn_defs.hpp"
#include "bpf/passes/infer_ctx.hpp"
#include "bpf/passes/pass_util.hpp"

namespace patchfuzz::passes {
namespace {

using namespace isa;

struct Layout {
    std::vector<bool> second_slot;  // second half of an ld_imm64
    std::vector<bool> block_start;  // jump target or first insn after a jump
};

Layout layout(const Program& prog) {
    const int64_t n = prog.len();
    Layout l{std::vector<bool>(static_cast<size_t>(n), false), std::vector<bool>(static_cast<size_t>(n), false)};
    for (int64_t i = 0; i < n; ++i) {
        const Insn& in = prog.insns[static_cast<size_t>(i)];
        if (is_ldimm64(in) && i + 1 < n) {
            l.second_slot[static_cast<size_t>(i + 1)] = true;
            ++i;
            continue;
        }
        if (!is_jmp_class(in) || is_call(in)) continue;
        if (i + 1 < n) l.block_start[static_cast<size_t>(i + 1)] = true;
        if (relative_field(in) != RelField::None) {
            const int64_t t = i + 1 + displacement(in);
            if (t >= 0 && t < n) l.block_start[static_cast<size_t>(t)] = true;
        }
    }
    if (n > 0) l.block_start[0] = true;
    for (const auto& s : prog.subprogs)
        if (s.start < n) l.block_start[s.start] = true;
    return l;
}

// The insn that last defined `reg` before `at`, inside the basic block, following `rX = rY` moves.
// nullopt when the block start or a call is reached first.
std::optional<uint32_t> find_def(const Program& prog, const Layout& l, uint32_t at, uint8_t reg) {
    for (int64_t j = static_cast<int64_t>(at) - 1; j >= 0; --j) {
        const auto u = static_cast<uint32_t>(j);
        if (l.second_slot[u]) continue;
        const Insn& in = prog.insns[u];
        if (is_call(in)) return std::nullopt;  // R0-R5 clobbered
        if (def_regno(in) == reg && !is_jmp_class(in)) {
            if (in.code == (BPF_ALU64 | BPF_MOV | BPF_X) && in.off == 0 && in.imm == 0) {
                reg = in.src_reg;  // follow the copy
            } else {
                return u;
            }
        }
        if (l.block_start[u]) return std::nullopt;
    }
    return std::nullopt;
}

bool is_map_ld(const Insn& in) {
    return is_ldimm64(in) && (in.src_reg == BPF_PSEUDO_MAP_FD || in.src_reg == BPF_PSEUDO_MAP_IDX);
}

bool is_map_helper_call(const Insn& in) { return is_helper_call(in) && is_map_helper(in.imm); }

void infer_subprogs(Program& prog) {
    if (!prog.subprogs.empty() && prog.subprogs.back().start == prog.len()) return;
    std::set<uint32_t> starts{0};
    for (const auto& s : prog.subprogs)
        if (s.start < prog.len()) starts.insert(s.start);
    const int64_t n = prog.len();
    for (int64_t i = 0; i < n; ++i) {
        const Insn& in = prog.insns[static_cast<size_t>(i)];
        if (is_pseudo_call(in) || is_pseudo_func(in)) {
            const int64_t t = i + 1 + in.imm;
            if (t >= 0 && t < n) starts.insert(static_cast<uint32_t>(t));
        }
    }
    std::vector<SubprogInfo> old = prog.subprogs;
    prog.subprogs.clear();
    for (uint32_t s : starts) {
        SubprogInfo si{.start = s};
        for (const auto& o : old)
            if (o.start == s) si = o;
        prog.subprogs.push_back(si);
    }
    prog.subprogs.push_back(SubprogInfo{.start = prog.len()});
}

void infer_stack_depths(Program& prog, const Layout& l) {
    for (uint32_t s = 0; s < prog.subprog_cnt(); ++s) {
        int64_t lowest = 0;
        std::optional<int64_t> fp_off[11];
        for (uint32_t i = prog.subprogs[s].start; i < prog.subprogs[s + 1].start; ++i) {
            if (l.second_slot[i]) continue;
            const Insn& in = prog.insns[i];
            if (l.block_start[i])
                for (auto& f : fp_off) f.reset();
            auto base = [&](uint8_t r) -> std::optional<int64_t> {
                if (r == BPF_REG_10) return 0;
                if (r < 10) return fp_off[r];
                return std::nullopt;
            };
            if (cls(in) == BPF_LDX) {
                if (auto b = base(in.src_reg)) lowest = std::min(lowest, *b + in.off);
            } else if (cls(in) == BPF_ST || cls(in) == BPF_STX) {
                if (auto b = base(in.dst_reg)) lowest = std::min(lowest, *b + in.off);
            }
            // track rX = r10 (+ K)
            const int d = def_regno(in);
            if (in.code == (BPF_ALU64 | BPF_MOV | BPF_X) && in.off == 0 && in.imm == 0 && in.dst_reg < 10) {
                fp_off[in.dst_reg] = base(in.src_reg);
            } else if (in.code == (BPF_ALU64 | BPF_ADD | BPF_K) && in.dst_reg < 10 && fp_off[in.dst_reg]) {
                *fp_off[in.dst_reg] += in.imm;
                lowest = std::min(lowest, *fp_off[in.dst_reg]);
            } else if (is_call(in)) {
                for (int r = 0; r <= 5; ++r) fp_off[r].reset();
            } else if (d >= 0 && d < 10) {
                fp_off[d].reset();
            }
        }
        const auto depth = static_cast<uint32_t>(-lowest);
        prog.subprogs[s].stack_depth = std::max(prog.subprogs[s].stack_depth, depth);
    }
}

}  // namespace

void infer_facts(Program& prog) {
    const uint32_t n = prog.len();
    prog.aux.resize(n);
    for (uint32_t i = 0; i < n; ++i) {
        prog.aux[i].orig_idx = i;
        prog.aux[i].seen = true;
    }
    infer_subprogs(prog);
    const Layout l = layout(prog);

    for (uint32_t i = 0; i < n; ++i) {
        if (l.second_slot[i]) continue;
        const Insn& in = prog.insns[i];
        InsnAux& ax = prog.aux[i];
        ax.zext_dst = has_def32(in);
        if (is_kfunc_call(in)) {
            bool known = false;
            for (const auto& d : prog.kfuncs) known |= d.btf_id == in.imm && d.offset == in.off;
            if (!known && in.off == 0)
                if (auto info = kfunc::by_btf_id(in.imm))
                    prog.kfuncs.push_back({.btf_id = info->btf_id, .offset = 0, .kind = static_cast<uint32_t>(info->kind),
                                           .name = std::string(info->name)});
            continue;
        }
        if (!is_helper_call(in)) continue;
        const bool tail = in.imm == BPF_FUNC_tail_call;
        if (is_map_helper_call(in) || tail) {
            const uint8_t map_reg = tail ? BPF_REG_2 : BPF_REG_1;
            if (auto d = find_def(prog, l, i, map_reg)) {
                const Insn& ld = prog.insns[*d];
                if (is_map_ld(ld) && ld.imm >= 0 && ld.imm < static_cast<int32_t>(prog.maps.size())) ax.map_index = ld.imm;
            }
            if (tail) {
                if (auto k = find_def(prog, l, i, BPF_REG_3)) {
                    const Insn& kd = prog.insns[*k];
                    if (kd.code == (BPF_ALU64 | BPF_MOV | BPF_K) || kd.code == (BPF_ALU | BPF_MOV | BPF_K)) {
                        ax.map_key = static_cast<uint32_t>(kd.imm);
                        ax.map_key_known = true;
                    }
                }
            }
        }
        if (in.imm == BPF_FUNC_loop) {
            auto flags = find_def(prog, l, i, BPF_REG_4);
            auto cb = find_def(prog, l, i, BPF_REG_2);
            if (!flags || !cb) continue;
            const Insn& f = prog.insns[*flags];
            const Insn& c = prog.insns[*cb];
            const bool zero = (f.code == (BPF_ALU64 | BPF_MOV | BPF_K) || f.code == (BPF_ALU | BPF_MOV | BPF_K)) && f.imm == 0;
            if (!zero || !is_pseudo_func(c)) continue;
            const int64_t start = static_cast<int64_t>(*cb) + 1 + c.imm;
            for (uint32_t s = 0; s < prog.subprog_cnt(); ++s) {
                if (prog.subprogs[s].start != start) continue;
                ax.loop_fit_for_inline = true;
                ax.loop_callback_subprogno = s;
                prog.subprogs[s].is_cb = true;
            }
        }
    }
    infer_stack_depths(prog, l);
    infer_ctx_accesses(prog);
}

}  // namespace patchfuzz::passes
