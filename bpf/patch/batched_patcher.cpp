// The batched patcher: the deferred patch list applied in ONE pass (docs/patching.md §6.3, §7).
// Work is O(N + inserted) plus O(side tables + M) for the table sweeps, and it produces exactly what
// the incremental patcher (the kernel applying the same patches one by one) produces: insns, every
// side table, and the same -ERANGE failure with the same log line.
//
// How each kernel effect is reproduced without replaying it:
//  * positions: the index map S (index_map.hpp); every relative field is re-derived as
//    S[target] - S[self] - 1, in-patch transfers via the patch-local rule of patch.hpp;
//  * adjust_jmp_off() after an InsertBefore: plain jumps that exist when the prologue is applied
//    and name its position get +k; if the kernel's walk would overflow, it stops at the first
//    overflowing jump in index order (a WARN), so only jumps before it are redirected;
//  * -ERANGE: the kernel fails at the first patch after which some evaluated displacement is out of
//    range. Displacements are filtered with a cheap bound (only programs that ever exceed 32767
//    insns can fail) and the few candidates are replayed exactly over the patch sequence;
//  * line info, subprog starts (+ func_info deletion, linfo_idx) and poke descriptors: their kernel
//    rules only ever touch entries at or after the current patch, so one sweep with a running
//    offset and a "frozen" prefix reproduces the sequential result;
//  * insn arrays: S for kept insns, INSN_DELETED for removed ones.
#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include "bpf/isa/insn_def32.hpp"
#include "bpf/patch/index_map.hpp"
#include "bpf/patch/patch.hpp"
#include "bpf/patch/patch_rules.hpp"
#include "bpf/util/check.hpp"

namespace patchfuzz::patch {
namespace {

constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
constexpr int64_t kS16Max = 32767;

// A displacement whose range must be replayed exactly over the patch sequence.
struct Cand {
    int64_t a = 0, j = 0;         // anchor (original index), slot in its patch
    // target (original index) per state range: a jump into a range that a later removal deletes
    // names that slot until then, and the insn that slides into it afterwards (state, B, #pos<B)
    std::vector<std::array<int64_t, 3>> b;
    int64_t base_extra = 0;       // constant added to the target position
    int64_t qib = -1, kib = 0;    // InsertBefore redirect: +kib for states > qib if it applied
    int64_t pos = 0;              // final position (to decide whether the redirect applied)
    int64_t s0 = 0, s1 = 0;       // states (after patches [0, s)) in which the kernel evaluates it
    Field f = Field::None;
};
// A jump an InsertBefore walk (adjust_jmp_off) redirects, unless the walk stopped before it.
struct Redirect {
    size_t out_idx;
    Field f;
    uint32_t q;
    int64_t pos;
    bool overflow;
};

// The working storage of a batch. A fuzzing case applies a few batches to a program of about a
// hundred insns, where allocating a dozen vectors per batch costs as much as the linear pass
// itself, so the storage is reused from batch to batch. No value carries over: every batch resizes
// or clears what it uses before reading it; only capacity is reused.
struct BatchScratch {
    // A program's insn/aux arrays from before an earlier batch: the next output is built in them.
    std::vector<isa::Insn> spare_insns;
    std::vector<InsnAux> spare_aux;
    std::vector<int64_t> gp;
    std::vector<uint32_t> s;
    std::vector<std::pair<uint32_t, uint32_t>> ibs;
    std::vector<Redirect> redirects;
    std::vector<int64_t> stop;
    std::vector<uint32_t> ib_copies;
    std::vector<Cand> cands;
    // sweep_subprogs_and_linfo() and sweep_pokes()
    std::vector<int64_t> sv, val;
    std::vector<char> sp_dead, fi_dead;
    std::vector<uint32_t> sp_final, lidx_final, order;
    std::vector<SubprogInfo> sp_out;
    std::vector<FuncInfo> fi_out;
};

class Batch {
public:
    Batch(const Program& prog, const PatchBatch& batch, BatchScratch& w)
        : prog_(prog), p_(batch.patches), n_(prog.len()), m_(static_cast<uint32_t>(p_.size())), w_(w), gp_(w.gp),
          s_(w.s), ibs_(w.ibs), redirects_(w.redirects), stop_(w.stop), ib_copies_(w.ib_copies), cands_(w.cands) {
        ibs_.clear();
        redirects_.clear();
        ib_copies_.clear();
        cands_.clear();
        gp_.resize(m_ + 1);
        gp_[0] = 0;
        int64_t max_len = n_;
        for (uint32_t q = 0; q < m_; ++q) {
            gp_[q + 1] = gp_[q] + growth(p_[q]);
            max_len = std::max<int64_t>(max_len, n_ + gp_[q + 1]);
            if (p_[q].kind == PatchKind::Remove) removed_total_ += p_[q].count;
            if (p_[q].kind == PatchKind::InsertBefore) any_ib_ = true;
        }
        // With every target inside the program, |disp| < current length: no overflow possible.
        check_erange_ = max_len > kS16Max;
        by_s_alone_ = !any_ib_ && !check_erange_;
        index_map(static_cast<uint32_t>(n_), batch, s_);
        if (any_ib_) {
            for (uint32_t q = 0; q < m_; ++q)
                if (p_[q].kind == PatchKind::InsertBefore) ibs_.push_back({s_[p_[q].pos], q});
        }
        stop_.assign(m_, kNever);
    }

