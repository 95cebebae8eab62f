// Jump-target oracle: see jump_oracle.hpp. Models the contract of docs/patching.md §7 derived from
// bpf_patch_insn_single()/bpf_adj_branches()/bpf_adj_linfo() (kernel/bpf/core.c),
// adjust_subprog_starts(), adjust_insn_arrays(), adjust_poke_descs() and adjust_jmp_off()
// (kernel/bpf/fixups.c). This file builds the obligations of one batch and reports a violated
// one; jump_obligations.hpp holds what an obligation is, jump_solver.cpp the Z3 side.
#include "oracles/smt/jump_oracle.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "bpf/isa/insn.hpp"
#include "oracles/smt/jump_obligations.hpp"
#include "oracles/smt/jump_solver.hpp"

namespace patchfuzz::oracles::smt {
namespace {

using patch::PatchKind;
using namespace jump;

// ---- building obligations ---------------------------------------------------------------------
struct PatchView {
    uint32_t pos = 0;
    uint32_t n = 0;              // slots in the output (InsertBefore: prologue + copy)
    uint32_t prologue = 0;       // InsertBefore: prologue length m, else 0
    const patch::Patch* p = nullptr;
};

struct Model {
    const Program& before;
    std::vector<PatchView> patches;
    std::vector<int64_t> steps;    // n_i - 1
    std::vector<int64_t> dconc;    // concrete prefix sums (to locate output slots only)
    uint32_t n_orig = 0;

    std::vector<uint32_t> seg_table;  // seg(k) for k in [0, n_orig], filled by index_segments()

