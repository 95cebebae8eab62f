// Jump-target oracle: see jump_oracle.hpp. Models the contract of docs/patching.md §7 derived from
// bpf_patch_insn_single()/bpf_adj_branches()/bpf_adj_linfo() (kernel/bpf/core.c),
// adjust_subprog_starts(), adjust_insn_arrays(), adjust_poke_descs() and adjust_jmp_off()
// (kernel/bpf/fixups.c).
#include "oracles/smt/jump_oracle.hpp"

#include <z3++.h>

#include <algorithm>
#include <numeric>
#include <cerrno>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "bpf/isa/insn.hpp"
#include "oracles/smt/answer_cache.hpp"
#include "oracles/smt/solver_config.hpp"

namespace patchfuzz::oracles::smt {
namespace {

using patch::PatchKind;

// ---- obligations --------------------------------------------------------------------------------
// Every obligation is over the segment deltas D (D[0] = 0, D[i+1] = D[i] + n_i - 1):
//   Eq:     D[a] - D[b] == k
//   FitsN:  D[b] - D[a] + k fits in a signed N-bit field
enum class ObKind : uint8_t { Eq, Fits16, Fits32 };

enum class Rule : uint8_t {
    JumpTarget,        // unpatched transfer relocates through S
    FirstInsnOfPatch,  // ... to a patched insn: first insn of its patch
    PrologueRedirect,  // plain jump to an InsertBefore position skips the prologue (adjust_jmp_off)
    PatchInternal,     // in-patch target inside the patch: displacement kept
    PatchOutgoing,     // in-patch target outside the patch: local->original rule then S
    SubprogStart,
    FakeExit,
    Linfo,
    InsnArray,
    Poke,
    ErangeNotReported,  // a relocated displacement does not fit, outcome ok
    ErangeMay,          // in-patch outgoing displacement that does not fit (kernel: truncated)
    CopiedRelativeJump,
};

const char* rule_name(Rule r) {
    switch (r) {
        case Rule::JumpTarget: return "jump-target";
        case Rule::FirstInsnOfPatch: return "first-insn-of-patch";
        case Rule::PrologueRedirect: return "prologue-redirect";
        case Rule::PatchInternal: return "patch-internal-target";
        case Rule::PatchOutgoing: return "patch-outgoing-target";
        case Rule::SubprogStart: return "subprog-start";
        case Rule::FakeExit: return "fake-exit";
        case Rule::Linfo: return "linfo";
        case Rule::InsnArray: return "insn-array";
        case Rule::Poke: return "poke";
        case Rule::ErangeNotReported: return "erange-not-reported";
        case Rule::ErangeMay: return "erange-in-patch";
        case Rule::CopiedRelativeJump: return "copied-relative-jump";
    }
    return "?";
}

const char* rule_text(Rule r) {
    switch (r) {
        case Rule::JumpTarget: return "a relative transfer lands on S(original target) (docs/patching.md §7.1, bpf_adj_branches)";
        case Rule::FirstInsnOfPatch:
            return "a transfer that named the patched insn lands on the first insn of its patch (docs/patching.md §2.1)";
        case Rule::PrologueRedirect:
            return "a plain jump to a prologue-patched insn skips the prologue (adjust_jmp_off, docs/patching.md §3.7)";
        case Rule::PatchInternal: return "in-patch displacements to slots of the same patch are never adjusted (docs/patching.md §2.1)";
        case Rule::PatchOutgoing:
            return "an outgoing in-patch transfer lands on S(local->original target) (docs/patching.md §7.2)";
        case Rule::SubprogStart: return "subprog start maps through S: start <= off stays (adjust_subprog_starts, §3.2)";
        case Rule::FakeExit: return "the fake exit subprog start is the new program length S(N) (§3.2)";
        case Rule::Linfo: return "line info insn_off maps through S: insn_off <= off stays (bpf_adj_linfo, §2.2)";
        case Rule::InsnArray: return "insn-array xlated_off maps through S: xlated_off <= off stays (§3.5)";
        case Rule::Poke: return "poke insn_idx maps through S: insn_idx <= off stays (adjust_poke_descs, §3.3)";
        case Rule::ErangeNotReported:
            return "a relocated displacement that does not fit its field must make the patch fail with -ERANGE (§2, §7.3)";
        case Rule::ErangeMay: return "in-patch outgoing displacement does not fit its field";
        case Rule::CopiedRelativeJump:
            return "a relative jump copied into a non-first slot of its own patch keeps its displacement, so its "
                   "target moves (docs/patching.md §8)";
    }
    return "?";
}

struct Ob {
    ObKind kind = ObKind::Eq;
    uint32_t a = 0, b = 0;
    int64_t k = 0;
    // context for the report
    Rule rule = Rule::JumpTarget;
    int64_t orig = -1;        // original index of the jumping insn / table entry value
    int64_t new_idx = -1;     // concrete new index of the jumping insn (-1: table entry)
    int64_t base = 0;         // for transfers: new index = base + D[a]
    int64_t target = 0;       // original target T (transfers) / original table value
    int64_t redirect = 0;     // prologue length added to the expected target
    int64_t actual = 0;       // actual target (transfers) or actual table value
    int64_t patch_slot = -1;  // slot j when the jumper sits in a patch
    uint32_t table_idx = 0;
    const char* what = "";
};

struct ObKey {
    ObKind kind;
    uint32_t a, b;
    int64_t k;
    bool operator==(const ObKey&) const = default;
};

const char* transfer_kind(const isa::Insn& in) {
    if (isa::is_pseudo_func(in)) return "PSEUDO_FUNC ld_imm64 (imm s32)";
    if (isa::is_pseudo_call(in)) return "pseudo call (imm s32)";
    if (isa::is_gotol(in)) return "gotol (imm s32)";
    if (isa::is_ja(in)) return "ja (off s16)";
    if (isa::is_may_goto(in)) return "may_goto (off s16)";
    if (isa::is_gotox(in)) return "gotox (off s16)";
    if (isa::is_tail_call(in)) return "tail call (off s16)";
    return "conditional jump (off s16)";
}

// adjust_jmp_off() moves only JMP/JMP32-class insns other than CALL/EXIT.
bool is_plain_jump(const isa::Insn& in) { return isa::is_jmp_class(in) && !isa::is_call(in) && !isa::is_exit(in); }

ObKind fits_kind(const isa::Insn& in) {
    return isa::relative_field(in) == isa::RelField::Off16 ? ObKind::Fits16 : ObKind::Fits32;
}

bool holds(const Ob& o, const std::vector<int64_t>& d) {
    switch (o.kind) {
        case ObKind::Eq: return d[o.a] - d[o.b] == o.k;
        case ObKind::Fits16: {
            const int64_t v = d[o.b] - d[o.a] + o.k;
            return v >= INT16_MIN && v <= INT16_MAX;
        }
        case ObKind::Fits32: {
            const int64_t v = d[o.b] - d[o.a] + o.k;
            return v >= INT32_MIN && v <= INT32_MAX;
        }
    }
    return true;
}

// ---- solving with a cache ----------------------------------------------------------------------
struct Solved {
    detail::Answer answer = detail::Answer::Unknown;
    std::vector<int64_t> d;  // model of D when Sat
    std::string why;         // Unknown: the solver's reason
};

// What goes to the solver. Z3 costs a few microseconds per term it is given, so the obligations
// are first reduced, each step exact or sound:
//   * duplicates merged (many obligations are the same relation between the same two segments);
//   * D[a] - D[a] == 0 dropped (true whatever D is);
//   * a range obligation dropped when it holds for every D whose steps are at most the batch's
//     total growth in size: |D[b] - D[a]| <= sum |n_i - 1| (an interval bound, independent of the
//     order of the patches);
//   * the D chain cut down to the segments some obligation names (plus D[0] = 0): D of an unnamed
//     segment is existentially quantified away by summing its step into the next named one.
// The reduced encoding is renumbered from 0, so batches of different programs that pose the same
// question share one cache entry.
struct Encoding {
    std::vector<uint32_t> named;  // original segment of each encoded D (sorted; named[0] = 0)
    std::vector<int64_t> steps;   // D'[j + 1] = D'[j] + steps[j]
    std::vector<ObKey> keys;      // over encoded segments
};

Encoding encode(const std::vector<int64_t>& steps, const std::vector<Ob>& obs) {
    int64_t growth = 0;
    for (int64_t x : steps) growth += x < 0 ? -x : x;
    auto always_fits = [&](const Ob& o) {
        const int64_t lo = o.kind == ObKind::Fits16 ? INT16_MIN : INT32_MIN;
        const int64_t hi = o.kind == ObKind::Fits16 ? INT16_MAX : INT32_MAX;
        return o.k - growth >= lo && o.k + growth <= hi;
    };
    Encoding e;
    std::vector<ObKey> kept;
    kept.reserve(obs.size());
    for (const auto& o : obs)
        if (!(o.kind == ObKind::Eq ? (o.a == o.b && o.k == 0) : always_fits(o))) kept.push_back(ObKey{o.kind, o.a, o.b, o.k});
    // Sorted (the canonical order: the same question asked in another order is one cache entry)
    // and without duplicates.
    std::sort(kept.begin(), kept.end(), [](const ObKey& x, const ObKey& y) {
        return std::tie(x.kind, x.a, x.b, x.k) < std::tie(y.kind, y.a, y.b, y.k);
    });
    kept.erase(std::unique(kept.begin(), kept.end()), kept.end());
    e.named.reserve(2 * kept.size() + 1);
    e.named.push_back(0);
    for (const ObKey& k : kept) {
        e.named.push_back(k.a);
        e.named.push_back(k.b);
    }
    std::sort(e.named.begin(), e.named.end());
    e.named.erase(std::unique(e.named.begin(), e.named.end()), e.named.end());
    for (size_t j = 1; j < e.named.size(); ++j) {
        int64_t sum = 0;
        for (uint32_t x = e.named[j - 1]; x < e.named[j]; ++x) sum += steps[x];
        e.steps.push_back(sum);
    }
    auto renumber = [&](uint32_t seg) {
        return static_cast<uint32_t>(std::lower_bound(e.named.begin(), e.named.end(), seg) - e.named.begin());
    };
    // Renumbering keeps the order (it is monotonic).
    for (ObKey k : kept) {
        k.a = renumber(k.a);
        k.b = renumber(k.b);
        e.keys.push_back(k);
    }
    return e;
}

// D over all original segments from a model of the encoded ones: each unnamed segment follows its
// chain from the last named segment before it.
std::vector<int64_t> expand_model(const Encoding& e, const std::vector<int64_t>& encoded, const std::vector<int64_t>& steps) {
    std::vector<int64_t> d(steps.size() + 1, 0);
    size_t j = 0;
    for (size_t i = 0; i < d.size(); ++i) {
        while (j + 1 < e.named.size() && e.named[j + 1] <= i) ++j;
        d[i] = e.named[j] == i ? encoded[j] : d[i - 1] + steps[i - 1];
    }
    return d;
}


uint64_t mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

// Obligations + segments up to which a query counts as small (SmtOptions::small_query_rlimit).
constexpr size_t kSmallQuery = 512;

// Asks Z3 whether some obligation of `e` can be violated (the negation of their conjunction is
// asserted): unsat = all hold.
Solved ask_z3(const Encoding& e, const SmtOptions& opts) {
    Solved out;
    try {
        thread_local z3::context ctx;
        // One solver per thread, configured once per option set, each query in its own push/pop
        // scope: creating and configuring a solver per query cost more than solving it. The
        // plain SMT core (solver::simple) is what a push/pop query reaches anyway; asking for it
        // directly skips the per-check dispatch of the logic-specific combined solver (about 35
        // microseconds a query). Small queries (the usual ~100-insn case) run under the resource
        // limit, large ones (real programs with hundreds of patches) under the wall-clock timeout.
        struct Slot {
            std::optional<z3::solver> solver;
            std::tuple<uint32_t, uint32_t, uint64_t> configured{UINT32_MAX, UINT32_MAX, 0};
        };
        thread_local Slot small_slot, large_slot;
        const bool small = e.keys.size() + e.steps.size() <= kSmallQuery;
        Slot& slot = small ? small_slot : large_slot;
        const std::tuple<uint32_t, uint32_t, uint64_t> want{opts.timeout_ms, opts.seed, opts.small_query_rlimit};
        if (!slot.solver || slot.configured != want) {
            slot.solver.emplace(ctx, z3::solver::simple());
            if (small) detail::configure_small_solver(ctx, *slot.solver, opts);
            else detail::configure_solver(ctx, *slot.solver, opts);
            slot.configured = want;
        }
        z3::solver& s = *slot.solver;
        struct Scope {
            z3::solver& s;
            explicit Scope(z3::solver& x) : s(x) { s.push(); }
            ~Scope() { s.pop(); }
        } scope(s);
        z3::expr_vector dv(ctx);
        for (size_t i = 0; i <= e.steps.size(); ++i) dv.push_back(ctx.bv_const(("D" + std::to_string(i)).c_str(), 64));
        s.add(dv[0] == ctx.bv_val(static_cast<int64_t>(0), 64));
        for (size_t i = 0; i < e.steps.size(); ++i)
            s.add(dv[static_cast<int>(i + 1)] == dv[static_cast<int>(i)] + ctx.bv_val(e.steps[i], 64));
        z3::expr_vector bad(ctx);
        const auto lo16 = ctx.bv_val(static_cast<int64_t>(INT16_MIN), 64), hi16 = ctx.bv_val(static_cast<int64_t>(INT16_MAX), 64);
        const auto lo32 = ctx.bv_val(static_cast<int64_t>(INT32_MIN), 64), hi32 = ctx.bv_val(static_cast<int64_t>(INT32_MAX), 64);
        for (const auto& k : e.keys) {
            const z3::expr da = dv[static_cast<int>(k.a)], db = dv[static_cast<int>(k.b)];
            switch (k.kind) {
                case ObKind::Eq: bad.push_back(da - db != ctx.bv_val(k.k, 64)); break;
                case ObKind::Fits16: {
                    z3::expr v = db - da + ctx.bv_val(k.k, 64);
                    bad.push_back(!(z3::sle(lo16, v) && z3::sle(v, hi16)));
                    break;
                }
                case ObKind::Fits32: {
                    z3::expr v = db - da + ctx.bv_val(k.k, 64);
                    bad.push_back(!(z3::sle(lo32, v) && z3::sle(v, hi32)));
                    break;
                }
            }
        }
        s.add(bad.empty() ? ctx.bool_val(false) : z3::mk_or(bad));
        switch (s.check()) {
            case z3::unsat: out.answer = detail::Answer::Unsat; break;
            case z3::sat: {
                out.answer = detail::Answer::Sat;
                z3::model m = s.get_model();
                out.d.resize(e.steps.size() + 1);
                for (size_t i = 0; i <= e.steps.size(); ++i) {
                    z3::expr v = m.eval(dv[static_cast<int>(i)], true);
                    out.d[i] = static_cast<int64_t>(v.get_numeral_uint64());
                }
                break;
            }
            case z3::unknown:
                out.answer = detail::Answer::Unknown;
                out.why = s.reason_unknown();
                break;
        }
    } catch (const z3::exception& ex) {
        out.answer = detail::Answer::Unknown;
        out.why = std::string("z3: ") + ex.msg();
    }
    return out;
}

uint64_t hash_of(const Encoding& e, uint64_t salt) {
    uint64_t h = mix(0x5eed, salt);
    h = mix(h, e.steps.size());
    for (int64_t x : e.steps) h = mix(h, static_cast<uint64_t>(x));
    for (const auto& k : e.keys) h = mix(mix(mix(mix(h, static_cast<uint64_t>(k.kind)), k.a), k.b), static_cast<uint64_t>(k.k));
    return h;
}

// A question to the solver as the cache keeps it (the encoded chain and obligations, and which of
// the oracle's questions it is), and a view of one being asked, to look it up without a copy.
struct Question {
    uint64_t salt = 0;
    Encoding e;
};
struct QuestionView {
    uint64_t salt;
    const Encoding& e;
};
bool same_encoding(const Encoding& x, const Encoding& y) { return x.steps == y.steps && x.keys == y.keys; }
struct QuestionHash {
    using is_transparent = void;
    size_t operator()(const Question& q) const { return hash_of(q.e, q.salt); }
    size_t operator()(const QuestionView& q) const { return hash_of(q.e, q.salt); }
};
struct QuestionEq {
    using is_transparent = void;
    bool operator()(const Question& x, const Question& y) const { return x.salt == y.salt && same_encoding(x.e, y.e); }
    bool operator()(const Question& x, const QuestionView& y) const { return x.salt == y.salt && same_encoding(x.e, y.e); }
    bool operator()(const QuestionView& x, const Question& y) const { return x.salt == y.salt && same_encoding(x.e, y.e); }
};
// Encoded answers (Solved::d over encoded segments), by the whole question.
AnswerCache<Question, Solved, QuestionHash, QuestionEq> g_answers(1 << 14);

// The cached answer to `e`, or Z3's.
Solved solve_encoded(const Encoding& e, const SmtOptions& opts, uint64_t salt) {
    if (opts.use_cache) {
        if (std::optional<Solved> known = g_answers.find(QuestionView{salt, e})) {
            detail::count_cache_hit();
            return std::move(*known);
        }
    }
    Solved out = ask_z3(e, opts);
    detail::count_answer(out.answer);
    // The named segments only map the model back; the question is the steps and obligations.
    if (opts.use_cache && out.answer != detail::Answer::Unknown) g_answers.put(Question{salt, Encoding{{}, e.steps, e.keys}}, out);
    return out;
}

// Some obligation can be violated iff one of them can: (exists D. chain and (v1 or v2 or ...)) is
// (exists D. chain and v1) or (exists D. chain and v2) or ..., and each of these needs only the
// links of the chain between the two segments its obligation names (the rest of the chain extends
// any solution). So each obligation is asked on its own, over its own slice of the chain (KLEE's
// constraint independence), and these small questions recur across programs far more than whole
// batches do, so nearly all are answered from the cache.
// `salt` keeps the oracle's whole questions (contract, -ERANGE explanation, intent) apart in the
// cache; a Sat answer's D is over the original segments.
Solved solve(const std::vector<int64_t>& steps, const std::vector<Ob>& obs, const SmtOptions& opts, uint64_t salt) {
    const Encoding e = encode(steps, obs);
    if (e.keys.empty()) {
        // Every obligation was discharged while encoding: nothing is left that could be violated.
        detail::count_presolved();
        return Solved{.answer = detail::Answer::Unsat};
    }
    constexpr uint64_t kOneObligation = 0x0b11;
    for (const ObKey& k : e.keys) {
        const uint32_t lo = std::min(k.a, k.b), hi = std::max(k.a, k.b);
        // Its slice of the chain, with the segments between lo and hi (which it does not name)
        // summed away as encode() does: one link, or none when both sides are one segment.
        thread_local Encoding one;  // reused: its vectors keep their storage
        one.steps.clear();
        one.keys.clear();
        if (hi > lo) one.steps.push_back(std::accumulate(e.steps.begin() + lo, e.steps.begin() + hi, int64_t{0}));
        one.keys.push_back(ObKey{k.kind, k.a == lo ? 0u : 1u, k.b == lo ? 0u : 1u, k.k});
        const Solved s = solve_encoded(one, opts, kOneObligation);
        if (s.answer == detail::Answer::Unsat) continue;
        if (s.answer == detail::Answer::Unknown) return s;
        // Violated: the report needs D over every segment, so the whole question is asked.
        Solved whole = solve_encoded(e, opts, salt);
        if (whole.answer == detail::Answer::Sat) whole.d = expand_model(e, whole.d, steps);
        return whole;
    }
    return Solved{.answer = detail::Answer::Unsat};
}

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