    PatchOutcome run(Program& prog) {
        const uint32_t new_len = s_[n_];
        // The output is built in the spare arrays (a program's old arrays from an earlier batch),
        // sized first and then written slot by slot from the front (written_), so that copies
        // are plain memory copies and a patch's few insns need no call.
        std::vector<isa::Insn> out = std::move(w_.spare_insns);
        std::vector<InsnAux> aux = std::move(w_.spare_aux);
        size_for_output(out, new_len, prog_.insns);
        size_for_output(aux, new_len, prog_.aux);
        written_ = 0;

        uint32_t prev = 0;
        for (uint32_t q = 0; q <= m_; ++q) {
            const uint32_t seg_end = q < m_ ? p_[q].pos : n_;
            copy_segment(prev, seg_end, static_cast<int64_t>(gp_[q]), out, aux);
            if (q == m_) break;
            const Patch& p = p_[q];
            if (check_erange_) note_prepatch_jumpers(q);
            if (p.kind == PatchKind::Remove) {
                prev = p.pos + p.count;
                continue;
            }
            write_patch(q, out, aux);
            prev = p.pos + 1;
        }

        PATCHFUZZ_CHECK(written_ == new_len, "output length is S[N]");
        finish_redirects(out);
        for (uint32_t q : ib_copies_) write_copy(q, out);

        if (check_erange_) {
            int64_t bad_state = kNever;
            for (const Cand& c : cands_) bad_state = std::min(bad_state, first_bad_state(c, bad_state));
            if (bad_state != kNever) {
                const uint32_t fq = static_cast<uint32_t>(bad_state - 1);
                PatchOutcome o = erange_outcome(p_[fq], prog_.aux[p_[fq].pos].orig_idx);
                o.kernel_warn += walk_warnings(fq);
                w_.spare_insns = std::move(out);
                w_.spare_aux = std::move(aux);
                return o;
            }
        }

        PatchOutcome ok;
        if (any_ib_) ok.kernel_warn = walk_warnings(m_);  // only prologue walks stop
        w_.spare_insns = std::move(prog.insns);
        w_.spare_aux = std::move(prog.aux);
        prog.insns = std::move(out);
        prog.aux = std::move(aux);
        if (removed_total_ == 0)
            shift_subprogs_and_linfo(prog);
        else
            sweep_subprogs_and_linfo(prog);
        map_insn_arrays(prog);
        sweep_pokes(prog);
        return ok;
    }

private:
    [[nodiscard]] int64_t smap(int64_t t) const {
        if (t < 0) return t;
        if (t <= n_) return s_[static_cast<size_t>(t)];
        return int64_t{s_[n_]} + (t - n_);
    }
    // # patches with pos < x
    [[nodiscard]] int64_t idx_lt(int64_t x) const {
        if (x <= 0) return 0;
        auto it = std::lower_bound(p_.begin(), p_.end(), x, [](const Patch& p, int64_t v) { return int64_t{p.pos} < v; });
        return it - p_.begin();
    }
    // The target of a jump to `t` state by state: removed slots alias k -> k+c once removed.
    [[nodiscard]] std::vector<std::array<int64_t, 3>> bsteps(int64_t t) const {
        std::vector<std::array<int64_t, 3>> v{{0, t, idx_lt(t)}};
        while (t >= 0 && t < n_) {
            const int64_t i = idx_lt(t + 1) - 1;
            if (i < 0) break;
            const Patch& p = p_[static_cast<size_t>(i)];
            if (p.kind != PatchKind::Remove || t >= int64_t{p.pos} + p.count) break;
            t += p.count;
            v.push_back({i + 1, t, idx_lt(t)});
        }
        return v;
    }
    [[nodiscard]] int64_t ib_find(int64_t tgt) const {
        auto it = std::lower_bound(ibs_.begin(), ibs_.end(), tgt,
                                   [](const std::pair<uint32_t, uint32_t>& e, int64_t v) { return int64_t{e.first} < v; });
        if (it == ibs_.end() || int64_t{it->first} != tgt) return -1;
        return it->second;
    }

