#include "gen/program_edit.hpp"

#include <algorithm>

namespace patchfuzz::gen {
namespace {
void relink_linfo(Program& p) {
    for (auto& sp : p.subprogs) {
        uint32_t k = 0;
        while (k < p.linfo.size() && p.linfo[k].insn_off < sp.start) ++k;
        sp.linfo_idx = k;
    }
}
}  // namespace

void remove_range(Program& p, uint32_t s, uint32_t e) {
    if (s >= e || e > p.len()) return;
    const uint32_t cnt = e - s;
    auto map_idx = [&](int64_t t) -> int64_t { return t < s ? t : (t >= e ? t - cnt : s); };
    // relative transfers outside the range
    for (uint32_t i = 0; i < p.len(); ++i) {
        if (i >= s && i < e) continue;
        auto& in = p.insns[i];
        if (i > 0 && isa::is_ldimm64(p.insns[i - 1])) continue;
        const auto rf = isa::relative_field(in);
        if (rf == isa::RelField::None) continue;
        const int64_t t = static_cast<int64_t>(i) + 1 + isa::displacement(in);
        const int64_t ni = map_idx(i), nt = map_idx(t);
        const int64_t d = nt - ni - 1;
        if (rf == isa::RelField::Off16)
            in.off = static_cast<int16_t>(std::clamp<int64_t>(d, -32768, 32767));
        else
            in.imm = static_cast<int32_t>(d);
    }
    p.insns.erase(p.insns.begin() + s, p.insns.begin() + e);
    p.aux.erase(p.aux.begin() + s, p.aux.begin() + e);
    // subprogs: those starting inside the range disappear (unless the range starts them and they
    // keep insns), later ones shift
    std::vector<SubprogInfo> sp;
    for (size_t k = 0; k < p.subprogs.size(); ++k) {
        auto si = p.subprogs[k];
        const bool fake = k + 1 == p.subprogs.size();
        if (!fake && si.start >= s && si.start < e) {
            const uint32_t next = p.subprogs[k + 1].start;
            if (next <= e) continue;  // whole subprog removed
            si.start = s;
        } else if (si.start >= e) {
            si.start -= cnt;
        }
        sp.push_back(si);
    }
    p.subprogs = std::move(sp);
    // func info follows the subprogs
    if (!p.finfo.empty()) {
        std::vector<FuncInfo> fi;
        for (const auto& f : p.finfo) {
            if (f.insn_off >= s && f.insn_off < e) {
                bool keep = false;
                for (size_t k = 0; k + 1 < p.subprogs.size(); ++k) keep = keep || p.subprogs[k].start == s;
                if (!keep) continue;
                fi.push_back(FuncInfo{.insn_off = s, .type_id = f.type_id});
                continue;
            }
            fi.push_back(FuncInfo{.insn_off = f.insn_off >= e ? f.insn_off - cnt : f.insn_off, .type_id = f.type_id});
        }
        // one record per subprog start
        std::vector<FuncInfo> dedup;
        for (const auto& f : fi)
            if (dedup.empty() || dedup.back().insn_off != f.insn_off) dedup.push_back(f);
        p.finfo = std::move(dedup);
    }
    std::vector<LineInfo> li;
    for (auto l : p.linfo) {
        if (l.insn_off >= s && l.insn_off < e) continue;
        if (l.insn_off >= e) l.insn_off -= cnt;
        li.push_back(l);
    }
    p.linfo = std::move(li);
    // a subprog start must keep a line-info record if the table is non-empty
    if (!p.linfo.empty()) {
        for (size_t k = 0; k + 1 < p.subprogs.size(); ++k) {
            const uint32_t st = p.subprogs[k].start;
            auto it = std::lower_bound(p.linfo.begin(), p.linfo.end(), st,
                                       [](const LineInfo& l, uint32_t v) { return l.insn_off < v; });
            if (it == p.linfo.end() || it->insn_off != st) p.linfo.insert(it, LineInfo{.insn_off = st, .file_name_off = 1, .line_off = 1, .line_col = 1 << 10});
        }
    }
    relink_linfo(p);
    for (auto& ia : p.insn_arrays) {
        std::vector<InsnArrayEntry> en;
        for (auto x : ia.entries) {
            if (x.xlated_off != isa::kInsnDeleted) {
                if (x.xlated_off >= s && x.xlated_off < e) x.xlated_off = s;
                else if (x.xlated_off >= e) x.xlated_off -= cnt;
            }
            en.push_back(x);
        }
        ia.entries = std::move(en);
    }
    std::vector<PokeDesc> pk;
    for (auto pd : p.pokes) {
        if (pd.insn_idx >= s && pd.insn_idx < e) continue;
        if (pd.insn_idx >= e) pd.insn_idx -= cnt;
        pk.push_back(pd);
    }
    p.pokes = std::move(pk);
}


void insert_range(Program& p, uint32_t pos, const std::vector<isa::Insn>& ins) {
    if (ins.empty() || pos > p.len()) return;
    const uint32_t cnt = static_cast<uint32_t>(ins.size());
    auto shift = [&](int64_t t) -> int64_t { return t > pos ? t + cnt : t; };
    bool pos_is_start = false;
    for (size_t k = 0; k + 1 < p.subprogs.size(); ++k) pos_is_start = pos_is_start || p.subprogs[k].start == pos;
    for (uint32_t i = 0; i < p.len(); ++i) {
        auto& in = p.insns[i];
        if (i > 0 && isa::is_ldimm64(p.insns[i - 1])) continue;
        const auto rf = isa::relative_field(in);
        if (rf == isa::RelField::None) continue;
        const int64_t t = static_cast<int64_t>(i) + 1 + isa::displacement(in);
        const int64_t ni = i >= pos ? i + cnt : i;
        // a transfer to `pos` from before it (or to a subprog starting there) lands on the new code;
        // a backward jump from after it keeps its old insn
        const int64_t nt = t == pos ? ((i < pos || pos_is_start) ? pos : pos + cnt) : shift(t);
        const int64_t d = nt - ni - 1;
        if (rf == isa::RelField::Off16)
            in.off = static_cast<int16_t>(std::clamp<int64_t>(d, -32768, 32767));
        else
            in.imm = static_cast<int32_t>(d);
    }
    p.insns.insert(p.insns.begin() + pos, ins.begin(), ins.end());
    InsnAux fresh;
    fresh.seen = true;
    p.aux.insert(p.aux.begin() + pos, cnt, fresh);
    for (size_t k = 0; k < p.subprogs.size(); ++k)
        if (p.subprogs[k].start > pos || (k + 1 == p.subprogs.size() && p.subprogs[k].start >= pos)) p.subprogs[k].start += cnt;
    for (auto& f : p.finfo)
        if (f.insn_off > pos) f.insn_off += cnt;
    for (auto& l : p.linfo)
        if (l.insn_off > pos) l.insn_off += cnt;
    relink_linfo(p);
    for (auto& ia : p.insn_arrays)
        for (auto& x : ia.entries)
            if (x.xlated_off != isa::kInsnDeleted && x.xlated_off > pos) x.xlated_off += cnt;
    for (auto& pd : p.pokes)
        if (pd.insn_idx >= pos) pd.insn_idx += cnt;
}

}  // namespace patchfuzz::gen