    // One O(N) pass instead of a binary search for each of the many seg() calls.
    void index_segments() {
        seg_table.resize(static_cast<size_t>(n_orig) + 1);
        uint32_t s = 0;
        for (uint32_t k = 0; k <= n_orig; ++k) {
            while (s < patches.size() && patches[s].pos < k) ++s;
            seg_table[k] = s;
        }
    }
    // number of patches at positions < k = the segment of k
    [[nodiscard]] uint32_t seg(int64_t k) const {
        if (k >= 0 && static_cast<size_t>(k) < seg_table.size()) return seg_table[static_cast<size_t>(k)];
        auto it = std::lower_bound(patches.begin(), patches.end(), k,
                                   [](const PatchView& pv, int64_t v) { return static_cast<int64_t>(pv.pos) < v; });
        return static_cast<uint32_t>(it - patches.begin());
    }
    [[nodiscard]] const PatchView* patch_at(int64_t k) const {
        const uint32_t s = seg(k);
        if (s < patches.size() && patches[s].pos == k) return &patches[s];
        return nullptr;
    }
    [[nodiscard]] int64_t S(int64_t k, const std::vector<int64_t>& d) const { return k + d[seg(k)]; }
    // the insn that slot j of patch pv holds in the output
    [[nodiscard]] isa::Insn slot_insn(const PatchView& pv, uint32_t j) const {
        if (pv.prologue != 0 && j == pv.prologue) return before.insns[pv.pos];
        return pv.p->insns[j];
    }
};

// Rule for a transfer that reaches original index T (not from inside T's own prologue).
Rule target_rule(const Model& m, int64_t t, int64_t redirect, Rule dflt) {
    if (redirect != 0) return Rule::PrologueRedirect;
    if (t >= 0 && t < m.n_orig && m.patch_at(t)) return Rule::FirstInsnOfPatch;
    return dflt;
}

std::string fmt_field(const isa::Insn& in) {
    return isa::relative_field(in) == isa::RelField::Off16 ? "off" : "imm";
}

// Report for a violated obligation, with D taken from the solver's model.
Verdict report(const Model& m, const Ob& o, const std::vector<int64_t>& d, bool intent) {
    std::string cex;
    const std::string rule = rule_name(o.rule);
    if (o.new_idx >= 0) {  // a transfer
        const int64_t expected = o.kind == ObKind::Eq ? o.target + d[o.b] + o.redirect : 0;
        const bool internal = o.rule == Rule::PatchInternal || (o.patch_slot >= 0 && o.a == o.b && o.target >= o.orig &&
                                                                 o.rule == Rule::PrologueRedirect);
        cex = o.patch_slot >= 0 ? "patch at orig " + std::to_string(o.orig) + ", slot " + std::to_string(o.patch_slot)
                                : "orig " + std::to_string(o.orig);
        cex += ", new " + std::to_string(o.new_idx) + " " + o.what;
        if (o.kind == ObKind::Eq) {
            cex += ": expected target new " + std::to_string(expected) +
                   (internal ? " (local slot " + std::to_string(o.target - o.orig) : " (orig target " + std::to_string(o.target));
            if (o.redirect) cex += " + prologue " + std::to_string(o.redirect);
            cex += "), actual new " + std::to_string(o.actual);
        } else {
            const int64_t need = d[o.b] - d[o.a] + o.k;
            cex += ": needs displacement " + std::to_string(need) + " to reach orig target " + std::to_string(o.target) +
                   " (new " + std::to_string(o.target + d[o.b] + o.redirect) + "), which does not fit " +
                   (o.kind == ObKind::Fits16 ? "s16" : "s32");
            if (o.rule == Rule::ErangeNotReported) cex += ", but the patcher reported success";
        }
    } else {  // a table entry
        const int64_t expected = o.target + d[o.b];
        cex = std::string(o.what) + "[" + std::to_string(o.table_idx) + "] orig " + std::to_string(o.target) +
              ": expected new " + std::to_string(expected) + ", actual " + std::to_string(o.actual);
    }
    (void)m;
    Verdict v = Verdict::fail(kJumpOracleName, rule, rule + ": " + rule_text(o.rule), cex);
    if (intent) v.patch_kind = "copied-relative-jump";
    return v;
}

Verdict unknown_verdict(const Solved& s) {
    return Verdict::unknown(kJumpOracleName, "solver: " + (s.why.empty() ? std::string("unknown") : s.why));
}

// Pick the violated obligation to report: range failures first (they explain target failures).
const Ob* first_violated(const std::vector<Ob>& obs, const std::vector<int64_t>& d) {
    const Ob* first = nullptr;
    for (const auto& o : obs) {
        if (holds(o, d)) continue;
        if (o.kind != ObKind::Eq) return &o;
        if (!first) first = &o;
    }
    return first;
}

}  // namespace

Verdict check_jump_targets(const Program& before, const patch::PatchBatch& batch, const patch::PatchOutcome& outcome,
                           const Program& after, const SmtOptions& opts) {
    Model m{.before = before};
    m.n_orig = before.len();
    // ---- the batch: validate and lay out ----
    int64_t prev = -1;
    for (const auto& p : batch.patches) {
        if (p.kind == PatchKind::Remove)
            return Verdict::skip(kJumpOracleName, "removal patches are outside the insertion contract of docs/patching.md §7");
        if (static_cast<int64_t>(p.pos) <= prev || p.pos >= m.n_orig)
            return Verdict::skip(kJumpOracleName, "invalid batch: patch positions must be increasing and < " +
                                                      std::to_string(m.n_orig) + " (pos " + std::to_string(p.pos) + ")");
        if (p.insns.empty())
            return Verdict::skip(kJumpOracleName, "invalid batch: empty patch at pos " + std::to_string(p.pos));
        prev = p.pos;
        PatchView pv{.pos = p.pos, .p = &p};
        if (p.kind == PatchKind::InsertBefore) {
            pv.prologue = static_cast<uint32_t>(p.insns.size());
            pv.n = pv.prologue + 1;
        } else {
            pv.n = static_cast<uint32_t>(p.insns.size());
        }
        m.patches.push_back(pv);
        m.steps.push_back(static_cast<int64_t>(pv.n) - 1);
    }
    m.index_segments();
    m.dconc.assign(m.patches.size() + 1, 0);
    for (size_t i = 0; i < m.steps.size(); ++i) m.dconc[i + 1] = m.dconc[i] + m.steps[i];
    const int64_t new_len = m.n_orig + m.dconc.back();

    // InsertBefore positions and their prologue lengths (adjust_jmp_off redirect).
    auto redirect_for = [&](const isa::Insn& jumper, int64_t t, const PatchView* from_patch, uint32_t from_slot) -> int64_t {
        if (!is_plain_jump(jumper) || t < 0 || t >= m.n_orig) return 0;
        const PatchView* pv = m.patch_at(t);
        if (!pv || pv->prologue == 0) return 0;
        if (from_patch == pv && from_slot < pv->prologue) return 0;  // the inserted insns themselves are skipped
        // Batch semantics are the kernel loop's (bpf/patch/patch.hpp): the redirect applies to the
        // jumps that exist when the prologue goes in, not to transfers a later patch brings.
        if (from_patch != nullptr && from_patch->pos > pv->pos) return 0;
        return pv->prologue;
    };

    const bool erange = outcome.raw_err == -ERANGE;
    if (!outcome.ok() && !erange)
        return Verdict::skip(kJumpOracleName, "patch failed with err " + std::to_string(outcome.err) +
                                                  " (not -ERANGE): nothing to check");
    if (!erange) {
        if (after.len() != new_len) {
            return Verdict::fail(kJumpOracleName, "length", "length: the output has S(N) = N + sum(n_i - 1) insns",
                                 "expected " + std::to_string(new_len) + " insns (orig " + std::to_string(m.n_orig) +
                                     " + " + std::to_string(m.dconc.back()) + "), actual " + std::to_string(after.len()));
        }
    }

    std::vector<Ob> obs;      // contract (targets, tables, must-fit ranges)
    std::vector<Ob> may_fit;  // in-patch outgoing ranges (kernel does not check them when uncrossed)
    std::vector<Ob> intent;   // semantic intent (copied relative jumps)
    obs.reserve(static_cast<size_t>(m.n_orig) / 4 + before.linfo.size() + 16);

    auto read_disp = [&](int64_t c) -> int64_t { return isa::displacement(after.insns[static_cast<size_t>(c)]); };

    // Unpatched original insns.
    for (uint32_t k = 0; k < m.n_orig; ++k) {
        const PatchView* pv = m.patch_at(k);
        if (pv) {
            // Patch slots.
            const uint32_t i = m.seg(k);
            for (uint32_t j = 0; j < pv->n; ++j) {
                const isa::Insn in = m.slot_insn(*pv, j);
                if (isa::relative_field(in) == isa::RelField::None) continue;
                const int64_t d = isa::displacement(in);
                const int64_t L = static_cast<int64_t>(j) + d + 1;
                const int64_t base = static_cast<int64_t>(pv->pos) + j;
                const int64_t c = base + m.dconc[i];
                const bool internal = L >= 0 && L < static_cast<int64_t>(pv->n);
                Ob o{.rule = internal ? Rule::PatchInternal : Rule::PatchOutgoing,
                     .orig = k, .new_idx = c, .base = base, .patch_slot = j, .what = transfer_kind(in)};
                if (internal) {
                    const int64_t r = (L == 0) ? redirect_for(in, pv->pos, pv, j) : 0;
                    o.a = o.b = i;
                    o.target = static_cast<int64_t>(pv->pos) + L;  // reported as "orig" pos+L (local)
                    o.redirect = r;
                    if (r) o.rule = Rule::PrologueRedirect;
                    if (!erange) {
                        o.actual = c + 1 + read_disp(c);
                        o.k = (static_cast<int64_t>(pv->pos) + L + r) - base - 1 - read_disp(c);
                        obs.push_back(o);
                    }
                } else {
                    const int64_t t = L >= static_cast<int64_t>(pv->n) ? static_cast<int64_t>(pv->pos) + 1 + (L - pv->n)
                                                                       : static_cast<int64_t>(pv->pos) + L;
                    if (t < 0 || t > m.n_orig) continue;  // generator output outside the program: not a contract case
                    const int64_t r = redirect_for(in, t, pv, j);
                    o.a = i;
                    o.b = m.seg(t);
                    o.target = t;
                    o.redirect = r;
                    o.rule = target_rule(m, t, r, Rule::PatchOutgoing);
                    Ob f = o;
                    f.kind = fits_kind(in);
                    f.k = t + r - base - 1;
                    f.rule = Rule::ErangeMay;
                    may_fit.push_back(f);
                    if (!erange) {
                        o.actual = c + 1 + read_disp(c);
                        o.k = t + r - base - 1 - read_disp(c);
                        obs.push_back(o);
                    }
                }
                // Semantic intent: a verbatim copy of the patched (relative) insn in a non-first slot.
                const bool is_copy = j > 0 && isa::same(in, before.insns[pv->pos]);
                if (is_copy) {
                    const int64_t t_int = static_cast<int64_t>(pv->pos) + 1 + isa::displacement(before.insns[pv->pos]);
                    if (t_int >= 0 && t_int <= m.n_orig) {
                        // denoted target (local rule): internal -> pos + L in segment i; outgoing -> T in seg(T)
                        Ob io{.kind = ObKind::Eq, .rule = Rule::CopiedRelativeJump, .orig = k, .new_idx = c,
                              .base = base, .patch_slot = j, .what = transfer_kind(in)};
                        const int64_t r_int = redirect_for(in, t_int, pv, j);
                        io.b = m.seg(t_int);
                        io.target = t_int;
                        io.redirect = r_int;
                        if (internal) {
                            io.a = i;
                            io.k = t_int + r_int - (static_cast<int64_t>(pv->pos) + L);
                            io.actual = static_cast<int64_t>(pv->pos) + L + m.dconc[i];
                        } else {
                            const int64_t t = L >= static_cast<int64_t>(pv->n) ? static_cast<int64_t>(pv->pos) + 1 + (L - pv->n)
                                                                               : static_cast<int64_t>(pv->pos) + L;
                            if (t < 0 || t > m.n_orig) continue;
                            io.a = m.seg(t);
                            io.k = t_int + r_int - t - redirect_for(in, t, pv, j);
                            io.actual = t + m.dconc[io.a] + redirect_for(in, t, pv, j);
                        }
                        // D[a] - D[b] == k  <=>  denoted == intended
                        intent.push_back(io);
                    }
                }
            }
            // The insn a Replace overwrites lived until its own patch went in (the kernel applies
            // a batch's patches in ascending pos), relocated by every patch before it: a backward
            // transfer of it across them can make one of them fail with -ERANGE, though its
            // displacement is gone from the result. A forward one crosses no applied patch.
            if (pv->p->kind == patch::PatchKind::Replace && k == pv->pos) {
                const isa::Insn& old = before.insns[k];
                const int64_t t = isa::relative_field(old) == isa::RelField::None
                                      ? -1
                                      : static_cast<int64_t>(k) + 1 + isa::displacement(old);
                if (t >= 0 && t < static_cast<int64_t>(k)) {
                    const int64_t r = redirect_for(old, t, nullptr, 0);
                    Ob f{.kind = fits_kind(old), .a = i, .b = m.seg(t), .k = t + r - static_cast<int64_t>(k) - 1,
                         .rule = Rule::ErangeNotReported, .orig = k, .new_idx = static_cast<int64_t>(k) + m.dconc[i],
                         .base = k, .target = t, .redirect = r, .what = transfer_kind(old)};
                    obs.push_back(f);
                }
            }
            continue;
        }
        const isa::Insn& in = before.insns[k];
        if (isa::relative_field(in) == isa::RelField::None) continue;
        const int64_t t = static_cast<int64_t>(k) + 1 + isa::displacement(in);
        if (t < 0 || t > m.n_orig) continue;  // invalid original program: nothing the contract says
        const uint32_t a = m.seg(k);
        const int64_t c = static_cast<int64_t>(k) + m.dconc[a];
        const int64_t r = redirect_for(in, t, nullptr, 0);
        Ob o{.a = a, .b = m.seg(t), .rule = target_rule(m, t, r, Rule::JumpTarget), .orig = k, .new_idx = c,
             .base = k, .target = t, .redirect = r, .what = transfer_kind(in)};
        Ob f = o;
        f.kind = fits_kind(in);
        f.k = t + r - static_cast<int64_t>(k) - 1;
        f.rule = Rule::ErangeNotReported;
        obs.push_back(f);
        if (!erange) {
            o.actual = c + 1 + read_disp(c);
            o.k = t + r - static_cast<int64_t>(k) - 1 - read_disp(c);
            obs.push_back(o);
        }
    }

    if (erange) {
        // -ERANGE must be explained by some relocated displacement that does not fit.
        std::vector<Ob> fits;
        for (const auto& o : obs)
            if (o.kind != ObKind::Eq) fits.push_back(o);
        fits.insert(fits.end(), may_fit.begin(), may_fit.end());
        Solved s = solve(m.steps, fits, opts, 1);
        if (s.answer == detail::Answer::Unknown) return unknown_verdict(s);
        if (s.answer == detail::Answer::Sat) {
            const Ob* o = first_violated(fits, s.d);
            std::string why = "-ERANGE explained";
            if (o)
                why += ": orig " + std::to_string(o->orig) + " " + o->what + " needs displacement " +
                       std::to_string(s.d[o->b] - s.d[o->a] + o->k);
            return Verdict::pass_(kJumpOracleName, why);
        }
        return Verdict::fail(kJumpOracleName, "erange-spurious",
                             "erange-spurious: -ERANGE is reported only when a relocated displacement does not fit "
                             "its field (§2 step 3, §7.3)",
                             "every relocated displacement fits (new length " + std::to_string(new_len) +
                                 "), but the patcher reported raw_err -ERANGE (err " + std::to_string(outcome.err) + ")");
    }

    // ---- side tables ----
    auto table_ob = [&](Rule rule, const char* what, uint32_t idx, int64_t orig_v, int64_t new_v) {
        Ob o{.kind = ObKind::Eq, .a = 0, .b = m.seg(orig_v), .k = orig_v - new_v, .rule = rule, .target = orig_v,
             .actual = new_v, .table_idx = idx, .what = what};
        obs.push_back(o);
    };
    auto size_fail = [&](const char* what, size_t want, size_t got) {
        return Verdict::fail(kJumpOracleName, "table-size", std::string("table-size: insertion never changes the number of ") + what,
                             std::string(what) + ": expected " + std::to_string(want) + " entries, actual " + std::to_string(got));
    };
    if (before.subprogs.size() != after.subprogs.size()) return size_fail("subprogs", before.subprogs.size(), after.subprogs.size());
    for (uint32_t i = 0; i < before.subprogs.size(); ++i) {
        const bool fake = i + 1 == before.subprogs.size();
        table_ob(fake ? Rule::FakeExit : Rule::SubprogStart, fake ? "fake-exit subprog" : "subprog", i,
                 before.subprogs[i].start, after.subprogs[i].start);
    }
    if (before.linfo.size() != after.linfo.size()) return size_fail("line-info entries", before.linfo.size(), after.linfo.size());
    for (uint32_t i = 0; i < before.linfo.size(); ++i)
        table_ob(Rule::Linfo, "linfo", i, before.linfo[i].insn_off, after.linfo[i].insn_off);
    if (before.insn_arrays.size() != after.insn_arrays.size())
        return size_fail("insn arrays", before.insn_arrays.size(), after.insn_arrays.size());
    for (size_t a = 0; a < before.insn_arrays.size(); ++a) {
        const auto& eb = before.insn_arrays[a].entries;
        const auto& ea = after.insn_arrays[a].entries;
        if (eb.size() != ea.size()) return size_fail("insn-array entries", eb.size(), ea.size());
        for (uint32_t i = 0; i < eb.size(); ++i) {
            if (eb[i].xlated_off == isa::kInsnDeleted) {
                if (ea[i].xlated_off != isa::kInsnDeleted)
                    return Verdict::fail(kJumpOracleName, "insn-array", "insn-array: INSN_DELETED entries stay deleted",
                                         "insn-array[" + std::to_string(i) + "] was INSN_DELETED, actual " +
                                             std::to_string(ea[i].xlated_off));
                continue;
            }
            table_ob(Rule::InsnArray, "insn-array", i, eb[i].xlated_off, ea[i].xlated_off);
        }
    }
    if (before.pokes.size() != after.pokes.size()) return size_fail("poke descriptors", before.pokes.size(), after.pokes.size());
    for (uint32_t i = 0; i < before.pokes.size(); ++i) table_ob(Rule::Poke, "poke", i, before.pokes[i].insn_idx, after.pokes[i].insn_idx);

    Solved s = solve(m.steps, obs, opts, 0);
    if (s.answer == detail::Answer::Unknown) return unknown_verdict(s);
    if (s.answer == detail::Answer::Sat) {
        const Ob* o = first_violated(obs, s.d);
        if (o) return report(m, *o, s.d, false);
        return Verdict::fail(kJumpOracleName, "solver", "solver found a violation the report could not locate", "");
    }

    // ---- insn content: everything but the displacement field is what the contract says ----
    auto content_fail = [&](int64_t c, const std::string& where, const isa::Insn& want, const isa::Insn& got) {
        auto field = [](const isa::Insn& x) {
            return "code 0x" + [&] { char b[8]; std::snprintf(b, sizeof b, "%02x", x.code); return std::string(b); }() +
                   " dst " + std::to_string(x.dst_reg) + " src " + std::to_string(x.src_reg) + " off " +
                   std::to_string(x.off) + " imm " + std::to_string(x.imm);
        };
        return Verdict::fail(kJumpOracleName, "insn-content",
                             "insn-content: only displacement fields change (" +
                                 (isa::relative_field(want) == isa::RelField::None ? std::string("not a relative insn")
                                                                                   : "the displacement lives in " + fmt_field(want)) + ")",
                             where + " new " + std::to_string(c) + ": expected " + field(want) + ", actual " + field(got));
    };
    auto same_but_disp = [](const isa::Insn& want, const isa::Insn& got) {
        isa::Insn w = want, g = got;
        switch (isa::relative_field(want)) {
            case isa::RelField::Off16: w.off = g.off = 0; break;
            case isa::RelField::Imm32: w.imm = g.imm = 0; break;
            case isa::RelField::None: break;
        }
        return isa::same(w, g);
    };
    for (uint32_t k = 0; k < m.n_orig; ++k) {
        const uint32_t i = m.seg(k);
        if (const PatchView* pv = m.patch_at(k)) {
            for (uint32_t j = 0; j < pv->n; ++j) {
                const int64_t c = static_cast<int64_t>(pv->pos) + j + m.dconc[i];
                const isa::Insn want = m.slot_insn(*pv, j);
                if (!same_but_disp(want, after.insns[static_cast<size_t>(c)]))
                    return content_fail(c, "patch at orig " + std::to_string(k) + " slot " + std::to_string(j), want,
                                        after.insns[static_cast<size_t>(c)]);
            }
            continue;
        }
        const int64_t c = static_cast<int64_t>(k) + m.dconc[i];
        if (!same_but_disp(before.insns[k], after.insns[static_cast<size_t>(c)]))
            return content_fail(c, "orig " + std::to_string(k), before.insns[k], after.insns[static_cast<size_t>(c)]);
    }

    // ---- semantic intent (§8): separate finding class ----
    if (!intent.empty()) {
        Solved si = solve(m.steps, intent, opts, 2);
        if (si.answer == detail::Answer::Unknown) return unknown_verdict(si);
        if (si.answer == detail::Answer::Sat) {
            const Ob* o = first_violated(intent, si.d);
            if (o) {
                Verdict v = report(m, *o, si.d, true);
                v.counterexample = "orig " + std::to_string(o->orig) + " copied into slot " + std::to_string(o->patch_slot) +
                                   " (new " + std::to_string(o->new_idx) + ", " + o->what + "): intended target new " +
                                   std::to_string(o->target + si.d[o->b] + o->redirect) + " (orig " +
                                   std::to_string(o->target) + "), denoted target new " + std::to_string(o->actual);
                return v;
            }
        }
    }
    return Verdict::pass_(kJumpOracleName, "all " + std::to_string(obs.size()) + " obligations proved");
}

}  // namespace patchfuzz::oracles::smt