    // Sizes a spare array for an output of n slots, each written before it is read. Its old
    // contents are dead: when it must grow they are dropped rather than copied, and it grows with
    // headroom, since these arrays circulate between the programs and the scratch and the next
    // output is usually longer. New insn slots are copies of the input's first ones (`filler`):
    // what they hold does not matter, and a memory copy costs less than zeroing them one by one.
    // (Copying InsnAux, which has a default constructor, would go slot by slot too.)
    template <class T>
    static void size_for_output(std::vector<T>& v, size_t n, const std::vector<T>& filler) {
        if (v.capacity() < n) {
            v.clear();
            v.reserve(n + n / 2);
        }
        if (std::is_trivial_v<T> && v.size() < n && n - v.size() <= filler.size())
            v.insert(v.end(), filler.begin(), filler.begin() + static_cast<ptrdiff_t>(n - v.size()));
        else
            v.resize(n);
    }

    // Relocate one relative field whose displacement is re-derived from S. `owner` = patch that
    // contains the jumper (-1 unpatched): only InsertBefore walks after it can redirect it.
    // In a batch without prologues that cannot fail (nearly every one), S alone gives it: that
    // case is small enough to be inlined at every call, the rest is relocate_in_general().
    void relocate(std::vector<isa::Insn>& out, size_t idx, Field f, int64_t target_orig, int64_t owner, int64_t a,
                  int64_t j, int64_t d_first, bool d_first_is_final, int64_t s0) {
        if (by_s_alone_) [[likely]] {
            set_disp(out[idx], f, smap(target_orig) - static_cast<int64_t>(idx) - 1);
            return;
        }
        relocate_in_general(out, idx, f, target_orig, owner, a, j, d_first, d_first_is_final, s0);
    }
    void relocate_in_general(std::vector<isa::Insn>& out, size_t idx, Field f, int64_t target_orig, int64_t owner,
                             int64_t a, int64_t j, int64_t d_first, bool d_first_is_final, int64_t s0) {
        isa::Insn& insn = out[idx];
        const int64_t pos = static_cast<int64_t>(idx);
        int64_t tgt = smap(target_orig);
        int64_t qib = -1, kib = 0;
        if (any_ib_ && jmp_off_field(insn) != Field::None) {
            const int64_t q = ib_find(tgt);
            if (q > owner) {
                kib = static_cast<int64_t>(p_[static_cast<size_t>(q)].insns.size());
                qib = q;
                const bool forward = pos < tgt;
                tgt += kib;
                redirects_.push_back({idx, f, static_cast<uint32_t>(q), pos, forward && !fits(f, tgt - pos - 1)});
            }
        }
        const int64_t d = tgt - pos - 1;
        set_disp(insn, f, d);
        if (!check_erange_) return;
        const int64_t first = d_first_is_final ? d : d_first;
        const int64_t bound = std::max(std::llabs(first), std::llabs(d)) + removed_total_ + kib;
        if (bound <= field_max(f)) return;
        cands_.push_back(Cand{.a = a, .j = j, .b = bsteps(target_orig), .qib = qib, .kib = kib, .pos = pos,
                              .s0 = s0, .s1 = m_, .f = f});
    }

    void copy_segment(uint32_t from, uint32_t to, int64_t shift, std::vector<isa::Insn>& out, std::vector<InsnAux>& aux) {
        if (from >= to) return;
        PATCHFUZZ_CHECK(written_ == static_cast<size_t>(from + shift), "segment lands at S[from]");
        const isa::Insn* const src = prog_.insns.data();
        std::copy(src + from, src + to, out.data() + written_);
        std::copy(prog_.aux.data() + from, prog_.aux.data() + to, aux.data() + written_);
        written_ += to - from;
        // Most insns carry no displacement: the opcode table finds the few that may (jumps,
        // ld_imm64) and names the field (both from the opcode facts, isa/insn_facts.hpp).
        for (const isa::Insn* in = std::find_if(src + from, src + to, may_adjust); in != src + to;
             in = std::find_if(in + 1, src + to, may_adjust)) {
            const Field f = adj_field(*in);
            if (f == Field::None) continue;
            const uint32_t c = static_cast<uint32_t>(in - src);
            const int64_t d = get_disp(*in, f);
            relocate(out, static_cast<size_t>(c + shift), f, int64_t{c} + 1 + d, -1, c, 0, d, false, 1);
        }
    }

