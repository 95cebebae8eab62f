// The incremental patcher: a bit-exact model of how the kernel applies one patch at a time
// (docs/patching.md §2-§4). Every patch costs what it costs the kernel: the aux array is
// reallocated, the insn tail is moved, the whole program is walked for branch fix-ups, and every
// side table is scanned. A batch is applied the way every verifier pass loops: ascending original
// positions with a running delta (§5.1).
//
// The branch walks come in two costs with one result (BranchWalk in patch.hpp): EveryInsn visits
// every insn as bpf_adj_branches does (what `patchfuzz bench` times: the kernel's O(N) per
// patch); Indexed visits only the insns with a displacement, from a list kept in step with the
// patches, in the same order, so the same fields are written and the same first -ERANGE stops
// it. The tail move keeps a patch O(N) either way; fuzzing campaigns use Indexed, where the walks
// were a tenth of all the work.
//
// Kernel functions modelled (names as in kernel/bpf/core.c, fixups.c, bpf_insn_array.c):
//   bpf_patch_insn_data, bpf_patch_insn_single, bpf_adj_branches, bpf_adj_linfo,
//   adjust_insn_aux_data, adjust_subprog_starts, adjust_insn_arrays, adjust_poke_descs,
//   verifier_remove_insns, bpf_remove_insns, adjust_subprog_starts_after_remove,
//   bpf_adj_linfo_after_remove, bpf_insn_array_adjust_after_remove, adjust_jmp_off.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "bpf/isa/insn_def32.hpp"
#include "bpf/patch/patch.hpp"
#include "bpf/patch/patch_rules.hpp"

namespace patchfuzz::patch {
namespace {

constexpr int64_t kS16Max = 32767;

// An insn a branch walk may change, with its field (no patch changes an insn's opcode or
// src_reg in place: a patched insn leaves the list and its replacements enter it) and the index
// its displacement names. Every rule of the walks is a test on that target, so the indexed walk
// tests the copy here instead of decoding the insn's field; it is kept in step with every write of
// the field (the fields are written only with values that fit, so the two never disagree).
struct Jumper {
    uint32_t idx;
    Field field;
    int64_t target;  // idx + 1 + displacement
};

class Env {
public:
    // `jumpers`: storage for the indexed walk's list, `fresh`: for replace_in_list()'s new entries;
    // both kept by the patcher from batch to batch. `jumpers_listed`: `jumpers` already holds the
    // list of this program's code (see IncrementalPatcher::listed_code_); otherwise it is rebuilt.
    Env(Program& prog, BranchWalk walk, std::vector<Jumper>& jumpers, std::vector<Jumper>& fresh, bool jumpers_listed)
        : prog_(prog), indexed_(walk == BranchWalk::Indexed), jumpers_(jumpers), fresh_(fresh) {
        // Validated programs have strictly increasing line info (check_btf_line): the entries
        // past an offset are a suffix, found by binary search; others keep the full scans. The
        // adjustments keep the order, so it is checked once per batch.
        linfo_sorted_ = std::is_sorted(prog_.linfo.begin(), prog_.linfo.end(),
                                       [](const LineInfo& a, const LineInfo& b) { return a.insn_off < b.insn_off; });
        if (indexed_ && jumpers_listed) return;
        jumpers_.clear();
        if (!indexed_) return;
        // Through a local pointer and length: the push_back could otherwise make the compiler
        // reload the program's vector for every insn, most of which are no jumpers.
        const isa::Insn* const insns = prog_.insns.data();
        const auto n = static_cast<uint32_t>(prog_.insns.size());
        for (uint32_t i = 0; i < n; ++i)
            if (may_adjust(insns[i])) [[unlikely]]
                if (const Field f = adj_field(insns[i]); f != Field::None) jumpers_.push_back(jumper(i, f));
    }

