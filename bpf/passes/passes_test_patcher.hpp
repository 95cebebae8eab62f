#pragma once
// TEST DOUBLE for the pass tests only (not linked into any library): a small incremental patcher
// written from docs/patching.md §2-§4 and §3.7 (bpf_patch_insn_data, verifier_remove_insns,
// adjust_jmp_off) checked against the real ones on every pass test. The real patchers (bpf/patch/) replace it
// in the pipeline-equivalence tests once they exist; the pass tests compare against hand-written
// expectations, never against this code's output.
#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

#include "bpf/passes/insn_defs.hpp"
#include "bpf/patch/patch.hpp"

namespace patchfuzz::passes::testing {

class TestDoublePatcher final : public patch::Patcher {
public:
    std::string_view name() const override { return "test-double"; }

    PatchOutcome apply(Program& prog, const patch::PatchBatch& batch) override {
        applied_.clear();
        for (const auto& p : batch.patches) {
            switch (p.kind) {
                case patch::PatchKind::Replace: replace(prog, p.pos, p.insns, false); break;
                case patch::PatchKind::InsertBefore: {
                    const uint32_t cur = current(p.pos);
                    std::vector<isa::Insn> buf = p.insns;
                    buf.push_back(prog.insns[cur]);
                    replace(prog, p.pos, buf, true);
                    adjust_jmp_off(prog, cur, static_cast<uint32_t>(p.insns.size()));
                    break;
                }
                case patch::PatchKind::Remove: remove(prog, p.pos, p.count); break;
            }
        }
        return {};
    }

private:
    struct Applied {
        uint32_t pos;
        int64_t growth;
    };
    std::vector<Applied> applied_;

    int64_t delta_before(uint32_t orig) const {
        int64_t d = 0;
        for (const auto& a : applied_)
            if (a.pos < orig) d += a.growth;
        return d;
    }
    uint32_t current(uint32_t orig) const { return static_cast<uint32_t>(orig + delta_before(orig)); }

    static void set_disp(isa::Insn& in, int64_t d) {
        if (isa::relative_field(in) == isa::RelField::Off16)
            in.off = static_cast<int16_t>(d);
        else
            in.imm = static_cast<int32_t>(d);
    }
    static void adj_branches(Program& prog, int64_t pos, int64_t end_old, int64_t end_new) {
        const int64_t delta = end_new - end_old;
        for (int64_t curr = 0; curr < static_cast<int64_t>(prog.insns.size()); ++curr) {
            auto& in = prog.insns[static_cast<size_t>(curr)];
            if (isa::relative_field(in) == isa::RelField::None) continue;
            const int64_t d = isa::displacement(in), t = curr + d + 1;
            if (curr < pos && t >= end_old)
                set_disp(in, d + delta);
            else if (curr >= end_new && t < end_new)
                set_disp(in, d - delta);
        }
    }

    void replace(Program& prog, uint32_t orig_pos, std::vector<isa::Insn> buf, bool verbatim_last) {
        const uint32_t cur = current(orig_pos);
        const auto n = static_cast<uint32_t>(buf.size());
        // patch-local outgoing transfers -> current coordinates
        for (uint32_t j = 0; j < n; ++j) {
            if (verbatim_last && j == n - 1) break;
            auto& in = buf[j];
            if (isa::relative_field(in) == isa::RelField::None) continue;
            const int64_t L = j + isa::displacement(in) + 1;
            if (L >= 0 && L < n) continue;
            const int64_t t_orig = L >= n ? orig_pos + 1 + (L - n) : orig_pos + L;
            // where the target sits once this patch is in (forward targets move by n - 1)
            const int64_t t_cur = t_orig + delta_before(static_cast<uint32_t>(t_orig)) + (t_orig > orig_pos ? n - 1 : 0);
            set_disp(in, t_cur - (cur + j) - 1);
        }
        const bool seen = prog.aux[cur].seen;
        prog.insns[cur] = buf[0];
        if (n > 1) {
            prog.insns.insert(prog.insns.begin() + cur + 1, buf.begin() + 1, buf.end());
            for (uint32_t j = 1; j < n; ++j) prog.insns[cur + j] = buf[j];
            // the branch walk after the move (the patch itself is never adjusted)
            std::vector<isa::Insn> saved(prog.insns.begin() + cur, prog.insns.begin() + cur + n);
            adj_branches(prog, cur, cur + 1, cur + n);
            std::copy(saved.begin(), saved.end(), prog.insns.begin() + cur);
            for (auto& l : prog.linfo)
                if (l.insn_off > cur) l.insn_off += n - 1;
            for (auto& s : prog.subprogs)
                if (s.start > cur) s.start += n - 1;
            for (auto& a : prog.insn_arrays)
                for (auto& e : a.entries)
                    if (e.xlated_off != isa::kInsnDeleted && e.xlated_off > cur) e.xlated_off += n - 1;
        }
        for (auto& p : prog.pokes)
            if (p.insn_idx > cur) p.insn_idx += n - 1;
        prog.aux[cur].zext_dst = has_def32(prog.insns[cur + n - 1]);
        if (n > 1) {
            prog.aux.insert(prog.aux.begin() + cur, n - 1, InsnAux{});
            for (uint32_t j = 0; j + 1 < n; ++j) {
                prog.aux[cur + j].seen = seen;
                prog.aux[cur + j].zext_dst = has_def32(prog.insns[cur + j]);
            }
        }
        applied_.push_back({orig_pos, static_cast<int64_t>(n) - 1});
    }