    void write_patch(uint32_t q, std::vector<isa::Insn>& out, std::vector<InsnAux>& aux) {
        const Patch& p = p_[q];
        const size_t base = s_[p.pos];
        const int64_t n = local_len(p);
        const size_t len = static_cast<size_t>(n);
        PATCHFUZZ_CHECK(written_ == base, "patch lands at S[pos]");
        written_ += len;
        const InsnAux& orig = prog_.aux[p.pos];
        // New slots get fresh aux data but the patched insn's `seen`; the last slot keeps the
        // patched insn's aux (bpf_patch_insn_data() -> adjust_insn_aux_data()). Every slot's
        // zext_dst is recomputed from the insn written there, once it is relocated. One loop
        // over the patch's insns copies them, relocates their outgoing transfers and writes their
        // aux (a Replace's last slot too, which then gets `orig`).
        InsnAux fresh{};
        fresh.seen = orig.seen;
        InsnAux* const slot_aux = aux.data() + base;
        isa::Insn* const slot = out.data() + base;
        const isa::Insn* const ins = p.insns.data();
        const size_t count = p.insns.size();
        for (size_t j = 0; j < count; ++j) {
            slot[j] = ins[j];
            const Field f = may_adjust(slot[j]) ? adj_field(slot[j]) : Field::None;
            if (f != Field::None) {
                const int64_t d = get_disp(slot[j], f);
                const int64_t local = static_cast<int64_t>(j) + d + 1;
                if (local < 0 || local >= n) {  // else internal: kept verbatim
                    const int64_t t = local >= n ? int64_t{p.pos} + 1 + (local - n) : int64_t{p.pos} + local;
                    relocate(out, base + j, f, t, q, p.pos, static_cast<int64_t>(j), d, local < 0, int64_t{q} + 2);
                }
            }
            slot_aux[j] = fresh;
            slot_aux[j].zext_dst = isa::insn_has_def32(slot[j]);
        }
        if (p.kind == PatchKind::InsertBefore) {
            slot[len - 1] = prog_.insns[p.pos];
            const Field f = adj_field(prog_.insns[p.pos]);
            if (f != Field::None) {
                const int64_t d = get_disp(prog_.insns[p.pos], f);
                const int64_t t0 = int64_t{p.pos} + 1 + d;
                if (smap(t0) > int64_t{s_[p.pos]}) {
                    // Forward: the verbatim copy is right and moves like any jump from here on (it
                    // may even be redirected by a later prologue, so it joins the redirect list).
                    relocate(out, base + len - 1, f, t0, q, p.pos, static_cast<int64_t>(len - 1), d, true, int64_t{q} + 2);
                } else {
                    ib_copies_.push_back(q);  // backward/self: needs the walks' outcome, write_copy()
                }
            }
        }
        slot_aux[len - 1] = orig;
        slot_aux[len - 1].zext_dst = isa::insn_has_def32(slot[len - 1]);
    }

    // adjust_jmp_off() overflow: the walk stops at the first overflowing (forward) jump in index
    // order; jumps at or after it keep naming the prologue start.
    void finish_redirects(std::vector<isa::Insn>& out) {
        for (const Redirect& r : redirects_)
            if (r.overflow) stop_[r.q] = std::min(stop_[r.q], r.pos);
        for (const Redirect& r : redirects_) {
            if (r.pos < stop_[r.q]) continue;
            isa::Insn& insn = out[r.out_idx];
            set_disp(insn, r.f, get_disp(insn, r.f) - static_cast<int64_t>(p_[r.q].insns.size()));
        }
    }

    // The WARNs of the adjust_jmp_off() walks of patches [0, end) that stopped, in patch order.
    [[nodiscard]] std::string walk_warnings(uint32_t end) const {
        std::string w;
        for (uint32_t q = 0; q < end; ++q)
            if (stop_[q] != kNever)
                w += "adjust_jmp_off(tgt " + std::to_string(s_[p_[q].pos]) + ", delta " +
                     std::to_string(p_[q].insns.size()) + "): insn " + std::to_string(stop_[q]) + ": -ERANGE\n";
        return w;
    }