    // Calls visit(i, f, j) for every insn index a branch walk must consider, ascending, with f =
    // adj_field() of the insn there and j its list entry (nullptr when walking every insn), until
    // it returns false; false if it did. Insns whose f is None are not visited.
    template <typename Visit>
    bool walk(Visit&& visit) {
        if (indexed_) {
            for (Jumper& j : jumpers_)
                if (!visit(static_cast<int64_t>(j.idx), j.field, &j)) return false;
            return true;
        }
        const auto& insns = prog_.insns;
        const int64_t n = static_cast<int64_t>(insns.size());
        for (int64_t i = 0; i < n; ++i)
            if (const Field f = disp_field(insns[static_cast<size_t>(i)]); f != Field::None && !visit(i, f, nullptr))
                return false;
        return true;
    }

    // bpf_adj_branches(prog, pos, end_old, end_new, probe). In probe mode the program is the
    // unpatched image and every old insn except the one at `pos` is evaluated at its future index
    // without writing. Returns false on -ERANGE (first failure stops the walk).
    bool adj_branches(int64_t pos, int64_t end_old, int64_t end_new, bool probe) {
        const int64_t delta = end_new - end_old;
        // The kernel checks the range of every considered insn, changed or not; a displacement
        // read back unchanged from its field always fits it, so only a changed one is checked.
        auto eval = [&](isa::Insn& insn, Field f, int64_t curr) {
            int64_t d = get_disp(insn, f);
            const int64_t t = curr + d + 1;  // 64-bit: no wrap-around
            if (curr < pos && t >= end_old)
                d += delta;
            else if (curr >= end_new && t < end_new)
                d -= delta;
            else
                return true;
            if (!fits(f, d)) return false;
            if (!probe) set_disp(insn, f, d);
            return true;
        };
        auto& insns = prog_.insns;
        if (probe) {
            // The old image: insns before `pos` at their index, those from end_old on at their
            // future one. The kernel jumps from `pos` to end_new / end_old; when `pos` was the last
            // insn it evaluates one stale slot past the old end (§2 step 3): we evaluate nothing there.
            return walk([&](int64_t i, Field f, Jumper*) {
                if (i < pos) return eval(insns[static_cast<size_t>(i)], f, i);
                return i < end_old || eval(insns[static_cast<size_t>(i)], f, i + delta);
            });
        }
        // Only the walk over every insn comes here (no list to keep in step).
        return walk([&](int64_t i, Field f, Jumper*) { return eval(insns[static_cast<size_t>(i)], f, i); });
    }

    // The non-probe bpf_adj_branches(prog, pos, end_old, end_new) just after insns [pos, end_old)
    // became the insns now at [pos, end_new): with the indexed walk, the list is brought up to date
    // (replace_in_list(), then the shift of the entries after the patch) in the same pass. The insns of the patch itself are in the list but meet
    // neither rule (curr < pos, curr >= end_new), so only those before and after it are evaluated:
    // the same insns in the same order as the kernel's walk, the same writes, the same first -ERANGE.
    bool adj_branches_after_replace(uint32_t pos, uint32_t end_old, uint32_t end_new) {
        if (!indexed_) return adj_branches(pos, end_old, end_new, false);
        const int64_t delta = int64_t{end_new} - int64_t{end_old};
        const size_t before = replace_in_list(pos, end_old - pos, end_new - pos);
        auto& insns = prog_.insns;
        Jumper* const js = jumpers_.data();
        // Before the patch: a target at or past its old end moves with it.
        for (size_t k = 0; k < before; ++k) {
            Jumper& j = js[k];
            if (j.target < int64_t{end_old}) continue;
            const int64_t nd = j.target + delta - j.idx - 1;
            if (!fits(j.field, nd)) return false;
            set_disp(insns[j.idx], j.field, nd);
            j.target += delta;
        }
        // After the patch (at their new index now): a target before its new end stays (the
        // kernel's test curr + d + 1 < end_new, with the displacement unchanged so far, is
        // target < end_old); one past it moves with it, displacement unchanged.
        const size_t n = jumpers_.size();
        for (size_t k = after_; k < n; ++k) {
            Jumper& j = js[k];
            j.idx = static_cast<uint32_t>(j.idx + delta);
            if (j.target >= int64_t{end_old}) {
                j.target += delta;
                continue;
            }
            const int64_t nd = j.target - j.idx - 1;
            if (!fits(j.field, nd)) return false;
            set_disp(insns[j.idx], j.field, nd);
        }
        return true;
    }