    static void adjust_jmp_off(Program& prog, uint32_t tgt, uint32_t k) {
        for (int64_t i = 0; i < static_cast<int64_t>(prog.insns.size()); ++i) {
            if (i >= tgt && i < tgt + k) continue;
            auto& in = prog.insns[static_cast<size_t>(i)];
            if (!isa::is_jmp_class(in) || isa::is_call(in) || isa::is_exit(in)) continue;
            if (isa::is_gotol(in)) {
                if (i + 1 + in.imm == tgt) in.imm += static_cast<int32_t>(k);
            } else if (i + 1 + in.off == tgt) {
                in.off = static_cast<int16_t>(in.off + k);
            }
        }
    }

    void remove(Program& prog, uint32_t orig_pos, uint32_t cnt) {
        const uint32_t off = current(orig_pos);
        const uint32_t old_len = prog.len();
        prog.insns.erase(prog.insns.begin() + off, prog.insns.begin() + off + cnt);
        adj_branches(prog, off, off + cnt, off);
        // adjust_subprog_starts_after_remove (§4.3)
        const uint32_t sc = prog.subprog_cnt();
        uint32_t i = 0;
        while (i < sc && prog.subprogs[i].start < off) ++i;
        uint32_t j = i;
        while (j < sc && prog.subprogs[j].start < off + cnt) ++j;
        if (prog.subprogs[j].start != off + cnt && j > 0) --j;
        if (j > i) {
            prog.subprogs.erase(prog.subprogs.begin() + i, prog.subprogs.begin() + j);
            if (!prog.finfo.empty()) prog.finfo.erase(prog.finfo.begin() + i, prog.finfo.begin() + j);
        } else if (prog.subprogs[i].start == off) {
            ++i;
        }
        for (uint32_t k = i; k < prog.subprogs.size(); ++k) prog.subprogs[k].start -= cnt;
        // bpf_adj_linfo_after_remove (§4.4)
        if (!prog.linfo.empty()) {
            uint32_t l_off = 0;
            while (l_off < prog.linfo.size() && prog.linfo[l_off].insn_off < off) ++l_off;
            uint32_t l_cnt = 0;
            while (l_off + l_cnt < prog.linfo.size() && prog.linfo[l_off + l_cnt].insn_off < off + cnt) ++l_cnt;
            if (prog.len() != off && l_cnt > 0 &&
                (l_off + l_cnt == prog.linfo.size() || prog.linfo[l_off + l_cnt].insn_off != off + cnt)) {
                --l_cnt;
                prog.linfo[l_off + l_cnt].insn_off = off + cnt;
            }
            prog.linfo.erase(prog.linfo.begin() + l_off, prog.linfo.begin() + l_off + l_cnt);
            for (uint32_t k = l_off; k < prog.linfo.size(); ++k) prog.linfo[k].insn_off -= cnt;
            for (auto& s : prog.subprogs)
                if (s.linfo_idx > l_off) s.linfo_idx = s.linfo_idx >= l_off + l_cnt ? s.linfo_idx - l_cnt : l_off;
        }
        for (auto& a : prog.insn_arrays)
            for (auto& e : a.entries) {
                if (e.xlated_off == isa::kInsnDeleted || e.xlated_off < off) continue;
                e.xlated_off = e.xlated_off < off + cnt ? isa::kInsnDeleted : e.xlated_off - cnt;
            }
        prog.aux.erase(prog.aux.begin() + off, prog.aux.begin() + off + cnt);
        (void)old_len;
        applied_.push_back({orig_pos, -static_cast<int64_t>(cnt)});
    }
};

}  // namespace patchfuzz::passes::testing