    // The copied insn of an InsertBefore keeps the displacement it had when copied (kernel), i.e. a
    // forward target is right, a backward one is k too far; then that patch's own adjust_jmp_off().
    void write_copy(uint32_t q, std::vector<isa::Insn>& out) {
        const Patch& p = p_[q];
        const int64_t k = static_cast<int64_t>(p.insns.size());
        const int64_t sp = s_[p.pos];
        const int64_t copypos = sp + k;
        isa::Insn& insn = out[static_cast<size_t>(copypos)];
        const Field f = adj_field(insn);
        if (f == Field::None) return;
        const int64_t d = get_disp(prog_.insns[p.pos], f);
        const int64_t t0 = int64_t{p.pos} + 1 + d;
        const int64_t ts = smap(t0);
        const bool eligible = jmp_off_field(insn) != Field::None;
        PATCHFUZZ_CHECK(ts <= sp, "forward copies are relocated in write_patch()");
        int64_t tgt;
        int64_t base_extra = 0;
        if (ts == sp) {
            tgt = sp + k;  // the original named itself: so does the copy
            base_extra = k;
        } else {
            int64_t x = ts;
            if (eligible && any_ib_) {
                // The original insn was already redirected by that earlier walk (it was after it).
                const int64_t q2 = ib_find(ts);
                if (q2 >= 0 && stop_[static_cast<size_t>(q2)] == kNever) x += static_cast<int64_t>(p_[static_cast<size_t>(q2)].insns.size());
            }
            tgt = x + k;
            if (eligible && tgt == sp && copypos < stop_[q]) tgt += k;
            base_extra = tgt - ts;
        }
        set_disp(insn, f, tgt - copypos - 1);
        if (check_erange_)
            cands_.push_back(Cand{.a = p.pos, .j = k, .b = bsteps(t0), .base_extra = base_extra, .pos = copypos,
                                  .s0 = int64_t{q} + 2, .s1 = m_, .f = f});
    }

    // Original insns that a patch replaces or removes are evaluated by the probes before it.
    void note_prepatch_jumpers(uint32_t q) {
        const Patch& p = p_[q];
        const uint32_t end = p.kind == PatchKind::Remove ? p.pos + p.count : p.pos + 1;
        for (uint32_t c = p.pos; c < end; ++c) {
            const isa::Insn& in = prog_.insns[c];
            const Field f = adj_field(in);
            if (f == Field::None || q == 0) continue;
            const int64_t t = int64_t{c} + 1 + get_disp(in, f);
            Cand cand{.a = c, .j = 0, .b = bsteps(t), .pos = -1, .s0 = 1, .s1 = q, .f = f};
            if (any_ib_ && jmp_off_field(in) != Field::None) {
                const int64_t q2 = ib_find(smap(t));
                if (q2 >= 0 && q2 < q) {
                    cand.qib = q2;
                    cand.kib = static_cast<int64_t>(p_[static_cast<size_t>(q2)].insns.size());
                    cand.pos = kNever;  // after that prologue: redirected iff its walk did not stop
                }
            }
            cands_.push_back(cand);
        }
    }

    // Displacement of `c` in state s (after patches [0, s)).
    [[nodiscard]] int64_t disp_at(const Cand& c, int64_t s, int64_t ia) const {
        size_t k = 0;
        while (k + 1 < c.b.size() && c.b[k + 1][0] <= s) k++;
        const int64_t bt = c.b[k][1], ib = c.b[k][2];
        int64_t d = (bt - c.a - c.j - 1) + c.base_extra;
        if (c.qib >= 0 && s > c.qib) {
            const bool applied = c.pos == kNever ? stop_[static_cast<size_t>(c.qib)] == kNever
                                                 : c.pos < stop_[static_cast<size_t>(c.qib)];
            if (applied) d += c.kib;
        }
        return d + gp_[static_cast<size_t>(std::min(s, ib))] - gp_[static_cast<size_t>(std::min(s, ia))];
    }
    [[nodiscard]] int64_t first_bad_state(const Cand& c, int64_t limit) const {
        const int64_t ia = idx_lt(c.a);
        for (int64_t s = c.s0; s <= c.s1 && s < limit; ++s)
            if (!fits(c.f, disp_at(c, s, ia))) return s;
        return kNever;
    }

    // order = the indices of `v` in ascending key order, ties in index order (a stable sort). The
    // tables are nearly always sorted already: then it is the identity, without sorting.
    template <class T, class Key>
    static void stable_order(std::vector<uint32_t>& order, const std::vector<T>& v, Key key) {
        order.resize(v.size());
        std::iota(order.begin(), order.end(), 0u);
        const auto by_key = [&](uint32_t a, uint32_t b) { return key(v[a]) < key(v[b]); };
        if (!std::is_sorted(order.begin(), order.end(), by_key)) std::stable_sort(order.begin(), order.end(), by_key);
    }