    // Indexed walks: the insn at `off` was overwritten by another (nothing moved).
    void overwritten(uint32_t off) {
        if (indexed_) replace_in_list(off, 1, 1);
    }

    // The list's entries for [off, off + old_cnt) replaced by those of the new insns at
    // [off, off + new_cnt); the entries after them are left at their old index, from after_ on.
    // Returns how many entries are before `off`.
    // The patches of a batch come in ascending position, each one at or past the end of the insns
    // the previous one wrote, so every entry before the previous call's after_ is before `off`:
    // the search goes on from there (a few entries) instead of starting over.
    size_t replace_in_list(uint32_t off, uint32_t old_cnt, uint32_t new_cnt) {
        const size_t n = jumpers_.size();
        size_t first = after_;
        while (first < n && jumpers_[first].idx < off) ++first;
        size_t last = first;
        while (last < n && jumpers_[last].idx < off + old_cnt) ++last;
        const auto& insns = prog_.insns;
        fresh_.clear();
        for (uint32_t i = off; i < off + new_cnt; ++i)
            if (const Field f = disp_field(insns[i]); f != Field::None) fresh_.push_back(jumper(i, f));
        // One splice: overwrite what fits in the old entries' slots, then drop or add the rest.
        const size_t common = std::min(last - first, fresh_.size());
        std::copy(fresh_.begin(), fresh_.begin() + static_cast<ptrdiff_t>(common), jumpers_.begin() + static_cast<ptrdiff_t>(first));
        const auto at = jumpers_.begin() + static_cast<ptrdiff_t>(first + common);
        if (fresh_.size() > common)
            jumpers_.insert(at, fresh_.begin() + static_cast<ptrdiff_t>(common), fresh_.end());
        else
            jumpers_.erase(at, jumpers_.begin() + static_cast<ptrdiff_t>(last));
        after_ = first + fresh_.size();
        return first;
    }

    // bpf_adj_linfo(prog, off, delta)
    void adj_linfo(uint32_t off, int64_t delta) {
        auto& li = prog_.linfo;
        if (li.empty() || delta == 0) return;
        if (!linfo_sorted_) {
            for (auto& l : li)
                if (l.insn_off > off) l.insn_off = static_cast<uint32_t>(l.insn_off + delta);
            return;
        }
        auto it = std::upper_bound(li.begin(), li.end(), off, [](uint32_t o, const LineInfo& l) { return o < l.insn_off; });
        shift_linfo(li, static_cast<size_t>(it - li.begin()), static_cast<uint32_t>(delta));
    }

    // insn_off += add (modulo 2^32) for li[from, end): line info is about as long as the code and
    // every patch moves most of it, so four entries a step.
    static void shift_linfo(std::vector<LineInfo>& li, size_t from, uint32_t add) {
        LineInfo* l = li.data() + from;
        LineInfo* const end = li.data() + li.size();
        for (; end - l >= 4; l += 4) {
            l[0].insn_off += add;
            l[1].insn_off += add;
            l[2].insn_off += add;
            l[3].insn_off += add;
        }
        for (; l != end; ++l) l->insn_off += add;
    }

    // bpf_patch_insn_single(prog, off, patch, len); false = -ERANGE.
    bool patch_insn_single(uint32_t off, const std::vector<isa::Insn>& patch) {
        auto& insns = prog_.insns;
        const size_t len = patch.size();
        if (len == 1) {  // fast path: overwrite, nothing else moves
            insns[off] = patch[0];
            overwritten(off);
            return true;
        }
        const size_t old_len = insns.size();
        const size_t new_len = old_len + len - 1;
        if (new_len > static_cast<size_t>(kS16Max) && !adj_branches(off, off + 1, off + static_cast<int64_t>(len), true))
            return false;
        // bpf_prog_realloc + move the tail + copy the patch in.
        grow_in_reserve(insns, len - 1, isa::Insn{});
        std::memmove(&insns[off + len], &insns[off + 1], (old_len - off - 1) * sizeof(isa::Insn));
        std::copy(patch.begin(), patch.end(), insns.begin() + off);
        // The kernel BUG()s if this fails; only reachable with targets outside the program, where
        // we report it like the probe failure so both patchers agree.
        if (!adj_branches_after_replace(off, off + 1, off + static_cast<uint32_t>(len))) return false;
        adj_linfo(off, static_cast<int64_t>(len) - 1);
        return true;
    }

