#include "gen/shrink.hpp"

#include <algorithm>
#include <cstdlib>
#include <optional>

#include "gen/program_edit.hpp"
#include "gen/shape_check.hpp"

namespace patchfuzz::gen {
namespace {

uint32_t aux_facts(const InsnAux& a) {
    return a.zext_dst + a.needs_zext + a.nospec + a.nospec_result + (a.alu_state != 0) + (a.map_index >= 0) +
           a.map_ptr_poisoned + a.map_key_known + a.loop_fit_for_inline + a.call_with_percpu_alloc_ptr + (a.arg_prog != 0) +
           a.indirect_target + (a.ptr_type != PtrType::None) + !a.seen;
}

void relink_linfo(Program& p) {
    for (auto& sp : p.subprogs) {
        uint32_t k = 0;
        while (k < p.linfo.size() && p.linfo[k].insn_off < sp.start) ++k;
        sp.linfo_idx = k;
    }
}

InsnAux fresh_aux(const InsnAux& old) {
    InsnAux a;
    a.orig_idx = old.orig_idx;
    a.seen = old.seen;
    return a;
}

}  // namespace

ShrinkMeasure shrink_measure(const Program& p) {
    ShrinkMeasure m{};
    m[0] = p.len();
    for (const auto& in : p.insns) {
        if (!isa::is_ja0(in)) ++m[1];
        m[3] += static_cast<uint64_t>(std::llabs(in.imm)) + static_cast<uint64_t>(std::abs(in.off));
    }
    m[2] = p.linfo.size() + p.finfo.size() + p.pokes.size() + p.kfuncs.size() + p.maps.size() + p.insn_arrays.size();
    for (const auto& ia : p.insn_arrays) m[2] += ia.entries.size();
    for (const auto& a : p.aux) m[2] += aux_facts(a);
    return m;
}

std::optional<Program> without_nops(const Program& p) {
    Program c = p;
    bool any = false;
    // From the back, so that earlier indices stay put.
    for (uint32_t i = c.len(); i-- > 0;)
        if (isa::is_ja0(c.insns[i]) && !(i > 0 && isa::is_ldimm64(c.insns[i - 1]))) {
            remove_range(c, i, i + 1);
            any = true;
        }
    if (!any) return std::nullopt;
    return c;
}

std::vector<Program> shrink_candidates(const Program& p, size_t max_candidates) {
    std::vector<Program> out;
    const ShrinkMeasure base = shrink_measure(p);
    const auto full = [&] { return max_candidates && out.size() >= max_candidates; };
    auto offer = [&](Program&& c) {
        if (full()) return;
        if (!(shrink_measure(c) < base)) return;
        if (!check_shape(c).ok()) return;
        out.push_back(std::move(c));
    };
    const uint32_t n = p.len();
    auto second_slot = [&](uint32_t i) { return i > 0 && isa::is_ldimm64(p.insns[i - 1]); };

    // 1. drop a subprog: calls and PSEUDO_FUNC loads that name it become nops / plain constants
    for (uint32_t k = p.subprog_cnt(); k-- > 1 && !full();) {
        Program c = p;
        const uint32_t s = c.subprogs[k].start, e = c.subprogs[k + 1].start;
        for (uint32_t i = 0; i < c.len(); ++i) {
            if (i >= s && i < e) continue;
            auto& in = c.insns[i];
            if (i > 0 && isa::is_ldimm64(c.insns[i - 1])) continue;
            const int64_t t = static_cast<int64_t>(i) + 1 + in.imm;
            if (isa::is_pseudo_call(in) && t == s) {
                in = isa::ja(0);
                c.aux[i] = fresh_aux(c.aux[i]);
            } else if (isa::is_pseudo_func(in) && t == s) {
                in.src_reg = 0;
                in.imm = 0;
            }
            if (c.aux[i].loop_callback_subprogno == k) {
                c.aux[i].loop_fit_for_inline = false;
                c.aux[i].loop_callback_subprogno = 0;
            } else if (c.aux[i].loop_callback_subprogno > k) {
                --c.aux[i].loop_callback_subprogno;
            }
        }
        remove_range(c, s, e);
        offer(std::move(c));
    }
    // 2. delete every nop at once
    if (std::optional<Program> c = without_nops(p)) offer(std::move(*c));
    // 3. runs of insns -> ja +0 (halves, quarters, ... then singles)
    auto nop_out = [&](uint32_t s, uint32_t e) {
        Program c = p;
        bool changed = false;
        for (uint32_t i = s; i < e; ++i) {
            if (isa::is_ja0(c.insns[i])) continue;
            c.insns[i] = isa::ja(0);
            c.aux[i] = fresh_aux(c.aux[i]);
            changed = true;
        }
        if (changed) offer(std::move(c));
    };
    for (uint32_t chunk = std::max<uint32_t>(1, n / 2); chunk >= 1 && !full(); chunk /= 2) {
        for (uint32_t s = 0; s < n && !full(); s += chunk) nop_out(s, std::min(n, s + chunk));
        if (chunk == 1) break;
    }
    // 4. single nop deletions
    for (uint32_t i = 0; i < n && !full(); ++i)
        if (isa::is_ja0(p.insns[i]) && !second_slot(i)) {
            Program c = p;
            remove_range(c, i, i + 1);
            offer(std::move(c));
        }
    // 5. side tables and aux facts
    if (!p.linfo.empty() && !full()) {
        Program c = p;
        c.linfo.clear();
        relink_linfo(c);
        offer(std::move(c));
    }
    if (!p.finfo.empty() && !full()) {
        Program c = p;
        c.finfo.clear();
        offer(std::move(c));
    }
    for (size_t k = 0; k < p.insn_arrays.size() && !full(); ++k) {
        Program c = p;
        c.insn_arrays.erase(c.insn_arrays.begin() + static_cast<std::ptrdiff_t>(k));
        offer(std::move(c));
    }
    for (size_t k = 0; k < p.kfuncs.size() && !full(); ++k) {
        Program c = p;
        c.kfuncs.erase(c.kfuncs.begin() + static_cast<std::ptrdiff_t>(k));
        offer(std::move(c));  // check_shape refuses it while a call still names the kfunc
    }
    for (uint32_t i = 0; i < n && !full(); ++i)
        if (aux_facts(p.aux[i]) > 0) {
            Program c = p;
            c.aux[i] = fresh_aux(c.aux[i]);
            c.aux[i].seen = true;
            offer(std::move(c));
        }
    // 6. immediates and offsets
    for (uint32_t i = 0; i < n && !full(); ++i) {
        const auto& in = p.insns[i];
        const auto rf = isa::relative_field(in);
        if (second_slot(i)) continue;
        if (rf == isa::RelField::Off16 && in.off != 0) {
            for (int16_t v : {static_cast<int16_t>(0), static_cast<int16_t>(in.off / 2)}) {
                Program c = p;
                c.insns[i].off = v;
                offer(std::move(c));
            }
        } else if (rf == isa::RelField::None && in.imm != 0 && !isa::is_call(in) && !isa::is_ldimm64(in)) {
            const bool divk = isa::is_alu_class(in) && (isa::op(in) == BPF_DIV || isa::op(in) == BPF_MOD) && isa::src_bit(in) == BPF_K;
            for (int32_t v : {0, in.imm / 2}) {
                if (divk && v == 0) continue;  // the verifier rejects division by a zero immediate
                Program c = p;
                c.insns[i].imm = v;
                offer(std::move(c));
            }
        }
    }
    return out;
}

}  // namespace patchfuzz::gen