    static constexpr uint64_t kAnyInsnOff = uint64_t{1} << 32;  // a limit above every insn_off

    // Adds `add` to the insn_off of the entries from `i` on while it is below `lim`; returns the
    // first entry it left alone (or n).
    static size_t shift_linfo_below(LineInfo* lv, size_t i, size_t n, uint64_t lim, uint32_t add) {
        LineInfo* e = lv + i;
        LineInfo* const end = lv + n;
        for (; e != end && e->insn_off < lim; ++e) e->insn_off += add;
        return static_cast<size_t>(e - lv);
    }

    // sweep_subprogs_and_linfo() for a batch without removals (most of them), where it deletes
    // nothing and changes no linfo_idx: it only moves every start and line offset by the growth
    // of the patches its sweep has passed, which this does in place, in the program's own tables
    // (apply_to() copied them from the input). patch_props_test compares both patchers on
    // batches with and without removals.
    void shift_subprogs_and_linfo(Program& prog) const {
        SubprogInfo* const sp = prog.subprogs.data();
        const size_t cnt_sp = prog.subprogs.size() - 1;  // real subprogs; the last entry is the fake exit
        LineInfo* const lv = prog.linfo.data();
        const size_t ln = prog.linfo.size();
        size_t sip = 0;
        size_t lip = 0;
        uint32_t add = 0;
        for (uint32_t q = 0; q < m_; ++q) {
            const uint32_t r = p_[q].pos;
            for (; sip < cnt_sp && sp[sip].start <= r; ++sip) sp[sip].start += add;
            lip = shift_linfo_below(lv, lip, ln, uint64_t{r} + 1, add);
            add += static_cast<uint32_t>(growth(p_[q]));
        }
        for (; sip <= cnt_sp; ++sip) sp[sip].start += add;  // the fake exit too
        shift_linfo_below(lv, lip, ln, kAnyInsnOff, add);
        PATCHFUZZ_CHECK(sp[cnt_sp].start == s_[n_], "fake exit must end at the new length");
    }