    // `v` longer by n placeholder slots, which the caller overwrites (with the moved tail or the
    // patch). apply() reserved the room, so no push_back reallocates: cheaper than resize() or
    // vector::insert, which are calls of their own (and insert moves the tail in two memmoves).
    template <typename T>
    static void grow_in_reserve(std::vector<T>& v, size_t n, const T& placeholder) {
        for (size_t k = 0; k < n; ++k) v.push_back(placeholder);
    }

    // The vrealloc of env->insn_aux_data in bpf_patch_insn_data() (the old slots kept, a
    // zero-filled tail; where the bytes live changes nothing modelled) and then
    // adjust_insn_aux_data(env, new_prog, off, cnt): the tail moved by cnt - 1 slots, the fresh
    // slots filled.
    void adjust_insn_aux_data(uint32_t off, uint32_t cnt) {
        auto& aux = prog_.aux;
        const auto& insns = prog_.insns;
        aux[off].zext_dst = isa::insn_has_def32(insns[off + cnt - 1]);
        if (cnt == 1) return;
        InsnAux fresh{};
        fresh.seen = aux[off].seen;
        const size_t old_len = aux.size();
        grow_in_reserve(aux, cnt - 1, fresh);
        InsnAux* const a = aux.data();
        std::memmove(a + off + cnt - 1, a + off, (old_len - off) * sizeof(InsnAux));
        for (uint32_t i = off; i < off + cnt - 1; ++i) {
            a[i] = fresh;
            a[i].zext_dst = isa::insn_has_def32(insns[i]);
        }
    }

    // adjust_subprog_starts(env, off, len): inclusive of the fake exit.
    void adjust_subprog_starts(uint32_t off, uint32_t len) {
        if (len == 1) return;
        for (auto& s : prog_.subprogs)
            if (s.start > off) s.start += len - 1;
    }

    // adjust_insn_arrays -> bpf_insn_array_adjust(map, off, len)
    void adjust_insn_arrays(uint32_t off, uint32_t len) {
        if (len == 1) return;
        for (auto& a : prog_.insn_arrays)
            for (auto& e : a.entries)
                if (e.xlated_off != isa::kInsnDeleted && e.xlated_off > off) e.xlated_off += len - 1;
    }

    // adjust_poke_descs(prog, off, len): no early return for len 1 (adds 0).
    void adjust_poke_descs(uint32_t off, uint32_t len) {
        for (auto& p : prog_.pokes)
            if (p.insn_idx > off) p.insn_idx += len - 1;
    }

    // bpf_patch_insn_data(env, off, patch, len); false = NULL (-ERANGE logged by the caller).
    bool patch_insn_data(uint32_t off, const std::vector<isa::Insn>& patch) {
        const uint32_t len = static_cast<uint32_t>(patch.size());
        if (!patch_insn_single(off, patch)) {
            // The aux array was grown before the failure (a zero-filled tail, see
            // adjust_insn_aux_data()).
            if (len > 1) prog_.aux.resize(prog_.aux.size() + len - 1);
            return false;
        }
        adjust_insn_aux_data(off, len);
        adjust_subprog_starts(off, len);
        adjust_insn_arrays(off, len);
        adjust_poke_descs(off, len);
        return true;
    }

    // adjust_jmp_off(prog, tgt_idx, delta): target-only matching; an overflow stops the walk with
    // -ERANGE, which the kernel callers only WARN about.
    void adjust_jmp_off(uint32_t tgt, uint32_t delta) {
        auto& insns = prog_.insns;
        // jmp_off_field() is a subset of adj_field(): the walk's list has every insn to consider.
        // (Its field, when not None, is the one the list entry has.)
        walk([&](int64_t at, Field, Jumper* j) {
            const auto i = static_cast<size_t>(at);
            if (tgt <= i && i < uint64_t{tgt} + delta) return true;
            const Field f = jmp_off_field(insns[i]);
            if (f == Field::None) return true;
            const int64_t d = get_disp(insns[i], f);
            if (at + 1 + d != tgt) return true;
            if (!fits(f, d + delta)) {
                warn_ += "adjust_jmp_off(tgt " + std::to_string(tgt) + ", delta " + std::to_string(delta) +
                         "): insn " + std::to_string(i) + ": -ERANGE\n";
                return false;
            }
            set_disp(insns[i], f, d + delta);
            if (j != nullptr) j->target += delta;
            return true;
        });
    }

    // adjust_subprog_starts_after_remove(env, off, cnt), including func_info deletion.
    void adjust_subprog_starts_after_remove(uint32_t off, uint32_t cnt) {
        auto& sp = prog_.subprogs;
        const int64_t subprog_cnt = static_cast<int64_t>(sp.size()) - 1;
        int64_t i = 0;
        for (; i < subprog_cnt; ++i)
            if (sp[static_cast<size_t>(i)].start >= off) break;
        int64_t j = i;
        for (; j < subprog_cnt; ++j)
            if (sp[static_cast<size_t>(j)].start >= off + cnt) break;
        if (sp[static_cast<size_t>(j)].start != off + cnt) j--;
        if (j > i) {
            sp.erase(sp.begin() + i, sp.begin() + j);
            auto& fi = prog_.finfo;
            if (!fi.empty()) {
                const int64_t a = std::min<int64_t>(i, static_cast<int64_t>(fi.size()));
                const int64_t b = std::min<int64_t>(j, static_cast<int64_t>(fi.size()));
                fi.erase(fi.begin() + a, fi.begin() + b);
            }
        } else if (sp[static_cast<size_t>(i)].start == off) {
            i++;  // a subprog whose head was removed keeps start == off
        }
        for (size_t k = static_cast<size_t>(i); k < sp.size(); ++k) sp[k].start -= cnt;
    }

    // bpf_adj_linfo_after_remove(env, off, cnt)
    void adj_linfo_after_remove(uint32_t off, uint32_t cnt) {
        auto& li = prog_.linfo;
        const size_t nr = li.size();
        if (nr == 0) return;
        size_t l_off = 0;
        if (linfo_sorted_)
            l_off = static_cast<size_t>(std::lower_bound(li.begin(), li.end(), off,
                                                         [](const LineInfo& l, uint32_t o) { return l.insn_off < o; }) -
                                        li.begin());
        else
            while (l_off < nr && li[l_off].insn_off < off) l_off++;
        size_t l_cnt = 0;
        while (l_off + l_cnt < nr && li[l_off + l_cnt].insn_off < off + cnt) l_cnt++;
        // prog->len is already reduced: "insns remain after the range"
        if (prog_.insns.size() != off && l_cnt > 0 &&
            (l_off + l_cnt == nr || li[l_off + l_cnt].insn_off != off + cnt)) {
            l_cnt--;
            li[l_off + l_cnt].insn_off = off + cnt;  // first survivor inherits the last removed line
        }
        li.erase(li.begin() + static_cast<ptrdiff_t>(l_off), li.begin() + static_cast<ptrdiff_t>(l_off + l_cnt));
        shift_linfo(li, l_off, -cnt);
        for (auto& s : prog_.subprogs) {
            if (s.linfo_idx > l_off) {
                if (s.linfo_idx >= l_off + l_cnt)
                    s.linfo_idx -= static_cast<uint32_t>(l_cnt);
                else
                    s.linfo_idx = static_cast<uint32_t>(l_off);
            }
        }
    }