    // adjust_subprog_starts / _after_remove (+ func_info deletion) and bpf_adj_linfo /
    // _after_remove (+ linfo_idx), as one sweep over the patches. Entries before the current patch
    // are final ("frozen"); every other entry has received exactly the same shifts so far, so it is
    // kept as an original-coordinate value `v` plus one running offset.
    void sweep_subprogs_and_linfo(Program& prog) const {
        const auto& sp_in = prog_.subprogs;
        const size_t cnt_sp = sp_in.size() - 1;  // real subprogs; the last entry is the fake exit
        auto& sv = w_.sv;
        sv.resize(sp_in.size());
        for (size_t i = 0; i < sp_in.size(); ++i) sv[i] = sp_in[i].start;
        auto& sp_dead = w_.sp_dead;
        sp_dead.assign(sp_in.size(), 0);
        auto& fi_dead = w_.fi_dead;
        fi_dead.assign(prog_.finfo.size(), 0);
        size_t sip = 0;   // first unfrozen real subprog
        int64_t sadd = 0;
        auto& sp_final = w_.sp_final;  // every entry is written before it is read
        sp_final.resize(sp_in.size());

        // Line info is compacted in place: li[0, lout) are final; li[lip, end) still hold their
        // original-coordinate offsets (lip >= lout); the entries in between were dropped.
        auto& li = prog.linfo;
        size_t lout = 0;
        size_t lip = 0;
        int64_t ladd = 0;
        // Through a local pointer and length (the stores could otherwise make the compiler reload
        // the vector's for every entry); until an entry is dropped the entries stay in place.
        LineInfo* const lv = li.data();
        const size_t ln = li.size();
        // Freezes the entries from lip on while insn_off < lim.
        auto freeze_linfo = [&](uint64_t lim) {
            if (lout == lip) {
                lip = shift_linfo_below(lv, lip, ln, lim, static_cast<uint32_t>(ladd));
                lout = lip;
                return;
            }
            while (lip < ln && lv[lip].insn_off < lim) {
                const auto off = static_cast<uint32_t>(lv[lip].insn_off + ladd);
                lv[lout] = lv[lip++];
                lv[lout++].insn_off = off;
            }
        };

        // linfo_idx of every subprog entry, processed in ascending value order.
        auto& order = w_.order;
        stable_order(order, sp_in, [](const SubprogInfo& s) { return s.linfo_idx; });
        auto& lidx_final = w_.lidx_final;  // every entry is written before it is read
        lidx_final.resize(sp_in.size());
        size_t lf = 0;
        int64_t lsub = 0;

        for (uint32_t q = 0; q < m_; ++q) {
            const Patch& p = p_[q];
            const int64_t r = p.pos;
            if (p.kind != PatchKind::Remove) {
                while (sip < cnt_sp && sv[sip] <= r) { sp_final[sip] = static_cast<uint32_t>(sv[sip] + sadd); sip++; }
                sadd += growth(p);
                freeze_linfo(static_cast<uint64_t>(r) + 1);  // insn_off <= r
                ladd += growth(p);
                continue;
            }
            const int64_t c = p.count;
            // adjust_subprog_starts_after_remove
            while (sip < cnt_sp && sv[sip] < r) { sp_final[sip] = static_cast<uint32_t>(sv[sip] + sadd); sip++; }
            const size_t i = sip;
            size_t j = i;
            while (j < cnt_sp && sv[j] < r + c) j++;
            int64_t jj = static_cast<int64_t>(j);
            if (sv[j] != r + c) jj--;
            if (jj > static_cast<int64_t>(i)) {
                for (size_t x = i; x < static_cast<size_t>(jj); ++x) {
                    sp_dead[x] = 1;
                    if (x < fi_dead.size()) fi_dead[x] = 1;
                }
                sip = static_cast<size_t>(jj);
            } else if (i < sv.size() && sv[i] == r) {
                sv[i] = r + c;  // keeps start == off while everything after moves down
            }
            sadd -= c;
            // bpf_adj_linfo_after_remove
            if (!li.empty()) {
                freeze_linfo(static_cast<uint64_t>(r));
                const int64_t l_off = static_cast<int64_t>(lout);
                size_t e = lip;
                while (e < li.size() && li[e].insn_off < r + c) e++;
                int64_t l_cnt = static_cast<int64_t>(e - lip);
                if (r + c != n_ && l_cnt > 0 && (e == li.size() || li[e].insn_off != r + c)) {
                    // the first survivor inherits the last removed line
                    li[e - 1].insn_off = static_cast<uint32_t>(r + c);
                    l_cnt--;
                    lip = e - 1;
                } else {
                    lip = e;
                }
                ladd -= c;
                while (lf < order.size() && int64_t{sp_in[order[lf]].linfo_idx} - lsub <= l_off) {
                    lidx_final[order[lf]] = static_cast<uint32_t>(sp_in[order[lf]].linfo_idx - lsub);
                    lf++;
                }
                while (lf < order.size() && int64_t{sp_in[order[lf]].linfo_idx} - lsub < l_off + l_cnt) {
                    lidx_final[order[lf]] = static_cast<uint32_t>(l_off);
                    lf++;
                }
                lsub += l_cnt;
            }
        }
        for (; sip < cnt_sp; ++sip) sp_final[sip] = static_cast<uint32_t>(sv[sip] + sadd);
        sp_final[cnt_sp] = static_cast<uint32_t>(sv[cnt_sp] + sadd);
        PATCHFUZZ_CHECK(sp_final[cnt_sp] == s_[n_], "fake exit must end at the new length");
        freeze_linfo(kAnyInsnOff);
        for (; lf < order.size(); ++lf) lidx_final[order[lf]] = static_cast<uint32_t>(sp_in[order[lf]].linfo_idx - lsub);

        auto& sp_out = w_.sp_out;
        sp_out.clear();
        sp_out.reserve(sp_in.size());
        for (size_t i = 0; i < sp_in.size(); ++i) {
            if (sp_dead[i]) continue;
            SubprogInfo s = sp_in[i];
            s.start = sp_final[i];
            s.linfo_idx = lidx_final[i];
            sp_out.push_back(s);
        }
        auto& fi_out = w_.fi_out;
        fi_out.clear();
        fi_out.reserve(prog_.finfo.size());
        for (size_t i = 0; i < prog_.finfo.size(); ++i)
            if (!fi_dead[i]) fi_out.push_back(prog_.finfo[i]);
        // The program's previous tables become the next batch's storage.
        prog.subprogs.swap(sp_out);
        prog.finfo.swap(fi_out);
        li.erase(li.begin() + static_cast<ptrdiff_t>(lout), li.end());
    }