    // adjust_insn_arrays_after_remove -> bpf_insn_array_adjust_after_remove(map, off, len)
    void adjust_insn_arrays_after_remove(uint32_t off, uint32_t cnt) {
        for (auto& a : prog_.insn_arrays)
            for (auto& e : a.entries) {
                if (e.xlated_off == isa::kInsnDeleted || e.xlated_off < off) continue;
                if (e.xlated_off < off + cnt)
                    e.xlated_off = isa::kInsnDeleted;
                else
                    e.xlated_off -= cnt;
            }
    }

    // verifier_remove_insns(env, off, cnt); false = bpf_remove_insns() returned -ERANGE.
    bool remove_insns(uint32_t off, uint32_t cnt) {
        auto& insns = prog_.insns;
        // bpf_clear_insn_aux_data(): frees per-insn jump tables; nothing we model.
        // bpf_remove_insns(): move the tail down, shrink, walk the branches over the new length.
        const size_t old_len = insns.size();
        std::memmove(&insns[off], &insns[off + cnt], (old_len - off - cnt) * sizeof(isa::Insn));
        insns.resize(old_len - cnt);
        if (!adj_branches_after_replace(off, off + cnt, off)) return false;
        adjust_subprog_starts_after_remove(off, cnt);
        adj_linfo_after_remove(off, cnt);
        adjust_insn_arrays_after_remove(off, cnt);
        auto& aux = prog_.aux;
        std::move(aux.begin() + off + cnt, aux.end(), aux.begin() + off);
        aux.resize(insns.size());  // the kernel does not shrink; the tail is never read again
        return true;
    }

    std::string& warn() { return warn_; }

    // adj_field(), the opcode table first: most insns are neither jumps nor ld_imm64.
    static Field disp_field(const isa::Insn& insn) { return may_adjust(insn) ? adj_field(insn) : Field::None; }
private:
    // The list entry of the insn at i, whose field is f.
    Jumper jumper(uint32_t i, Field f) const {
        return Jumper{i, f, int64_t{i} + 1 + get_disp(prog_.insns[i], f)};
    }

    Program& prog_;
    const bool indexed_;
    bool linfo_sorted_ = true;
    std::vector<Jumper>& jumpers_;  // Indexed: ascending, every insn whose disp_field() is not None
    size_t after_ = 0;             // replace_in_list(): the first entry after the replaced insns
    std::vector<Jumper>& fresh_;   // replace_in_list(): the entries of the new insns
    std::string warn_;
};

class IncrementalPatcher final : public Patcher {
public:
    explicit IncrementalPatcher(BranchWalk walk) : walk_(walk) {}
    [[nodiscard]] std::string_view name() const override { return "incremental"; }