    // bpf_insn_array_adjust / _after_remove: S for kept insns, INSN_DELETED for removed ones.
    void map_insn_arrays(Program& prog) const {
        for (auto& a : prog.insn_arrays)
            for (auto& e : a.entries) {
                if (e.xlated_off == isa::kInsnDeleted) continue;
                const int64_t v = e.xlated_off;
                const int64_t i = idx_lt(v + 1) - 1;  // last patch with pos <= v
                if (i >= 0) {
                    const Patch& p = p_[static_cast<size_t>(i)];
                    if (p.kind == PatchKind::Remove && v < int64_t{p.pos} + p.count) {
                        e.xlated_off = isa::kInsnDeleted;
                        continue;
                    }
                }
                e.xlated_off = static_cast<uint32_t>(smap(v));
            }
    }

    // adjust_poke_descs: moved by insertions (insn_idx <= off stays), never by removals, so a
    // removal leaves them in stale coordinates that later insertions compare against. Sweep in
    // ascending value order with a running offset.
    void sweep_pokes(Program& prog) const {
        auto& pk = prog.pokes;
        if (pk.empty()) return;
        auto& order = w_.order;
        stable_order(order, pk, [](const PokeDesc& d) { return d.insn_idx; });
        auto& val = w_.val;
        val.resize(pk.size());
        for (size_t i = 0; i < pk.size(); ++i) val[i] = pk[i].insn_idx;
        size_t f = 0;
        int64_t add = 0;
        for (uint32_t q = 0; q < m_; ++q) {
            const Patch& p = p_[q];
            if (p.kind == PatchKind::Remove) continue;
            const int64_t cur = int64_t{p.pos} + gp_[q];
            while (f < order.size() && val[order[f]] + add <= cur) {
                val[order[f]] += add;
                f++;
            }
            add += growth(p);
        }
        for (; f < order.size(); ++f) val[order[f]] += add;
        for (size_t i = 0; i < pk.size(); ++i) pk[i].insn_idx = static_cast<uint32_t>(val[i]);
    }

    const Program& prog_;
    const std::vector<Patch>& p_;
    const int64_t n_;
    const uint32_t m_;
    BatchScratch& w_;                  // storage of the vectors below and of the sweeps' tables
    std::vector<int64_t>& gp_;         // gp_[s] = total growth of patches [0, s)
    std::vector<uint32_t>& s_;         // S
    int64_t removed_total_ = 0;
    bool any_ib_ = false;
    bool check_erange_ = false;
    bool by_s_alone_ = false;  // no prologue, no possible -ERANGE: relocate() needs S only
    size_t written_ = 0;       // run(): slots of the output written so far
    std::vector<std::pair<uint32_t, uint32_t>>& ibs_;  // (S[pos], patch index) of InsertBefore patches
    std::vector<Redirect>& redirects_;
    std::vector<int64_t>& stop_;       // per InsertBefore: position where its walk stopped
    std::vector<uint32_t>& ib_copies_;
    std::vector<Cand>& cands_;
};

class BatchedPatcher final : public Patcher {
public:
    [[nodiscard]] std::string_view name() const override { return "batched"; }
    PatchOutcome apply(Program& prog, const PatchBatch& batch) override {
        if (auto msg = validate_batch(prog, batch); !msg.empty()) return invalid_outcome(msg);
        if (batch.patches.empty()) return {};
        Batch b(prog, batch, scratch());
        return b.run(prog);
    }
    // The output's insns and aux are built from the input's anyway (Batch::run): only the side
    // tables, which the sweeps adjust in place, are copied first. A failed batch leaves `out` a
    // copy of `in`, as apply() leaves the program untouched.
    PatchOutcome apply_to(const Program& in, Program& out, const PatchBatch& batch) override {
        if (auto msg = validate_batch(in, batch); !msg.empty()) {
            out = in;
            return invalid_outcome(msg);
        }
        if (batch.patches.empty()) {
            out = in;
            return {};
        }
        copy_all_but_code(in, out);
        Batch b(in, batch, scratch());
        PatchOutcome o = b.run(out);
        if (!o.ok()) out = in;
        return o;
    }

private:
    // One per thread, not per patcher: the harness makes a patcher per case, which applies only a
    // few batches. apply() never re-enters itself, and a Batch keeps nothing in the scratch once
    // it returns.
    static BatchScratch& scratch() {
        thread_local BatchScratch s;
        return s;
    }
};

}  // namespace

std::unique_ptr<Patcher> make_batched_patcher() { return std::make_unique<BatchedPatcher>(); }

}  // namespace patchfuzz::patch