    PatchOutcome apply(Program& prog, const PatchBatch& batch) override {
        if (auto msg = validate_batch(prog, batch); !msg.empty()) return invalid_outcome(msg);
        const bool listed = list_current_ && same_elements(prog.insns, listed_code_);
        list_current_ = false;  // until this batch has succeeded
        Env env(prog, walk_, jumpers_, fresh_, listed);
        const auto& patches = batch.patches;
        // Applied patches so far (their original positions and cumulative growth), to express a
        // patch's backward outgoing targets in current coordinates.
        std::vector<int64_t>& cum = cum_;
        cum.assign(patches.size() + 1, 0);
        int64_t delta = 0;
        // Room for the whole batch up front (the kernel reallocates per patch; where the bytes
        // live changes nothing modelled), and one patch buffer reused by every patch.
        int64_t grown = 0, most = 0;
        for (const Patch& p : patches) most = std::max(most, grown += growth(p));
        prog.insns.reserve(prog.insns.size() + static_cast<size_t>(most));
        prog.aux.reserve(prog.aux.size() + static_cast<size_t>(most));
        std::vector<isa::Insn>& buf = buf_;
        for (size_t q = 0; q < patches.size(); ++q) {
            const Patch& p = patches[q];
            const uint32_t cur = static_cast<uint32_t>(p.pos + delta);
            // Current index of original insn T < p.pos: T plus the growth of applied patches before
            // it; inside an applied removal range it is the numeric slot the kernel would reach.
            auto cur_of_orig = [&](int64_t t) -> int64_t {
                if (t < 0) return t;
                size_t lo = 0, hi = q;  // patches[0..q) with pos < t
                while (lo < hi) {
                    const size_t mid = (lo + hi) / 2;
                    if (patches[mid].pos < t) lo = mid + 1; else hi = mid;
                }
                int64_t g = cum[lo];
                if (lo > 0) {
                    const Patch& last = patches[lo - 1];
                    if (last.kind == PatchKind::Remove && t < int64_t{last.pos} + last.count) g += last.count;
                }
                return t + g;
            };
            // Only a transfer to an insn before the patch (local index < 0) needs rewriting: the
            // internal and forward ones are current already (common delta).
            auto names_before = [](const isa::Insn& in, size_t j, Field f) {
                return f != Field::None && static_cast<int64_t>(j) + get_disp(in, f) + 1 < 0;
            };
            auto to_current = [&](std::vector<isa::Insn>& buf) {
                for (size_t j = 0; j < buf.size(); ++j) {
                    const Field f = Env::disp_field(buf[j]);
                    if (!names_before(buf[j], j, f)) continue;
                    const int64_t target = cur_of_orig(int64_t{p.pos} + static_cast<int64_t>(j) + get_disp(buf[j], f) + 1);
                    set_disp(buf[j], f, target - (int64_t{cur} + static_cast<int64_t>(j)) - 1);
                }
            };
            switch (p.kind) {
                case PatchKind::Replace: {
                    // Copied into buf (and rewritten) only when some slot names an insn before it.
                    bool rewrite = false;
                    for (size_t j = 0; j < p.insns.size() && !rewrite; ++j)
                        rewrite = names_before(p.insns[j], j, Env::disp_field(p.insns[j]));
                    if (rewrite) {
                        buf.assign(p.insns.begin(), p.insns.end());
                        to_current(buf);
                    }
                    const uint32_t orig_idx = prog.aux[cur].orig_idx;
                    if (!env.patch_insn_data(cur, rewrite ? buf : p.insns)) return fail(p, orig_idx, env);
                    break;
                }
                case PatchKind::InsertBefore: {
                    buf.assign(p.insns.begin(), p.insns.end());
                    to_current(buf);
                    buf.push_back(prog.insns[cur]);  // the kernel copies the insn then at pos
                    const uint32_t orig_idx = prog.aux[cur].orig_idx;
                    if (!env.patch_insn_data(cur, buf)) return fail(p, orig_idx, env);
                    env.adjust_jmp_off(cur, static_cast<uint32_t>(p.insns.size()));
                    break;
                }
                case PatchKind::Remove:
                    if (!env.remove_insns(cur, p.count)) return fail(p, 0, env);
                    break;
            }
            delta += growth(p);
            cum[q + 1] = cum[q] + growth(p);
        }
        if (walk_ == BranchWalk::Indexed) {
            listed_code_.assign(prog.insns.begin(), prog.insns.end());
            list_current_ = true;
        }
        PatchOutcome ok;
        ok.kernel_warn = env.warn();
        return ok;
    }

private:
    const BranchWalk walk_;
    // Storage reused from batch to batch (apply() never re-enters itself).
    std::vector<Jumper> jumpers_;
    std::vector<Jumper> fresh_;
    std::vector<int64_t> cum_;
    std::vector<isa::Insn> buf_;
    // The code the last batch left when it succeeded with the indexed walk: jumpers_ is then that
    // code's list (kept in step with every write: the same entries a fresh scan would find), and
    // the next batch, most often on that very code, reuses it instead of scanning every insn again
    // (a seventh of the patcher's work). Any other code, or a failed batch (whose list may be
    // half-updated), rebuilds it.
    std::vector<isa::Insn> listed_code_;
    bool list_current_ = false;

    static PatchOutcome fail(const Patch& p, uint32_t orig_idx, Env& env) {
        PatchOutcome o = erange_outcome(p, orig_idx);
        o.kernel_warn = env.warn();
        return o;
    }
};

}  // namespace

std::unique_ptr<Patcher> make_incremental_patcher(BranchWalk walk) { return std::make_unique<IncrementalPatcher>(walk); }

}  // namespace patchfuzz::patch
